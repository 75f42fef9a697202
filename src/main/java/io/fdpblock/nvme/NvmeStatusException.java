package io.fdpblock.nvme;

import java.io.IOException;

/** An NVMe command completed with an error status (SCT/SC with its name). */
public final class NvmeStatusException extends IOException {
    private static final long serialVersionUID = 1L;
    private final int raw;

    public NvmeStatusException(String command, NvmeStatus status) {
        super(command + " failed: " + status);
        this.raw = status.raw();
    }

    public NvmeStatus status() {
        return new NvmeStatus(raw);
    }
}
