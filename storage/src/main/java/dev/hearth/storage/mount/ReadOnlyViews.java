package dev.hearth.storage.mount;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.MountInfo;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

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

    /**
     * Whether {@code candidate} is a read-only view layered over {@code device}: read from the
     * candidate's own sysfs directory, so the answer costs the same on a node with any number of
     * loop devices.
     */
    static boolean isViewOf(Path candidate, Path device) {
        return view(candidate).filter(a -> MountInfo.sameNode(a.backingFile(), device)).isPresent();
    }

    /** Detaches {@code device} if it is one of our read-only views; any other device is left alone. */
    static void releaseIfView(Path device) {
        Optional<LoopAttachment> view = view(device);
        if (view.isPresent()) {
            try {
                Loop.detach(view.get().device());
            } catch (IOException e) {
                throw new StorageException.Failed("detaching read-only view " + device + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Detaches the views of {@code device} that no mount binds: what a publish killed between making
     * its view and binding it left behind. It reads every loop device on the node, so the unstage
     * asks only for a volume whose record says a view was made.
     *
     * @return whether views of the device are still bound somewhere (published at another target)
     */
    static boolean releaseUnbound(Path device, MountTable table) {
        boolean bound = false;
        Path node = MountInfo.canonical(device); // sysfs names the view's backing device by its node, not a link to it
        try {
            for (LoopAttachment view : Loop.list()) {
                if (!view.readOnly() || view.backingDeleted() || !view.backingFile().equals(node)) {
                    continue;
                }
                if (table.bindsNode(view.device().path())) {
                    bound = true;
                } else {
                    Loop.detach(view.device());
                }
            }
        } catch (IOException e) {
            throw new StorageException.Failed("releasing read-only views of " + device + ": " + e.getMessage(), e);
        }
        return bound;
    }

    /** The device as a view: a read-only loop device whose backing file is a device node under /dev. */
    private static Optional<LoopAttachment> view(Path device) {
        Optional<LoopDevice> loop = LoopDevice.fromPath(device);
        if (loop.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Loop.describe(loop.get())
                    .filter(a -> a.readOnly() && !a.backingDeleted() && a.backingFile().startsWith("/dev/"));
        } catch (IOException e) {
            throw new StorageException.Failed("reading loop device " + device + ": " + e.getMessage(), e);
        }
    }
}
