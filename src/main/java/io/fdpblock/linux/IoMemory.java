package io.fdpblock.linux;

import io.fdpblock.ffi.FdpNative;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Memory for I/O buffers. From {@link #HUGE_PAGE} up, an anonymous mapping aligned to 2 MiB that the kernel
 * is asked to back with transparent huge pages ({@code madvise(MADV_HUGEPAGE)}), so a large transfer is a few
 * physically contiguous DMA segments instead of one per 4 KiB page. A device takes a request's memory as a
 * list of segments (virtio descriptors, NVMe PRP or SGL entries), and where that list is bounded, scattered
 * pages cost depth: virtio-blk without indirect descriptors has 256 per queue, so one 1 MiB request over
 * scattered pages fills it alone and the rest wait in the block layer. Smaller sizes come from the arena as
 * usual (a huge page each would waste memory): slice one large region into many buffers instead.
 *
 * <p>Where transparent huge pages are off ({@code /sys/kernel/mm/transparent_hugepage/enabled} = never) or
 * the advice is refused, the mapping keeps 4 KiB pages and works the same; {@link #hugePages()} says which.
 * The memory is zeroed, like {@link Arena#allocate}, and unmapped when {@code arena} closes (an automatic
 * arena: when the segment is unreachable).
 */
public final class IoMemory {
    private IoMemory() {}

    /** The x86-64 (and arm64 4 KiB-granule) transparent huge page: 2 MiB. */
    public static final long HUGE_PAGE = 2L << 20;
    private static final Path THP_ENABLED = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
    private static final System.Logger LOG = System.getLogger(IoMemory.class.getName());

    /** The first refusal of the advice (null while none): reported once and by {@link #hugePages()}. */
    private static volatile String adviceRefused;

    /**
     * @param bytes at least 1
     * @param alignment a power of two up to {@link #HUGE_PAGE}; buffers for O_DIRECT need the device's
     *        logical block size at least
     * @return {@code bytes} of zeroed memory aligned to {@code alignment} (to {@link #HUGE_PAGE} from that size up)
     * @throws OutOfMemoryError when the kernel has no memory for the mapping (its errno in the message)
     */
    public static MemorySegment allocate(Arena arena, long bytes, long alignment) {
        if (bytes < 1) {
            throw new IllegalArgumentException("an I/O buffer of " + bytes + " bytes: give at least 1");
        }
        if (alignment < 1 || Long.bitCount(alignment) != 1 || alignment > HUGE_PAGE) {
            throw new IllegalArgumentException("I/O buffer alignment " + alignment + " must be a power of two"
                    + " up to " + HUGE_PAGE);
        }
        if (bytes < HUGE_PAGE) {
            return arena.allocate(bytes, alignment);
        }
        long length = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        // mmap aligns to 4 KiB only: map one huge page more, then give back what lies outside the aligned part
        long mapped = Syscalls.mmapAnonymous(length + HUGE_PAGE);
        if (mapped < 0) {
            throw new OutOfMemoryError("mmap of " + (length + HUGE_PAGE) + " bytes for I/O buffers failed: "
                    + Errno.describe((int) -mapped));
        }
        long base = (mapped + HUGE_PAGE - 1) & -HUGE_PAGE;
        unmap(mapped, base - mapped);
        unmap(base + length, mapped + HUGE_PAGE - base);
        int r = Syscalls.madvise(base, length, FdpNative.MADV_HUGEPAGE());
        if (r < 0 && adviceRefused == null) {
            adviceRefused = "madvise(MADV_HUGEPAGE) refused: " + Errno.describe(-r);
            LOG.log(System.Logger.Level.INFO, "I/O buffers stay on 4 KiB pages (" + adviceRefused + "; "
                    + THP_ENABLED + " = " + thpSetting() + ")");
        }
        return MemorySegment.ofAddress(base).reinterpret(bytes, arena, s -> unmap(base, length));
    }

    /** {@link #allocate(Arena, long, long)} aligned to 4 KiB at least. */
    public static MemorySegment allocate(Arena arena, long bytes) {
        return allocate(arena, bytes, 4096);
    }

    /**
     * What backs large I/O buffers here, for reports: e.g. "transparent huge pages (madvise)", or why not
     * ("4 KiB pages: transparent huge pages are off (never)").
     */
    public static String hugePages() {
        String setting = thpSetting();
        if (setting.equals("never") || setting.startsWith("unknown")) {
            return "4 KiB pages: transparent huge pages are " + (setting.equals("never") ? "off (never)" : setting);
        }
        String refused = adviceRefused;
        return refused != null ? "4 KiB pages: " + refused : "transparent huge pages (" + setting + ")";
    }

    /** The bracketed choice of {@code /sys/kernel/mm/transparent_hugepage/enabled}, e.g. "madvise". */
    private static String thpSetting() {
        try {
            String s = Files.readString(THP_ENABLED);
            int open = s.indexOf('[');
            int close = s.indexOf(']', open + 1);
            return open >= 0 && close > open ? s.substring(open + 1, close) : "unknown (" + s.trim() + ")";
        } catch (IOException | RuntimeException e) {
            return "unknown (" + THP_ENABLED + " unreadable: " + e.getMessage() + ")";
        }
    }

    private static void unmap(long address, long length) {
        if (length == 0) {
            return;
        }
        int r = Syscalls.munmap(address, length);
        if (r < 0) { // only with a bad address or length: a bug here, and the memory stays mapped
            LOG.log(System.Logger.Level.ERROR, "munmap(0x" + Long.toHexString(address) + ", " + length + ") failed: "
                    + Errno.describe(-r));
        }
    }
}
