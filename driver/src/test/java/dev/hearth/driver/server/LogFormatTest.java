package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

class LogFormatTest {

    private static LogRecord record(Level level, String message, Object... parameters) {
        LogRecord record = new LogRecord(level, message);
        record.setInstant(Instant.parse("2026-11-21T19:40:00.123Z"));
        record.setParameters(parameters);
        return record;
    }

    @Test
    void oneLineWithUtcMillisLevelAndMessage() {
        String line = new LogFormat().format(record(Level.INFO, "serving on {0}", "unix:///csi/csi.sock"));

        assertThat(line).isEqualTo("2026-11-21T19:40:00.123Z INFO  serving on unix:///csi/csi.sock" + System.lineSeparator());
    }

    @Test
    void wholeSecondsKeepThreeFractionDigits() {
        LogRecord record = record(Level.WARNING, "x");
        record.setInstant(Instant.parse("2026-11-21T19:40:00Z"));

        assertThat(new LogFormat().format(record)).startsWith("2026-11-21T19:40:00.000Z WARN  x");
    }

    @Test
    void stackTraceFollowsOnItsOwnLines() {
        LogRecord record = record(Level.SEVERE, "unexpected failure");
        record.setThrown(new IllegalStateException("pool map is empty"));

        String text = new LogFormat().format(record);

        assertThat(text.lines())
                .first()
                .isEqualTo("2026-11-21T19:40:00.123Z ERROR unexpected failure");
        assertThat(text.lines().skip(1).findFirst()).hasValue("java.lang.IllegalStateException: pool map is empty");
    }

    @Test
    void levelLabelsShareOneWidth() {
        assertThat(LogFormat.label(Level.SEVERE)).isEqualTo("ERROR");
        assertThat(LogFormat.label(Level.WARNING)).isEqualTo("WARN ");
        assertThat(LogFormat.label(Level.INFO)).isEqualTo("INFO ");
        assertThat(LogFormat.label(Level.CONFIG)).isEqualTo("INFO ");
        assertThat(LogFormat.label(Level.FINE)).isEqualTo("DEBUG");
        assertThat(LogFormat.label(Level.FINER)).isEqualTo("TRACE");
        assertThat(LogFormat.label(Level.FINEST)).isEqualTo("TRACE");
    }

    @Test
    void installSendsHearthDebugButNotLibraryDebugToStderr() throws Exception {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        Logger hearth = Logger.getLogger("dev.hearth.driver.server.LogFormatTest");
        Logger library = Logger.getLogger("io.grpc.LogFormatTest");
        try {
            LogFormat.install(Level.FINE);

            hearth.fine("hearth detail");
            library.fine("library detail");
            library.info("library news");
        } finally {
            System.setErr(original);
            LogManager.getLogManager().readConfiguration();
        }

        String text = captured.toString(StandardCharsets.UTF_8);
        assertThat(text.lines())
                .satisfiesExactly(
                        l -> assertThat(l).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z DEBUG hearth detail"),
                        l -> assertThat(l).endsWith(" INFO  library news"));
    }
}
