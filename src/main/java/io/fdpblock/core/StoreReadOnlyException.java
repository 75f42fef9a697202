package io.fdpblock.core;

import java.io.IOException;

/**
 * The store takes no puts: its metadata could not be made durable (a failed fdpblock_v2 log commit or
 * lmcache_v1 checkpoint). The message names the device, the failed call and errno, what was not made
 * durable and what to do; the cause is the failure itself.
 */
public final class StoreReadOnlyException extends IOException {
    private static final long serialVersionUID = 1L;

    /** A store made read-only by {@code cause}. */
    public StoreReadOnlyException(String message, Throwable cause) {
        super(message, cause);
    }
}
