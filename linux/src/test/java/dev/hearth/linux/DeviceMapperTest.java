package dev.hearth.linux;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Decoding what the kernel writes into struct dm_ioctl, from buffers laid out by hand at the
 * offsets of linux/dm-ioctl.h (x86_64 and aarch64 alike). A layout check, not the proof: that is
 * {@code DeviceMapperUmlTest}, against a real kernel and dmsetup.
 */
class DeviceMapperTest {

    // struct dm_ioctl, as gcc lays it out (DeviceMapperHeaderTest compares with the header)
    private static final int DATA_SIZE = 12;
    private static final int DATA_START = 16;
    private static final int TARGET_COUNT = 20;
    private static final int OPEN_COUNT = 24;
    private static final int FLAGS = 28;
    private static final int EVENT_NR = 32;
    private static final int DEV = 40;
    private static final int NAME = 48;
    private static final int UUID = 176;
    private static final int HEADER = 312;
    private static final int SPEC = 40;

    private final Arena arena = Arena.ofAuto();

    @Test
    void deviceStatusComesFromTheHeader() {
        MemorySegment io = arena.allocate(HEADER, 8);
        io.set(JAVA_INT, OPEN_COUNT, 2);
        io.set(JAVA_INT, TARGET_COUNT, 1);
        io.set(JAVA_INT, FLAGS, (1 << 1) | (1 << 5) | (1 << 6) | (1 << 8)); // suspended, live, inactive, (full)
        io.set(JAVA_INT, EVENT_NR, 0xFFFF_FFFF);
        io.set(JAVA_LONG, DEV, hugeEncodeDev(253, 300));
        putString(io, NAME, "hearth--dm-thin");
        String uuid = "LVM-" + "x".repeat(124); // 128 characters: the longest, with its NUL
        putString(io, UUID, uuid);

        assertThat(DeviceMapper.decodeStatus(io)).isEqualTo(new DeviceStatus("hearth--dm-thin", uuid, 253, 300, 2, 1,
                4_294_967_295L, true, false, true, true));
    }

    @Test
    void readOnlyAndNoTableAreFlagsToo() {
        MemorySegment io = arena.allocate(HEADER, 8);
        io.set(JAVA_INT, FLAGS, 1);
        io.set(JAVA_LONG, DEV, hugeEncodeDev(254, 3));
        putString(io, NAME, "empty");

        DeviceStatus status = DeviceMapper.decodeStatus(io);

        assertThat(status).isEqualTo(new DeviceStatus("empty", "", 254, 3, 0, 0, 0, false, true, false, false));
        assertThat(status.deviceNumber()).isEqualTo("254:3");
    }

    @Test
    void deviceNumbersDecodeAsGlibcDoes() {
        assertThat(DeviceMapper.major(hugeEncodeDev(253, 0))).isEqualTo(253);
        assertThat(DeviceMapper.minor(hugeEncodeDev(253, 0))).isEqualTo(0);
        assertThat(DeviceMapper.major(hugeEncodeDev(4095, 1048575))).isEqualTo(4095);
        assertThat(DeviceMapper.minor(hugeEncodeDev(4095, 1048575))).isEqualTo(1048575);
        // glibc's makedev(0x12345, 0x678): the 64-bit dev_t, a major's bits above 12 at 44..63
        assertThat(DeviceMapper.major(0x0001_2000_0063_4578L)).isEqualTo(0x12345);
        assertThat(DeviceMapper.minor(0x0001_2000_0063_4578L)).isEqualTo(0x678);
    }

    /**
     * Three targets, the second after a status long enough that each {@code next} differs from the
     * distance to the target before: read from the spec that holds it, the third would be lost.
     */
    @Test
    void targetsFollowNextCountedFromTheFirstTarget() throws IOException {
        MemorySegment io = arena.allocate(4096, 8);
        String pool = "1 17/4096 128/1024 - rw discard_passdown queue_if_no_space - 1024 ";
        int first = HEADER;
        int second = putSpec(io, first, first, 0, 16384, "thin-pool", pool);
        int third = putSpec(io, first, second, 16384, 8192, "linear", "");
        int end = putSpec(io, first, third, 24576, 2048, "thin", "16384 49151");
        io.set(JAVA_INT, DATA_START, first);
        io.set(JAVA_INT, DATA_SIZE, end);
        io.set(JAVA_INT, TARGET_COUNT, 3);

        assertThat(DeviceMapper.decodeTargets(io, "dev")).containsExactly(
                new TargetStatus(0, 16384, "thin-pool", pool),
                new TargetStatus(16384, 8192, "linear", ""),
                new TargetStatus(24576, 2048, "thin", "16384 49151"));
    }

