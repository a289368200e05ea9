package dev.hearth.linux;

import static dev.hearth.linux.MountFlags.MS_BIND;
import static dev.hearth.linux.MountFlags.MS_NODEV;
import static dev.hearth.linux.MountFlags.MS_NOEXEC;
import static dev.hearth.linux.MountFlags.MS_NOSUID;
import static dev.hearth.linux.MountFlags.MS_NOSYMFOLLOW;
import static dev.hearth.linux.MountFlags.MS_RDONLY;
import static dev.hearth.linux.MountFlags.MS_REMOUNT;

import java.lang.foreign.Arena;
import java.nio.file.Path;

/** {@code mount(2)} and {@code umount2(2)}. */
public final class Mounts {

    // statvfs reports a mount's per-mount flags with these ST_* bits.
    private static final long ST_NOSUID = 2;
    private static final long ST_NODEV = 4;
    private static final long ST_NOEXEC = 8;
    private static final long ST_NOSYMFOLLOW = 0x2000;

    private Mounts() {}

    /**
     * @param source  device, directory or pseudo name ({@code "tmpfs"}); may be null for filesystems
     *                that ignore it
     * @param fsType  null for flag-only calls such as remounts and binds
     * @param data    filesystem-specific options, null or {@code ""} for none
     */
    public static void mount(String source, Path target, String fsType, long flags, String data)
            throws LinuxException {
        try (Arena arena = Arena.ofConfined()) {
            int rc = Libc.mount(arena, source, target.toString(), fsType, flags, data);
            if (rc < 0) {
                throw new LinuxException("mount", describe(source, target, fsType, flags, data), -rc);
            }
        }
    }

    /**
     * Bind-mounts {@code source} on {@code target}. A read-only bind is read-only from the moment it
     * appears at the target ({@link #bindReadOnly}), so a process killed part way through never leaves
     * a writable mount where a read-only one was asked for.
     */
    public static void bind(Path source, Path target, boolean readOnly) throws LinuxException {
        if (readOnly) {
            bindReadOnly(source, target);
        } else {
            mount(source.toString(), target, null, MS_BIND, null);
        }
    }

    /** Whether the kernel has open_tree, mount_setattr and move_mount (5.12 and later); false once one answers ENOSYS. */
    private static volatile boolean mountApi = true;

    /** For tests: whether read-only binds use the mount API, or the bind and remount of kernels before 5.12. */
    static boolean useMountApi(boolean use) {
        boolean was = mountApi;
        mountApi = use;
        return was;
    }

    /**
     * The kernel ignores {@code MS_RDONLY} on a bind itself, and a bind made writable and remounted
     * read-only is writable in between: a driver killed there leaves a writable mount that the
     * kubelet's retry finds and must refuse (a read-only publish of a volume published read-write).
     * The mount API closes that gap: open_tree clones the source as a detached mount, mount_setattr
     * makes the clone read-only (keeping nosuid, nodev and the like as they are), and move_mount
     * attaches it; a kill before the attach leaves nothing, as the clone goes with its descriptor.
     * Kernels before 5.12 get the bind and the remount, and a failed remount undoes the bind.
     */
    private static void bindReadOnly(Path source, Path target) throws LinuxException {
        if (mountApi) {
            try (Arena arena = Arena.ofConfined()) {
                int tree = Libc.openTree(arena, Libc.AT_FDCWD, source.toString(), Libc.OPEN_TREE_CLONE | Libc.O_CLOEXEC);
                if (tree >= 0) {
                    try {
                        int rc = Libc.mountSetattr(arena, tree, Libc.MOUNT_ATTR_RDONLY, 0);
                        if (rc == 0) {
                            rc = Libc.moveMount(arena, tree, target.toString());
                            if (rc < 0) {
                                throw new LinuxException("move_mount", source + " -> " + target + ", read-only", -rc);
                            }
                            return;
                        }
                        if (rc != -Errno.ENOSYS) {
                            throw new LinuxException("mount_setattr", source + ", read-only", -rc);
                        }
                    } finally {
                        Libc.close(tree); // attached, the mount stays; detached, it goes
                    }
                } else if (tree != -Errno.ENOSYS) {
                    throw new LinuxException("open_tree", source + ", clone", -tree);
                }
                mountApi = false;
            }
        }
        mount(source.toString(), target, null, MS_BIND, null);
        try {
            mount(null, target, null, MS_REMOUNT | MS_BIND | MS_RDONLY | lockedFlags(target), null);
        } catch (LinuxException e) {
            try {
                unmount(target);
            } catch (LinuxException undo) {
                e.addSuppressed(undo);
            }
            throw e;
        }
    }

    /** {@code umount2(target, 0)}: fails with EBUSY while in use and EINVAL if nothing is mounted there. */
    public static void unmount(Path target) throws LinuxException {
        unmount(target, 0);
    }

    /** @param umount2Flags e.g. {@link MountFlags#UMOUNT_NOFOLLOW} or {@link MountFlags#MNT_DETACH} */
    public static void unmount(Path target, int umount2Flags) throws LinuxException {
        try (Arena arena = Arena.ofConfined()) {
            int rc = Libc.umount2(arena, target.toString(), umount2Flags);
            if (rc < 0) {
                String args = umount2Flags == 0 ? target.toString() : target + ", 0x" + Integer.toHexString(umount2Flags);
                throw new LinuxException("umount2", args, -rc);
            }
        }
    }

    /**
     * A bind remount replaces all per-mount flags with the ones passed, so without this a read-only
     * bind of a nosuid/nodev mount would quietly regain suid and device access (and inside a user
     * namespace the kernel refuses with EPERM). mount(8) keeps them the same way.
     */
    private static long lockedFlags(Path mountPoint) throws LinuxException {
        long st = FileSystems.statvfs(mountPoint).flags();
        long flags = 0;
        if ((st & ST_NOSUID) != 0) flags |= MS_NOSUID;
        if ((st & ST_NODEV) != 0) flags |= MS_NODEV;
        if ((st & ST_NOEXEC) != 0) flags |= MS_NOEXEC;
        if ((st & ST_NOSYMFOLLOW) != 0) flags |= MS_NOSYMFOLLOW;
        return flags;
    }

    private static String describe(String source, Path target, String fsType, long flags, String data) {
        StringBuilder s = new StringBuilder().append(source).append(" -> ").append(target);
        if (fsType != null) {
            s.append(", ").append(fsType);
        }
        if (flags != 0) {
            s.append(", ").append(MountFlags.describe(flags));
        }
        if (data != null && !data.isEmpty()) {
            s.append(", ").append(data);
        }
        return s.toString();
    }
}
