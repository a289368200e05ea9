package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Loop devices through {@code /dev/loop-control} and the loop ioctls (linux/loop.h). */
public final class Loop {

    static final long LOOP_CLR_FD = 0x4C01;
    static final long LOOP_SET_STATUS64 = 0x4C04;
    static final long LOOP_GET_STATUS64 = 0x4C05;
    static final long LOOP_SET_CAPACITY = 0x4C07;
    static final long LOOP_CONFIGURE = 0x4C0A;
    static final long LOOP_CTL_GET_FREE = 0x4C82;

    static final int LO_FLAGS_READ_ONLY = 1;
    static final int LO_FLAGS_AUTOCLEAR = 4;
    static final int LO_FLAGS_DIRECT_IO = 16;
    static final int LO_NAME_SIZE = 64;

    static final StructLayout LOOP_INFO64 = MemoryLayout.structLayout(
            JAVA_LONG.withName("lo_device"),
            JAVA_LONG.withName("lo_inode"),
            JAVA_LONG.withName("lo_rdevice"),
            JAVA_LONG.withName("lo_offset"),
            JAVA_LONG.withName("lo_sizelimit"),
            JAVA_INT.withName("lo_number"),
            JAVA_INT.withName("lo_encrypt_type"),
            JAVA_INT.withName("lo_encrypt_key_size"),
            JAVA_INT.withName("lo_flags"),
            MemoryLayout.sequenceLayout(LO_NAME_SIZE, JAVA_BYTE).withName("lo_file_name"),
            MemoryLayout.sequenceLayout(LO_NAME_SIZE, JAVA_BYTE).withName("lo_crypt_name"),
            MemoryLayout.sequenceLayout(32, JAVA_BYTE).withName("lo_encrypt_key"),
            MemoryLayout.sequenceLayout(2, JAVA_LONG).withName("lo_init"));

