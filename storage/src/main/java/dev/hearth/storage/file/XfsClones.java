package dev.hearth.storage.file;

import dev.hearth.linux.Errno;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.fs.FilesystemIdentity;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * Gives a restored or cloned xfs image a UUID of its own, so it mounts beside its source. A copy
 * taken under FIFREEZE has a quiesced but not unmounted log, which xfs_admin refuses to touch;
 * mounting the copy once (with {@code nouuid}, on a private loop device, before anyone can use it)
 * replays that log and leaves a clean one.
 */
final class XfsClones {

    private static final System.Logger LOG = System.getLogger(XfsClones.class.getName());
    /**
     * The directory of the pool's replay mount points, one per image being replayed, named after it.
     * It is the pool's, so the pool's open (under its lock) can remove what a killed replay left.
     */
    static final String REPLAYS = ".xfs-replays";
    /** Where earlier versions mounted a replay: a temporary directory with this prefix. */
    private static final String OLD_REPLAY_PREFIX = "hearth-xfs-replay-";

    private final FilesystemIdentity identity;
    private final Path replays;

    XfsClones(FilesystemIdentity identity, Path poolDirectory) {
        this.identity = identity;
        this.replays = poolDirectory.resolve(REPLAYS);
    }

    /**
     * Renews the UUID if the image holds xfs; any other content is left alone.
     *
     * @param source what the image was copied from, for messages
     * @throws StorageException.Precondition if the copied xfs cannot be mounted, because its mkfs
     *     never finished or it is damaged: the copy is as unusable as its source, and a clone that
     *     could never mount beside its source is not made
     */
    void renewIdentity(Path image, String source) throws IOException {
        if (FilesystemIdentity.xfsUuid(image).isEmpty()) {
            return;
        }
        if (FilesystemIdentity.xfsFormatUnfinished(image)) {
            throw new StorageException.Precondition("cannot copy " + source + ": it holds an xfs whose mkfs did not"
                    + " finish (a stage was interrupted while formatting it); staging it again completes the format,"
                    + " after which it can be copied");
        }
        try {
            replayLog(image, replays.resolve(image.getFileName()));
        } catch (LinuxException e) {
            if (e.call().equals("mount") && Errno.damagedFilesystem(e.errno())) {
                throw new StorageException.Precondition("cannot copy " + source + ": the xfs it holds does not mount"
                        + " (" + Errno.description(e.errno()) + "), so it is damaged; repair it (xfs_repair) or"
                        + " copy another source", e);
            }
            throw e;
        }
        identity.renewXfsUuid(image);
    }

    /**
     * Releases what a replay left when its driver was killed in the middle of it: a loop device
     * over a partial image of the pool ({@code <id>.img.part}, perhaps deleted since by the pool's
     * clean-up), and the private mount of it. A partial image is never attached otherwise, so
     * whatever serves one is a replay's. Then removes the replays' mount points, which a kill
     * between making one and mounting on it leaves empty: only empty directories that nothing is
     * mounted on are removed. Run when the pool opens, before anyone can use it.
     */
    static void releaseLeftovers(Path poolDirectory) throws IOException {
        Path directory = poolDirectory.toRealPath();
        List<LoopAttachment> leftovers = Loop.list().stream()
                .filter(a -> directory.equals(a.backingFile().getParent())
                        && a.backingFile().getFileName().toString().endsWith(ImageFiles.PARTIAL))
                .toList();
        List<MountEntry> mounts = leftovers.isEmpty() ? List.of() : MountInfo.read().reversed();
        for (LoopAttachment attached : leftovers) {
            Path backing = attached.backingFile();
            String device = attached.device().path().toString();
            for (MountEntry mount : mounts) {
                if (mount.source().equals(device)) {
                    LOG.log(System.Logger.Level.INFO, "unmounting {0} from {1}, left by an xfs log replay that did"
                            + " not finish", device, mount.mountPoint());
                    Mounts.unmount(mount.mountPoint());
                    if (mount.mountPoint().getFileName().toString().startsWith(OLD_REPLAY_PREFIX)) {
                        Files.deleteIfExists(mount.mountPoint());
                    }
                }
            }
            LOG.log(System.Logger.Level.INFO, "detaching {0} from {1}, left by an xfs log replay that did not"
                    + " finish", device, backing);
            Loop.detach(attached.device());
        }
        removeMountPoints(directory.resolve(REPLAYS));
    }

    /** Removes the empty mount points a killed replay left; one still mounted on is unmounted first. */
    private static void removeMountPoints(Path replays) throws IOException {
        if (!Files.isDirectory(replays, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        List<Path> entries;
        try (Stream<Path> listed = Files.list(replays)) {
            entries = listed.toList();
        }
        for (Path mountPoint : entries) {
            if (MountInfo.at(mountPoint).isPresent()) {
                LOG.log(System.Logger.Level.INFO, "unmounting {0}, left by an xfs log replay that did not finish",
                        mountPoint);
                Mounts.unmount(mountPoint);
            }
            try {
                Files.deleteIfExists(mountPoint);
            } catch (DirectoryNotEmptyException e) {
                // Not a mount point a replay left as it made it: left alone, and said.
                LOG.log(System.Logger.Level.WARNING, "left {0} in place: it is not empty", mountPoint);
            }
        }
    }

    private static void replayLog(Path image, Path mountPoint) throws IOException {
        Files.createDirectories(mountPoint.getParent());
        Files.createDirectories(mountPoint);
        try {
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
                }
            }
        } finally {
            Files.deleteIfExists(mountPoint);
        }
    }
}
