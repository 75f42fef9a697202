package io.fdpblock.cli;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Multi-turn chat sessions over shared documents, the request stream of an LLM server's prefix cache:
 * each session opens on a shared prefix (a system prompt or a document, drawn from a catalogue with Zipf
 * popularity: a few are reused by many sessions, a long tail once), and every turn reloads the session's
 * whole prefix (document + conversation so far) and extends it by a few chunks. A fixed number of
 * sessions is open at once; each request continues one of them, drawn uniformly, so a session's turns
 * are spread over time, interleaved with the others'. A session ends after a geometric number of turns
 * (or when its conversation reaches its longest) and a new one takes its place.
 *
 * <p>For per-key LRU this mixes lifetimes inside every reclaim unit: the chunks written together belong
 * to sessions at different stages, which end (and whose chunks fall out of the cache) at different times.
 * Deterministic for a seed. Not thread-safe.
 */
final class SessionWorkload {
    /**
     * The parameters: the catalogue of shared prefixes ({@code documents}, Zipf exponent, chunks each drawn
     * uniformly in 1..{@code documentChunks}), how many sessions are open at once, the mean number of turns
     * of a session, the new chunks of a turn (1..{@code newChunks}) and the longest conversation.
     */
    record Params(int documents, double zipf, int documentChunks, int active, double turns, int newChunks,
            int sessionChunks) {
        static final String DEFAULT = "docs=10000,zipf=1.0,doc-chunks=8,active=450,turns=6,new=3,session-chunks=24";

        Params {
            check(documents >= 1, "docs", documents, "at least 1");
            check(zipf >= 0 && zipf <= 5, "zipf", zipf, "0..5 (0 = uniform)");
            check(documentChunks >= 1, "doc-chunks", documentChunks, "at least 1");
            check(active >= 1, "active", active, "at least 1");
            check(turns >= 1, "turns", turns, "at least 1 (the mean number of turns of a session)");
            check(newChunks >= 1, "new", newChunks, "at least 1");
            check(sessionChunks >= newChunks, "session-chunks", sessionChunks, "at least new (" + newChunks + ")");
        }

        private static void check(boolean ok, String name, Object value, String limit) {
            if (!ok) {
                throw new IllegalArgumentException("sessions: " + name + "=" + value + " must be " + limit);
            }
        }

        /** {@code name=value,...}: every name of {@link #DEFAULT}; names left out keep their default. */
        static Params parse(String spec) {
            Map<String, String> v = new LinkedHashMap<>();
            for (String kv : (DEFAULT + "," + spec).split(",")) {
                if (kv.isBlank()) {
                    continue;
                }
                int eq = kv.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("sessions: '" + kv.trim() + "' must be name=value, e.g. "
                            + DEFAULT);
                }
                v.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
            }
            List<String> known = List.of("docs", "zipf", "doc-chunks", "active", "turns", "new", "session-chunks");
            for (String k : v.keySet()) {
                if (!known.contains(k)) {
                    throw new IllegalArgumentException("sessions: unknown parameter '" + k + "'; known: " + known);
                }
            }
            try {
                return new Params(Integer.parseInt(v.get("docs")), Double.parseDouble(v.get("zipf")),
                        Integer.parseInt(v.get("doc-chunks")), Integer.parseInt(v.get("active")),
                        Double.parseDouble(v.get("turns")), Integer.parseInt(v.get("new")),
                        Integer.parseInt(v.get("session-chunks")));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("sessions: '" + spec + "' has a value that is not a number ("
                        + e.getMessage() + "); e.g. " + DEFAULT);
            }
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "docs=%d,zipf=%s,doc-chunks=%d,active=%d,turns=%s,new=%d,session-chunks=%d",
                    documents, zipf, documentChunks, active, turns, newChunks, sessionChunks);
        }
    }

    /**
     * One request: document {@code document} (its rank in popularity, 0 = most reused) of
     * {@code documentChunks} chunks, then the first {@code sessionChunks} chunks of session {@code session}'s
     * conversation; {@code turn} counts from 0, {@code last} says the session ends with it.
     */
    record Turn(int document, int documentChunks, String salt, long session, int sessionChunks, int turn,
            boolean last) {}

    private final Params p;
    private final List<String> salts;
    private final SplittableRandom rnd;
    /** Unnormalised cumulative Zipf weights by rank. */
    private final double[] cdf;
    private final int[] documentChunks;
    private final Session[] open;
    private long nextSession;

    private static final class Session {
        long id;
        int document;
        int chunks;
        int turn;
        int turnsLeft;
    }

    /** Documents take the salts in turn (document d gets {@code salts[d % salts.size()]}). */
    SessionWorkload(Params p, List<String> salts, long seed) {
        if (salts.isEmpty()) {
            throw new IllegalArgumentException("sessions need at least one salt");
        }
        this.p = p;
        this.salts = List.copyOf(salts);
        this.rnd = new SplittableRandom(seed);
        SplittableRandom lengths = rnd.split();
        cdf = new double[p.documents()];
        documentChunks = new int[p.documents()];
        double sum = 0;
        for (int d = 0; d < p.documents(); d++) {
            sum += Math.pow(d + 1, -p.zipf());
            cdf[d] = sum;
            documentChunks[d] = 1 + lengths.nextInt(p.documentChunks());
        }
        open = new Session[p.active()];
        for (int i = 0; i < open.length; i++) {
            open[i] = new Session();
            start(open[i]);
        }
    }

    private void start(Session s) {
        s.id = nextSession++;
        s.document = document(rnd.nextDouble());
        s.chunks = 0;
        s.turn = 0;
        s.turnsLeft = turns();
    }

    /** The rank whose cumulative weight first reaches {@code u} of the total. */
    private int document(double u) {
        double x = u * cdf[cdf.length - 1];
        int i = Arrays.binarySearch(cdf, x);
        return Math.min(cdf.length - 1, i >= 0 ? i : -i - 1);
    }

    /** Geometric with mean {@code p.turns()} (support 1, 2, ...). */
    private int turns() {
        int t = 1;
        while (rnd.nextDouble() >= 1 / p.turns()) {
            t++;
        }
        return t;
    }

    /** The next request. */
    Turn next() {
        Session s = open[rnd.nextInt(open.length)];
        if (s.turnsLeft == 0) {
            start(s);
        }
        s.chunks = Math.min(p.sessionChunks(), s.chunks + 1 + rnd.nextInt(p.newChunks()));
        s.turnsLeft--;
        if (s.chunks >= p.sessionChunks()) {
            s.turnsLeft = 0; // the conversation reached its longest: the session ends here
        }
        Turn t = new Turn(s.document, documentChunks[s.document], salts.get(s.document % salts.size()), s.id, s.chunks,
                s.turn++, s.turnsLeft == 0);
        return t;
    }

    /** Chunk ids of a turn: the document's, then the session's (prefix ids kept apart from each other). */
    static List<long[]> chunks(Turn t) {
        List<long[]> out = new ArrayList<>(t.documentChunks() + t.sessionChunks());
        for (int i = 0; i < t.documentChunks(); i++) {
            out.add(new long[] {documentPrefixId(t.document()), i});
        }
        for (int i = 0; i < t.sessionChunks(); i++) {
            out.add(new long[] {sessionPrefixId(t.session()), i});
        }
        return out;
    }

    /** Prefix id of a document: negative, so never a session's. */
    static long documentPrefixId(int document) {
        return -1L - document;
    }

    /** Prefix id of a session: its number, from 0. */
    static long sessionPrefixId(long session) {
        return session;
    }
}
