package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
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
    void stackTraceIsFoldedIntoTheSameLineAsAQuotedField() {
        LogRecord record = record(Level.SEVERE, "unexpected failure");
        record.setThrown(new IllegalStateException("pool map is \"empty\"", new IOException("disk gone")));

        String text = new LogFormat().format(record);

        assertThat(text.lines()).singleElement().asString()
                .startsWith("2026-11-21T19:40:00.123Z ERROR unexpected failure stack=\"java.lang.IllegalStateException: "
                        + "pool map is \\\"empty\\\"\\n\\tat dev.hearth.driver.server.LogFormatTest.")
                .contains("\\nCaused by: java.io.IOException: disk gone\\n\\t")
                .endsWith("\"");
        assertThat(text).endsWith(System.lineSeparator());
    }

    @Test
    void lineBreaksInAMessageAreEscaped() {
        String line = new LogFormat().format(record(Level.WARNING, "mkfs.ext4 failed: {0}", "line one\nline two\r\n"));

        assertThat(line).isEqualTo("2026-11-21T19:40:00.123Z WARN  mkfs.ext4 failed: line one\\nline two\\r\\n"
                + System.lineSeparator());
    }

    @Test
    void quotedEscapesWhatWouldEndTheFieldOrTheLine() {
        assertThat(LogFormat.quoted("a \"b\" c\\d\te\nf\rg\u0001")).isEqualTo("\"a \\\"b\\\" c\\\\d\\te\\nf\\rg\\u0001\"");
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
            hearth.log(Level.SEVERE, "it broke", new IllegalStateException("deep down"));
        } finally {
            System.setErr(original);
            LogManager.getLogManager().readConfiguration();
        }

        String text = captured.toString(StandardCharsets.UTF_8);
        assertThat(text.lines())
                .satisfiesExactly(
                        l -> assertThat(l).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z DEBUG hearth detail"),
                        l -> assertThat(l).endsWith(" INFO  library news"),
                        l -> assertThat(l).contains(" ERROR it broke stack=\"java.lang.IllegalStateException: deep down\\n\\tat "));
    }

    @Test
    void theTransportsReportOfASocketThisProcessClosedIsNotShownButAPeersEofIs() {
        LogRecord closedByUs = new LogRecord(Level.WARNING, "Error decoding HTTP/2 frames");
        closedByUs.setLoggerName("io.grpc.okhttp.OkHttpServerTransport");
        closedByUs.setThrown(new java.nio.channels.AsynchronousCloseException());
        LogRecord peerGone = new LogRecord(Level.WARNING, "Error decoding HTTP/2 frames");
        peerGone.setLoggerName("io.grpc.okhttp.OkHttpServerTransport");
        peerGone.setThrown(new java.io.EOFException());
        LogRecord ours = new LogRecord(Level.WARNING, "closed");
        ours.setLoggerName("dev.hearth.driver.server.GrpcServer");
        ours.setThrown(new java.nio.channels.ClosedChannelException());

        assertThat(LogFormat.worthShowing(closedByUs)).isFalse();
        assertThat(LogFormat.worthShowing(peerGone)).isTrue();
        assertThat(LogFormat.worthShowing(ours)).isTrue();
        assertThat(LogFormat.worthShowing(record(Level.INFO, "serving"))).isTrue();
    }
}
