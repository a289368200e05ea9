package dev.hearth.storage.lvm;

import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Which volumes were never handed to a user: a mark per volume in the pool's state directory,
 * made before its LV is created and removed when a stage first hands it over. Only a marked
 * volume is proven empty (its ends were cleared and nobody has had it since); a lost mark
 * errs on the safe side: the volume is then never formatted, only refused.
 */
final class BlankVolumes {

    private final Path directory;

    BlankVolumes(Path directory) {
        this.directory = directory;
    }

    void mark(VolumeId id) {
        try {
            Files.createDirectories(directory);
            AtomicFiles.write(file(id), "blank\n");
        } catch (IOException e) {
            throw new StorageException.Failed("recording volume " + id + " as blank in " + directory + ": "
                    + e.getMessage(), e);
        }
    }

    boolean marked(VolumeId id) {
        return Files.exists(file(id));
    }

    /**
     * Removes the mark for good: the directory is synced, or a crash could bring the mark back on a
     * volume a raw-block user has already written, and its data in the middle would be formatted over.
     */
    void clear(VolumeId id) {
        try {
            if (Files.deleteIfExists(file(id))) {
                AtomicFiles.syncDirectory(directory);
            }
        } catch (IOException e) {
            throw new StorageException.Failed("clearing the blank mark of volume " + id + ": " + e.getMessage(), e);
        }
    }

    private Path file(VolumeId id) {
        return directory.resolve(id.toString());
    }
}
