package dev.hearth.driver;

import dev.hearth.storage.AtomicFiles;
import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;

/**
 * What {@code hearth serve} runs with on this node, as its flags gave it: written to
 * {@code STATE_DIR/serve.properties} (atomically) once the driver serves, so that {@code hearth
 * volumes} finds the node's pools without a running driver and without being told them again.
 * The pool specs are kept as written, and read with {@link PoolSpec#parse} as serve read them.
 *
 * @param pools the {@code --pool} specs in their order (the one default spec when none was given)
 * @param written when serve wrote it
 */
record ServeRecord(List<String> pools, Optional<String> defaultPool, Path stateDir, String driverName,
        Instant written) {

    static final String FILE = "serve.properties";
    private static final String FORMAT = "1";
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    ServeRecord {
        pools = List.copyOf(pools);
    }

    static Path file(Path stateDir) {
        return stateDir.resolve(FILE);
    }

    void write() throws IOException {
        AtomicFiles.write(file(stateDir), text());
    }

    /**
     * The record as {@link Properties#load} reads it, a key a line in a fixed order. Written by hand:
     * {@link Properties#store} heads the file with the date in the local time zone's words, whose
     * first formatting costs a cold JVM 12 ms (time-zone names), beside the first volume calls.
     */
    String text() {
        StringBuilder text = new StringBuilder(256)
                .append("#hearth serve's flags on this node, read by hearth volumes; written at each start, do not edit\n");
        line(text, "format", FORMAT);
        line(text, "state-dir", stateDir.toString());
        line(text, "driver-name", driverName);
        defaultPool.ifPresent(name -> line(text, "default-pool", name));
        for (int i = 0; i < pools.size(); i++) {
            line(text, "pool." + (i + 1), pools.get(i));
        }
        line(text, "written", written.toString());
        return text.toString();
    }

    /**
     * {@code key=value} and a line break, the value escaped as {@link Properties#store} escapes one
     * into a stream: all ASCII, anything else as a backslash-u escape of four hex digits.
     */
    private static void line(StringBuilder text, String key, String value) {
        text.append(key).append('=');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '\\' -> text.append("\\\\");
                case '\t' -> text.append("\\t");
                case '\n' -> text.append("\\n");
                case '\r' -> text.append("\\r");
                case '\f' -> text.append("\\f");
                case '=', ':', '#', '!' -> text.append('\\').append(c);
                // load drops a value's leading white space; store escapes the first space only.
                case ' ' -> text.append(i == 0 ? "\\ " : " ");
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        text.append("\\u");
                        for (int shift = 12; shift >= 0; shift -= 4) {
                            text.append(HEX[(c >> shift) & 0xf]);
                        }
                    } else {
                        text.append(c);
                    }
                }
            }
        }
        text.append('\n');
    }

    /**
     * The record in {@code stateDir}.
     *
     * @throws java.nio.file.NoSuchFileException if serve has not written one there
     * @throws IOException if it cannot be read, or is not a record this version reads
     */
    static ServeRecord read(Path stateDir) throws IOException {
        Path file = file(stateDir);
        Properties props = new Properties();
        props.load(new StringReader(Files.readString(file)));
        if (!FORMAT.equals(props.getProperty("format"))) {
            throw new IOException(file + " has format " + props.getProperty("format") + "; this hearth reads "
                    + FORMAT);
        }
        List<String> pools = new ArrayList<>();
        for (int i = 1; props.containsKey("pool." + i); i++) {
            pools.add(props.getProperty("pool." + i));
        }
        String state = props.getProperty("state-dir");
        String driver = props.getProperty("driver-name");
        if (pools.isEmpty() || state == null || driver == null) {
            throw new IOException(file + " is incomplete: it needs pool.1, state-dir and driver-name");
        }
        Instant written;
        try {
            written = Instant.parse(props.getProperty("written", ""));
        } catch (RuntimeException e) {
            throw new IOException(file + " has no valid 'written' time", e);
        }
        return new ServeRecord(pools, Optional.ofNullable(props.getProperty("default-pool")), Path.of(state), driver,
                written);
    }
}
