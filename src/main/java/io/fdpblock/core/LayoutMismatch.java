package io.fdpblock.core;

/**
 * A layout field (block_align, slot_bytes, capacity_bytes, ...) whose value stored on the device differs
 * from the configured one: every format compares its stored layout with the configuration when it opens,
 * and refuses the device with the first field that differs.
 *
 * @param field the configuration's name of the field
 * @param stored the value on the device, as written there
 * @param configured the value the configuration gives
 */
public record LayoutMismatch(String field, String stored, String configured) {
    @Override
    public String toString() {
        return field + " is " + stored + " on the device but " + configured + " in the configuration";
    }

    /**
     * The refusal to open the device, saying how to open it after all.
     *
     * @param written what was written with another layout, e.g. "the fdpblock_v2 store was created"
     */
    public StoreRefusedException refusal(String devicePath, String written) {
        return new StoreRefusedException(StoreRefusedException.Reason.LAYOUT_MISMATCH, "raw_block on " + devicePath
                + ": " + written + " with another layout: " + this + ". Nothing was changed: open it with " + field
                + " = " + stored + ", or set \"format\": true to discard it");
    }
}
