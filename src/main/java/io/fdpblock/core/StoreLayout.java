package io.fdpblock.core;

/**
 * What a store's format records of its layout, in the terms every format shares, each the configuration
 * setting of that name ({@link StoreFormat#recordedLayout}): what a tool that opens a store without its
 * configuration (migrate) configures it with.
 *
 * @param capacityBytes {@code capacity_bytes}: bytes of the device the store uses
 * @param blockAlign {@code block_align}
 * @param headerBytes {@code header_bytes}: a slot's header
 * @param slotBytes {@code slot_bytes}: a slot, header and payload
 * @param metaTotalBytes {@code meta_total_bytes}: the metadata area; the data area starts here
 */
public record StoreLayout(long capacityBytes, int blockAlign, int headerBytes, long slotBytes, long metaTotalBytes) {
    /**
     * The layout values a tool was given (null: not given), which a format uses where it records none
     * (and to find what it records, e.g. lmcache_v1's second container); where it records one, the
     * store's open compares the two.
     */
    public record Given(Integer blockAlign, Integer headerBytes, Long slotBytes, Long metaTotalBytes,
            Long capacityBytes) {
        /** Nothing given: every value as the store records it. */
        public static final Given NONE = new Given(null, null, null, null, null);

        /** How the tools name the option that gives {@code setting}, e.g. {@code --meta-total-bytes}. */
        public static String option(String setting) {
            return "--" + setting.replace('_', '-');
        }
    }

    /** The slots after the metadata area. */
    public long maxSlots() {
        return (capacityBytes - metaTotalBytes) / slotBytes;
    }

    /** The most payload bytes a slot holds. */
    public long maxPayloadBytes() {
        return slotBytes - headerBytes;
    }

    /** The device offset of a slot (its header). */
    public long slotOffset(int slot) {
        return metaTotalBytes + (long) slot * slotBytes;
    }
}
