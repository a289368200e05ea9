package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Optional;

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
    static final int O_DIRECTORY = 0x10000;
    static final int SEEK_DATA = 3;
    static final int SEEK_HOLE = 4;

    private static final MethodHandle OPEN = function("open",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = function("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    // ioctl's third argument is variadic: both a pointer and an integer flavour are needed.
    private static final MethodHandle IOCTL_POINTER = function("ioctl",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle IOCTL_LONG = function("ioctl",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG),
            CAPTURE_ERRNO, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle MOUNT = function("mount",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS), CAPTURE_ERRNO);
    private static final MethodHandle UMOUNT2 = function("umount2",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), CAPTURE_ERRNO);
    private static final MethodHandle STATVFS = function("statvfs",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), CAPTURE_ERRNO);
    private static final MethodHandle STATX = function("statx",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS), CAPTURE_ERRNO);
    private static final MethodHandle FALLOCATE = function("fallocate",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG), CAPTURE_ERRNO);
    private static final MethodHandle LSEEK = function("lseek",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT), CAPTURE_ERRNO);
    private static final MethodHandle UMASK = function("umask", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle GETEUID = function("geteuid", FunctionDescriptor.of(JAVA_INT));
    // glibc >= 2.32 only; Errno falls back to its own table without them.
    static final Optional<MethodHandle> STRERRORNAME_NP = optionalFunction("strerrorname_np");
    static final Optional<MethodHandle> STRERRORDESC_NP = optionalFunction("strerrordesc_np");

    private Libc() {}

    static int open(Arena arena, String path, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            int rc;
            do {
                rc = result((int) OPEN.invokeExact(state, cPath, flags, 0), state);
            } while (rc == -Errno.EINTR);
            return rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** Errors from close are not actionable here: the fd is gone either way. */
    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int ioctl(Arena arena, int fd, long request, MemorySegment arg) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            return result((int) IOCTL_POINTER.invokeExact(state, fd, request, arg), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int ioctl(Arena arena, int fd, long request, long arg) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            return result((int) IOCTL_LONG.invokeExact(state, fd, request, arg), state);
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
            return result((int) MOUNT.invokeExact(state, cSource, cTarget, cType, flags, cData), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int umount2(Arena arena, String target, int flags) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cTarget = cString(arena, target);
        try {
            return result((int) UMOUNT2.invokeExact(state, cTarget, flags), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int statvfs(Arena arena, String path, MemorySegment buf) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            return result((int) STATVFS.invokeExact(state, cPath, buf), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int statx(Arena arena, String path, int flags, int mask, MemorySegment buf) {
        MemorySegment state = arena.allocate(CALL_STATE);
        MemorySegment cPath = cString(arena, path);
        try {
            return result((int) STATX.invokeExact(state, AT_FDCWD, cPath, flags, mask, buf), state);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int fallocate(Arena arena, int fd, int mode, long offset, long length) {
        MemorySegment state = arena.allocate(CALL_STATE);
        try {
            int rc;
            do { // a signal can interrupt a large allocation part way; the call is safe to repeat
                rc = result((int) FALLOCATE.invokeExact(state, fd, mode, offset, length), state);
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
            long rc = (long) LSEEK.invokeExact(state, fd, offset, whence);
            return rc == -1 ? -(int) ERRNO.get(state, 0L) : rc;
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int umask(int mask) {
        try {
            return (int) UMASK.invokeExact(mask);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    static int geteuid() {
        try {
            return (int) GETEUID.invokeExact();
        } catch (Throwable t) {
            throw unexpected(t);
        }
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
