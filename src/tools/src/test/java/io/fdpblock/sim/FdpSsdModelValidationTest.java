package io.fdpblock.sim;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The model against published closed forms before anything it says about placement is trusted.
 *
 * <p>Reference: Peter Desnoyers, "Analytic Modeling of SSD Write Performance", SYSTOR '12,
 * doi:10.1145/2367589.2367603 (extended in ACM Transactions on Storage 10(2), 2014), equations 4
 * (FIFO/"LRU" cleaning), 12 (greedy), 14 (hot/cold mixed, FIFO) and 20-22 (hot/cold in separate pools,
 * spare split optimally); see {@link Desnoyers}. Their setting is the one modelled here: uniform (or
 * two-class uniform) random single-page writes to a full device in steady state, many erase blocks.
 * A mapping unit is the paper's page, a reclaim unit its erase block, over-provisioning op = alpha - 1.
 *
 * <p>Every run starts from a preconditioned (full) namespace, writes 2x its size to reach steady state,
 * then measures over 4x; seeds are fixed, so the figures are exact from run to run. The namespaces have
 * 2^18 pages (2^15 for Np 32), over a thousand reclaim units: the few units the model keeps open or free
 * then take under 0.3 % of the spare space (with a few hundred units the model reads a few per cent
 * high at 10 % over-provisioning, as Desnoyers' own simulator would without its T = U alpha + minfree).
 */
@Tag("unit")
class FdpSsdModelValidationTest {
    private static final int UNIT = 4096;
    /** The bound this validation holds the model to: within 5 % of the analytic result. */
    private static final double TOLERANCE = 0.05;
    private static final double[] OP_LEVELS = {0.10, 0.25, 0.50, 1.00};

    /** One handle, {@code units} logical pages, {@code np} pages per reclaim unit. */
    private static ModelConfig uniformDevice(long units, int np, double op, GcPolicy gc) {
        return new ModelConfig(units * UNIT, UNIT, (long) np * UNIT, 1, List.of(HandleType.INITIALLY_ISOLATED), 0,
                List.of(0), op, gc);
    }

    /** Steady-state WAF of uniform random single-page writes. */
    private static double uniformWaf(long units, int np, double op, GcPolicy gc) {
        FdpSsdModel m = new FdpSsdModel(uniformDevice(units, np, op, gc));
        m.precondition();
        SplittableRandom rnd = new SplittableRandom(20120604);
        for (long i = 0; i < 2 * units; i++) {
            m.write(rnd.nextLong(units) * UNIT, UNIT, 0);
        }
        long host = m.hostUnits();
        long media = m.mediaUnits();
        for (long i = 0; i < 4 * units; i++) {
            m.write(rnd.nextLong(units) * UNIT, UNIT, 0);
        }
        return (double) (m.mediaUnits() - media) / (m.hostUnits() - host);
    }

    private static void compare(String what, double op, double model, double analytic) {
        System.out.printf(Locale.ROOT, "%-34s op %4.2f  model %.4f  analytic %.4f  %+.2f %%%n", what, op, model, analytic,
                100 * (model / analytic - 1));
        assertThat(model / analytic).as("%s at over-provisioning %.2f: model %.4f vs analytic %.4f", what, op, model,
                analytic).isCloseTo(1.0, within(TOLERANCE));
    }

    @Test
    void greedyCleaningMatchesDesnoyersEquation12AcrossOverProvisioning() {
        for (double op : OP_LEVELS) {
            compare("greedy, Np 256 (eq. 12)", op, uniformWaf(1 << 18, 256, op, GcPolicy.GREEDY),
                    Desnoyers.greedy(Desnoyers.alpha(op), 256));
        }
    }

    /** Small erase blocks are where greedy beats FIFO most (eq. 12's k = 1 + 1/(2 Np)): the model follows. */
    @Test
    void greedyCleaningWithSmallUnitsFollowsTheBlockSizeCorrection() {
        for (double op : new double[] {0.10, 0.25, 0.50}) {
            double greedy = uniformWaf(1 << 15, 32, op, GcPolicy.GREEDY);
            compare("greedy, Np 32 (eq. 12)", op, greedy, Desnoyers.greedy(Desnoyers.alpha(op), 32));
            // and it is the correction, not noise: greedy sits below FIFO's closed form by about what eq. 12 says
            double predictedGain = Desnoyers.fifo(Desnoyers.alpha(op)) / Desnoyers.greedy(Desnoyers.alpha(op), 32);
            assertThat(Desnoyers.fifo(Desnoyers.alpha(op)) / greedy).isCloseTo(predictedGain, within(0.03));
        }
    }

    @Test
    void fifoCleaningMatchesDesnoyersEquation4AcrossOverProvisioning() {
        for (double op : OP_LEVELS) {
            compare("fifo, Np 256 (eq. 4)", op, uniformWaf(1 << 18, 256, op, GcPolicy.FIFO),
                    Desnoyers.fifo(Desnoyers.alpha(op)));
        }
    }

    /**
     * Writing the namespace over and over in order invalidates each reclaim unit whole before it is ever
     * collected: no copies at all, WAF exactly 1, whatever the write size, with several handles writing
     * their own regions interleaved, on the emulated device's geometry.
     */
    @Test
    void sequentialOverwriteHasNoAmplification() {
        ModelConfig c = ModelConfig.emulated();
        FdpSsdModel m = new FdpSsdModel(c);
        long region = c.logicalBytes() / 4;
        long write = 768 << 10; // a KV chunk: not a divisor of the 8 MiB reclaim unit
        for (int pass = 0; pass < 3; pass++) {
            for (long at = 0; at < region; at += write) {
                for (int h = 0; h < 4; h++) {
                    m.write(h * region + at, Math.min(write, region - at), h + 1);
                }
            }
        }
        assertThat(m.hostBytes()).isEqualTo(3 * c.logicalBytes());
        assertThat(m.gcUnits()).isZero();
        assertThat(m.mediaBytes()).isEqualTo(m.hostBytes());
        assertThat(m.waf()).isEqualTo(1.0);
        assertThat(m.erases()).isGreaterThan(2 * c.logicalBytes() / c.reclaimUnitBytes() - 8);
        System.out.printf(Locale.ROOT, "%-34s WAF %.4f after %d passes, %d erases%n", "sequential overwrite", m.waf(), 3,
                m.erases());
    }

    /**
     * Two temperatures: r = 90 % of the writes go to f = 10 % of the data (a setting of Desnoyers' section
     * 5), at 10 % over-provisioning. Mixed in one stream and cleaned FIFO, the model must match equation
     * 14. Segregated by placement id (hot and cold on their own persistently isolated handles), equation
     * 20 says the best split of the spare space gives a far lower WAF; a cleaner that weighs age as well
     * as free space (cost-benefit, which gives the cold pool its share of spare by letting cold units age)
     * must come within 5 % of that optimum and below half the mixed WAF. Greedy cleaning gains far less
     * from segregation: cleaning both pools at the same valid fraction splits the spare in proportion to
     * the data, where the optimum gives the hot tenth half of it (Rosenblum and Ousterhout's cost-benefit
     * cleaner, TOCS 1992, was made for this); that is printed, not asserted.
     */
    @Test
    void twoTemperatureSegregationHelpsAsDesnoyersPredicts() {
        double op = 0.10;
        double r = 0.9;
        double f = 0.1;
        double alpha = Desnoyers.alpha(op);
        int np = 256;
        long units = 1 << 18;

        double mixedFifo = hotCold(units, np, op, GcPolicy.FIFO, HandleType.INITIALLY_ISOLATED, r, f, false);
        compare("hot/cold mixed, fifo (eq. 14)", op, mixedFifo, Desnoyers.fifoHotCold(alpha, r, f));

        double optimum = Desnoyers.segregatedGreedyOptimum(alpha, np, r, f);
        double segregated = hotCold(units, np, op, GcPolicy.COST_BENEFIT, HandleType.PERSISTENTLY_ISOLATED, r, f, true);
        compare("hot/cold by placement id, c-b (eq. 20)", op, segregated, optimum);
        assertThat(segregated).isLessThan(mixedFifo / 2);

        double mixedGreedy = hotCold(units, np, op, GcPolicy.GREEDY, HandleType.INITIALLY_ISOLATED, r, f, false);
        double segregatedGreedy = hotCold(units, np, op, GcPolicy.GREEDY, HandleType.PERSISTENTLY_ISOLATED, r, f, true);
        System.out.printf(Locale.ROOT, "%-34s op %4.2f  mixed %.4f  segregated %.4f%n", "hot/cold, greedy (not asserted)",
                op, mixedGreedy, segregatedGreedy);
    }

    /** Steady-state WAF of the two-temperature workload; {@code segregate}: hot on id 1, cold on id 2. */
    private static double hotCold(long units, int np, double op, GcPolicy gc, HandleType type, double r, double f,
            boolean segregate) {
        ModelConfig c = new ModelConfig(units * UNIT, UNIT, (long) np * UNIT, 1, Collections.nCopies(3, type), 0,
                List.of(0, 1, 2), op, gc);
        FdpSsdModel m = new FdpSsdModel(c);
        long hot = (long) (f * units);
        for (long u = 0; u < units; u++) { // the precondition, each page through its own class's id
            m.write(u * UNIT, UNIT, segregate ? (u < hot ? 1 : 2) : 0);
        }
        SplittableRandom rnd = new SplittableRandom(7);
        long host = 0;
        long media = 0;
        for (long i = 0; i < 6 * units; i++) {
            if (i == 2 * units) {
                host = m.hostUnits();
                media = m.mediaUnits();
            }
            long u = rnd.nextDouble() < r ? rnd.nextLong(hot) : hot + rnd.nextLong(units - hot);
            m.write(u * UNIT, UNIT, segregate ? (u < hot ? 1 : 2) : 0);
        }
        return (double) (m.mediaUnits() - media) / (m.hostUnits() - host);
    }

    /** The closed forms themselves, at values worked by hand and published ones, so a slip there shows. */
    @Test
    void closedFormsGiveTheirKnownValues() {
        // W(-1/e) = -1, W(0) = 0, W(-0.2) solves w e^w = -0.2
        assertThat(Desnoyers.lambertW0(-1 / Math.E)).isCloseTo(-1.0, within(1e-9));
        assertThat(Desnoyers.lambertW0(0)).isCloseTo(0.0, within(1e-15));
        double w = Desnoyers.lambertW0(-0.2);
        assertThat(w * Math.exp(w)).isCloseTo(-0.2, within(1e-14));
        // Xiang and Kurkoski (arXiv:1110.4245): the same expression gives 2.36 at over-provisioning 0.3,
        // against 2.35 simulated
        assertThat(Desnoyers.fifo(Desnoyers.alpha(0.3))).isCloseTo(2.36, within(0.005));
        // no spare: no cleaning possible; a lot of spare: WAF tends to 1
        assertThat(Desnoyers.fifo(Desnoyers.alpha(1e-6))).isGreaterThan(1e4);
        assertThat(Desnoyers.fifo(Desnoyers.alpha(10))).isCloseTo(1.0, within(1e-3));
        // hot/cold with r = f is uniform traffic: eq. 14 reduces to eq. 4
        assertThat(Desnoyers.fifoHotCold(1.25, 0.3, 0.3)).isCloseTo(Desnoyers.fifo(1.25), within(1e-9));
        // with 90 % of the writes on 10 % of the data, the best split of the spare is far below uniform traffic
        assertThat(Desnoyers.segregatedGreedyOptimum(1.1, 256, 0.9, 0.1))
                .isLessThan(Desnoyers.greedy(1.1, 256));
    }
}
