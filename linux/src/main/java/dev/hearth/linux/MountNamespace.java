package dev.hearth.linux;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;

/**
 * A mount namespace of the calling thread's own, cut off from the node's: what it mounts there no
 * other thread, process or namespace sees, and it all goes when the thread ends (killed with its
 * process, too). The warm-up rehearses a volume's stage and publish in one, so that their code
 * has run before a kubelet's first request without a mount of it ever appearing on the node.
 *
 * <p>A thread that entered one stays in it: it is for a thread made for that purpose, never one
 * of a pool. {@link MountInfo} reads such a thread's own table, and the tools it starts
 * (posix_spawn from the thread) are in the namespace with it. Loop devices are not namespaced: one
 * attached there is the node's, while it lasts.
 *
 * <p>A new namespace begins as a copy of the node's, and a copy of a mount holds its filesystem,
 * and so its device, for as long as the namespace lives: a volume staged on the node when the
 * thread entered would stay open after the node's unstage, and its loop device or LV could not go.
 * So the thread detaches, in its namespace only, every mount of a block device that none of the
 * paths it needs lies on; filesystems of no device (tmpfs, proc, sysfs, overlay) hold nothing and
 * stay.
 */
public final class MountNamespace {

    private static final ThreadLocal<Boolean> PRIVATE = ThreadLocal.withInitial(() -> false);

    private MountNamespace() {}

    /**
     * Moves the calling thread into a new mount namespace and makes every mount in it private, so
     * that nothing mounted there propagates back to the node's shared mounts. If the second step
     * fails the thread must not mount anything: the caller ends the thread.
     */
    public static void enterPrivate(List<Path> needed) throws LinuxException {
        if (PRIVATE.get()) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            int rc = Libc.unshare(arena, Libc.CLONE_NEWNS);
            if (rc < 0) {
                throw new LinuxException("unshare", "CLONE_NEWNS", -rc);
            }
        }
        PRIVATE.set(true); // in it from here on, whether or not the next steps succeed
        Mounts.mount(null, Path.of("/"), null, MountFlags.MS_REC | MountFlags.MS_PRIVATE, null);
        detachDevicesNotNeeded(needed);
    }

    /**
     * Detaches (MNT_DETACH, so a busy one goes too) the copies of the node's block device mounts
     * that are not on the way to a needed path; stacked mounts take a pass each. Returns how many
     * such mounts are left: ones whose mount point cannot be reached by its path.
     */
    private static int detachDevicesNotNeeded(List<Path> needed) throws LinuxException {
        List<Path> wanted = needed.stream().map(MountInfo::canonical).toList();
        int left = 0;
        for (int pass = 0; pass < 8; pass++) {
            List<MountEntry> foreign;
            try {
                foreign = MountInfo.read().stream()
                        .filter(m -> m.major() != 0 && wanted.stream().noneMatch(p -> p.startsWith(m.mountPoint())))
                        .sorted(Comparator.comparingInt((MountEntry m) -> m.mountPoint().getNameCount()).reversed())
                        .toList();
            } catch (IOException e) {
                throw new LinuxException("read", "/proc/thread-self/mountinfo: " + e.getMessage(), Errno.EIO);
            }
            if (foreign.isEmpty() || foreign.size() == left) {
                return foreign.size();
            }
            left = foreign.size();
            for (MountEntry mount : foreign) {
                try {
                    Mounts.unmount(mount.mountPoint(), MountFlags.MNT_DETACH);
                } catch (LinuxException e) {
                    // gone with a parent detached before it (EINVAL), or its path no longer leads to it
                }
            }
        }
        return left;
    }

    /** Whether the calling thread is in a namespace of its own ({@link #enterPrivate}). */
    public static boolean isPrivate() {
        return PRIVATE.get();
    }
}
