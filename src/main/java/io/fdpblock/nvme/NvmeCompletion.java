package io.fdpblock.nvme;

import io.fdpblock.linux.Errno;

import java.io.IOException;

/**
 * The one decoder of an NVMe passthru completion as the kernel reports it, for the ring
 * ({@code IORING_OP_URING_CMD}: CQE {@code res}) and the ioctl alike: 0 = success (not a byte
 * count), {@code > 0} = the NVMe status (SCT/SC/DNR...), {@code < 0} = {@code -errno}.
 */
public final class NvmeCompletion {
    private NvmeCompletion() {}

    /**
     * @param what the command and device, for the message
     * @return null on success, else the failure naming {@code what}, the status or errno
     */
    public static IOException failure(String what, int res) {
        if (res == 0) {
            return null;
        }
        if (res > 0) {
            return new NvmeStatusException(what, new NvmeStatus(res));
        }
        return Errno.exception(what, -res);
    }

    /** @throws IOException when {@code res} is not a success */
    public static void check(String what, int res) throws IOException {
        IOException e = failure(what, res);
        if (e != null) {
            throw e;
        }
    }
}
