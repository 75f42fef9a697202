package io.fdpblock.sim;

/**
 * Closed-form write amplification of Peter Desnoyers, "Analytic Modeling of SSD Write Performance",
 * SYSTOR '12 (ACM, doi:10.1145/2367589.2367603), extended as "Analytic Models of SSD Write Performance",
 * ACM Transactions on Storage 10(2), article 8, 2014. Notation as there: T physical pages, U logical
 * (user) pages, alpha = T / U = 1 / (1 - Sf) with the spare factor Sf = (T - U) / T, Np pages per erase
 * block; uniform random single-page writes, steady state, many blocks. Our over-provisioning
 * op = (T - U) / U, so alpha = 1 + op.
 */
final class Desnoyers {
    private Desnoyers() {}

    /** Over-provisioning (T - U) / U as alpha = T / U. */
    static double alpha(double op) {
        return 1 + op;
    }

    /**
     * FIFO ("LRU") cleaning, SYSTOR '12 equation 4: A = alpha / (alpha + W(-alpha e^-alpha)), W the
     * principal branch of Lambert's W. The block cleaned is the one written longest ago; a page of it is
     * still valid with probability e^(-alpha (1 - x)) when x of it is, which this solves.
     */
    static double fifo(double alpha) {
        return alpha / (alpha + lambertW0(-alpha * Math.exp(-alpha)));
    }

    /**
     * Greedy cleaning, SYSTOR '12 equation 12: the FIFO expression at a corrected alpha,
     * A = A_fifo(k alpha) / k with k = 1 + 1 / (2 Np).
     */
    static double greedy(double alpha, int pagesPerBlock) {
        double k = 1 + 1.0 / (2.0 * pagesPerBlock);
        return fifo(k * alpha) / k;
    }

    /**
     * FIFO cleaning of mixed hot and cold data (no segregation), SYSTOR '12 equation 14: a fraction
     * {@code r} of the writes go uniformly to a fraction {@code f} of the logical pages, the rest to the
     * rest; A solves A = 1 + r / (e^((r/f)(alpha/A)) - 1) + (1-r) / (e^(((1-r)/(1-f))(alpha/A)) - 1).
     */
    static double fifoHotCold(double alpha, double r, double f) {
        // g(A) = 1 + hot(A) + cold(A) - A falls monotonically through 0 on (1, inf): bisect.
        double lo = 1.0 + 1e-12;
        double hi = 1e4;
        for (int i = 0; i < 200; i++) {
            double a = (lo + hi) / 2;
            double g = 1 + r / Math.expm1((r / f) * (alpha / a)) + (1 - r) / Math.expm1(((1 - r) / (1 - f)) * (alpha / a)) - a;
            if (g > 0) {
                lo = a;
            } else {
                hi = a;
            }
        }
        return (lo + hi) / 2;
    }

    /**
     * Hot and cold data in separate pools, each cleaned greedily, SYSTOR '12 equations 20-22: a share
     * {@code p} of the spare space goes to the hot pool, alpha_h = (p (alpha - 1) + f) / f,
     * alpha_c = ((1 - p)(alpha - 1) + 1 - f) / (1 - f), and A = r A_greedy(alpha_h) + (1 - r) A_greedy(alpha_c);
     * returned at the best p (a golden-section search on (0, 1)), which the paper reports as the optimum.
     */
    static double segregatedGreedyOptimum(double alpha, int pagesPerBlock, double r, double f) {
        double lo = 1e-6;
        double hi = 1 - 1e-6;
        double phi = (Math.sqrt(5) - 1) / 2;
        for (int i = 0; i < 200; i++) {
            double a = hi - phi * (hi - lo);
            double b = lo + phi * (hi - lo);
            if (segregated(a, alpha, pagesPerBlock, r, f) < segregated(b, alpha, pagesPerBlock, r, f)) {
                hi = b;
            } else {
                lo = a;
            }
        }
        return segregated((lo + hi) / 2, alpha, pagesPerBlock, r, f);
    }

    static double segregated(double p, double alpha, int pagesPerBlock, double r, double f) {
        double alphaHot = (p * (alpha - 1) + f) / f;
        double alphaCold = ((1 - p) * (alpha - 1) + 1 - f) / (1 - f);
        return r * greedy(alphaHot, pagesPerBlock) + (1 - r) * greedy(alphaCold, pagesPerBlock);
    }

    /** Lambert's W, principal branch, for x in [-1/e, 0]: Halley's iteration. */
    static double lambertW0(double x) {
        if (x < -1 / Math.E - 1e-15 || x > 0) {
            throw new IllegalArgumentException("W0 here is for x in [-1/e, 0], not " + x);
        }
        if (x <= -1 / Math.E) {
            return -1;
        }
        // start near the branch point with its series, elsewhere at log1p(x)
        double w = x < -0.25 ? -1 + Math.sqrt(2 * (1 + Math.E * x)) : Math.log1p(x);
        for (int i = 0; i < 100; i++) {
            double e = Math.exp(w);
            double f = w * e - x;
            double step = f / (e * (w + 1) - (w + 2) * f / (2 * w + 2));
            w -= step;
            if (Math.abs(step) < 1e-15 * (1 + Math.abs(w))) {
                break;
            }
        }
        return w;
    }
}