    @Test
    void aDeviceWithoutALiveTableHasNoTargets() throws IOException {
        MemorySegment io = arena.allocate(HEADER + 64, 8);
        io.set(JAVA_INT, DATA_START, HEADER);
        io.set(JAVA_INT, DATA_SIZE, HEADER + 64);

        assertThat(DeviceMapper.decodeTargets(io, "dev")).isEmpty();
    }

    @Test
    void targetsPastTheAnswersEndAreRefused() {
        MemorySegment io = arena.allocate(4096, 8);
        int end = putSpec(io, HEADER, HEADER, 0, 8, "linear", "");
        io.set(JAVA_INT, DATA_START, HEADER);
        io.set(JAVA_INT, DATA_SIZE, end);
        io.set(JAVA_INT, TARGET_COUNT, 2);

        assertThatThrownBy(() -> DeviceMapper.decodeTargets(io, "vg-lv"))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("DM_TABLE_STATUS vg-lv: target 1 of 2");
    }

    @Test
    void aRequestCarriesVersionSizesAndName() {
        MemorySegment io = DeviceMapper.request(arena, "hearth--dm-lin", 16384);

        assertThat(io.byteSize()).isEqualTo(16384);
        assertThat(io.asSlice(0, 12).toArray(JAVA_INT)).containsExactly(4, 0, 0);
        assertThat(io.get(JAVA_INT, DATA_SIZE)).isEqualTo(16384);
        assertThat(io.get(JAVA_INT, DATA_START)).isEqualTo(HEADER);
        assertThat(io.get(JAVA_INT, FLAGS)).isZero();
        assertThat(io.getString(NAME)).isEqualTo("hearth--dm-lin");
        assertThat(io.get(JAVA_BYTE, UUID)).isZero();
    }

    @Test
    void namesNoDeviceCouldHaveAreRefused() {
        assertThat(DeviceMapper.request(arena, "n".repeat(127), HEADER).getString(NAME)).hasSize(127);
        for (String name : List.of("", "n".repeat(128), "é".repeat(64), "a\0b")) {
            assertThatThrownBy(() -> DeviceMapper.request(arena, name, HEADER))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not a device-mapper name");
        }
    }

    @Test
    void onlyArchitecturesWhoseNumbersAreKnownAreServed() {
        DeviceMapper.requireKnownArchitecture("amd64");
        DeviceMapper.requireKnownArchitecture("aarch64");
        for (String arch : List.of("ppc64le", "mips64el", "sparcv9", "riscv64", "x86")) {
            assertThatThrownBy(() -> DeviceMapper.requireKnownArchitecture(arch))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining(arch);
        }
    }

    /** The kernel's huge_encode_dev (new_encode_dev): minor's low byte, major, then minor's upper bits. */
    private static long hugeEncodeDev(int major, int minor) {
        return (minor & 0xff) | ((long) major << 8) | ((long) (minor & ~0xff) << 12);
    }

    private static void putString(MemorySegment io, long offset, String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        MemorySegment.copy(bytes, 0, io, JAVA_BYTE, offset, bytes.length);
        io.set(JAVA_BYTE, offset + bytes.length, (byte) 0);
    }

    /** Writes a dm_target_spec and its status at {@code at}; returns where the next one goes (8-aligned). */
    private static int putSpec(MemorySegment io, int first, int at, long start, long length, String type,
            String status) {
        io.set(JAVA_LONG, at, start);
        io.set(JAVA_LONG, at + 8, length);
        putString(io, at + 24, type);
        putString(io, at + SPEC, status);
        int next = (at + SPEC + status.length() + 1 + 7) & ~7;
        io.set(JAVA_INT, at + 20, next - first);
        return next;
    }
}
