package dev.hearth.storage.device;

import dev.hearth.storage.AtomicFiles;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;

/**
 * Which disks of the node hearth has taken, and for what: one file per disk under
 * {@code <state-dir>/disks/}, named by the disk's {@link DiskIdentity#key()}, shared by every pool
 * of the node so two pools whose selectors overlap can never take one disk twice.
 *
 * <p>A claim is made with a hard link of a complete, synced file: the link either appears whole
 * or fails because the disk is taken, so two concurrent claims of one disk cannot both win, and a
 * crash leaves either no claim or a complete one. Reading needs no lock and creates nothing, so
 * {@code hearth disks} may read beside a running driver.
 */
public final class DiskClaims {

    private static final String SUFFIX = ".claim";
    private static final String FORMAT = "1";

    private final Path directory;

    /** @param directory {@code <state-dir>/disks} */
    public DiskClaims(Path directory) {
        this.directory = Objects.requireNonNull(directory, "directory");
    }

    /** What took a disk: a pool, and in it a volume's ID or another holder (an LVM pool's PV). */
    public record Claim(DiskIdentity disk, String pool, String holder, Instant since) {
        public Claim {
            Objects.requireNonNull(disk, "disk");
            Objects.requireNonNull(pool, "pool");
            Objects.requireNonNull(holder, "holder");
            Objects.requireNonNull(since, "since");
        }

        /** Whether the same pool and holder made it (a repeated claim is no conflict). */
        public boolean sameHolder(Claim other) {
            return pool.equals(other.pool) && holder.equals(other.holder) && disk.equals(other.disk);
        }

        public String describe() {
            return holder + " of pool " + pool;
        }
    }

    public Path directory() {
        return directory;
    }

    /** Every claim on the node, ordered by disk key; none if the directory does not exist yet. */
    public List<Claim> all() throws IOException {
        List<Claim> claims = new ArrayList<>();
        if (!Files.isDirectory(directory)) {
            return claims;
        }
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory, "*" + SUFFIX)) {
            stream.forEach(files::add);
        }
        files.sort(Comparator.comparing(Path::toString));
        for (Path file : files) {
            read(file).ifPresent(claims::add);
        }
        return claims;
    }

    /** The claim on this disk, if any. */
    public Optional<Claim> of(DiskIdentity disk) throws IOException {
        return read(file(disk));
    }

    /**
     * Claims the disk for {@code claim}'s holder.
     *
     * @return the claim that stands: {@code claim} (or an earlier one by the same holder), or another
     *     holder's, in which case the disk is not this holder's
     */
    public Claim claim(Claim claim) throws IOException {
        Files.createDirectories(directory);
        Path target = file(claim.disk());
        Path temp = directory.resolve("." + UUID.randomUUID() + ".tmp");
        try {
            writeSynced(temp, encode(claim));
            try {
                Files.createLink(target, temp);
            } catch (FileAlreadyExistsException e) {
                return read(target).orElseGet(() -> claim);
            }
            return claim;
        } finally {
            Files.deleteIfExists(temp);
            AtomicFiles.syncDirectory(directory);
        }
    }

    /** Gives the disk back, if {@code claim}'s holder has it; another holder's claim stays. */
    public void release(Claim claim) throws IOException {
        Optional<Claim> current = of(claim.disk());
        if (current.isPresent() && current.get().sameHolder(claim)) {
            Files.deleteIfExists(file(claim.disk()));
            AtomicFiles.syncDirectory(directory);
        }
    }

    private Path file(DiskIdentity disk) {
        return directory.resolve(disk.key() + SUFFIX);
    }

    private static Optional<Claim> read(Path file) throws IOException {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        Properties props = new Properties();
        props.load(new StringReader(text));
        try {
            DiskIdentity disk = new DiskIdentity(props.getProperty("source"), props.getProperty("value"),
                    Long.parseLong(props.getProperty("size")));
            return Optional.of(new Claim(disk, props.getProperty("pool"), props.getProperty("holder"),
                    Instant.parse(props.getProperty("since"))));
        } catch (RuntimeException e) {
            throw new IOException("disk claim " + file + " is malformed: " + e.getMessage(), e);
        }
    }

    private static String encode(Claim claim) {
        Properties props = new Properties();
        props.setProperty("format", FORMAT);
        props.setProperty("source", claim.disk().source());
        props.setProperty("value", claim.disk().value());
        props.setProperty("size", Long.toString(claim.disk().sizeBytes()));
        props.setProperty("pool", claim.pool());
        props.setProperty("holder", claim.holder());
        props.setProperty("since", claim.since().toString());
        StringWriter out = new StringWriter();
        try {
            props.store(out, "hearth disk claim");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    private static void writeSynced(Path file, String content) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer bytes = ByteBuffer.wrap(content.getBytes(StandardCharsets.UTF_8));
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
            channel.force(true);
        }
    }
}
