package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A whole block device opened for writing with {@code O_EXCL}: while it is open the kernel refuses
 * to mount it, to stack device-mapper, md or bcache on it, and any other exclusive open (mkfs), so
 * what is written through it cannot land under a user. The open itself fails with EBUSY while any
 * of those hold the device. It is opened by path and then checked to be the device the caller
 * named by number, so a {@code /dev} name that now points elsewhere (a disk swapped or renumbered
 * between a scan and the open) is refused rather than written.
 */
public final class ExclusiveDevice implements AutoCloseable {

    /** {@code FALLOC_FL_KEEP_SIZE} (linux/falloc.h, every architecture). */
    private static final int FALLOC_FL_KEEP_SIZE = 0x01;
    /** {@code FALLOC_FL_PUNCH_HOLE}: on a block device, write-zeroes that may unmap, never a written fallback. */
    private static final int FALLOC_FL_PUNCH_HOLE = 0x02;

    private final Arena arena;
    private final Fd fd;
    private final Path path;

    private ExclusiveDevice(Arena arena, Fd fd, Path path) {
        this.arena = arena;
        this.fd = fd;
        this.path = path;
    }

    /**
     * Opens {@code device} read-write and exclusively, and checks that it is the block device
     * {@code major:minor}.
     *
     * @throws LinuxException with EBUSY while something holds it (mounted, swap, a holder, an
     *     exclusive opener)
     * @throws IOException if the path is no block device, or another one than {@code major:minor}
     */
    public static ExclusiveDevice open(Path device, int major, int minor) throws IOException {
        Arena arena = Arena.ofShared();
        Fd fd = null;
        try {
            fd = Fd.open(arena, device, Libc.O_RDWR | Libc.O_EXCL);
            // The opened file itself, not whatever the path names by now.
            long rdev = (long) Files.getAttribute(Path.of("/proc/self/fd/" + fd.value()), "unix:rdev");
            int mode = (int) Files.getAttribute(Path.of("/proc/self/fd/" + fd.value()), "unix:mode");
            if ((mode & 0170000) != 0060000) {
                throw new IOException(device + " is not a block device");
            }
            if (BlockDevices.major(rdev) != major || BlockDevices.minor(rdev) != minor) {
                throw new IOException(device + " is block device " + BlockDevices.major(rdev) + ":" + BlockDevices.minor(rdev) + ", not "
                        + major + ":" + minor + " as the scan found: the device was replaced or renumbered");
            }
            ExclusiveDevice opened = new ExclusiveDevice(arena, fd, device);
            fd = null;
            return opened;
        } finally {
            if (fd != null) {
                fd.close();
                arena.close();
            }
        }
    }

    public Path path() {
        return path;
    }

    /** The device's size in bytes (BLKGETSIZE64). */
    public long size() throws LinuxException {
        MemorySegment size = arena.allocate(JAVA_LONG);
        fd.ioctl("BLKGETSIZE64", BlockDevices.BLKGETSIZE64, size);
        return size.get(JAVA_LONG, 0);
    }

    /**
     * BLKZEROOUT: the range reads back as zeros. The kernel uses the device's write-zeroes without
     * unmapping where it has one, and writes zeros where it has not. Offset and length must be
     * multiples of the logical block size.
     */
    public void zeroOut(long offset, long length) throws LinuxException {
        BlockDevices.rangeIoctl(fd, arena, "BLKZEROOUT", BlockDevices.BLKZEROOUT, offset, length);
    }

    /**
     * BLKDISCARD: the device may forget the range. Whether it then reads back as zeros is the
     * device's business (a loop device punches a hole in its file, which does); the caller decides.
     */
    public void discard(long offset, long length) throws LinuxException {
        BlockDevices.rangeIoctl(fd, arena, "BLKDISCARD", BlockDevices.BLKDISCARD, offset, length);
    }

    /**
     * Zeroes the range by unmapping it where the device can: {@code fallocate(PUNCH_HOLE)} on a block
     * device is a write-zeroes that may deallocate, with the kernel's guarantee that the range then
     * reads as zeros, and with no fallback to writing zeros (EOPNOTSUPP where the device has no
     * write-zeroes).
     */
    public void zeroByUnmapping(long offset, long length) throws LinuxException {
        int rc = Libc.fallocate(arena, fd.value(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
        if (rc < 0) {
            throw new LinuxException("fallocate", path + ", PUNCH_HOLE offset=" + offset + " length=" + length, -rc);
        }
    }

    /** Waits until what was written has reached the device (fsync, which also flushes its cache). */
    public void flush() throws IOException {
        // fsync on any open file of the device writes back its page cache and flushes its volatile cache.
        try (FileChannel channel = FileChannel.open(Path.of("/proc/self/fd/" + fd.value()), StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    @Override
    public void close() {
        fd.close();
        arena.close();
    }
}
