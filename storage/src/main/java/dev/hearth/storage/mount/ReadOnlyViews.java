package dev.hearth.storage.mount;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Read-only loop devices layered over a volume's block device. The kernel ignores a bind mount's
 * read-only flag for a device node: a pod given a "read-only" bind of the volume's device could
 * still write to it. A loop device configured read-only over that device refuses every write, so
 * a read-only block publish binds such a view instead. The views are found again from sysfs: a
 * read-only loop device whose backing file is a block device under /dev.
 */
final class ReadOnlyViews {

    private ReadOnlyViews() {}

    static Path create(Path device) {
        try {
            return Loop.attach(device, true, true).path();
        } catch (IOException e) {
            throw new StorageException.Failed("making a read-only view of " + device + ": " + e.getMessage(), e);
        }
    }

    /** The read-only views currently layered over {@code device}. */
    static List<Path> of(Path device) {
        return loops().stream()
                .filter(a -> a.readOnly() && a.backingFile().equals(device))
                .map(a -> a.device().path())
                .toList();
    }

    /** Detaches {@code device} if it is one of our read-only views; any other device is left alone. */
    static void releaseIfView(Path device) {
        for (LoopAttachment loop : loops()) {
            if (loop.device().path().equals(device) && loop.readOnly() && loop.backingFile().startsWith("/dev/")) {
                try {
                    Loop.detach(loop.device());
                } catch (IOException e) {
                    throw new StorageException.Failed("detaching read-only view " + device + ": " + e.getMessage(), e);
                }
            }
        }
    }

    private static List<LoopAttachment> loops() {
        try {
            return Loop.list();
        } catch (IOException e) {
            throw new StorageException.Failed("reading loop devices: " + e.getMessage(), e);
        }
    }
}
