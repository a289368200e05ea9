package dev.hearth.linux;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * An open file descriptor for the length of one public call. Try-with-resources closes it on
 * every path, and the path it remembers makes each ioctl failure name the device it hit.
 */
final class Fd implements AutoCloseable {

    private final Arena arena;
    private final Path path;
    private final int fd;
    private boolean closed;

    private Fd(Arena arena, Path path, int fd) {
        this.arena = arena;
        this.path = path;
        this.fd = fd;
    }

    /** Opens with {@code O_CLOEXEC} so a concurrently spawned tool (mkfs, ...) never inherits it. */
    static Fd open(Arena arena, Path path, int flags) throws LinuxException {
        int rc = Libc.open(arena, path.toString(), flags | Libc.O_CLOEXEC);
        if (rc < 0) {
            throw new LinuxException("open", path + ", " + ((flags & 3) == Libc.O_RDWR ? "O_RDWR" : "O_RDONLY"), -rc);
        }
        return new Fd(arena, path, rc);
    }

    int value() {
        return fd;
    }

    /** @return the ioctl's non-negative result */
    int ioctl(String name, long request, MemorySegment arg) throws LinuxException {
        return check(name, Libc.ioctl(arena, fd, request, arg));
    }

    int ioctl(String name, long request, long arg) throws LinuxException {
        return check(name, Libc.ioctl(arena, fd, request, arg));
    }

    /** Like {@link #ioctl(String, long, MemorySegment)} but hands back {@code -errno} for the caller to judge. */
    int ioctlRaw(long request, MemorySegment arg) {
        return Libc.ioctl(arena, fd, request, arg);
    }

    int ioctlRaw(long request, long arg) {
        return Libc.ioctl(arena, fd, request, arg);
    }

    private int check(String name, int rc) throws LinuxException {
        if (rc < 0) {
            throw new LinuxException("ioctl", path + ", " + name, -rc);
        }
        return rc;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Libc.close(fd);
        }
    }
}
