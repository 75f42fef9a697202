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
 * device gets the configured one; damage is refused. Nothing is written while the formats look.
 */
final class StoreFormats {
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
    static StoreFormat named(String name) {
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
        StoreFormat store = null;
        long storeAt = Long.MAX_VALUE;
        StoreFormat traces = null;
        Detection damaged = null;
        for (StoreFormat f : ALL) {
            Detection d = f.detect(probe);
            switch (d.kind()) {
                case STORE -> {
                    if (d.offset() < storeAt) {
                        store = f;
                        storeAt = d.offset();
                    }
                }
                case DAMAGED -> damaged = damaged == null ? d : damaged;
                case TRACES -> traces = traces == null ? f : traces;
                case NONE -> { }
            }
        }
        if (store != null) {
            return store.open(probe);
        }
        if (damaged != null) {
            throw new StoreRefusedException(StoreRefusedException.Reason.UNREADABLE, damaged.problem());
        }
        return traces != null ? traces.open(probe) : configured.create(probe);
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
