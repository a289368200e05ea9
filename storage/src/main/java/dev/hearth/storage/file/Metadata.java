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
import java.io.StringWriter;
import java.time.Instant;
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
        Properties props = header(volume.id().toString(), volume.name(), volume.sizeBytes(), volume.createdAt());
        volume.parameters().forEach((k, v) -> props.setProperty(PARAM + k, v));
        // As a parameter, as every release wrote it: a driver rolled back still reads the source.
        volume.source().ifPresent(source -> props.setProperty(PARAM + SOURCE, source.toString()));
        volume.claim().ifPresent(claim -> {
            props.setProperty(CLAIM_NAMESPACE, claim.namespace());
            props.setProperty(CLAIM_NAME, claim.name());
            props.setProperty(CLAIM_PV, claim.pvName());
        });
        return store(props, "hearth volume");
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
        Properties props = header(snapshot.id().toString(), snapshot.name(), snapshot.sizeBytes(),
                snapshot.createdAt());
        props.setProperty(SOURCE, snapshot.source().toString());
        return store(props, "hearth snapshot");
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

    private static Properties header(String id, String name, long size, Instant created) {
        Properties props = new Properties();
        props.setProperty("format", FORMAT);
        props.setProperty("id", id);
        props.setProperty("name", name);
        props.setProperty("size", Long.toString(size));
        props.setProperty("created", created.toString());
        return props;
    }

    private static String store(Properties props, String what) {
        StringWriter out = new StringWriter();
        try {
            props.store(out, what + "; written atomically, do not edit");
        } catch (IOException e) {
            // A StringWriter never fails; should Properties ever say otherwise, it is the node's failure.
            throw new StorageException.Failed("encoding the metadata of " + props.getProperty("id") + ": "
                    + e.getMessage(), e);
        }
        return out.toString();
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