    static final StructLayout LOOP_CONFIG = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"),
            JAVA_INT.withName("block_size"),
            LOOP_INFO64.withName("info"),
            MemoryLayout.sequenceLayout(8, JAVA_LONG).withName("__reserved"));

    private static final long FLAGS_OFFSET = LOOP_CONFIG.byteOffset(
            PathElement.groupElement("info"), PathElement.groupElement("lo_flags"));
    private static final long FILE_NAME_OFFSET = LOOP_CONFIG.byteOffset(
            PathElement.groupElement("info"), PathElement.groupElement("lo_file_name"));

    private static final Path CONTROL = Path.of("/dev/loop-control");
    private static final Path SYS_BLOCK = Path.of("/sys/block");
    private static final Path PARTITIONS = Path.of("/proc/partitions");
    private static final Path DEV = Path.of("/dev");
    private static final String DELETED = " (deleted)";
    /** Each EBUSY means another process took the free device first; give up only if that keeps happening. */
    private static final int MAX_ATTEMPTS = 16;

    private Loop() {}

    /**
     * Attaches {@code backingFile} to a free loop device. Direct I/O avoids caching every block twice
     * (once for the device, once for the file); where the backing filesystem cannot do it the device
     * is set up without it, which {@link #list()} then reports.
     */
    public static LoopDevice attach(Path backingFile, boolean readOnly, boolean directIo) throws IOException {
        try (Arena arena = Arena.ofConfined();
             Fd backing = Fd.open(arena, backingFile, readOnly ? Libc.O_RDONLY : Libc.O_RDWR);
             Fd control = Fd.open(arena, CONTROL, Libc.O_RDWR)) {
            MemorySegment config = arena.allocate(LOOP_CONFIG);
            config.set(JAVA_INT, LOOP_CONFIG.byteOffset(PathElement.groupElement("fd")), backing.value());
            config.set(JAVA_INT, FLAGS_OFFSET,
                    (readOnly ? LO_FLAGS_READ_ONLY : 0) | (directIo ? LO_FLAGS_DIRECT_IO : 0));
            byte[] name = backingFile.toString().getBytes(StandardCharsets.UTF_8);
            // lo_file_name is informational only (sysfs shows the real path); keep its terminating NUL.
            MemorySegment.copy(name, 0, config, JAVA_BYTE, FILE_NAME_OFFSET, Math.min(name.length, LO_NAME_SIZE - 1));

            LinuxException busy = null;
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                LoopDevice device = new LoopDevice(control.ioctl("LOOP_CTL_GET_FREE", LOOP_CTL_GET_FREE, 0L));
                try (Fd loop = Fd.open(arena, device.path(), Libc.O_RDWR)) {
                    int rc = loop.ioctlRaw(LOOP_CONFIGURE, config);
                    // Current kernels refuse LO_FLAGS_DIRECT_IO with EINVAL when the backing file cannot
                    // do O_DIRECT (ramfs, some FUSE); a cached loop device beats no device.
                    if (rc == -Errno.EINVAL && directIo) {
                        config.set(JAVA_INT, FLAGS_OFFSET, readOnly ? LO_FLAGS_READ_ONLY : 0);
                        rc = loop.ioctlRaw(LOOP_CONFIGURE, config);
                    }
                    if (rc >= 0) {
                        return device;
                    }
                    LinuxException failure = new LinuxException("ioctl",
                            device.path() + ", LOOP_CONFIGURE " + backingFile, -rc);
                    if (!failure.is(Errno.EBUSY)) {
                        throw failure;
                    }
                    busy = failure;
                }
            }
            throw busy;
        }
    }

    /**
     * Detaches the device; one that is not configured counts as detached. The kernel finishes the
     * detach on the device's last close: while it is open elsewhere (mounted, or briefly probed by
     * udev/blkid) this succeeds at once but {@link #list()} keeps showing the device, as detaching,
     * until then ({@link #keep} takes the detach back).
     */
    public static void detach(LoopDevice device) throws IOException {
        try (Arena arena = Arena.ofConfined();
             Fd loop = Fd.open(arena, device.path(), Libc.O_RDONLY)) {
            int rc = loop.ioctlRaw(LOOP_CLR_FD, 0L);
            if (rc < 0 && rc != -Errno.ENXIO) {
                throw new LinuxException("ioctl", device.path() + ", LOOP_CLR_FD", -rc);
            }
        } catch (LinuxException e) {
            if (!e.is(Errno.ENXIO)) { // a removed device's node refuses open with ENXIO
                throw e;
            }
        }
    }

    /**
     * Takes back a detach that waits for the device's last close (see {@link #detach}): the device
     * then stays bound to its file until it is detached again. False if it is no longer bound (the
     * last close came first). Only the autoclear flag changes; the offset and size limit are written
     * back as the kernel gave them, so the device's size and data are as they were.
     */
    public static boolean keep(LoopDevice device) throws IOException {
        try (Arena arena = Arena.ofConfined();
             Fd loop = Fd.open(arena, device.path(), Libc.O_RDONLY)) {
            MemorySegment info = arena.allocate(LOOP_INFO64);
            loop.ioctl("LOOP_GET_STATUS64", LOOP_GET_STATUS64, info);
            long flags = LOOP_INFO64.byteOffset(PathElement.groupElement("lo_flags"));
            info.set(JAVA_INT, flags, info.get(JAVA_INT, flags) & ~LO_FLAGS_AUTOCLEAR);
            loop.ioctl("LOOP_SET_STATUS64", LOOP_SET_STATUS64, info);
            return true;
        } catch (LinuxException e) {
            if (e.is(Errno.ENXIO)) { // no longer bound, or the device node removed
                return false;
            }
            throw e;
        }
    }

    /**
     * Whether the device goes at its last close ({@link LoopAttachment#detaching}), from its one
     * sysfs attribute; false for a device that is not bound.
     */
    public static boolean detaching(LoopDevice device) throws IOException {
        return sysfsIfPresent(SYS_BLOCK.resolve("loop" + device.number()).resolve("loop/autoclear"))
                .filter("1"::equals).isPresent();
    }

    /**
     * Every configured loop device, by number. Only the devices that have a size are read: a node
     * keeps every loop device it ever made, bound or not (this machine had 401 after a benchmark,
     * none bound), and reading each one's sysfs cost a driver's start 17 ms. A device bound to an
     * empty file has no size and is not listed; hearth binds none.
     */
    public static List<LoopAttachment> list() throws IOException {
        List<LoopAttachment> attachments = new ArrayList<>();
        MountTable mounts = new MountTable();
        Optional<List<LoopDevice>> sized = sized();
        for (LoopDevice device : sized.isPresent() ? sized.get() : all()) {
            describe(device, mounts).ifPresent(attachments::add);
        }
        attachments.sort(Comparator.comparingInt(a -> a.device().number()));
        return List.copyOf(attachments);
    }

    /**
     * The loop devices {@code /proc/partitions} names, in one read: it lists every block device
     * whose size is not zero, and an unbound loop device has none. Empty if it cannot be read.
     */
    private static Optional<List<LoopDevice>> sized() {
        List<String> lines;
        try {
            lines = Files.readAllLines(PARTITIONS, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return Optional.empty();
        }
        List<LoopDevice> devices = new ArrayList<>();
        for (String line : lines) {
            int name = line.lastIndexOf(' ');
            if (line.startsWith("loop", name + 1)) {
                LoopDevice.fromPath(DEV.resolve(line.substring(name + 1))).ifPresent(devices::add);
            }
        }
        return Optional.of(devices);
    }

    /** Every loop device, bound or not, from {@code /sys/block}. */
    private static List<LoopDevice> all() throws IOException {
        List<LoopDevice> devices = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(SYS_BLOCK, "loop*")) {
            for (Path dir : dirs) {
                LoopDevice.fromPath(DEV.resolve(dir.getFileName())).ifPresent(devices::add);
            }
        }
        return devices;
    }

    /**
     * What one device is bound to now, from its own sysfs directory alone: empty if it is not
     * configured (or does not exist). Costs the same however many loop devices the node has.
     */
    public static Optional<LoopAttachment> describe(LoopDevice device) throws IOException {
        return describe(device, new MountTable());
    }

    /**
     * The lowest-numbered device backed by exactly this file (symlinks resolved, as sysfs shows the
     * real path); devices whose backing file was deleted never match.
     */
    public static Optional<LoopAttachment> findByBackingFile(Path backingFile) throws IOException {
        Path wanted = MountInfo.canonical(backingFile);
        List<LoopAttachment> all = list();
        Optional<LoopAttachment> named = all.stream()
                .filter(a -> !a.backingDeleted() && a.backingFile().equals(wanted))
                .findFirst();
        if (named.isPresent()) {
            return named;
        }
        // A name no mount here reaches (see reachable): the device's record of the file decides.
        List<LoopAttachment> unreachable = all.stream()
                .filter(a -> !a.backingDeleted() && !Files.exists(a.backingFile(), LinkOption.NOFOLLOW_LINKS))
                .toList();
        if (unreachable.isEmpty()) {
            return Optional.empty();
        }
        Optional<FileKey> file = FileKey.of(wanted);
        if (file.isEmpty()) {
            return Optional.empty();
        }
        for (LoopAttachment a : unreachable) {
            if (backingRecord(a.device()).equals(file)) {
                return Optional.of(a);
            }
        }
        return Optional.empty();
    }

    /** Makes the device pick up a changed backing-file size, e.g. after growing the file for an expansion. */
    public static void setCapacity(LoopDevice device) throws IOException {
        try (Arena arena = Arena.ofConfined();
             Fd loop = Fd.open(arena, device.path(), Libc.O_RDONLY)) {
            loop.ioctl("LOOP_SET_CAPACITY", LOOP_SET_CAPACITY, 0L);
        }
    }

    /**
     * backing_file exists only while the device is bound, and the device can be detached mid-read
     * (ENODEV) and bound again at once, by another process, before the failure is looked at: such a
     * device is read again, a few times, as it is then.
     */
    private static Optional<LoopAttachment> describe(LoopDevice device, MountTable mounts) throws IOException {
        Path dir = SYS_BLOCK.resolve("loop" + device.number());
        for (int attempt = 1; ; attempt++) {
            try {
                return describeOnce(device, dir, mounts);
            } catch (IOException e) {
                if (attempt == 3) {
                    throw e;
                }
            }
        }
    }

    private static Optional<LoopAttachment> describeOnce(LoopDevice device, Path dir, MountTable mounts)
            throws IOException {
        try {
            Optional<String> bound = sysfsIfPresent(dir.resolve("loop/backing_file"));
            if (bound.isEmpty()) {
                return Optional.empty(); // not configured: no loop/ directory
            }
            String backing = bound.get();
            boolean deleted = backing.endsWith(DELETED);
            if (deleted) {
                backing = backing.substring(0, backing.length() - DELETED.length());
            }
            Path named = Path.of(backing);
            if (!deleted && !Files.exists(named, LinkOption.NOFOLLOW_LINKS)) {
                named = reachable(device, named, mounts).orElse(named);
            }
            Optional<String> readOnly = sysfsIfPresent(dir.resolve("ro"));
            Optional<String> directIo = sysfsIfPresent(dir.resolve("loop/dio"));
            Optional<String> autoclear = sysfsIfPresent(dir.resolve("loop/autoclear"));
            if (readOnly.isEmpty() || directIo.isEmpty() || autoclear.isEmpty()) {
                return Optional.empty(); // detached, or the device removed, meanwhile
            }
            return Optional.of(new LoopAttachment(device, named, deleted, "1".equals(readOnly.get()),
                    "1".equals(directIo.get()), "1".equals(autoclear.get())));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            // Detached between open and read, the read fails with ENODEV; the file is gone after that.
            if (!Files.exists(dir.resolve("loop/backing_file"))) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /**
     * sysfs names a backing file as the mount namespace that attached the device reached it. When
     * that namespace is gone (the driver's container before a restart), its mounts are detached and
     * the name is relative to the mount the file was opened through: {@code /pools/default/x.img}
     * for what this container, which mounts the same host directory, reaches as
     * {@code /var/lib/hearth/pools/default/x.img}. The device's own record of its file (its
     * filesystem's device number and its inode, LOOP_GET_STATUS64) finds it again below each mount
     * of that filesystem here; the name is kept when none holds that very file.
     */
    static Optional<Path> reachable(LoopDevice device, Path named, MountTable mounts) throws IOException {
        Optional<FileKey> record = backingRecord(device);
        if (record.isEmpty()) {
            return Optional.empty();
        }
        long dev = record.get().dev();
        String relative = named.toString().replaceFirst("^/+", "");
        for (MountEntry mount : mounts.get()) {
            if (mount.major() != BlockDevices.major(dev) || mount.minor() != BlockDevices.minor(dev)) {
                continue;
            }
            Path candidate = mount.mountPoint().resolve(relative);
            if (FileKey.of(candidate).equals(record)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** /proc/self/mountinfo, read at most once for a whole listing, and only if a name needs it. */
    private static final class MountTable {
        private List<MountEntry> entries;

        List<MountEntry> get() throws IOException {
            if (entries == null) {
                entries = MountInfo.read();
            }
            return entries;
        }
    }

    /** A file's filesystem device number (the kernel's encoding, as stat gives it) and inode. */
    private record FileKey(long dev, long inode) {
        static Optional<FileKey> of(Path file) throws IOException {
            try {
                Map<String, Object> attributes = Files.readAttributes(file, "unix:dev,ino", LinkOption.NOFOLLOW_LINKS);
                return Optional.of(new FileKey((long) attributes.get("dev"), (long) attributes.get("ino")));
            } catch (NoSuchFileException e) {
                return Optional.empty();
            }
        }
    }

    /** The backing file's filesystem device number and inode, as the device recorded them; empty once detached. */
    private static Optional<FileKey> backingRecord(LoopDevice device) throws IOException {
        try (Arena arena = Arena.ofConfined();
             Fd loop = Fd.open(arena, device.path(), Libc.O_RDONLY)) {
            MemorySegment info = arena.allocate(LOOP_INFO64);
            if (loop.ioctlRaw(LOOP_GET_STATUS64, info) < 0) {
                return Optional.empty(); // detached meanwhile (ENXIO)
            }
            return Optional.of(new FileKey(
                    info.get(JAVA_LONG, LOOP_INFO64.byteOffset(PathElement.groupElement("lo_device"))),
                    info.get(JAVA_LONG, LOOP_INFO64.byteOffset(PathElement.groupElement("lo_inode")))));
        } catch (LinuxException e) {
            return Optional.empty(); // the device node is gone
        }
    }

    /** A sysfs attribute without its line end, or empty if the file is not there ({@link Sysfs}: no exception). */
    private static Optional<String> sysfsIfPresent(Path file) throws LinuxException {
        byte[] bytes = Sysfs.readIfPresent(file);
        if (bytes == null) {
            return Optional.empty();
        }
        String s = new String(bytes, StandardCharsets.UTF_8);
        return Optional.of(s.endsWith("\n") ? s.substring(0, s.length() - 1) : s);
    }
}
