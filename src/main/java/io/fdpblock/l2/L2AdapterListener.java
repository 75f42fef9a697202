package io.fdpblock.l2;

import java.util.List;

/**
 * Hears what an adapter holds (e.g. an eviction policy). Called outside the adapter's locks; an
 * exception is logged and never stops the adapter's signals.
 */
public interface L2AdapterListener {
    /** Keys newly stored (not duplicates), with their sizes in bytes; also the replay at registration. */
    default void onKeysStored(List<ObjectKey> keys, List<Long> sizes) {
    }

    /** Keys loaded successfully. */
    default void onKeysAccessed(List<ObjectKey> keys) {
    }

    /** Keys really removed. */
    default void onKeysDeleted(List<ObjectKey> keys) {
    }
}
