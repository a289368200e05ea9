package dev.hearth.storage.file;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.storage.fs.FilesystemIdentity;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Gives a restored or cloned xfs image a UUID of its own, so it mounts beside its source. A copy
 * taken under FIFREEZE has a quiesced but not unmounted log, which xfs_admin refuses to touch;
 * mounting the copy once (with {@code nouuid}, on a private loop device, before anyone can use it)
 * replays that log and leaves a clean one.
 */
final class XfsClones {

    private final FilesystemIdentity identity;

    XfsClones(FilesystemIdentity identity) {
        this.identity = identity;
    }

    /** Renews the UUID if the image holds xfs; any other content is left alone. */
    void renewIdentity(Path image) throws IOException {
        if (FilesystemIdentity.xfsUuid(image).isEmpty()) {
            return;
        }
        replayLog(image);
        identity.renewXfsUuid(image);
    }

    private static void replayLog(Path image) throws IOException {
        Path mountPoint = Files.createTempDirectory("hearth-xfs-replay-");
        LoopDevice loop = Loop.attach(image, false, false);
        try {
            Mounts.mount(loop.path().toString(), mountPoint, "xfs", 0, "nouuid");
            Mounts.unmount(mountPoint);
        } finally {
            try {
                if (MountInfo.at(mountPoint).isPresent()) {
                    Mounts.unmount(mountPoint);
                }
            } finally {
                Loop.detach(loop);
                Files.deleteIfExists(mountPoint);
            }
        }
    }
}
