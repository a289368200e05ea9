package dev.hearth.storage.device;

import dev.hearth.storage.AtomicFiles;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Properties;

/**
 * Disks this pool zeroed whole when it let go of them, each with the disk's write counts right
 * after the zeroing ({@code <state-dir>/pools/<name>/zeroed/<disk key>}). While a disk's counts are
 * still those, nothing has written to it since: it holds nothing but zeros, which is proof of
 * emptiness for the next volume without reading it again. A mark whose counts no longer match
 * proves nothing and is dropped; the disk is then checked like any other.
 */
final class ZeroedDisks {

    private final Path directory;

    ZeroedDisks(Path directory) {
        this.directory = directory;
    }

    void mark(DiskIdentity disk, DiskWrites writes, String how) throws IOException {
        Files.createDirectories(directory);
        Properties props = new Properties();
        props.setProperty("disk", disk.toString());
        props.setProperty("writes", writes.encode());
        props.setProperty("how", how);
        java.io.StringWriter out = new java.io.StringWriter();
        props.store(out, "hearth: zeroed whole by its device pool");
        AtomicFiles.write(file(disk), out.toString());
    }

    /** Whether the disk is as the pool zeroed it: marked, and not written since. */
    boolean zeroed(DiskIdentity disk, Optional<DiskWrites> now) {
        Optional<DiskWrites> marked = read(disk);
        return marked.isPresent() && now.isPresent() && marked.get().equals(now.get());
    }

    void clear(DiskIdentity disk) throws IOException {
        if (Files.deleteIfExists(file(disk))) {
            AtomicFiles.syncDirectory(directory);
        }
    }

    private Optional<DiskWrites> read(DiskIdentity disk) {
        try {
            Properties props = new Properties();
            props.load(new StringReader(Files.readString(file(disk), StandardCharsets.UTF_8)));
            return DiskWrites.parse(props.getProperty("writes"));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty(); // a mark that cannot be read proves nothing
        }
    }

    private Path file(DiskIdentity disk) {
        return directory.resolve(disk.key());
    }
}
