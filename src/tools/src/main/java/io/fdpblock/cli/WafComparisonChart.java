package io.fdpblock.cli;

import io.fdpblock.tools.util.Charts;

import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.CategorySeries;
import org.knowm.xchart.style.Styler;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.ToDoubleFunction;

/**
 * The chart of {@code fdpblock waf} (XChart, PNG): the model's WAF per policy, then the L2 hit ratio per
 * policy, one bar per workload.
 */
final class WafComparisonChart {
    private static final int WIDTH = 1300;
    private static final int HEIGHT = 440;
    private static final Color[] COLORS = {new Color(0x1f77b4), new Color(0xff7f0e), new Color(0x2ca02c)};

    private WafComparisonChart() {}

    /**
     * @param run what ran (device, units, chunks, fill), for the first title
     * @param model the model's settings, for the second
     */
    static Path write(List<WafCommand.Row> rows, Path png, String run, String model) throws IOException {
        System.setProperty("java.awt.headless", "true");
        Set<String> cases = new LinkedHashSet<>();
        Set<String> workloads = new LinkedHashSet<>();
        for (WafCommand.Row r : rows) {
            cases.add(r.caseName());
            workloads.add(r.workload());
        }
        List<String> labels = List.copyOf(cases);
        CategoryChart waf = chart("WAF after 2x capacity written, FDP SSD model (" + model + "), " + LocalDate.now(),
                "WAF (media / host bytes)");
        CategoryChart hits = chart("L2 hit ratio of the keys L1 did not have (" + run + ")", "L2 hit ratio");
        int i = 0;
        for (String w : workloads) {
            Color color = COLORS[i++ % COLORS.length];
            series(waf, w, labels, rows, w, WafCommand.Row::steadyWaf, color);
            series(hits, w, labels, rows, w, WafCommand.Row::l2HitRatio, color);
        }
        waf.getStyler().setYAxisMin(0.0).setYAxisDecimalPattern("0.00");
        hits.getStyler().setYAxisMin(0.0).setYAxisDecimalPattern("0.00");
        return Charts.writeStacked(List.of(waf, hits), WIDTH, HEIGHT, png);
    }

    private static CategoryChart chart(String title, String yTitle) {
        CategoryChart c = new CategoryChartBuilder().width(WIDTH).height(HEIGHT).title(title).yAxisTitle(yTitle).build();
        c.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        c.getStyler().setChartBackgroundColor(Color.WHITE);
        c.getStyler().setPlotGridVerticalLinesVisible(false);
        c.getStyler().setLabelsVisible(true);
        c.getStyler().setLabelsFont(c.getStyler().getLabelsFont().deriveFont(10f));
        return c;
    }

    private static void series(CategoryChart c, String name, List<String> labels, List<WafCommand.Row> rows,
            String workload, ToDoubleFunction<WafCommand.Row> value, Color color) {
        List<Double> v = new ArrayList<>();
        for (String label : labels) {
            Double d = null;
            for (WafCommand.Row r : rows) {
                if (r.workload().equals(workload) && r.caseName().equals(label)) {
                    double x = value.applyAsDouble(r);
                    d = Double.isNaN(x) ? null : x;
                }
            }
            v.add(d);
        }
        CategorySeries s = c.addSeries(name, labels, v);
        s.setFillColor(color);
    }
}
