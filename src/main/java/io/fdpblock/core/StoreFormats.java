package io.fdpblock.core;

import io.fdpblock.device.BlockDevice;
import io.fdpblock.device.MemberLabel;
import io.fdpblock.device.StripedBlockDevice;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/**
 * The store formats by name, as {@link ServiceLoader} finds them, and which one opens a device: an
 * existing store opens in its own format whatever the configuration's {@code meta_format} says; a new
 * device gets the configured one; damage is refused. Nothing is written while the formats look. The
 * tools (migrate, inspect) ask it the same: which format a device holds, by the store's own rule.
 */
public final class StoreFormats {
    private static final List<StoreFormat> ALL = load();

    private StoreFormats() {}

    private static List<StoreFormat> load() {
        List<StoreFormat> out = new ArrayList<>();
        for (StoreFormat f : ServiceLoader.load(StoreFormat.class, StoreFormats.class.getClassLoader())) {
            out.add(f);
        }
        return List.copyOf(out);
    }

    /** The format of this {@code meta_format} name. */
    public static StoreFormat named(String name) {
        for (StoreFormat f : ALL) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        throw new IllegalStateException("no store format named " + name + " among " + ALL.stream()
                .map(StoreFormat::name).toList() + " (META-INF/services/" + StoreFormat.class.getName() + ")");
    }

    /**
     * The store {@code probe}'s device holds, opened far enough to say where its data area starts; with
     * {@code "format": true} whatever it holds is erased first and the configured format makes a new one.
     * A header nearer the device's start wins over another format's; a damaged one refuses; a trace (a
     * second copy) opens in its format; else the configured format creates a store.
     */
    static StoreFormat.Opening open(ProbeContext probe) throws IOException {
        StoreFormat configured = named(probe.config().metaFormat().configName());
        if (probe.config().format()) {
            StoreFormat.Opening opening = configured.create(probe); // writes nothing yet: checked before erasing
            probe.checkMetadataFits(opening.metaTotalBytes(), 0);
            for (StoreFormat f : ALL) {
                f.erase(probe);
            }
            return opening;
        }
        refuseStripeMember(probe.device());
        Found found = find(probe);
        if (found == null) {
            return configured.create(probe);
        }
        if (found.detection().kind() == Detection.Kind.DAMAGED) {
            throw new StoreRefusedException(StoreRefusedException.Reason.UNREADABLE, found.detection().problem());
        }
        return found.format().open(probe);
    }

    /** The formats, in the order the service files list them. */
    public static List<StoreFormat> all() {
        return ALL;
    }

    /** What one format found: the one that opens the device. */
    public record Found(StoreFormat format, Detection detection) {}

    /**
     * What the device holds, as its open sees it: a header nearer the device's start wins over another
     * format's; else a damaged one; else a trace (a second copy); null when nothing of any format.
     */
    public static Found find(ProbeContext probe) throws IOException {
        Found store = null;
        Found damaged = null;
        Found traces = null;
        for (StoreFormat f : ALL) {
            Detection d = f.detect(probe);
            switch (d.kind()) {
                case STORE -> {
                    if (store == null || d.offset() < store.detection().offset()) {
                        store = new Found(f, d);
                    }
                }
                case DAMAGED -> damaged = damaged == null ? new Found(f, d) : damaged;
                case TRACES -> traces = traces == null ? new Found(f, d) : traces;
                case NONE -> { }
            }
        }
        return store != null ? store : damaged != null ? damaged : traces;
    }

    /**
     * A single device that carries a striped store's member label is one member of several: whatever
     * a format would do with it alone (take it for foreign data, offer to format it) is wrong.
     */
    private static void refuseStripeMember(BlockDevice device) throws IOException {
        if (device instanceof StripedBlockDevice) {
            return; // its offset 0 is past its members' labels
        }
        if (MemberLabel.read(device) instanceof MemberLabel.Read.Label(MemberLabel l)) {
            throw new StoreRefusedException(StoreRefusedException.Reason.WRONG_MEMBERS, "raw_block on " + device.path()
                    + ": it is " + l.describe() + ", not a store of its own. Nothing was changed: open the store"
                    + " with device_paths listing its " + l.count() + " members in its order (this one at position "
                    + l.index() + ")");
        }
    }
}
