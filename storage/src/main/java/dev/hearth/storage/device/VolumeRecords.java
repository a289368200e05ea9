package dev.hearth.storage.device;

import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.Claim;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * A device pool's volume records: one properties file per volume, named by its ID, in
 * {@code <state-dir>/pools/<name>/volumes/}, each written whole or not at all ({@link AtomicFiles}).
 *
 * <pre>
 * format=1
 * id=nvme-k5x…            name=pvc-…           size=1000204886016     created=2026-11-30T…Z
 * param.&lt;key&gt;=…           (the pool's normalized StorageClass parameters; none today)
 * claim.namespace=…  claim.name=…  claim.pv=…     (the PVC and PV, when the provisioner named them)
 * disk.source=wwn          disk.value=eui.0025…  disk.size=1000204886016
 * state=ready|releasing    handed-out=false|true
 * empty=sampled|full|zeroed                      empty.writes=&lt;boot&gt;/&lt;diskseq&gt;/&lt;counts&gt;/&lt;loop file&gt;
 * </pre>
 *
 * Keys are only added within a format: a reader ignores keys it does not know.
 */
final class VolumeRecords {

    private static final System.Logger LOG = System.getLogger(VolumeRecords.class.getName());

    private static final String FORMAT = "1";
    private static final String PARAM = "param.";

    private final Path directory;

    VolumeRecords(Path directory) {
        this.directory = directory;
    }

    Path directory() {
        return directory;
    }

    void write(VolumeRecord record) {
        try {
            Files.createDirectories(directory);
            AtomicFiles.write(file(record.volume().id()), encode(record));
        } catch (IOException e) {
            throw new StorageException.Failed("recording volume " + record.volume().id() + " in " + directory + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * The volume's record; empty if it has none. One that is malformed (changed or damaged on the
     * node) is FAILED_PRECONDITION: what it said, the disk above all, is never guessed.
     */
    Optional<VolumeRecord> read(VolumeId id) {
        return read(id, false);
    }

    private Optional<VolumeRecord> read(VolumeId id, boolean leaveOutMalformed) {
        String text;
        try {
            text = Files.readString(file(id), StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (CharacterCodingException e) {
            return malformed(id, "it is not UTF-8 text", leaveOutMalformed);
        } catch (IOException e) {
            throw new StorageException.Failed("reading the record of volume " + id + ": " + e.getMessage(), e);
        }
        try {
            return Optional.of(decode(id, text));
        } catch (IOException | RuntimeException e) {
            return malformed(id, e.getMessage(), leaveOutMalformed);
        }
    }

    private Optional<VolumeRecord> malformed(VolumeId id, String why, boolean leaveOut) {
        // Written whole, so changed or damaged on the node: the node's state, and never guessed (a
        // disk taken for free could be a tenant's).
        String message = "the record of volume " + id + " (" + file(id) + ") is malformed: " + why + "; hearth writes"
                + " it whole, so it was changed or damaged on the node, and hearth does not guess which disk is"
                + " whose: restore the file";
        if (leaveOut) {
            LOG.log(System.Logger.Level.WARNING, message + "; the volume is left out of this listing, and its disk"
                    + " stays claimed");
            return Optional.empty();
        }
        throw new StorageException.Precondition(message);
    }

    /**
     * Every readable record of the pool, ordered by volume ID; a malformed one is left out (and
     * logged), so that it does not hide the others. Files that are no record of this pool are left alone.
     */
    List<VolumeRecord> all(String pool) {
        List<VolumeRecord> records = new ArrayList<>();
        for (VolumeId id : ids(pool)) {
            read(id, true).ifPresent(records::add);
        }
        return records;
    }

    /** The volumes of the pool that have a record file, readable or not, ordered by ID. */
    List<VolumeId> ids(String pool) {
        List<VolumeId> ids = new ArrayList<>();
        if (Files.isDirectory(directory)) {
            try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory)) {
                for (Path file : stream) {
                    VolumeId.parse(file.getFileName().toString()).filter(id -> id.pool().equals(pool)).ifPresent(ids::add);
                }
            } catch (IOException e) {
                throw new StorageException.Failed("listing " + directory + ": " + e.getMessage(), e);
            }
        }
        ids.sort(java.util.Comparator.comparing(VolumeId::toString));
        return ids;
    }

    void delete(VolumeId id) {
        try {
            if (Files.deleteIfExists(file(id))) {
                AtomicFiles.syncDirectory(directory);
            }
        } catch (IOException e) {
            throw new StorageException.Failed("removing the record of volume " + id + ": " + e.getMessage(), e);
        }
    }

    private Path file(VolumeId id) {
        return directory.resolve(id.toString());
    }

    static String encode(VolumeRecord record) {
        Volume volume = record.volume();
        Properties props = new Properties();
        props.setProperty("format", FORMAT);
        props.setProperty("id", volume.id().toString());
        props.setProperty("name", volume.name());
        props.setProperty("size", Long.toString(volume.sizeBytes()));
        props.setProperty("created", volume.createdAt().toString());
        volume.parameters().forEach((k, v) -> props.setProperty(PARAM + k, v));
        volume.claim().ifPresent(claim -> {
            props.setProperty("claim.namespace", claim.namespace());
            props.setProperty("claim.name", claim.name());
            props.setProperty("claim.pv", claim.pvName());
        });
        props.setProperty("disk.source", record.disk().source());
        props.setProperty("disk.value", record.disk().value());
        props.setProperty("disk.size", Long.toString(record.disk().sizeBytes()));
        props.setProperty("state", record.releasing() ? "releasing" : "ready");
        props.setProperty("handed-out", Boolean.toString(record.handedOut()));
        props.setProperty("empty", record.empty().label());
        record.emptyWrites().ifPresent(w -> props.setProperty("empty.writes", w.encode()));
        StringWriter out = new StringWriter();
        try {
            props.store(out, "hearth device volume; written atomically, do not edit");
        } catch (IOException e) {
            throw new StorageException.Failed("encoding the record of " + volume.id() + ": " + e.getMessage(), e);
        }
        return out.toString();
    }

    static VolumeRecord decode(VolumeId id, String text) throws IOException {
        Properties props = new Properties();
        props.load(new StringReader(text));
        if (!FORMAT.equals(props.getProperty("format")) || !id.toString().equals(props.getProperty("id"))) {
            throw new IOException("format " + props.getProperty("format") + " and id " + props.getProperty("id")
                    + ", expected format " + FORMAT + " and id " + id);
        }
        Map<String, String> parameters = new TreeMap<>();
        for (String key : props.stringPropertyNames()) {
            if (key.startsWith(PARAM)) {
                parameters.put(key.substring(PARAM.length()), props.getProperty(key));
            }
        }
        Volume volume = new Volume(id, required(props, "name"), Long.parseLong(required(props, "size")), parameters,
                Optional.empty(), Instant.parse(required(props, "created")), claim(props));
        DiskIdentity disk = new DiskIdentity(required(props, "disk.source"), required(props, "disk.value"),
                Long.parseLong(required(props, "disk.size")));
        String state = required(props, "state");
        if (!state.equals("ready") && !state.equals("releasing")) {
            throw new IOException("state '" + state + "' is neither ready nor releasing");
        }
        return new VolumeRecord(volume, disk, state.equals("releasing"),
                // Anything but a plain "false" counts as handed out: a doubt must never let a disk be formatted.
                !"false".equals(required(props, "handed-out")), VolumeRecord.Empty.parse(required(props, "empty")),
                DiskWrites.parse(props.getProperty("empty.writes")));
    }

    /** The PVC a record names; none if it names none, or one Kubernetes could not have made (a label only). */
    private static Optional<Claim> claim(Properties props) {
        String namespace = props.getProperty("claim.namespace");
        String name = props.getProperty("claim.name");
        if (namespace == null || name == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(new Claim(namespace, name, props.getProperty("claim.pv", "")));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private static String required(Properties props, String key) throws IOException {
        String value = props.getProperty(key);
        if (value == null) {
            throw new IOException("no " + key);
        }
        return value;
    }
}
