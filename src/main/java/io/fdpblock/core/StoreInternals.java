package io.fdpblock.core;

/**
 * What the tools that rewrite an open store's metadata in place (migration between the formats) see of
 * it: its parts as its format sees them, its index, and what its recovery found. Not for a store's
 * users: nothing here is needed to put, load or delete.
 *
 * @param context the store's parts, as its format's index and metadata writer get them
 * @param index the store's index (of its format's class)
 * @param recovered what the store's open recovered
 */
public record StoreInternals(StoreContext context, StoreIndex index, RecoveryResult recovered) {
    /** The parts of an open store. */
    public static StoreInternals of(RawBlockCore core) {
        return new StoreInternals(new StoreContext(core.config, core.device, core.lock, core.slots, core.parts.salts(),
                core.parts.placement().metadata(), core.capacityBytes, core.dataBase, core.slotBytes, core.headerBytes),
                core.index, core.recovered);
    }
}
