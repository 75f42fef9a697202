package io.fdpblock.core;

/**
 * What a format's recovery found on the device, in terms every format shares: the status reports it
 * ({@code recovery}, {@code recovered_keys}, {@code metadata_damage}, ...).
 *
 * @param seq the sequence number of the checkpoint or snapshot recovered from (0: none)
 * @param note what happened, in a sentence for the log and the status
 * @param recoveredKeys keys the index holds after recovery
 * @param droppedKeys keys dropped because their slot headers did not check out
 * @param fellBack whether an older copy served because a newer one could not be applied
 * @param damage the damage opened past ({@code open_damaged}), or null
 * @param lostKeys keys that damage lost (-1: unknown), 0 without damage
 */
public record RecoveryResult(long seq, String note, int recoveredKeys, int droppedKeys, boolean fellBack,
        String damage, long lostKeys) {
    /** A recovery without damage. */
    public RecoveryResult(long seq, String note, int recoveredKeys, int droppedKeys, boolean fellBack) {
        this(seq, note, recoveredKeys, droppedKeys, fellBack, null, 0);
    }
}
