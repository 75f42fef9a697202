package io.fdpblock.bench;

import io.fdpblock.tools.util.Charts;

import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.CategorySeries;
import org.knowm.xchart.style.Styler;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.DoubleStream;

/**
 * The chart of a bench run (XChart, PNG): ours/fio ratios with the parity line (the headline: for 1 MiB
 * cases against fio with its buffers on huge pages, like for like, with plain fio's beside it), then
 * throughput in operations per second (log scale), then CPU cores busy, ours next to fio for every case.
 */
public final class BenchChart {
    private static final int WIDTH = 1400;
    private static final int HEIGHT = 460;
    private static final Color OURS = new Color(0x1f77b4);
    private static final Color FIO = new Color(0xff7f0e);
    private static final Color PLAIN_FIO = new Color(0xc7c7c7);

    private BenchChart() {}

    /** Draws the chart into {@code png}. @return {@code png} */
    public static Path write(List<CaseResult> results, Path png, int rounds) throws IOException {
        System.setProperty("java.awt.headless", "true");
        List<CaseResult> shown = results.stream()
                .filter(r -> r.skipped() == null && r.benchCase().hasReference() && r.hasOurs()).toList();
        if (shown.isEmpty()) {
            throw new IOException("no case with figures to draw");
        }
        List<String> labels = shown.stream().map(r -> r.benchCase().label()).toList();
        String lookup = results.stream().filter(r -> r.lookup() != null).findFirst().map(BenchChart::lookupTitle)
                .orElse("");

        CategoryChart ratios = chart("fdpblock bench: ours / fio, median of " + rounds + " round(s)" + lookup,
                "ours / fio");
        series(ratios, "throughput (1 MiB: vs fio on huge pages, stores: beside the same flushes, \"always\" loads:"
                + " with the same CRC32C check; like for like)", labels,
                shown.stream().map(CaseResult::headlineThroughputRatio).toList(), OURS);
        if (shown.stream().anyMatch(CaseResult::likeForLike)) {
            series(ratios, "throughput vs plain fio (malloc'd buffers)", labels, shown.stream()
                    .map(r -> r.likeForLike() ? r.throughputRatio() : Double.NaN).toList(), PLAIN_FIO);
        }
        if (shown.stream().anyMatch(CaseResult::judgedOnSameWork)) {
            series(ratios, "stores and checked loads: throughput vs fio on huge pages alone (no flushes, no check)",
                    labels, shown.stream().map(r -> r.judgedOnSameWork() ? r.hugePagesThroughputRatio() : Double.NaN)
                            .toList(), new Color(0x9467bd));
        }
        series(ratios, "work per CPU-second", labels, shown.stream().map(CaseResult::cpuEfficiencyRatio).toList(),
                new Color(0x2ca02c));
        CategorySeries parity = ratios.addSeries("parity (1.0)", labels, labels.stream().map(l -> 1.0).toList());
        parity.setChartCategorySeriesRenderStyle(CategorySeries.CategorySeriesRenderStyle.Line);
        parity.setLineColor(Color.GRAY);
        parity.setMarkerColor(Color.GRAY);
        ratios.getStyler().setYAxisMin(0.0).setYAxisDecimalPattern("0.00");
        ratios.getStyler().setLabelsVisible(true);

        CategoryChart throughput = chart("Throughput: operations per second (4 KiB or 1 MiB each; adapter: 1 MiB chunks),"
                + " log scale", "ops/s");
        series(throughput, "ours", labels, shown.stream().map(r -> r.hasOurs() ? iops(r, true) : Double.NaN).toList(),
                OURS);
        if (shown.stream().anyMatch(CaseResult::hasFio)) {
            series(throughput, "fio judged (1 MiB: on huge pages; stores: beside the same flushes)", labels, shown.stream()
                    .map(r -> r.hasFio() ? iops(r, false) : Double.NaN).toList(), FIO);
        }
        double lowest = shown.stream().flatMapToDouble(r -> DoubleStream.of(
                r.hasOurs() ? iops(r, true) : Double.NaN, r.hasFio() ? iops(r, false) : Double.NaN))
                .filter(d -> !Double.isNaN(d) && d > 0).min().orElse(1);
        throughput.getStyler().setYAxisLogarithmic(true); // bars start at the axis minimum: a power of ten below all
        throughput.getStyler().setYAxisMin(Math.pow(10, Math.floor(Math.log10(lowest))));
        throughput.getStyler().setLabelsVisible(true);
        throughput.getStyler().setYAxisDecimalPattern("#,##0");

        CategoryChart cpu = chart("CPU busy during the measured window (user + system, in cores; this machine has "
                + Runtime.getRuntime().availableProcessors() + ")", "cores");
        series(cpu, "ours (JVM process)", labels, shown.stream().map(CaseResult::oursCpuCores).toList(), OURS);
        if (shown.stream().anyMatch(CaseResult::hasFio)) {
            series(cpu, "plain fio (job process)", labels, shown.stream().map(CaseResult::fioCpuCores).toList(), FIO);
        }
        cpu.getStyler().setYAxisMin(0.0).setYAxisDecimalPattern("0.00");
        cpu.getStyler().setLabelsVisible(true);

        return Charts.writeStacked(List.of(ratios, throughput, cpu), WIDTH, HEIGHT, png);
    }

    /**
     * The lookup's figures for the title, each with the target the bench judges it by: the median latency
     * and its CPU over hashing its keys once.
     */
    static String lookupTitle(CaseResult r) {
        List<CaseResult.Target> ts = r.targets();
        CaseResult.Target latency = ts.stream().filter(t -> t.name().equals(CaseResult.LOOKUP_LATENCY_TARGET))
                .findFirst().orElseThrow();
        CaseResult.Target cpu = ts.stream().filter(t -> t.name().equals(CaseResult.LOOKUP_CPU_TARGET)).findFirst()
                .orElseThrow();
        return String.format(Locale.ROOT, "; adapter lookup-and-lock of 1,000 keys: median %.1f us (target %s), CPU"
                + " %.2fx hashing the keys once (target %s)", latency.actual(), latency.describe().replace("<", "< "),
                cpu.actual(), cpu.describe().replace("<=", "<= "));
    }

    /**
     * Operations per second: IOPS for 4 KiB cases; for 1 MiB cases the same figure (ops of 1 MiB). fio's is
     * the reference of the headline (on huge pages, where that ran).
     */
    private static double iops(CaseResult r, boolean ours) {
        double t = ours ? r.oursThroughput() : r.headlineFioThroughput();
        return r.benchCase().judgedByIops() ? t : t * 1e6 / r.benchCase().blockSize();
    }

    private static CategoryChart chart(String title, String yTitle) {
        CategoryChart c = new CategoryChartBuilder().width(WIDTH).height(HEIGHT).title(title).yAxisTitle(yTitle).build();
        c.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        c.getStyler().setXAxisLabelRotation(12);
        c.getStyler().setChartBackgroundColor(Color.WHITE);
        c.getStyler().setPlotGridVerticalLinesVisible(false);
        c.getStyler().setLabelsFont(c.getStyler().getLabelsFont().deriveFont(10f));
        return c;
    }

    private static void series(CategoryChart c, String name, List<String> labels, List<Double> values, Color color) {
        List<Double> v = new ArrayList<>(values.size());
        for (Double d : values) {
            v.add(d == null || Double.isNaN(d) ? null : d);
        }
        CategorySeries s = c.addSeries(name, labels, v);
        s.setFillColor(color);
    }
}
