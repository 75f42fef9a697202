package io.fdpblock.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Records what a {@link System.Logger} (backed by java.util.logging) logs while it is open, so that a
 * test can check that something was said, and how often.
 */
public final class LogCapture implements AutoCloseable {
    private final Logger logger;
    private final Level previousLevel;
    private final List<LogRecord> records = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            synchronized (records) {
                records.add(r);
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    public LogCapture(String loggerName) {
        this.logger = Logger.getLogger(loggerName);
        // other tests of the same JVM turn noisy loggers off; a level left at OFF would hide what this checks
        this.previousLevel = logger.getLevel();
        logger.setLevel(Level.ALL);
        handler.setLevel(Level.ALL);
        logger.addHandler(handler);
    }

    /** The messages logged so far that contain {@code text}. */
    public List<String> messagesContaining(String text) {
        List<String> out = new ArrayList<>();
        synchronized (records) {
            for (LogRecord r : records) {
                if (r.getMessage() != null && r.getMessage().contains(text)) {
                    out.add(r.getMessage());
                }
            }
        }
        return out;
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
        logger.setLevel(previousLevel);
    }
}
