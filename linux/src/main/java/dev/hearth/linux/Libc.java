package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The raw libc calls, each returning what the syscall would: a non-negative result or
 * {@code -errno}. Callers decide what a failure means and phrase the {@link LinuxException}, because
 * only they know which arguments matter. The caller's arena holds the strings and errno slot, so
 * nothing outlives the public call that made it.
 */
final class Libc {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    static final int O_RDONLY = 0;
    static final int O_RDWR = 2;
    static final int O_CLOEXEC = 0x80000;
    /** The same on x86_64 and aarch64 (asm-generic). On a block device: fail with EBUSY if it is mounted or held. */
    static final int O_EXCL = 0x80;
    static final int AT_FDCWD = -100;
    /** unlinkat: remove a directory (rmdir) rather than a file. */
    static final int AT_REMOVEDIR = 0x200;
    static final int AT_EMPTY_PATH = 0x1000;
    static final int O_DIRECTORY = 0x10000;
    static final int SEEK_DATA = 3;
    static final int SEEK_HOLE = 4;

    // Each function is linked on its first use, in a holder class of its own: linking one takes
    // about 5 ms of a cold JVM (the first about 30), and the driver's start needs only a few of them.
    // The driver's warm-up links the rest (linkAll) before a volume's first call needs them.

    private static final class Open {
        static final MethodHandle HANDLE = function("open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    }

    private static final class Close {
        static final MethodHandle HANDLE = function("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    }

    // ioctl's third argument is variadic: both a pointer and an integer flavour are needed.
    private static final class IoctlPointer {
        static final MethodHandle HANDLE = function("ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS),
                CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    }

    private static final class IoctlLong {
        static final MethodHandle HANDLE = function("ioctl", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG),
                CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    }

    private static final class Mount {
        static final MethodHandle HANDLE = function("mount",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS), CAPTURE_ERRNO);
    }

    // The mount API's calls that glibc before 2.36 does not wrap, through syscall(2). Their numbers
    // came after the kernel unified them (5.1): the same on x86_64 and aarch64. Every argument is
    // passed as a long, as syscall(2) reads it; the kernel narrows each to its own type.
    static final long SYS_OPEN_TREE = 428;
    static final long SYS_MOVE_MOUNT = 429;
    static final long SYS_MOUNT_SETATTR = 442;

    private static final class Syscall3 {
        static final MethodHandle HANDLE = function("syscall",
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG), CAPTURE_ERRNO,
                Linker.Option.firstVariadicArg(1));
    }

    private static final class Syscall5 {
        static final MethodHandle HANDLE = function("syscall",
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG),
                CAPTURE_ERRNO, Linker.Option.firstVariadicArg(1));
    }

    private static final class Umount2 {
        static final MethodHandle HANDLE = function("umount2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT),
                CAPTURE_ERRNO);
    }

    private static final class Statvfs {
        static final MethodHandle HANDLE = function("statvfs", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS),
                CAPTURE_ERRNO);
    }

    private static final class Statx {
        static final MethodHandle HANDLE = function("statx",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS), CAPTURE_ERRNO);
    }

