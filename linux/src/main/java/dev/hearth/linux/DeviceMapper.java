package dev.hearth.linux;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Device-mapper queries through the kernel's ioctls on {@code /dev/mapper/control}
 * (linux/dm-ioctl.h): what {@code dmsetup info} and {@code dmsetup status} print, each for one
 * open, one ioctl and one close, where running {@code lvs} costs a process and its LVM scan.
 * Names are device-mapper names, as under {@code /dev/mapper}: LVM's {@code vg-lv}, with each
 * {@code -} inside the VG or LV name doubled. Needs CAP_SYS_ADMIN, as every device-mapper ioctl does.
 *
 * <p>The ioctl numbers and struct layouts are those of x86_64 and aarch64, which agree: both take
 * {@code _IOWR} from asm-generic/ioctl.h, and {@code struct dm_ioctl} and {@code struct dm_target_spec}
 * hold only fixed-size members with the same alignment on both. Other architectures (powerpc, mips
 * and sparc encode ioctl numbers differently) are refused.
 */
public final class DeviceMapper {

    static final int DM_NAME_LEN = 128;
    static final int DM_UUID_LEN = 129;
    static final int DM_MAX_TYPE_NAME = 16;

    static final StructLayout DM_IOCTL = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(3, JAVA_INT).withName("version"),
            JAVA_INT.withName("data_size"),
            JAVA_INT.withName("data_start"),
            JAVA_INT.withName("target_count"),
            JAVA_INT.withName("open_count"),
            JAVA_INT.withName("flags"),
            JAVA_INT.withName("event_nr"),
            JAVA_INT.withName("padding"),
            JAVA_LONG.withName("dev"),
            MemoryLayout.sequenceLayout(DM_NAME_LEN, JAVA_BYTE).withName("name"),
            MemoryLayout.sequenceLayout(DM_UUID_LEN, JAVA_BYTE).withName("uuid"),
            MemoryLayout.sequenceLayout(7, JAVA_BYTE).withName("data"));

    static final StructLayout DM_TARGET_SPEC = MemoryLayout.structLayout(
            JAVA_LONG.withName("sector_start"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("status"),
            JAVA_INT.withName("next"),
            MemoryLayout.sequenceLayout(DM_MAX_TYPE_NAME, JAVA_BYTE).withName("target_type"));

    static final int DM_DEV_STATUS_CMD = 7;
    static final int DM_TABLE_STATUS_CMD = 12;
    /** {@code _IOWR(DM_IOCTL, DM_DEV_STATUS_CMD, struct dm_ioctl)}. */
    static final long DM_DEV_STATUS = 0xC138FD07L;
    /** {@code _IOWR(DM_IOCTL, DM_TABLE_STATUS_CMD, struct dm_ioctl)}. */
    static final long DM_TABLE_STATUS = 0xC138FD0CL;

    static final int DM_READONLY_FLAG = 1 << 0;
    static final int DM_SUSPEND_FLAG = 1 << 1;
    static final int DM_ACTIVE_PRESENT_FLAG = 1 << 5;
    static final int DM_INACTIVE_PRESENT_FLAG = 1 << 6;
    static final int DM_BUFFER_FULL_FLAG = 1 << 8;
    /** In: for DM_TABLE_STATUS, answer without first committing (a thin pool's metadata). */
    static final int DM_NOFLUSH_FLAG = 1 << 11;

    /** The interface version asked for; the kernel serves any 4.x at or below its own. */
    static final int VERSION_MAJOR = 4;

    /** {@code os.arch} of the architectures this layout and these numbers are right for. */
    static final Set<String> ARCHITECTURES = Set.of("amd64", "x86_64", "aarch64");

    private static final long VERSION = DM_IOCTL.byteOffset(groupElement("version"));
    private static final long DATA_SIZE = DM_IOCTL.byteOffset(groupElement("data_size"));
    private static final long DATA_START = DM_IOCTL.byteOffset(groupElement("data_start"));
    private static final long TARGET_COUNT = DM_IOCTL.byteOffset(groupElement("target_count"));
    private static final long OPEN_COUNT = DM_IOCTL.byteOffset(groupElement("open_count"));
    private static final long FLAGS = DM_IOCTL.byteOffset(groupElement("flags"));
    private static final long EVENT_NR = DM_IOCTL.byteOffset(groupElement("event_nr"));
    private static final long DEV = DM_IOCTL.byteOffset(groupElement("dev"));
    private static final long NAME = DM_IOCTL.byteOffset(groupElement("name"));
    private static final long UUID = DM_IOCTL.byteOffset(groupElement("uuid"));
    private static final long SECTOR_START = DM_TARGET_SPEC.byteOffset(groupElement("sector_start"));
    private static final long LENGTH = DM_TARGET_SPEC.byteOffset(groupElement("length"));
    private static final long NEXT = DM_TARGET_SPEC.byteOffset(groupElement("next"));
    private static final long TARGET_TYPE = DM_TARGET_SPEC.byteOffset(groupElement("target_type"));

    private static final Path CONTROL = Path.of("/dev/mapper/control");
    /**
     * What libdevmapper starts with; a thin-pool's status line is under 200 bytes. Every size tried is
     * a multiple of 8: in a buffer that is not, older kernels could write a target's alignment padding
     * past its end.
     */
    static final int TABLE_BUFFER = 16 << 10;
    private static final int MAX_TABLE_BUFFER = 16 << 20;

    private DeviceMapper() {}

    /**
     * The device's state (DM_DEV_STATUS), as {@code dmsetup info} prints it.
     *
     * @return empty if no device-mapper device has that name
     * @throws IllegalArgumentException if no device could have that name (empty, a NUL, 128 bytes or more)
     * @throws LinuxException ENOENT or ENODEV without the device-mapper driver; EACCES without CAP_SYS_ADMIN
     */
    public static Optional<DeviceStatus> status(String name) throws IOException {
        requireKnownArchitecture(System.getProperty("os.arch"));
        try (Arena arena = Arena.ofConfined();
             Fd control = Fd.open(arena, CONTROL, Libc.O_RDWR)) {
            MemorySegment io = request(arena, name, (int) DM_IOCTL.byteSize());
            int rc = control.ioctlRaw(DM_DEV_STATUS, io);
            if (rc == -Errno.ENXIO) {
                return Optional.empty();
            }
            if (rc < 0) {
                throw new LinuxException("ioctl", CONTROL + ", DM_DEV_STATUS " + name, -rc);
            }
            return Optional.of(decodeStatus(io));
        }
    }

    /**
     * Each target of the device's live table with its status line (DM_TABLE_STATUS), as
     * {@code dmsetup status} prints them; an empty list for a device without a live table. A thin
     * pool commits its metadata before it answers (unless suspended), as for {@code dmsetup status},
     * so its numbers include every write so far; {@link #tableStatus(String, boolean)} can skip that.
     *
     * @return empty if no device-mapper device has that name
     * @throws IllegalArgumentException if no device could have that name (empty, a NUL, 128 bytes or more)
     * @throws LinuxException ENOENT or ENODEV without the device-mapper driver; EACCES without CAP_SYS_ADMIN
     */
    public static Optional<List<TargetStatus>> tableStatus(String name) throws IOException {
        return tableStatus(name, false);
    }

    /**
     * {@link #tableStatus(String)}, and with {@code noFlush} without the commit a thin pool makes
     * first (as {@code lvs} asks): no metadata write per query, numbers up to the pool's last
     * periodic commit (a second at most).
     */
    public static Optional<List<TargetStatus>> tableStatus(String name, boolean noFlush) throws IOException {
        requireKnownArchitecture(System.getProperty("os.arch"));
        try (Arena arena = Arena.ofConfined();
             Fd control = Fd.open(arena, CONTROL, Libc.O_RDWR)) {
            for (int size = TABLE_BUFFER; ; size *= 2) {
                MemorySegment io = request(arena, name, size);
                if (noFlush) {
                    io.set(JAVA_INT, FLAGS, DM_NOFLUSH_FLAG);
                }
                int rc = control.ioctlRaw(DM_TABLE_STATUS, io);
                if (rc == -Errno.ENXIO) {
                    return Optional.empty();
                }
                if (rc < 0) {
                    throw new LinuxException("ioctl", CONTROL + ", DM_TABLE_STATUS " + name, -rc);
                }
                if ((io.get(JAVA_INT, FLAGS) & DM_BUFFER_FULL_FLAG) == 0) {
                    return Optional.of(decodeTargets(io, name));
                }
                if (size >= MAX_TABLE_BUFFER) {
                    throw new IOException("DM_TABLE_STATUS " + name + ": the status of its "
                            + io.get(JAVA_INT, TARGET_COUNT) + " targets does not fit " + size + " bytes");
                }
            }
        }
    }

    static void requireKnownArchitecture(String arch) {
        if (!ARCHITECTURES.contains(arch)) {
            throw new UnsupportedOperationException("device-mapper ioctls are known here for x86_64 and aarch64, not "
                    + arch + ": its ioctl numbers or struct dm_ioctl may differ");
        }
    }

    /** Whether a device-mapper device could have this name: 1 to 127 bytes, no NUL. */
    public static boolean possibleName(String name) {
        int length = name.getBytes(StandardCharsets.UTF_8).length;
        return length > 0 && length < DM_NAME_LEN && name.indexOf('\0') < 0;
    }

    /** A zeroed dm_ioctl of {@code size} bytes (its data area after it) that names the device. */
    static MemorySegment request(Arena arena, String name, int size) {
        byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
        if (!possibleName(name)) {
            throw new IllegalArgumentException("not a device-mapper name (1 to " + (DM_NAME_LEN - 1)
                    + " bytes, no NUL): \"" + name.replace("\0", "\\0") + "\"");
        }
        MemorySegment io = arena.allocate(size, 8);
        io.set(JAVA_INT, VERSION, VERSION_MAJOR);
        io.set(JAVA_INT, DATA_SIZE, size);
        io.set(JAVA_INT, DATA_START, (int) DM_IOCTL.byteSize());
        MemorySegment.copy(bytes, 0, io, JAVA_BYTE, NAME, bytes.length);
        return io;
    }

    static DeviceStatus decodeStatus(MemorySegment io) {
        int flags = io.get(JAVA_INT, FLAGS);
        long dev = io.get(JAVA_LONG, DEV);
        return new DeviceStatus(string(io, NAME, NAME + DM_NAME_LEN), string(io, UUID, UUID + DM_UUID_LEN),
                major(dev), minor(dev), io.get(JAVA_INT, OPEN_COUNT), io.get(JAVA_INT, TARGET_COUNT),
                Integer.toUnsignedLong(io.get(JAVA_INT, EVENT_NR)),
                (flags & DM_SUSPEND_FLAG) != 0, (flags & DM_READONLY_FLAG) != 0,
                (flags & DM_ACTIVE_PRESENT_FLAG) != 0, (flags & DM_INACTIVE_PRESENT_FLAG) != 0);
    }

    /**
     * The targets after the header: the first at {@code data_start}, each next one at
     * {@code data_start + next}. For DM_TABLE_STATUS the kernel counts {@code next} from the first
     * target, not from the one that holds it (only DM_TABLE_LOAD's input counts from there).
     */
    static List<TargetStatus> decodeTargets(MemorySegment io, String name) throws IOException {
        int count = io.get(JAVA_INT, TARGET_COUNT);
        long start = Integer.toUnsignedLong(io.get(JAVA_INT, DATA_START));
        long end = Math.min(io.byteSize(), Integer.toUnsignedLong(io.get(JAVA_INT, DATA_SIZE)));
        List<TargetStatus> targets = new ArrayList<>(count);
        long spec = start;
        for (int i = 0; i < count; i++) {
            if (spec + DM_TARGET_SPEC.byteSize() > end) {
                throw new IOException("DM_TABLE_STATUS " + name + ": target " + i + " of " + count + " at byte "
                        + spec + " lies outside the answer's " + start + ".." + end);
            }
            String status = string(io, spec + DM_TARGET_SPEC.byteSize(), end);
            targets.add(new TargetStatus(io.get(JAVA_LONG, spec + SECTOR_START), io.get(JAVA_LONG, spec + LENGTH),
                    string(io, spec + TARGET_TYPE, spec + TARGET_TYPE + DM_MAX_TYPE_NAME), status));
            spec = start + Integer.toUnsignedLong(io.get(JAVA_INT, spec + NEXT));
        }
        return List.copyOf(targets);
    }

    /** glibc's major(): the kernel writes dev_t in its huge encoding, which glibc's reads. */
    static int major(long dev) {
        return (int) (((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL));
    }

    static int minor(long dev) {
        return (int) ((dev & 0xff) | ((dev >>> 12) & ~0xffL & 0xffffffffL));
    }

    /** The UTF-8 text from {@code from} up to its NUL, or up to {@code end} if there is none before. */
    private static String string(MemorySegment io, long from, long end) {
        long nul = from;
        while (nul < end && io.get(JAVA_BYTE, nul) != 0) {
            nul++;
        }
        byte[] bytes = io.asSlice(from, nul - from).toArray(JAVA_BYTE);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
