package dev.hearth.driver;

import dev.hearth.storage.AtomicFiles;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
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

    ServeRecord {
        pools = List.copyOf(pools);
    }

    static Path file(Path stateDir) {
        return stateDir.resolve(FILE);
    }

    void write() throws IOException {
        Properties props = new Properties();
        props.setProperty("format", FORMAT);
        props.setProperty("state-dir", stateDir.toString());
        props.setProperty("driver-name", driverName);
        defaultPool.ifPresent(name -> props.setProperty("default-pool", name));
        for (int i = 0; i < pools.size(); i++) {
            props.setProperty("pool." + (i + 1), pools.get(i));
        }
        props.setProperty("written", written.toString());
        StringWriter text = new StringWriter();
        props.store(text, "hearth serve's flags on this node, read by hearth volumes; written at each start, "
                + "do not edit");
        AtomicFiles.write(file(stateDir), text.toString());
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
