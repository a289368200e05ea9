package dev.hearth.storage.mount;

import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Records, per volume, that its first mkfs has begun and not yet finished. A crash in the middle
 * of mkfs leaves a half-written filesystem that the signature probe rightly treats as foreign
 * data; the open entry is the proof that it is this driver's own unfinished work on a device that
 * was empty, so the retried stage may format it again. Entries live on the node's state directory
 * and are written atomically.
 */
public final class FormatJournal {

    private final Path directory;

    public FormatJournal(Path directory) throws IOException {
        this.directory = Files.createDirectories(directory);
    }

    void begin(VolumeId volume, Path device) {
        try {
            AtomicFiles.write(entry(volume), device + "\n");
        } catch (IOException e) {
            throw new StorageException.Failed("recording the format of " + volume + ": " + e.getMessage(), e);
        }
    }

    void end(VolumeId volume) {
        try {
            if (Files.deleteIfExists(entry(volume))) {
                AtomicFiles.syncDirectory(directory);
            }
        } catch (IOException e) {
            throw new StorageException.Failed("closing the format record of " + volume + ": " + e.getMessage(), e);
        }
    }

    boolean isOpen(VolumeId volume) {
        return Files.exists(entry(volume));
    }

    private Path entry(VolumeId volume) {
        return directory.resolve(volume + ".formatting");
    }
}
