package dev.hearth.driver.server;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** Records what one class logs, at the level asked, until closed. Public for the tests of the metrics. */
public final class CapturedLog extends Handler implements AutoCloseable {

    // Held here, not only by LogManager, which keeps loggers weakly and would forget the level.
    private final Logger logger;
    private final Level previous;
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();

    private CapturedLog(Logger logger) {
        this.logger = logger;
        this.previous = logger.getLevel();
    }

    public static CapturedLog of(Class<?> type, Level level) {
        CapturedLog log = new CapturedLog(Logger.getLogger(type.getName()));
        log.setLevel(Level.ALL);
        log.logger.setLevel(level);
        log.logger.addHandler(log);
        return log;
    }

    @Override
    public void publish(LogRecord record) {
        records.add(record);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {
        logger.removeHandler(this);
        logger.setLevel(previous);
    }

    /** Each record, with its level, in the order logged. */
    public List<LogRecord> records() {
        return List.copyOf(records);
    }

    List<String> messages(Level level) {
        return records.stream().filter(r -> r.getLevel().equals(level)).map(LogRecord::getMessage).toList();
    }

    List<String> messages() {
        return records.stream().map(LogRecord::getMessage).toList();
    }
}
