package io.fdpblock.sim;

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

/** The WAF-over-time chart of a simulation (XChart, PNG): x = host GiB written, y = WAF. */
public final class WafChart {
    private static final double GIB = 1L << 30;

    private WafChart() {}

    /** Draws {@code result}'s curve into {@code png}. @return {@code png} */
    public static Path write(SimulationResult result, Path png) throws IOException {
        System.setProperty("java.awt.headless", "true");
        ModelConfig c = result.config();
        XYChart chart = new XYChartBuilder().width(1200).height(520)
                .title(String.format(Locale.ROOT, "fdpblock simulate: WAF %.3f over %s (%s)", result.waf(),
                        Path.of(result.trace()).getFileName(), SimulationReport.describe(c)))
                .xAxisTitle("host GiB written").yAxisTitle("WAF (media / host bytes)").build();
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setYAxisMin(1.0);
        chart.getStyler().setYAxisDecimalPattern("0.00");
        chart.getStyler().setXAxisDecimalPattern("0.00");

        List<SimulationResult.Sample> s = result.samples();
        List<Double> x = new ArrayList<>();
        List<Double> cumulative = new ArrayList<>();
        List<Double> interval = new ArrayList<>();
        for (int i = 1; i < s.size(); i++) {
            SimulationResult.Sample a = s.get(i - 1);
            SimulationResult.Sample b = s.get(i);
            long host = b.hostBytes() - a.hostBytes();
            if (b.hostBytes() == 0 || host == 0) {
                continue; // a stretch of deallocations or flushes only: no WAF to show
            }
            x.add(b.hostBytes() / GIB);
            cumulative.add((double) b.mediaBytes() / b.hostBytes());
            interval.add((double) (b.mediaBytes() - a.mediaBytes()) / host);
        }
        if (x.isEmpty()) {
            throw new IOException("the trace " + result.trace() + " has no writes: no WAF to draw");
        }
        XYSeries per = chart.addSeries("WAF of each interval", x, interval);
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
