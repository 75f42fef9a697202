package io.fdpblock.tools.util;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;

import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;

/** How the tools write a figure of several charts: one PNG, the charts one above the other. */
public final class Charts {
    private Charts() {}

    /**
     * Draws {@code charts}, each {@code width} x {@code height} pixels, top to bottom into {@code png}.
     *
     * @return {@code png}
     */
    public static Path writeStacked(List<CategoryChart> charts, int width, int height, Path png) throws IOException {
        BufferedImage all = new BufferedImage(width, height * charts.size(), BufferedImage.TYPE_INT_RGB);
        Graphics2D g = all.createGraphics();
        try {
            for (int i = 0; i < charts.size(); i++) {
                g.drawImage(BitmapEncoder.getBufferedImage(charts.get(i)), 0, i * height, null);
            }
        } finally {
            g.dispose();
        }
        if (!ImageIO.write(all, "png", png.toFile())) {
            throw new IOException("no PNG writer in this JDK");
        }
        return png;
    }
}
