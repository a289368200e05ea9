package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;

/** Block-device ioctls (linux/fs.h). */
public final class BlockDevices {

    /** {@code _IOR(0x12, 114, size_t)}. */
    static final long BLKGETSIZE64 = 0x80081272L;
    /** {@code _IO(0x12, 119)}, taking {@code uint64_t[2] = {offset, length}}. */
    static final long BLKDISCARD = 0x1277;
    /** {@code _IO(0x12, 127)}, taking {@code uint64_t[2] = {offset, length}}. */
    static final long BLKZEROOUT = 0x127f;

    private static final int S_IFMT = 0170000;
    private static final int S_IFBLK = 0060000;

    private BlockDevices() {}

    /** The device's size in bytes. */
    public static long size(Path device) throws IOException {
        // Read-only open: a write open of a mounted device can be refused (BLK_DEV_WRITE_MOUNTED=n).
        try (Arena arena = Arena.ofConfined();
             Fd fd = Fd.open(arena, device, Libc.O_RDONLY)) {
            MemorySegment size = arena.allocate(JAVA_LONG);
            fd.ioctl("BLKGETSIZE64", BLKGETSIZE64, size);
            return size.get(JAVA_LONG, 0);
        }
    }

    /**
     * Tells the device the range no longer holds data (on a loop device: punches a hole in the
     * backing file). Offset and length must be multiples of the logical block size, else EINVAL.
     */
    public static void discard(Path device, long offset, long length) throws IOException {
        try (Arena arena = Arena.ofConfined();
             Fd fd = Fd.open(arena, device, Libc.O_RDWR)) {
            rangeIoctl(fd, arena, "BLKDISCARD", BLKDISCARD, offset, length);
        }
    }

    /**
     * Makes the range read back as zeros (BLKZEROOUT): the kernel offloads it to the device's
     * write-zeroes or a discard that guarantees zeros where it can, and writes zeros where it
     * cannot. Offset and length must be multiples of the logical block size, else EINVAL.
     */
    public static void zeroOut(Path device, long offset, long length) throws IOException {
        if (length == 0 && offset >= 0) {
            return;
        }
        try (Arena arena = Arena.ofConfined();
             Fd fd = Fd.open(arena, device, Libc.O_RDWR)) {
            rangeIoctl(fd, arena, "BLKZEROOUT", BLKZEROOUT, offset, length);
        }
    }

    /**
     * A range ioctl (BLKDISCARD, BLKZEROOUT: {@code uint64_t[2] = {offset, length}}) on an open
     * device; an empty range asks nothing of the device.
     */
    static void rangeIoctl(Fd fd, Arena arena, String name, long request, long offset, long length)
            throws LinuxException {
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException("negative " + name + " range: offset " + offset + ", length " + length);
        }
        if (length == 0) {
            return;
        }
        MemorySegment range = arena.allocate(JAVA_LONG, 2);
        range.setAtIndex(JAVA_LONG, 0, offset);
        range.setAtIndex(JAVA_LONG, 1, length);
        fd.ioctl(name + " offset=" + offset + " length=" + length, request, range);
    }

    /** The major number of a Linux {@code dev_t} (glibc's encoding, as {@code gnu_dev_major}). */
    public static int major(long dev) {
        return (int) (((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL));
    }

    /** The minor number of a Linux {@code dev_t} (as {@code gnu_dev_minor}). */
    public static int minor(long dev) {
        return (int) ((dev & 0xff) | ((dev >>> 12) & ~0xffL));
    }

    /**
     * Whether the kernel would let the device be opened exclusively right now. An exclusive open of
     * a block device fails with EBUSY while it is mounted, swapped on, held by device-mapper, md or
     * bcache, or opened exclusively by another program (mkfs, another driver), so this is the
     * kernel's own word that nothing has claimed it; a plain open by a user is not seen.
     *
     * @return empty if it could be opened exclusively, else why not
     */
    public static java.util.Optional<String> exclusiveOpenProblem(Path device) {
        try (Arena arena = Arena.ofConfined()) {
            int fd = Libc.open(arena, device.toString(), Libc.O_RDONLY | Libc.O_EXCL | Libc.O_CLOEXEC);
            if (fd >= 0) {
                Libc.close(fd);
                return java.util.Optional.empty();
            }
            return java.util.Optional.of(fd == -Errno.EBUSY
                    ? "the kernel refuses an exclusive open (EBUSY): mounted, held or opened exclusively elsewhere"
                    : "cannot be opened: " + new LinuxException("open", device + ", O_EXCL", -fd).getMessage());
        }
    }

    /**
     * The {@code major:minor} of the block device node {@code p} (following symlinks, as udev's
     * {@code /dev/mapper} links are); empty if it is missing or not a block device node. A node is
     * only a name for a number: it says nothing of whether the kernel has that device, or which.
     */
    public static java.util.Optional<String> deviceNumber(Path p) {
        try {
            var attributes = Files.readAttributes(p, "unix:mode,rdev");
            if (((int) attributes.get("mode") & S_IFMT) != S_IFBLK) {
                return java.util.Optional.empty();
            }
            long dev = (long) attributes.get("rdev");
            return java.util.Optional.of(major(dev) + ":" + minor(dev));
        } catch (IOException | UnsupportedOperationException e) {
            return java.util.Optional.empty();
        }
    }

    /** Whether {@code p} (following symlinks such as {@code /dev/disk/by-id/...}) is a block device. */
    public static boolean isBlockDevice(Path p) {
        try {
            return ((int) Files.getAttribute(p, "unix:mode") & S_IFMT) == S_IFBLK;
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }
}
