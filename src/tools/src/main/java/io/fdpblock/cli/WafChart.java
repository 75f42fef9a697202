package io.fdpblock.cli;

import io.fdpblock.sim.SimulationResult;
import io.fdpblock.sim.SimulationReport;
import io.fdpblock.sim.ModelConfig;
import io.fdpblock.sim.HandleType;
import io.fdpblock.tools.util.Sizes;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The WAF-over-time chart of a simulation (XChart, PNG): x = host GiB written, y = the cumulative WAF and
 * the WAF of the recent stretch of the trace.
 */
public final class WafChart {
    private static final double GIB = 1L << 30;

    private WafChart() {}

    /** Draws {@code result}'s curve into {@code png}. @return {@code png} */
    public static Path write(SimulationResult result, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        ModelConfig c = result.config();
        String handles = c.handleTypes().stream().distinct().count() == 1
                ? (c.handleTypes().get(0) == HandleType.INITIALLY_ISOLATED ? " II" : " PI") : "";
        XYChart chart = new XYChartBuilder().width(1200).height(520)
                .title(String.format(Locale.ROOT, "WAF %.3f: %s on %d x %d RUs of %s, %d%s handles, OP %.1f %%, %s GC",
                        result.waf(), Path.of(result.trace()).getFileName(), c.reclaimGroups(), c.reclaimUnitsPerGroup(),
                        Sizes.human(c.reclaimUnitBytes()), c.handles(), handles, 100 * c.overProvisioning(),
                        c.gc().label()))
                .xAxisTitle("host GiB written").yAxisTitle("WAF (media / host bytes)").build();
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setYAxisMin(1.0);
        chart.getStyler().setYAxisDecimalPattern("0.00");
        chart.getStyler().setXAxisDecimalPattern("0.00");

        List<SimulationResult.Sample> s = result.samples();
        // the recent WAF over a window of ~1/40 of the samples: one sample's interval is too noisy to read
        int window = Math.max(1, s.size() / 40);
        List<Double> x = new ArrayList<>();
        List<Double> cumulative = new ArrayList<>();
        List<Double> recent = new ArrayList<>();
        for (int i = 1; i < s.size(); i++) {
            SimulationResult.Sample a = s.get(Math.max(0, i - window));
            SimulationResult.Sample b = s.get(i);
            long host = b.hostBytes() - a.hostBytes();
            if (b.hostBytes() == 0 || host == 0) {
                continue; // a stretch of deallocations or flushes only: no WAF to show
            }
            x.add(b.hostBytes() / GIB);
            cumulative.add((double) b.mediaBytes() / b.hostBytes());
            recent.add((double) (b.mediaBytes() - a.mediaBytes()) / host);
        }
        if (x.isEmpty()) {
            throw new IOException("the trace " + result.trace() + " has no writes: no WAF to draw");
        }
        XYSeries per = chart.addSeries("recent WAF (last " + window + " of " + (s.size() - 1) + " intervals)", x, recent);
        per.setMarker(SeriesMarkers.NONE);
        per.setLineColor(new Color(0xff7f0e));
        XYSeries cum = chart.addSeries("cumulative WAF", x, cumulative);
        cum.setMarker(SeriesMarkers.NONE);
        cum.setLineColor(new Color(0x1f77b4));
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
        String name = png.getFileName().toString();
        // saveBitmap appends ".png" unless the name already ends with it
        return name.toLowerCase(Locale.ROOT).endsWith(".png") ? png : png.resolveSibling(name + ".png");
    }
}
