package io.fdpblock.nvme;

/**
 * An NVMe completion status as the kernel returns it from passthru (ioctl result, or a positive CQE
 * {@code res}): SC bits 7:0, SCT bits 10:8, CRD 12:11, MORE bit 13, DNR bit 14.
 */
public record NvmeStatus(int raw) {
    public int sc() {
        return raw & 0xFF;
    }

    public int sct() {
        return (raw >>> 8) & 0x7;
    }

    public boolean doNotRetry() {
        return (raw & (1 << 14)) != 0;
    }

    public boolean more() {
        return (raw & (1 << 13)) != 0;
    }

    /** A name for the status where the specification gives one that matters here. */
    public String name() {
        int sct = sct();
        int sc = sc();
        if (sct == 0) {
            return switch (sc) {
                case 0x00 -> "Successful Completion";
                case 0x01 -> "Invalid Command Opcode";
                case 0x02 -> "Invalid Field in Command";
                case 0x04 -> "Data Transfer Error";
                case 0x06 -> "Internal Error";
                case 0x0B -> "Invalid Namespace or Format";
                case 0x0D -> "Invalid SGL Segment Descriptor";
                case 0x29 -> "FDP Disabled";
                case 0x2A -> "Invalid Placement Handle List";
                case 0x80 -> "LBA Out of Range";
                case 0x81 -> "Capacity Exceeded";
                case 0x82 -> "Namespace Not Ready";
                default -> "generic status 0x" + Integer.toHexString(sc);
            };
        }
        if (sct == 1) {
            return switch (sc) {
                case 0x02 -> "Invalid Field (command specific)";
                case 0x09 -> "Invalid Log Page";
                case 0x0D -> "Feature Identifier Not Saveable";
                case 0x0E -> "Feature Not Changeable";
                case 0x0F -> "Feature Not Namespace Specific";
                case 0x80 -> "Conflicting Attributes";
                default -> "command specific status 0x" + Integer.toHexString(sc);
            };
        }
        if (sct == 2) {
            return switch (sc) {
                case 0x80 -> "Write Fault";
                case 0x81 -> "Unrecovered Read Error";
                case 0x85 -> "Compare Failure";
                case 0x86 -> "Access Denied";
                default -> "media error 0x" + Integer.toHexString(sc);
            };
        }
        return "status type " + sct + " code 0x" + Integer.toHexString(sc);
    }

    @Override
    public String toString() {
        return "NVMe status SCT " + sct() + " SC 0x" + String.format("%02x", sc()) + " (" + name() + ")"
                + (doNotRetry() ? ", do not retry" : "");
    }
}
