package io.fdpblock.l2;

import java.util.Arrays;

/**
 * A fixed-size bit set: bit i answers for {@code keys[i]} of a request. The Java counterpart of LMCache's
 * native {@code Bitmap}, which lives in {@code lmcache.lmcache_native} (formerly
 * {@code lmcache.native_storage_ops}).
 */
public final class Bitmap {
    private final int size;
    private final long[] words;

    public Bitmap(int size) {
        if (size < 0) {
            throw new IllegalArgumentException("bitmap size " + size + " must be >= 0");
        }
        this.size = size;
        this.words = new long[(size + 63) >>> 6];
    }

    public static Bitmap of(boolean[] bits) {
        Bitmap b = new Bitmap(bits.length);
        for (int i = 0; i < bits.length; i++) {
            if (bits[i]) {
                b.set(i);
            }
        }
        return b;
    }

    /** Parses '0'/'1' characters, the format of {@link #toString()}. */
    public static Bitmap parse(String bits) {
        Bitmap b = new Bitmap(bits.length());
        for (int i = 0; i < bits.length(); i++) {
            char c = bits.charAt(i);
            if (c == '1') {
                b.set(i);
            } else if (c != '0') {
                throw new IllegalArgumentException("bitmap text '" + bits + "' has '" + c + "' at " + i);
            }
        }
        return b;
    }

    public int size() {
        return size;
    }

    private int check(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("bit " + i + " of a bitmap of " + size);
        }
        return i;
    }

    public boolean get(int i) {
        check(i);
        return (words[i >>> 6] & (1L << i)) != 0;
    }

    public void set(int i) {
        check(i);
        words[i >>> 6] |= 1L << i;
    }

    public void clear(int i) {
        check(i);
        words[i >>> 6] &= ~(1L << i);
    }

    public int cardinality() {
        int n = 0;
        for (long w : words) {
            n += Long.bitCount(w);
        }
        return n;
    }

    /** Length of the run of ones from bit 0 (the usable prefix). */
    public int leadingOnes() {
        for (int w = 0; w < words.length; w++) {
            if (words[w] != -1L) {
                return Math.min(size, (w << 6) + Long.numberOfTrailingZeros(~words[w]));
            }
        }
        return size;
    }

    /** Indices of the set bits, ascending. */
    public int[] indices() {
        int[] out = new int[cardinality()];
        int k = 0;
        for (int i = 0; i < size; i++) {
            if (get(i)) {
                out[k++] = i;
            }
        }
        return out;
    }

    public Bitmap and(Bitmap o) {
        requireSameSize(o);
        Bitmap r = new Bitmap(size);
        for (int i = 0; i < words.length; i++) {
            r.words[i] = words[i] & o.words[i];
        }
        return r;
    }

    public Bitmap or(Bitmap o) {
        requireSameSize(o);
        Bitmap r = new Bitmap(size);
        for (int i = 0; i < words.length; i++) {
            r.words[i] = words[i] | o.words[i];
        }
        return r;
    }

    public Bitmap not() {
        Bitmap r = new Bitmap(size);
        for (int i = 0; i < words.length; i++) {
            r.words[i] = ~words[i];
        }
        if ((size & 63) != 0 && words.length > 0) {
            r.words[words.length - 1] &= (1L << (size & 63)) - 1;
        }
        return r;
    }

    private void requireSameSize(Bitmap o) {
        if (o.size != size) {
            throw new IllegalArgumentException("bitmaps of sizes " + size + " and " + o.size + " do not combine");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Bitmap b && b.size == size && Arrays.equals(b.words, words);
    }

    @Override
    public int hashCode() {
        return 31 * size + Arrays.hashCode(words);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(size);
        for (int i = 0; i < size; i++) {
            sb.append(get(i) ? '1' : '0');
        }
        return sb.toString();
    }
}
