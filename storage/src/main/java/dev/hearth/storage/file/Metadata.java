package dev.hearth.storage.file;

import dev.hearth.storage.Claim;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeSource;
import java.io.IOException;
import java.io.StringReader;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * The metadata files beside volume and snapshot images, as Java properties (format version 1).
 * Keys are only ever added within a version: a reader ignores keys it does not know (a driver rolled
 * back reads a newer file), and a key a file lacks has its old meaning (no {@code claim.*}: no claim).
 */
final class Metadata {

    private static final String FORMAT = "1";
    private static final String PARAM = "param.";
    private static final String SOURCE = "source";
    /** The claim's keys: absent in files older releases wrote, which read as volumes without a claim. */
    private static final String CLAIM_NAMESPACE = "claim.namespace";
    private static final String CLAIM_NAME = "claim.name";
    private static final String CLAIM_PV = "claim.pv";

    private Metadata() {}

    static String encode(Volume volume) {
        Map<String, String> entries = header(volume.id().toString(), volume.name(), volume.sizeBytes(),
                volume.createdAt());
        new TreeMap<>(volume.parameters()).forEach((k, v) -> entries.put(PARAM + k, v));
        // As a parameter, as every release wrote it: a driver rolled back still reads the source.
        volume.source().ifPresent(source -> entries.put(PARAM + SOURCE, source.toString()));
        volume.claim().ifPresent(claim -> {
            entries.put(CLAIM_NAMESPACE, claim.namespace());
            entries.put(CLAIM_NAME, claim.name());
            entries.put(CLAIM_PV, claim.pvName());
        });
        return store(entries, "hearth volume");
    }

    static Volume decode(VolumeId id, String text) throws IOException {
        Properties props = load(id.toString(), text);
        Map<String, String> parameters = new TreeMap<>();
        for (String key : props.stringPropertyNames()) {
            if (key.startsWith(PARAM)) {
                parameters.put(key.substring(PARAM.length()), props.getProperty(key));
            }
        }
        Optional<VolumeSource> source = Optional.ofNullable(parameters.remove(SOURCE)).flatMap(VolumeSource::parse);
        try {
            return new Volume(id, props.getProperty("name"), Long.parseLong(props.getProperty("size")), parameters,
                    source, Instant.parse(props.getProperty("created")), claim(props));
        } catch (RuntimeException e) {
            throw new IOException("metadata of " + id + " is malformed: " + e.getMessage(), e);
        }
    }

    /** The claim a volume's file records; none if it records none, or one Kubernetes could not have made. */
    private static Optional<Claim> claim(Properties props) {
        String namespace = props.getProperty(CLAIM_NAMESPACE);
        String name = props.getProperty(CLAIM_NAME);
        if (namespace == null || name == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(new Claim(namespace, name, props.getProperty(CLAIM_PV, "")));
        } catch (IllegalArgumentException e) {
            return Optional.empty(); // a label only: a bad one must not make the volume unreadable
        }
    }

    static String encode(Snapshot snapshot) {
        Map<String, String> entries = header(snapshot.id().toString(), snapshot.name(), snapshot.sizeBytes(),
                snapshot.createdAt());
        entries.put(SOURCE, snapshot.source().toString());
        return store(entries, "hearth snapshot");
    }

    static Snapshot decode(SnapshotId id, String text) throws IOException {
        Properties props = load(id.toString(), text);
        try {
            VolumeId source = VolumeId.parse(props.getProperty(SOURCE)).orElseThrow(
                    () -> new IllegalArgumentException("bad source " + props.getProperty(SOURCE)));
            return new Snapshot(id, props.getProperty("name"), source, Long.parseLong(props.getProperty("size")),
                    Instant.parse(props.getProperty("created")));
        } catch (RuntimeException e) {
            throw new IOException("metadata of " + id + " is malformed: " + e.getMessage(), e);
        }
    }

    private static Map<String, String> header(String id, String name, long size, Instant created) {
        Map<String, String> entries = new LinkedHashMap<>();
        entries.put("format", FORMAT);
        entries.put("id", id);
        entries.put("name", name);
        entries.put("size", Long.toString(size));
        entries.put("created", created.toString());
        return entries;
    }

    /**
     * The entries in the properties format, in this order, as {@link Properties#load} reads them
     * back (and every release's reader did). Written here rather than by {@link Properties#store}:
     * that one sorts nothing, adds the node's local date as a comment, and cost about 0.1 ms a
     * record (2.7 ms the first time, for the time zone) against a few microseconds.
     */
    private static String store(Map<String, String> entries, String what) {
        StringBuilder out = new StringBuilder(256).append('#').append(what)
                .append("; written atomically, do not edit\n");
        entries.forEach((key, value) -> {
            escape(out, key, true);
            out.append('=');
            escape(out, value, false);
            out.append('\n');
        });
        return out.toString();
    }

    /**
     * Appends {@code text} escaped as {@link Properties#store} escapes it: the separators and
     * comment marks, the backslash, line ends and tabs, a space in a key or leading a value; other
     * control characters as {@code \\uXXXX}; the rest as it is (the file is UTF-8).
     */
    static void escape(StringBuilder out, String text, boolean key) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case ' ' -> out.append(key || i == 0 ? "\\ " : " ");
                case '\t' -> out.append("\\t");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\f' -> out.append("\\f");
                case '=', ':', '#', '!', '\\' -> out.append('\\').append(c);
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
    }

    private static Properties load(String id, String text) throws IOException {
        Properties props = new Properties();
        props.load(new StringReader(text));
        if (!FORMAT.equals(props.getProperty("format")) || !id.equals(props.getProperty("id"))) {
            throw new IOException("metadata of " + id + " has format " + props.getProperty("format")
                    + " and id " + props.getProperty("id"));
        }
        return props;
    }
}
