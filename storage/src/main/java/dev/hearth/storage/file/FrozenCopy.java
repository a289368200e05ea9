package dev.hearth.storage.file;

import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.copy.CopyResult;
import dev.hearth.storage.copy.ImageCopier;
import dev.hearth.storage.mount.Freezer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Copies a volume's image as one point in time. If the volume's filesystem is mounted on this
 * node, it is frozen (FIFREEZE) for the copy: the filesystem flushes and holds new writes, so the
 * copy is consistent rather than merely crash-consistent. A reflink takes milliseconds of freeze;
 * a full copy holds writers for as long as it runs, up to the {@link Freezer}'s limit.
 */
final class FrozenCopy {

    private static final System.Logger LOG = System.getLogger(FrozenCopy.class.getName());

    private final ImageCopier copier = new ImageCopier();
    private final Freezer freezer;

    FrozenCopy(Freezer freezer) {
        this.freezer = freezer;
    }

    CopyResult copy(Path sourceImage, Optional<Path> sourceDevice, Path target, long targetSize) throws IOException {
        Optional<Path> mountPoint = sourceDevice.flatMap(FrozenCopy::mountOf);
        if (mountPoint.isEmpty()) {
            return copier.copy(sourceImage, target, targetSize);
        }
        CopyResult result = freezer.whileFrozen(mountPoint.get(), () -> copier.copy(sourceImage, target, targetSize));
        LOG.log(System.Logger.Level.DEBUG, () -> "copied " + sourceImage + " under freeze of " + mountPoint.get()
                + ": " + result);
        return result;
    }

    private static Optional<Path> mountOf(Path device) {
        try {
            return MountInfo.read().stream()
                    .filter(m -> device.toString().equals(m.source()))
                    .map(MountEntry::mountPoint)
                    .findFirst();
        } catch (IOException e) {
            throw new StorageException.Failed("reading mounts: " + e.getMessage(), e);
        }
    }
}