    private static final class Fallocate {
        static final MethodHandle HANDLE = function("fallocate",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), CAPTURE_ERRNO);
    }

    private static final class Lseek {
        static final MethodHandle HANDLE = function("lseek", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT),
                CAPTURE_ERRNO);
    }

    private static final class Fsync {
        static final MethodHandle HANDLE = function("fsync", FunctionDescriptor.of(JAVA_INT, JAVA_INT), CAPTURE_ERRNO);
    }

    private static final class Unlinkat {
        static final MethodHandle HANDLE = function("unlinkat",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), CAPTURE_ERRNO);
    }

    private static final class Umask {
        static final MethodHandle HANDLE = function("umask", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    }

    private static final class Geteuid {
        static final MethodHandle HANDLE = function("geteuid", FunctionDescriptor.of(JAVA_INT));
    }

    // glibc >= 2.32 only; Errno falls back to its own table without them.
    private static final class StrerrorName {
        static final Optional<MethodHandle> HANDLE = optionalFunction("strerrorname_np");
    }

    private static final class StrerrorDesc {
        static final Optional<MethodHandle> HANDLE = optionalFunction("strerrordesc_np");
    }

    // Starting a child (ChildProcess): posix_spawn and what it needs. glibc's posix_spawn clones with
    // CLONE_VM|CLONE_VFORK and execs the program itself, without the JDK's helper process in between.
    private static final class Spawn {
        static final MethodHandle HANDLE = function("posix_spawn",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle ACTIONS_INIT = function("posix_spawn_file_actions_init",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle ACTIONS_DESTROY = function("posix_spawn_file_actions_destroy",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle ADD_OPEN = function("posix_spawn_file_actions_addopen",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        static final MethodHandle ADD_DUP2 = function("posix_spawn_file_actions_adddup2",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        static final MethodHandle ADD_CHDIR = function("posix_spawn_file_actions_addchdir_np",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle ADD_CLOSEFROM = function("posix_spawn_file_actions_addclosefrom_np",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT));
        static final MethodHandle ATTR_INIT = function("posix_spawnattr_init",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle ATTR_DESTROY = function("posix_spawnattr_destroy",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle SET_FLAGS = function("posix_spawnattr_setflags",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_SHORT));
        static final MethodHandle SET_SIGMASK = function("posix_spawnattr_setsigmask",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle SET_SIGDEFAULT = function("posix_spawnattr_setsigdefault",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle SIGEMPTYSET = function("sigemptyset", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle SIGFILLSET = function("sigfillset", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    private static final class Pipe2 {
        static final MethodHandle HANDLE = function("pipe2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT),
                CAPTURE_ERRNO);
    }

    private static final class Read {
        static final MethodHandle HANDLE = function("read",
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), CAPTURE_ERRNO);
    }

    private static final class Poll {
        static final MethodHandle HANDLE = function("poll",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), CAPTURE_ERRNO);
    }

    private static final class Waitpid {
        static final MethodHandle HANDLE = function("waitpid",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), CAPTURE_ERRNO);
    }

    private static final class Unshare {
        static final MethodHandle HANDLE = function("unshare", FunctionDescriptor.of(JAVA_INT, JAVA_INT), CAPTURE_ERRNO);
    }

    private static final class Kill {
        static final MethodHandle HANDLE = function("kill", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT),
                CAPTURE_ERRNO);
    }

    private static final class InotifyInit {
        static final MethodHandle HANDLE = function("inotify_init1", FunctionDescriptor.of(JAVA_INT, JAVA_INT),
                CAPTURE_ERRNO);
    }

    private static final class InotifyAddWatch {
        static final MethodHandle HANDLE = function("inotify_add_watch",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT), CAPTURE_ERRNO);
    }

    /** glibc 2.34 and later: what {@link #spawn} needs beyond POSIX (closing every other descriptor in the child). */
    private static final class SpawnSupport {
        static final boolean PRESENT = Stream.of("posix_spawn_file_actions_addclosefrom_np",
                "posix_spawn_file_actions_addchdir_np").allMatch(name -> LINKER.defaultLookup().find(name).isPresent());
    }

    private Libc() {}

    /** strerrorname_np, where this libc has it. */
    static Optional<MethodHandle> strerrorname() {
        return StrerrorName.HANDLE;
    }

    /** strerrordesc_np, where this libc has it. */
    static Optional<MethodHandle> strerrordesc() {
        return StrerrorDesc.HANDLE;
    }

    /**
     * Links every function not linked yet; returns how many functions there are. Nothing is called:
     * linking only looks the symbol up and makes the stub.
     */
    static int linkAll() {
        List<Object> handles = new java.util.ArrayList<>(List.of(Open.HANDLE, Close.HANDLE, IoctlPointer.HANDLE,
                IoctlLong.HANDLE, Mount.HANDLE, Syscall3.HANDLE, Syscall5.HANDLE, Umount2.HANDLE, Statvfs.HANDLE, Statx.HANDLE, Fallocate.HANDLE,
                Lseek.HANDLE, Fsync.HANDLE, Unlinkat.HANDLE, Umask.HANDLE,
                Geteuid.HANDLE, StrerrorName.HANDLE, StrerrorDesc.HANDLE, Pipe2.HANDLE, Read.HANDLE, Poll.HANDLE,
                Waitpid.HANDLE, Kill.HANDLE, Unshare.HANDLE, InotifyInit.HANDLE, InotifyAddWatch.HANDLE));
        // Linking posix_spawn's holder links all its functions, which a libc before 2.34 lacks in part.
        handles.add(SpawnSupport.PRESENT ? Spawn.HANDLE : "posix_spawn: not used with this libc");
        return handles.size();
    }

    static int open(Arena arena, String path, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            int rc;
            do {
                rc = result((int) Open.HANDLE.invokeExact(state, cPath, flags, 0), state);
            } while (rc == -Errno.EINTR);
            return rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** Errors from close are not actionable here: the fd is gone either way. */
    static void close(int fd) {
        try {
            int ignored = (int) Close.HANDLE.invokeExact(fd);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int ioctl(Arena arena, int fd, long request, MemorySegment arg) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            return result((int) IoctlPointer.HANDLE.invokeExact(state, fd, request, arg), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int ioctl(Arena arena, int fd, long request, long arg) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            return result((int) IoctlLong.HANDLE.invokeExact(state, fd, request, arg), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int mount(Arena arena, String source, String target, String fsType, long flags, String data) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cSource = cString(arena, source);
        MemorySegment cTarget = cString(arena, target);
        MemorySegment cType = cString(arena, fsType);
        MemorySegment cData = cString(arena, data);
        try {
            return result((int) Mount.HANDLE.invokeExact(state, cSource, cTarget, cType, flags, cData), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code open_tree(dirfd, path, flags)}: a descriptor of the mount at path, or of a detached copy of it. */
    static int openTree(Arena arena, int dirfd, String path, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            return (int) longResult((long) Syscall3.HANDLE.invokeExact(state, SYS_OPEN_TREE, (long) dirfd, cPath,
                    (long) flags), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@code mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr)} on the mount the descriptor
     * names: sets and clears per-mount {@code MOUNT_ATTR_*} bits, leaving every other bit as it is.
     */
    static int mountSetattr(Arena arena, int fd, long set, long clear) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment empty = cString(arena, "");
        MemorySegment attr = arena.allocate(JAVA_LONG, 4); // struct mount_attr: set, clr, propagation, userns_fd
        attr.setAtIndex(JAVA_LONG, 0, set);
        attr.setAtIndex(JAVA_LONG, 1, clear);
        try {
            return (int) longResult((long) Syscall5.HANDLE.invokeExact(state, SYS_MOUNT_SETATTR, (long) fd, empty,
                    (long) AT_EMPTY_PATH, attr, attr.byteSize()), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@code move_mount(fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH)}: attaches the mount the
     * descriptor names at target, without following a symbolic link there.
     */
    static int moveMount(Arena arena, int fd, String target) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment empty = cString(arena, "");
        MemorySegment cTarget = cString(arena, target);
        try {
            return (int) longResult((long) Syscall5.HANDLE.invokeExact(state, SYS_MOVE_MOUNT, (long) fd, empty,
                    (long) AT_FDCWD, cTarget, (long) MOVE_MOUNT_F_EMPTY_PATH), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static final int OPEN_TREE_CLONE = 1;
    static final int MOVE_MOUNT_F_EMPTY_PATH = 4;
    static final long MOUNT_ATTR_RDONLY = 1;

    static int umount2(Arena arena, String target, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cTarget = cString(arena, target);
        try {
            return result((int) Umount2.HANDLE.invokeExact(state, cTarget, flags), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int statvfs(Arena arena, String path, MemorySegment buf) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            return result((int) Statvfs.HANDLE.invokeExact(state, cPath, buf), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int statx(Arena arena, String path, int flags, int mask, MemorySegment buf) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            return result((int) Statx.HANDLE.invokeExact(state, AT_FDCWD, cPath, flags, mask, buf), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** statx of what the open descriptor names ({@code AT_EMPTY_PATH}). */
    static int statx(Arena arena, int fd, int mask, MemorySegment buf) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment empty = cString(arena, "");
        try {
            return result((int) Statx.HANDLE.invokeExact(state, fd, empty, AT_EMPTY_PATH, mask, buf), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int fallocate(Arena arena, int fd, int mode, long offset, long length) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            int rc;
            do { // a signal can interrupt a large allocation part way; the call is safe to repeat
                rc = result((int) Fallocate.HANDLE.invokeExact(state, fd, mode, offset, length), state);
            } while (rc == -Errno.EINTR);
            return rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** @return the new offset, or {@code -errno} (ENXIO: no data, or no hole, at or after {@code offset}) */
    static long lseek(Arena arena, int fd, long offset, int whence) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            long rc = (long) Lseek.HANDLE.invokeExact(state, fd, offset, whence);
            return rc == -1 ? -(int) ERRNO.get(state, 0L) : rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int unlinkat(Arena arena, String path, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            return result((int) Unlinkat.HANDLE.invokeExact(state, AT_FDCWD, cPath, flags), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int fsync(Arena arena, int fd) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            int rc;
            do {
                rc = result((int) Fsync.HANDLE.invokeExact(state, fd), state);
            } while (rc == -Errno.EINTR);
            return rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int umask(int mask) {
        try {
            return (int) Umask.HANDLE.invokeExact(mask);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int geteuid() {
        try {
            return (int) Geteuid.HANDLE.invokeExact();
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** Whether this libc has all that {@link #spawn} calls (glibc 2.34 and later). */
    static boolean spawnSupported() {
        return SpawnSupport.PRESENT;
    }

    private static final int POSIX_SPAWN_SETSIGDEF = 0x04;
    private static final int POSIX_SPAWN_SETSIGMASK = 0x08;
    /** Larger than glibc's posix_spawn_file_actions_t (80 bytes), posix_spawnattr_t (336) and sigset_t (128). */
    private static final long SPAWN_STRUCT_BYTES = 1024;

    /**
     * Starts {@code path} with {@code argv} and {@code env}: stdin from /dev/null, stdout and stderr
     * onto the given descriptors, the working directory /, every other descriptor closed, every
     * signal at its default disposition and none blocked.
     *
     * @return the child's pid, or {@code -errno} (ENOENT, EACCES, ...: the exec failed)
     */
    static int spawn(Arena arena, String path, List<String> argv, List<String> env, int stdout, int stderr) {
        MemorySegment actions = arena.allocate(SPAWN_STRUCT_BYTES, 16);
        MemorySegment attributes = arena.allocate(SPAWN_STRUCT_BYTES, 16);
        MemorySegment signals = arena.allocate(SPAWN_STRUCT_BYTES, 16);
        MemorySegment pid = arena.allocate(JAVA_INT);
        try {
            int rc = (int) Spawn.ACTIONS_INIT.invokeExact(actions);
            if (rc != 0) {
                return -rc;
            }
            try {
                rc = (int) Spawn.ATTR_INIT.invokeExact(attributes);
                if (rc != 0) {
                    return -rc;
                }
                try {
                    rc = firstError(
                            (int) Spawn.ADD_OPEN.invokeExact(actions, 0, cString(arena, "/dev/null"), O_RDONLY, 0),
                            (int) Spawn.ADD_DUP2.invokeExact(actions, stdout, 1),
                            (int) Spawn.ADD_DUP2.invokeExact(actions, stderr, 2),
                            (int) Spawn.ADD_CLOSEFROM.invokeExact(actions, 3),
                            (int) Spawn.ADD_CHDIR.invokeExact(actions, cString(arena, "/")),
                            (int) Spawn.SIGFILLSET.invokeExact(signals) == 0 ? 0 : Errno.EINVAL,
                            (int) Spawn.SET_SIGDEFAULT.invokeExact(attributes, signals),
                            (int) Spawn.SIGEMPTYSET.invokeExact(signals) == 0 ? 0 : Errno.EINVAL,
                            (int) Spawn.SET_SIGMASK.invokeExact(attributes, signals),
                            (int) Spawn.SET_FLAGS.invokeExact(attributes,
                                    (short) (POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)));
                    if (rc != 0) {
                        return -rc;
                    }
                    rc = (int) Spawn.HANDLE.invokeExact(pid, cString(arena, path), actions, attributes,
                            cStrings(arena, argv), cStrings(arena, env));
                    return rc != 0 ? -rc : pid.get(JAVA_INT, 0);
                } finally {
                    int ignored = (int) Spawn.ATTR_DESTROY.invokeExact(attributes);
                }
            } finally {
                int ignored = (int) Spawn.ACTIONS_DESTROY.invokeExact(actions);
            }
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    private static int firstError(int... codes) {
        for (int code : codes) {
            if (code != 0) {
                return code;
            }
        }
        return 0;
    }

    /** A NULL-terminated array of C strings. */
    private static MemorySegment cStrings(Arena arena, List<String> strings) {
        MemorySegment array = arena.allocate(ADDRESS, strings.size() + 1L);
        for (int i = 0; i < strings.size(); i++) {
            array.setAtIndex(ADDRESS, i, cString(arena, strings.get(i)));
        }
        array.setAtIndex(ADDRESS, strings.size(), MemorySegment.NULL);
        return array;
    }

    /** pipe2 into {@code fds} (two ints: read end, write end). */
    static int pipe2(Arena arena, MemorySegment fds, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            return result((int) Pipe2.HANDLE.invokeExact(state, fds, flags), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** @return the bytes read, 0 at end of file, or {@code -errno} */
    static long read(MemorySegment state, int fd, MemorySegment buffer) {
        try {
            long rc;
            do {
                rc = (long) Read.HANDLE.invokeExact(state, fd, buffer, buffer.byteSize());
                rc = rc == -1 ? -(int) ERRNO.get(state, 0L) : rc;
            } while (rc == -Errno.EINTR);
            return rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** poll; an interrupted poll counts as one that found nothing ready. */
    static int poll(MemorySegment state, MemorySegment fds, int count, int timeoutMillis) {
        try {
            int rc = result((int) Poll.HANDLE.invokeExact(state, fds, (long) count, timeoutMillis), state);
            return rc == -Errno.EINTR ? 0 : rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** waitpid into {@code status}: the pid, 0 (WNOHANG, still running) or {@code -errno}. */
    static int waitpid(MemorySegment state, int pid, MemorySegment status, int options) {
        try {
            int rc;
            do {
                rc = result((int) Waitpid.HANDLE.invokeExact(state, pid, status, options), state);
            } while (rc == -Errno.EINTR);
            return rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static final int CLONE_NEWNS = 0x20000;

    /** {@code unshare(flags)}: for the calling thread alone, as a thread of a process may. */
    static int unshare(Arena arena, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            return result((int) Unshare.HANDLE.invokeExact(state, flags), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int kill(Arena arena, int pid, int signal) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            return result((int) Kill.HANDLE.invokeExact(state, pid, signal), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int inotifyInit(Arena arena, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            return result((int) InotifyInit.HANDLE.invokeExact(state, flags), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int inotifyAddWatch(Arena arena, int fd, String path, int mask) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            return result((int) InotifyAddWatch.HANDLE.invokeExact(state, fd, cPath, mask), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** A slot for a call's errno, for calls made many times on one arena. */
    static MemorySegment callState(Arena arena) {
        return arena.allocate(CALL_STATE);
    }

    /** NUL-terminated UTF-8, or NULL for null. An embedded NUL would silently cut the string short. */
    static MemorySegment cString(Arena arena, String s) {
        if (s == null) {
            return MemorySegment.NULL;
        }
        if (s.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("string contains NUL: " + s.replace("\0", "\\0"));
        }
        return arena.allocateFrom(s);
    }

    private static long longResult(long rc, MemorySegment state) {
        return rc == -1 ? -(int) ERRNO.get(state, 0L) : rc;
    }

    private static int result(int rc, MemorySegment state) {
        return rc == -1 ? -(int) ERRNO.get(state, 0L) : rc;
    }

    @SuppressWarnings("restricted") // binding libc is this class's purpose; the JVM runs with native access
    private static MethodHandle function(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        MemorySegment symbol = LINKER.defaultLookup().find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name));
        return LINKER.downcallHandle(symbol, descriptor, options);
    }

    @SuppressWarnings("restricted")
    private static Optional<MethodHandle> optionalFunction(String name) {
        return LINKER.defaultLookup().find(name)
                .map(symbol -> LINKER.downcallHandle(symbol, FunctionDescriptor.of(ADDRESS, JAVA_INT)));
    }

    /** Downcalls throw nothing checked; anything else is a bug or a VM error, never an errno. */
    private static RuntimeException unexpected(Throwable t) {
        if (t instanceof Error e) {
            throw e;
        }
        if (t instanceof RuntimeException e) {
            return e;
        }
        return new IllegalStateException(t);
    }
}
