package dev.hearth.storage.file;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.storage.Attachment;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A file pool's volumes as loop devices. Which image is attached where is read from sysfs every
 * time; the striped locks only keep two calls on one volume from attaching it twice.
 */
final class LoopAttachments {

    private final Object[] stripes = new Object[64];
    private final boolean directIo;

    LoopAttachments(boolean directIo) {
        this.directIo = directIo;
        for (int i = 0; i < stripes.length; i++) {
            stripes[i] = new Object();
        }
    }

    Attachment attach(VolumeId id, Path image) {
        synchronized (lockOf(id)) {
            try {
                Optional<LoopAttachment> attached = Loop.findByBackingFile(image);
                if (attached.isPresent()) {
                    return new Attachment(attached.get().device().path(), false);
                }
                if (!Files.exists(image)) {
                    throw new StorageException.Failed("volume " + id + " has lost its image file " + image);
                }
                return new Attachment(Loop.attach(image, false, directIo).path(), true);
            } catch (IOException e) {
                throw new StorageException.Failed("attaching " + image + " as a loop device: " + e.getMessage(), e);
            }
        }
    }

    Optional<Path> device(Path image) {
        try {
            return Loop.findByBackingFile(image).map(a -> a.device().path());
        } catch (IOException e) {
            throw new StorageException.Failed("reading loop devices: " + e.getMessage(), e);
        }
    }

    void detach(VolumeId id, Path image) {
        synchronized (lockOf(id)) {
            try {
                // Also a device whose image was deleted under it: it still holds the old inode.
                for (LoopAttachment attached : Loop.list()) {
                    if (attached.backingFile().equals(image)) {
                        Loop.detach(attached.device());
                    }
                }
            } catch (IOException e) {
                throw new StorageException.Failed("detaching the loop device of " + image + ": " + e.getMessage(), e);
            }
        }
    }

    private Object lockOf(VolumeId id) {
        return stripes[Math.floorMod(id.hashCode(), stripes.length)];
    }
}
