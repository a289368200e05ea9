package dev.hearth.linux;

import java.lang.foreign.Arena;
import java.nio.file.Path;

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
 */
public final class MountNamespace {

    private static final ThreadLocal<Boolean> PRIVATE = ThreadLocal.withInitial(() -> false);

    private MountNamespace() {}

    /**
     * Moves the calling thread into a new mount namespace and makes every mount in it private, so
     * that nothing mounted there propagates back to the node's shared mounts. If the second step
     * fails the thread must not mount anything: the caller ends the thread.
     */
    public static void enterPrivate() throws LinuxException {
        if (PRIVATE.get()) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            int rc = Libc.unshare(arena, Libc.CLONE_NEWNS);
            if (rc < 0) {
                throw new LinuxException("unshare", "CLONE_NEWNS", -rc);
            }
        }
        PRIVATE.set(true); // in it from here on, whether or not the next step succeeds
        Mounts.mount(null, Path.of("/"), null, MountFlags.MS_REC | MountFlags.MS_PRIVATE, null);
    }

    /** Whether the calling thread is in a namespace of its own ({@link #enterPrivate}). */
    public static boolean isPrivate() {
        return PRIVATE.get();
    }
}
