package dev.hearth.storage.device;

import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.device.VolumeRecord.Empty;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Properties;

/**
 * Free disks this pool knows to hold nothing but zeros, because it zeroed them whole when it let
 * go of them, or read every byte of them ({@code check=full}), each with the disk's write counts
 * at that moment ({@code <state-dir>/pools/<name>/proven/<disk key>}). While a disk's counts are
 * still those, nothing has written to it since: it is proven empty for the next volume without
 * reading it again, also after the driver restarts (not after a reboot: the counts start over).
 * A mark whose counts no longer match proves nothing; the disk is then checked like any other.
 */
final class ProvenDisks {

    private final Path directory;

    ProvenDisks(Path directory) {
        this.directory = directory;
    }

    /** Records that the disk held nothing but zeros when its counts were {@code writes}. */
    void mark(DiskIdentity disk, DiskWrites writes, Empty how, String what) throws IOException {
        if (!how.proof()) {
            throw new IllegalArgumentException(how.label() + " proves nothing");
        }
        Files.createDirectories(directory);
        Properties props = new Properties();
        props.setProperty("disk", disk.toString());
        props.setProperty("empty", how.label());
        props.setProperty("writes", writes.encode());
        props.setProperty("how", what);
        StringWriter out = new StringWriter();
        props.store(out, "hearth: a free disk its device pool proved empty");
        AtomicFiles.write(file(disk), out.toString());
    }

    /** How the disk is proven empty, if it is marked and nothing has written to it since. */
    Optional<Empty> proven(DiskIdentity disk, Optional<DiskWrites> now) {
        try {
            Properties props = new Properties();
            props.load(new StringReader(Files.readString(file(disk), StandardCharsets.UTF_8)));
            Optional<DiskWrites> marked = DiskWrites.parse(props.getProperty("writes"));
            if (marked.isEmpty() || now.isEmpty() || !marked.equals(now)) {
                return Optional.empty();
            }
            Empty empty = Empty.parse(props.getProperty("empty", ""));
            return empty.proof() ? Optional.of(empty) : Optional.empty();
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty(); // a mark that cannot be read proves nothing
        }
    }

    void clear(DiskIdentity disk) throws IOException {
        if (Files.deleteIfExists(file(disk))) {
            AtomicFiles.syncDirectory(directory);
        }
    }

    private Path file(DiskIdentity disk) {
        return directory.resolve(disk.key());
    }
}
