package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Reads sysfs attributes through libc: an attribute that is not there (a loop device that is not
 * configured has no {@code loop/}; a loop device has no {@code device/serial}) is a return code
 * here, where the JDK throws an exception with its stack trace for each (some 10 us apiece once
 * warm, and a scan of the node's disks meets dozens). One read: sysfs hands an attribute over
 * whole, and none is longer than a page.
 */
final class Sysfs {

    /** The most a sysfs attribute holds: a page. */
    private static final int PAGE = 4096;

    private Sysfs() {}

    /** The attribute's bytes, or {@code null} if the file is not there. */
    static byte[] readIfPresent(Path file) throws LinuxException {
        try (Arena arena = Arena.ofConfined()) {
            int fd = Libc.open(arena, file.toString(), Libc.O_RDONLY | Libc.O_CLOEXEC);
            if (fd == -Errno.ENOENT) {
                return null;
            }
            if (fd < 0) {
                throw new LinuxException("open", file.toString(), -fd);
            }
            try {
                MemorySegment buffer = arena.allocate(PAGE);
                long n = Libc.read(Libc.callState(arena), fd, buffer);
                if (n < 0) {
                    throw new LinuxException("read", file.toString(), (int) -n);
                }
                return buffer.asSlice(0, n).toArray(JAVA_BYTE);
            } finally {
                Libc.close(fd);
            }
        }
    }
}
