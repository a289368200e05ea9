package dev.hearth.driver.server;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * One line per record, {@code 2026-11-21T19:40:00.123Z INFO  message}, as kubectl logs shows it
 * best and as line-based log shippers cut it. A line break inside a message is written as
 * {@code \n}; a stack trace, if the record has one, is folded into the same line as a last field
 * {@code stack="..."} with its line breaks and tabs escaped. JDK logging's default takes two lines
 * per record, more for a stack trace, and the local time zone.
 */
public final class LogFormat extends Formatter {

    /** Fixed three fraction digits: ISO_INSTANT drops them at a whole second, breaking alignment. */
    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    /**
     * Sends all logging to stderr in this format: hearth's own loggers at {@code level}, libraries
     * (grpc and its transports) at INFO at most, since their FINE output would drown ours. Call once, early.
     */
    public static void install(Level level) {
        Level libraries = level.intValue() > Level.INFO.intValue() ? level : Level.INFO;
        // Levels go through the configuration too: LogManager holds loggers weakly, and a level set
        // only on a logger nobody references would be forgotten.
        String config = ".level=" + libraries.getName() + "\n" + "dev.hearth.level=" + level.getName() + "\n";
        LogManager manager = LogManager.getLogManager();
        try {
            manager.readConfiguration(new ByteArrayInputStream(config.getBytes(StandardCharsets.UTF_8)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // The configuration reaches a logger only when one of that exact name exists; creating
        // "dev.hearth" makes it the parent of hearth loggers made before this call. They hold it
        // strongly from then on, and loggers made later are given their level by the configuration.
        Logger.getLogger("dev.hearth").setLevel(level);
        Logger root = Logger.getLogger("");
        for (Handler handler : root.getHandlers()) {
            root.removeHandler(handler);
        }
        Handler stderr = new ConsoleHandler();
        stderr.setLevel(Level.ALL);
        stderr.setFormatter(new LogFormat());
        stderr.setFilter(LogFormat::worthShowing);
        root.addHandler(stderr);
    }

    /**
     * Everything but grpc-okhttp's report of a connection whose socket this process closed itself:
     * a shutdown that races a connection still reading its preface makes the transport log a
     * ClosedChannelException at WARNING with its stack trace (a peer that goes away gives an EOF
     * instead, which is still shown).
     */
    static boolean worthShowing(LogRecord record) {
        return !(record.getThrown() instanceof ClosedChannelException && record.getLoggerName() != null
                && record.getLoggerName().startsWith("io.grpc.okhttp."));
    }

    @Override
    public String format(LogRecord record) {
        StringBuilder line = new StringBuilder(64)
                .append(TIME.format(record.getInstant()))
                .append(' ')
                .append(label(record.getLevel()))
                .append(' ');
        String message = formatMessage(record);
        for (int i = 0; i < message.length(); i++) {
            char c = message.charAt(i);
            switch (c) {
                case '\n' -> line.append("\\n");
                case '\r' -> line.append("\\r");
                default -> line.append(c);
            }
        }
        if (record.getThrown() != null) {
            StringWriter trace = new StringWriter();
            record.getThrown().printStackTrace(new PrintWriter(trace));
            line.append(" stack=").append(quoted(trace.toString().stripTrailing()));
        }
        return line.append(System.lineSeparator()).toString();
    }

    /**
     * The text in double quotes with quotes, backslashes and control characters escaped as in Go
     * or JSON strings, so that a value with spaces, quotes or line breaks stays one field of one line.
     */
    public static String quoted(String text) {
        StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    // Controls, lone surrogates and non-characters would break a log line or the
                    // file a shipper (or a test report) writes it into.
                    if (Character.isISOControl(c) || Character.isSurrogate(c) || c == '\ufffe' || c == '\uffff') {
                        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    /** The names people grep for, padded to one width so messages line up. */
    static String label(Level level) {
        int value = level.intValue();
        if (value >= Level.SEVERE.intValue()) {
            return "ERROR";
        } else if (value >= Level.WARNING.intValue()) {
            return "WARN ";
        } else if (value >= Level.CONFIG.intValue()) {
            return "INFO ";
        } else if (value >= Level.FINE.intValue()) {
            return "DEBUG";
        }
        return "TRACE";
    }
}
