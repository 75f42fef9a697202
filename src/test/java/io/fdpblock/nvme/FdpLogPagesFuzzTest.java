package io.fdpblock.nvme;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fdpblock.fuzz.Fuzzing;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.List;

/**
 * FDP data a device returns: the configurations log (0x20), RUH status (I/O Management Receive), the RUH
 * usage log (0x21), statistics (0x22) and events (0x23), each through its parser in {@link FdpRecords}.
 * Input: one byte choosing the page, then the page as returned (any length). Documented: IOException
 * with a message when a count or size in the page claims more than was returned.
 */
public class FdpLogPagesFuzzTest {
    @FuzzTest
    void logPage(byte[] input) {
        check(input);
    }

    public static void check(byte[] input) {
        if (input.length == 0) {
            return;
        }
        byte[] d = Arrays.copyOfRange(input, 1, input.length);
        MemorySegment seg = MemorySegment.ofArray(d);
        try {
            switch (Byte.toUnsignedInt(input[0]) % 5) {
                case 0 -> configurations(d, FdpRecords.FdpConfigurations.parse(seg));
                case 1 -> ruhStatus(d, FdpRecords.RuhStatus.parse(seg));
                case 2 -> ruhUsage(d, FdpRecords.RuhUsage.parse(seg));
                case 3 -> statistics(d, FdpRecords.FdpStatistics.parse(seg));
                default -> events(d, FdpRecords.FdpEvent.parseAll(seg));
            }
        } catch (IOException e) {
            Fuzzing.requireMessage(e);
        }
    }

    private static void configurations(byte[] d, FdpRecords.FdpConfigurations c) {
        if (c.configurations().size() != Fuzzing.u16(d, 0) + 1) {
            throw Fuzzing.wrong("configuration count", c.configurations().size(), "NUMFDPC + 1 = " + (Fuzzing.u16(d, 0) + 1));
        }
        for (int i = 0; i < c.configurations().size(); i++) {
            FdpRecords.FdpConfiguration f = c.configurations().get(i);
            if (f.index() != i || f.handleTypes().size() != f.reclaimUnitHandles()
                    || f.placementHandleBits() < 1 || f.placementHandleBits() > 16) {
                throw Fuzzing.wrong("configuration " + i, f, "its index, NRUH handle types and 1..16 handle bits");
            }
        }
    }

    private static void ruhStatus(byte[] d, FdpRecords.RuhStatus s) {
        int n = Fuzzing.u16(d, 14);
        if (s.entries().size() != n) {
            throw Fuzzing.wrong("RUH status descriptors", s.entries().size(), "NRUHSD = " + n);
        }
        if (n > 0) {
            int pid = Fuzzing.u16(d, 16);
            if (s.placementIds().get(0) != pid || s.forPlacementId(pid) == null
                    || s.entries().get(0).availableMediaWritesLbas() != Fuzzing.u64(d, 24)) {
                throw Fuzzing.wrong("first RUH status descriptor", s.entries().get(0), "PID " + pid);
            }
        }
    }

    private static void ruhUsage(byte[] d, FdpRecords.RuhUsage u) {
        int n = Fuzzing.u16(d, 0);
        if (u.attributes().size() != n) {
            throw Fuzzing.wrong("RUH usage descriptors", u.attributes().size(), "NRUH = " + n);
        }
        for (int i = 0; i < n; i++) {
            if (u.attributes().get(i) != Byte.toUnsignedInt(d[8 + 8 * i])) {
                throw Fuzzing.wrong("RUHA " + i, u.attributes().get(i), d[8 + 8 * i] & 0xFF);
            }
        }
    }

    private static void statistics(byte[] d, FdpRecords.FdpStatistics s) {
        List<BigInteger> got = List.of(s.hostBytesWritten(), s.mediaBytesWritten(), s.mediaBytesErased());
        for (int i = 0; i < 3; i++) {
            byte[] be = new byte[17];
            for (int b = 0; b < 16; b++) {
                be[16 - b] = d[16 * i + b];
            }
            if (!got.get(i).equals(new BigInteger(be))) {
                throw Fuzzing.wrong("128-bit counter " + i, got.get(i), new BigInteger(be));
            }
        }
        if (!Double.isNaN(s.waf(s))) {
            throw Fuzzing.wrong("WAF over no host writes", s.waf(s), "NaN");
        }
    }

    private static void events(byte[] d, List<FdpRecords.FdpEvent> events) {
        long n = Fuzzing.u32(d, 0);
        if (events.size() != n) {
            throw Fuzzing.wrong("events", events.size(), "NEVENTS = " + n);
        }
        for (FdpRecords.FdpEvent e : events) {
            if (e.typeName().isBlank()) {
                throw Fuzzing.wrong("event type name", e, "a name");
            }
        }
    }
}
