package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.IoBatch;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Rewriting a store in place from one {@link StoreFormat} to another (the tools' migrate), as the two
 * formats take part in it: every key keeps its slot, its slot header and its payload; only the metadata
 * area is rewritten, and its size (where the data starts) never changes. The tool opens the store in its
 * own format through {@link RawBlockCore} (its recovery and checks), lists its entries
 * ({@link RawBlockCore#forEachEntry}), and gets a {@link Source} from the store's format and a
 * {@link Target} from the other ({@link StoreFormat#migrationSource}, {@link StoreFormat#migrationTarget}).
 *
 * <p>Before anything is written: the target's writes before it commits ({@link Target#writesBeforeCommit})
 * must not overlap what holds the store meanwhile ({@link Source#keeps}), and {@link Target#plan} then
 * {@link Source#plan} refuse ({@link FormatRefusedException}) what does not fit. Then, in this order,
 * each step durable (flushed) before the next: {@link Source#beforeClose} (the store still open), the
 * store closed, {@link Target#prepareSlots}, {@link Source#confine}, {@link Target#writeBody},
 * {@link Target#commit}, {@link Source#erase}, {@link Target#finish}. One single-block write in
 * {@link Target#commit} or {@link Source#erase} commits ({@link Progress#committing}): stopped before it
 * lands, the device opens in the source format with every key; after, in the target's. Which one it opens
 * in is what {@link StoreFormats#find} makes of it (a header nearer the device's start wins), so the two
 * formats' headers decide where that write must be.
 */
public final class FormatMigration {
    private FormatMigration() {}

    /**
     * Bytes {@code [from, to)} of the metadata area, and what they hold, for messages.
     *
     * @param what e.g. "lmcache_v1 container 1"
     */
    public record Extent(long from, long to, String what) {
        /** Whether the two share a byte. */
        public boolean overlaps(Extent other) {
            return from < other.to && other.from < to;
        }
    }

    /** Zeroes one block at {@code offset} and flushes (a format's header, so that it reads as none). */
    public static void zeroBlock(BlockDevice device, long offset, int blockAlign) throws IOException {
        try (Arena arena = Arena.ofShared()) {
            IoBatch b = new IoBatch(1);
            b.write(offset, arena.allocate(blockAlign, 4096));
            device.execute(b);
            device.flush();
        }
    }

    /** A format's metadata of the store, in a phrase and its bytes, for the tool's report. */
    public record Metadata(String what, long bytes) {}

    /**
     * What the target wrote, for the tool's report.
     *
     * @param metadata its metadata written (superblocks and snapshot, checkpoints)
     * @param slotHeadersCompleted slot headers {@link Target#prepareSlots} rewrote
     * @param objectMetaDropped entries whose object metadata the target does not keep
     */
    public record Written(Metadata metadata, int slotHeadersCompleted, int objectMetaDropped) {}

    /** The store's own format: keeps the store readable until the target commits, then erases itself. */
    public interface Source {
        /** Where the store is held once {@link #confine} ran, until the target commits: the target writes elsewhere. */
        Extent keeps();

        /** Where the store is held while the write that commits is made, in a phrase, e.g. "container 1". */
        String heldIn();

        /** What to do about entries whose slot header disagrees with them (the migration refuses them), in a clause. */
        String whenEntriesDisagree();

        /**
         * Checked before anything is written, with the store's entries (each one's slot header agreeing)
         * and its next slot: refuses what the source cannot keep while the target is written.
         *
         * @return the metadata the store uses now (what the migration replaces)
         */
        Metadata plan(List<StoreEntry> entries, int nextSlot) throws IOException;

        /** The store still open (through its own writer): what must be made durable before it closes. */
        void beforeClose(Progress progress) throws IOException;

        /** The store closed: makes it readable from {@link #keeps} alone. */
        void confine(Progress progress) throws IOException;

        /** After the target's commit, or as its own commit: leaves nothing that reads as the source's store. */
        void erase(Progress progress) throws IOException;
    }

    /** The format the store becomes. Closed by the tool: it may hold memory of its own (an index to snapshot). */
    public interface Target extends AutoCloseable {
        /** Where it writes before it commits: {@link Source#keeps} must lie elsewhere. */
        Extent writesBeforeCommit();

        /** Where the store is held once committed, in a phrase (for messages). */
        String heldIn();

        /** Checked before anything is written: refuses what does not fit the metadata area. */
        void plan(List<StoreEntry> entries, int nextSlot) throws IOException;

        /** Rewrites the slot headers its recovery needs in another form (what others read unchanged); flushed. */
        void prepareSlots(Progress progress) throws IOException;

        /** Writes its metadata where {@link #writesBeforeCommit} says. */
        void writeBody(Progress progress) throws IOException;

        /** Writes what makes the device open in this format (nothing, where the source's erase commits). */
        void commit(Progress progress) throws IOException;

        /** Writes the rest (a second copy); says what it wrote in all. */
        Written finish(Progress progress) throws IOException;

        @Override
        void close();
    }

    /**
     * Where a migration is, for its report (the steps done, the bytes written) and for a failure's message,
     * which says what the device holds if it stopped there.
     */
    public static final class Progress {
        private final String path;
        private final String source;
        private final String sourceHeldIn;
        private final String target;
        private final String targetHeldIn;
        private final List<String> steps = new ArrayList<>();
        private final AtomicLong written = new AtomicLong();
        private String step = "";
        private String ifStoppedNow;

        /**
         * @param source the source format's name, {@code sourceHeldIn} its {@link Source#heldIn}
         * @param target the target format's name, {@code targetHeldIn} its {@link Target#heldIn}
         */
        public Progress(String path, String source, String sourceHeldIn, String target, String targetHeldIn) {
            this.path = path;
            this.source = source;
            this.sourceHeldIn = sourceHeldIn;
            this.target = target;
            this.targetHeldIn = targetHeldIn;
            this.ifStoppedNow = "The device still holds the " + source + " store with every key (it opens as before);"
                    + " run migrate again to finish";
        }

        /** The device, as the tool names it. */
        public String path() {
            return path;
        }

        /** The source format's name. */
        public String source() {
            return source;
        }

        /** The target format's name. */
        public String target() {
            return target;
        }

        /** A step starts: a failure from here says it stopped while it did {@code what}. */
        public void begin(String what) {
            step = what;
        }

        /** A step is done, in a sentence for the report. */
        public void done(String what) {
            steps.add(what);
        }

        /** Counts bytes written. */
        public void wrote(long bytes) {
            written.addAndGet(bytes);
        }

        /** The counter of bytes written, for a writer that counts them itself. */
        public AtomicLong written() {
            return written;
        }

        /** The write that commits is next: {@code write} names it ("superblock A"). */
        public void committing(String write) {
            ifStoppedNow = "The device holds every key, as " + source + " (" + sourceHeldIn + ") or, if " + write
                    + " landed, as " + target + " (" + targetHeldIn + "); run migrate again (it finishes, or says there"
                    + " is nothing left to do)";
        }

        /** The write that commits landed. */
        public void committed() {
            ifStoppedNow = "The device holds the " + target + " store with every key (" + targetHeldIn + "; committed);"
                    + " what is left only tidies up";
        }

        /** The steps done, in order. */
        public List<String> steps() {
            return List.copyOf(steps);
        }

        /** The failure of the step under way, saying what the device now holds. */
        public IOException failed(Throwable e) {
            return new IOException("migrate of " + path + " stopped while it " + step + ": " + e.getMessage() + ". "
                    + ifStoppedNow, e);
        }
    }
}
