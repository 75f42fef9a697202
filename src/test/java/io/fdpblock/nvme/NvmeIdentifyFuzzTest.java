package io.fdpblock.nvme;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.fuzz.Fuzzing;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * What a device answers to Identify and to any command: Identify Controller
 * ({@link FdpRecords.ControllerInfo}), Identify Namespace ({@link FdpRecords.NamespaceInfo}) and the
 * completion status ({@link NvmeStatus}). Input: one byte choosing the structure, then the bytes the
 * device returned (any length: a short or lying answer must be an IOException, never an overread).
 * Documented: IOException with a message (identify); nothing for a status, which is any 32-bit value.
 */
public class NvmeIdentifyFuzzTest {
    @FuzzTest
    void identify(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        if (input.length == 0) {
            return;
        }
        byte[] d = Arrays.copyOfRange(input, 1, input.length);
        MemorySegment seg = MemorySegment.ofArray(d);
        try {
            switch (Byte.toUnsignedInt(input[0]) % 3) {
                case 0 -> controller(d, FdpRecords.ControllerInfo.parse(seg));
                case 1 -> namespace(d, FdpRecords.NamespaceInfo.parse(seg));
                default -> status(Fuzzing.padded(d, 0, 4));
            }
        } catch (IOException e) {
            Fuzzing.requireMessage(e);
        }
    }

    private static void controller(byte[] d, FdpRecords.ControllerInfo c) {
        if (d.length < 100) {
            throw Fuzzing.wrong("identify controller of " + d.length + " bytes", c, "an IOException (CTRATT is at 96)");
        }
        if (c.mdts() != Byte.toUnsignedInt(d[77]) || c.ctratt() != Fuzzing.u32(d, 96)
                || c.fdpSupported() != ((d[98] & 0x08) != 0)) {
            throw Fuzzing.wrong("identify controller", c, "MDTS " + d[77] + ", CTRATT " + Fuzzing.u32(d, 96));
        }
        if (c.model().length() > 40 || c.serial().length() > 20) {
            throw Fuzzing.wrong("model/serial", c.model() + "/" + c.serial(), "at most 40/20 characters");
        }
    }

    private static void namespace(byte[] d, FdpRecords.NamespaceInfo n) {
        if (n.lbaSize() < 512 || n.lbaSize() > 65536 || Integer.bitCount(n.lbaSize()) != 1) {
            throw Fuzzing.wrong("LBA size", n.lbaSize(), "a power of two in 512..65536 (else an IOException)");
        }
        if (n.sizeBlocks() != Fuzzing.u64(d, 0) || n.enduranceGroup() != Fuzzing.u16(d, 102)) {
            throw Fuzzing.wrong("identify namespace", n, "NSZE " + Fuzzing.u64(d, 0) + ", ENDGID " + Fuzzing.u16(d, 102));
        }
    }

    private static void status(byte[] d) {
        NvmeStatus s = new NvmeStatus((int) Fuzzing.u32(d, 0));
        if (s.sc() != Byte.toUnsignedInt(d[0]) || s.sct() != (d[1] & 0x7) || s.name().isBlank()
                || !s.toString().contains(s.name())) {
            throw Fuzzing.wrong("completion status", s, Arrays.toString(d));
        }
    }
}
