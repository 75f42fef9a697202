package io.fdpblock.cli;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import java.util.Arrays;

/** The request stream of {@code fdpblock waf --workloads sessions}: its distributions, its sessions, its seed. */
@Tag("unit")
class SessionWorkloadTest {
    private static final List<String> SALTS = List.of("rag:app1", "chat:app2", "code:app3", "");

    private static List<SessionWorkload.Turn> turns(SessionWorkload.Params p, long seed, int n) {
        SessionWorkload w = new SessionWorkload(p, SALTS, seed);
        List<SessionWorkload.Turn> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(w.next());
        }
        return out;
    }

    @Test
    void theSameSeedGivesTheSameRequestsAndAnotherSeedOthers() {
        SessionWorkload.Params p = SessionWorkload.Params.parse("");
        List<SessionWorkload.Turn> a = turns(p, 7, 5000);
        assertThat(turns(p, 7, 5000)).isEqualTo(a);
        List<SessionWorkload.Turn> b = turns(p, 8, 5000);
        long same = 0;
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i).equals(b.get(i))) {
                same++;
            }
        }
        assertThat(same).as("requests equal at the same position under another seed").isLessThan(50);
    }

    @Test
    void documentsFollowZipfPopularity() {
        // every turn a session of its own, so each turn draws a document
        SessionWorkload.Params p = new SessionWorkload.Params(1000, 1.0, 4, 1, 1, 1, 4);
        int n = 200_000;
        Map<Integer, Integer> counts = new HashMap<>();
        for (SessionWorkload.Turn t : turns(p, 1, n)) {
            assertThat(t.turn()).isZero();
            counts.merge(t.document(), 1, Integer::sum);
        }
        double h = 0;
        for (int r = 1; r <= 1000; r++) {
            h += 1.0 / r;
        }
        // rank r (from 1) has probability 1 / (r H), H the harmonic number: 13.4 % for the first of 1000
        assertThat(counts.get(0) / (double) n).isCloseTo(1 / h, within(0.01));
        assertThat(counts.get(0) / (double) counts.get(1)).isCloseTo(2.0, within(0.1));
        assertThat(counts.get(0) / (double) counts.get(9)).isCloseTo(10.0, within(1.0));
        int top10 = 0;
        for (int r = 0; r < 10; r++) {
            top10 += counts.getOrDefault(r, 0);
        }
        double h10 = 0;
        for (int r = 1; r <= 10; r++) {
            h10 += 1.0 / r;
        }
        assertThat(top10 / (double) n).isCloseTo(h10 / h, within(0.01));
        assertThat(counts.keySet()).as("the tail is drawn too").hasSizeGreaterThan(900);
    }

    @Test
    void zipfZeroIsUniform() {
        SessionWorkload.Params p = new SessionWorkload.Params(10, 0, 4, 1, 1, 1, 4);
        int[] counts = new int[10];
        for (SessionWorkload.Turn t : turns(p, 3, 100_000)) {
            counts[t.document()]++;
        }
        for (int c : counts) {
            assertThat(c / 100_000.0).isCloseTo(0.1, within(0.006));
        }
    }

    @Test
    void aSessionReloadsItsPrefixAndExtendsItEachTurn() {
        SessionWorkload.Params p = new SessionWorkload.Params(100, 1.0, 8, 20, 5, 3, 1000);
        Map<Long, SessionWorkload.Turn> lastOf = new HashMap<>();
        Set<Long> ended = new HashSet<>();
        List<Integer> turnCounts = new ArrayList<>();
        for (SessionWorkload.Turn t : turns(p, 11, 100_000)) {
            assertThat(ended.contains(t.session())).as("a session that ended gets no more turns").isFalse();
            assertThat(t.documentChunks()).isBetween(1, 8);
            assertThat(t.salt()).isEqualTo(SALTS.get(t.document() % SALTS.size()));
            SessionWorkload.Turn prev = lastOf.put(t.session(), t);
            if (prev == null) {
                assertThat(t.turn()).isZero();
                assertThat(t.sessionChunks()).isBetween(1, 3);
            } else {
                assertThat(t.turn()).isEqualTo(prev.turn() + 1);
                assertThat(t.document()).isEqualTo(prev.document());
                assertThat(t.sessionChunks() - prev.sessionChunks()).isBetween(1, 3);
                // the earlier turn's chunks are the start of this one's: a prefix reloaded
                assertThat(SessionWorkload.chunks(t).subList(0, prev.documentChunks() + prev.sessionChunks()))
                        .usingElementComparator((x, y) -> Arrays.equals(x, y) ? 0 : 1)
                        .containsExactlyElementsOf(SessionWorkload.chunks(prev));
            }
            assertThat(lastOf.size() - ended.size()).as("sessions open at once").isLessThanOrEqualTo(20);
            if (t.last()) {
                ended.add(t.session());
                turnCounts.add(t.turn() + 1);
            }
        }
        assertThat(turnCounts).hasSizeGreaterThan(15_000);
        double mean = turnCounts.stream().mapToInt(Integer::intValue).average().orElseThrow();
        assertThat(mean).as("geometric turns, mean 5").isCloseTo(5.0, within(0.15));
        long single = turnCounts.stream().filter(c -> c == 1).count();
        assertThat(single / (double) turnCounts.size()).as("P(1 turn) = 1/5").isCloseTo(0.2, within(0.015));
    }

    @Test
    void aConversationEndsAtItsLongest() {
        SessionWorkload.Params p = new SessionWorkload.Params(10, 1.0, 2, 4, 1000, 3, 12);
        int endedAtLongest = 0;
        int ended = 0;
        for (SessionWorkload.Turn t : turns(p, 5, 10_000)) {
            assertThat(t.sessionChunks()).isLessThanOrEqualTo(12);
            if (t.sessionChunks() == 12) {
                assertThat(t.last()).isTrue();
                endedAtLongest++;
            }
            ended += t.last() ? 1 : 0;
        }
        // with a mean of 1000 turns, nearly every session ends because its conversation is full
        assertThat(ended).isGreaterThan(1000);
        assertThat(endedAtLongest).isGreaterThan(ended * 95 / 100);
    }

    @Test
    void documentAndSessionChunksNeverShareAPrefixId() {
        SessionWorkload.Turn t = new SessionWorkload.Turn(0, 2, "", 0, 3, 0, false);
        List<long[]> c = SessionWorkload.chunks(t);
        assertThat(c).hasSize(5);
        assertThat(c.get(0)[0]).isNotEqualTo(c.get(2)[0]);
        assertThat(c.subList(0, 2)).allSatisfy(x -> assertThat(x[0]).isEqualTo(SessionWorkload.documentPrefixId(0)));
        assertThat(c.subList(2, 5)).allSatisfy(x -> assertThat(x[0]).isEqualTo(SessionWorkload.sessionPrefixId(0)));
    }

    @Test
    void parametersParseByNameAndBadOnesAreNamed() {
        SessionWorkload.Params p = SessionWorkload.Params.parse("active=7, zipf=0.8");
        assertThat(p.active()).isEqualTo(7);
        assertThat(p.zipf()).isEqualTo(0.8);
        assertThat(p.documents()).isEqualTo(10000);
        assertThat(SessionWorkload.Params.parse(p.toString())).isEqualTo(p);
        assertThatThrownBy(() -> SessionWorkload.Params.parse("actives=7")).hasMessageContaining("'actives'")
                .hasMessageContaining("known");
        assertThatThrownBy(() -> SessionWorkload.Params.parse("active=0")).hasMessageContaining("active=0")
                .hasMessageContaining("at least 1");
        assertThatThrownBy(() -> SessionWorkload.Params.parse("turns=x")).hasMessageContaining("not a number");
        assertThatThrownBy(() -> SessionWorkload.Params.parse("new=5,session-chunks=4"))
                .hasMessageContaining("session-chunks=4");
    }
}
