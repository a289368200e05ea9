package dev.hearth.storage.probe;

import static dev.hearth.storage.probe.Images.MIB;
import static dev.hearth.storage.probe.Images.probe;
import static dev.hearth.storage.probe.Images.sparse;
import static dev.hearth.storage.probe.Images.write;
import static dev.hearth.storage.probe.Images.writeBe32;
import static dev.hearth.storage.probe.Images.writeLe32;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Emptiness rules and signatures written by hand at the offsets libblkid documents. */
class SignatureProbeTest {

    private static final long SIZE = 64 * MIB;
    private static final byte[] LUKS = {'L', 'U', 'K', 'S', (byte) 0xBA, (byte) 0xBE, 0, 1};
    private static final byte[] LUKS2_SECONDARY = {'S', 'K', 'U', 'L', (byte) 0xBA, (byte) 0xBE, 0, 2};
    private static final byte[] BCACHE = {
        (byte) 0xC6, (byte) 0x85, 0x73, (byte) 0xF6, 0x4E, 0x1A, 0x45, (byte) 0xCA,
        (byte) 0x82, 0x65, (byte) 0xF5, 0x7F, 0x48, (byte) 0xBA, 0x6D, (byte) 0x81
    };
    private static final long MD_MAGIC = 0xA92B4EFCL;
    private static final byte[] VMFS_VOLUME = {0x0d, (byte) 0xd0, 0x01, (byte) 0xc0};
    private static final byte[] VMFS = {0x5e, (byte) 0xf1, (byte) 0xab, 0x2f};
    private static final long PROMISE = (SIZE / 512 - 3087) * 512;

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(longs = {1, 4096, 100 * 1024, MIB, MIB + 1, 3 * MIB / 2, 2 * MIB, SIZE, 10L << 30})
    void aSparseFileIsEmpty(long size) {
        assertThat(probe(sparse(dir, "blank", size))).isEqualTo(ProbeResult.EMPTY);
    }

    @ParameterizedTest
    @ValueSource(longs = {0, 511, 4096, 65535, 65536, MIB - 1})
    void dataInTheFirstMibIsNotEmpty(long offset) {
        Path file = sparse(dir, "head", SIZE);
        write(file, offset, new byte[] {0x42});

        assertThat(probe(file)).isEqualTo(new ProbeResult.NotEmpty(
                "no known signature, but non-zero data at offset " + offset));
    }

    @ParameterizedTest
    @ValueSource(longs = {SIZE - MIB, SIZE - MIB + 65536, SIZE - 4096, SIZE - 1})
    void dataInTheLastMibIsNotEmpty(long offset) {
        Path file = sparse(dir, "tail", SIZE);
        write(file, offset, new byte[] {0x42});

        assertThat(probe(file)).isInstanceOfSatisfying(ProbeResult.NotEmpty.class,
                r -> assertThat(r.reason()).endsWith("offset " + offset));
    }

    @Test
    void dataBetweenTheRegionsIsNotLookedAt() {
        // The contract, not a wish: wiping the head and tail is what makes a device count as empty.
        Path file = sparse(dir, "middle", SIZE);
        write(file, MIB + 4096, "random leftovers");

        assertThat(probe(file)).isEqualTo(ProbeResult.EMPTY);
    }

    @Test
    void aSmallDeviceIsLookedAtWhole() {
        Path file = sparse(dir, "small", 3 * MIB / 2);
        write(file, MIB + 100, new byte[] {1});

        assertThat(probe(file).describe()).endsWith("offset " + (MIB + 100));
    }

    @Test
    void theSizeMayComeFromTheChannel() throws IOException {
        Path file = sparse(dir, "sized", SIZE);
        write(file, 0, "XFSB");

        assertThat(SignatureProbe.probe(file)).isEqualTo(probe(file));
    }

    @Test
    void aSignatureAtTheStartIsFoundWithoutReadingTheEnds() throws IOException {
        Path file = sparse(dir, "signed", SIZE);
        write(file, 1024 + 0x38, new byte[] {0x53, (byte) 0xEF}); // an ext superblock's magic

        try (CountingChannel channel = new CountingChannel(FileChannel.open(file, StandardOpenOption.READ))) {
            assertThat(SignatureProbe.probe(channel, SIZE)).isInstanceOf(ProbeResult.Signed.class);
            assertThat(channel.bytesRead()).as("bytes read").isLessThan(MIB / 2);
        }
    }

    @Test
    void anEmptyVerdictReadsTheFirstAndLastMibWhole() throws IOException {
        Path file = sparse(dir, "blank", SIZE);

        try (CountingChannel channel = new CountingChannel(FileChannel.open(file, StandardOpenOption.READ))) {
            assertThat(SignatureProbe.probe(channel, SIZE)).isEqualTo(ProbeResult.EMPTY);
            assertThat(channel.bytesRead()).as("bytes read").isGreaterThanOrEqualTo(2 * MIB);
        }
    }

    @Test
    void theChannelPositionIsLeftAlone() throws IOException {
        Path file = sparse(dir, "positioned", SIZE);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            channel.position(12345);
            SignatureProbe.probe(channel, SIZE);
            assertThat(channel.position()).isEqualTo(12345);
        }
    }

    @Test
    void aZeroOrWrongSizeIsRefusedRatherThanCalledEmpty() {
        Path file = sparse(dir, "sized", SIZE);

        // Files.size() of a block device is 0: an "empty" verdict on that would be a disaster.
        assertThatThrownBy(() -> SignatureProbe.probe(file, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("BLKGETSIZE64");
        assertThatThrownBy(() -> SignatureProbe.probe(file, SIZE - MIB))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the device has " + SIZE);
        assertThatThrownBy(() -> SignatureProbe.probe(file, SIZE + MIB))
                .isInstanceOf(IllegalArgumentException.class);
    }

    static Stream<Arguments> handWrittenSignatures() {
        long md090 = ((SIZE + 12345) & ~0xFFFFL) - 0x10000;
        long md10 = ((SIZE + 12345) & ~0xFFFL) - 0x2000;
        return Stream.of(
                sig("LVM2 label in sector 1", Kind.VOLUME_MANAGER, "LVM2_member", 0x218, false, SIZE,
                        f -> { write(f, 512, "LABELONE"); write(f, 512 + 0x18, "LVM2 001"); }),
                sig("LVM2 label in sector 3", Kind.VOLUME_MANAGER, "LVM2_member", 3 * 512 + 0x18, false, SIZE,
                        f -> { write(f, 3 * 512, "LABELONE"); write(f, 3 * 512 + 0x18, "LVM2 001"); }),
                sig("md 1.1 at the start", Kind.VOLUME_MANAGER, "linux_raid_member", 0, false, SIZE,
                        f -> { writeLe32(f, 0, MD_MAGIC); writeLe32(f, 4, 1); }),
                sig("md 1.2 at 4 KiB", Kind.VOLUME_MANAGER, "linux_raid_member", 0x1000, false, SIZE,
                        f -> { writeLe32(f, 0x1000, MD_MAGIC); writeLe32(f, 0x1004, 1); }),
                sig("md 1.0 near the end", Kind.VOLUME_MANAGER, "linux_raid_member", md10, false, SIZE + 12345,
                        f -> { writeLe32(f, md10, MD_MAGIC); writeLe32(f, md10 + 4, 1); }),
                sig("md 0.90 at the end, little-endian", Kind.VOLUME_MANAGER, "linux_raid_member", md090, false,
                        SIZE + 12345, f -> writeLe32(f, md090, MD_MAGIC)),
                sig("md 0.90 at the end, big-endian", Kind.VOLUME_MANAGER, "linux_raid_member", md090, false,
                        SIZE + 12345, f -> writeBe32(f, md090, MD_MAGIC)),
                sig("DDF anchor 257 sectors before the end, big-endian", Kind.VOLUME_MANAGER, "ddf_raid_member",
                        SIZE - 257 * 512, false, SIZE, f -> writeBe32(f, SIZE - 257 * 512, 0xDE11DE11L)),
                sig("LUKS header", Kind.VOLUME_MANAGER, "crypto_LUKS", 0, false, SIZE, f -> write(f, 0, LUKS)),
                sig("LUKS2 second header only", Kind.VOLUME_MANAGER, "crypto_LUKS", 0x4000, true, SIZE,
                        f -> write(f, 0x4000, LUKS2_SECONDARY)),
                sig("bcache", Kind.VOLUME_MANAGER, "bcache", 0x1018, false, SIZE, f -> write(f, 0x1018, BCACHE)),
                sig("GPT with 4 KiB sectors", Kind.PARTITION_TABLE, "gpt", 4096, false, SIZE,
                        f -> write(f, 4096, "EFI PART")),
                sig("GPT backup header only", Kind.PARTITION_TABLE, "gpt", SIZE - 512, true, SIZE,
                        f -> write(f, SIZE - 512, "EFI PART")),
                sig("swap, 64 KiB pages", Kind.SWAP, "swap", 65536 - 10, false, SIZE,
                        f -> write(f, 65536 - 10, "SWAPSPACE2")),
                sig("old swap, 8 KiB pages", Kind.SWAP, "swap", 8192 - 10, false, SIZE,
                        f -> write(f, 8192 - 10, "SWAP-SPACE")),
                sig("hibernation image", Kind.SWAP, "swsuspend", 4096 - 10, false, SIZE,
                        f -> write(f, 4096 - 10, "S1SUSPEND")),
                sig("xfs", Kind.FILESYSTEM, "xfs", 0, false, SIZE, f -> write(f, 0, "XFSB")),
                sig("btrfs", Kind.FILESYSTEM, "btrfs", 0x10040, false, SIZE, f -> write(f, 0x10040, "_BHRfS_M")),
                sig("iso9660", Kind.FILESYSTEM, "iso9660", 0x8001, false, SIZE, f -> write(f, 0x8001, "CD001")),
                sig("squashfs", Kind.FILESYSTEM, "squashfs", 0, false, SIZE, f -> write(f, 0, "hsqs")),
                sig("f2fs", Kind.FILESYSTEM, "f2fs", 1024, false, SIZE, f -> writeLe32(f, 1024, 0xF2F52010L)),
                sig("erofs", Kind.FILESYSTEM, "erofs", 1024, false, SIZE, f -> writeLe32(f, 1024, 0xE0F5E1E2L)),
                sig("cramfs, little-endian", Kind.FILESYSTEM, "cramfs", 0, false, SIZE,
                        f -> writeLe32(f, 0, 0x28CD3D45L)),
                sig("cramfs, big-endian", Kind.FILESYSTEM, "cramfs", 0, false, SIZE,
                        f -> writeBe32(f, 0, 0x28CD3D45L)),
                sig("bfs", Kind.FILESYSTEM, "bfs", 0, false, SIZE, f -> writeLe32(f, 0, 0x1BADFACEL)),
                sig("minix v2, big-endian", Kind.FILESYSTEM, "minix", 0x410, false, SIZE,
                        f -> minixV1OrV2(f, ByteOrder.BIG_ENDIAN, 0x2468)),
                sig("ntfs", Kind.FILESYSTEM, "ntfs", 3, false, SIZE, f -> write(f, 3, "NTFS    ")),
                sig("exfat", Kind.FILESYSTEM, "exfat", 3, false, SIZE, f -> write(f, 3, "EXFAT   ")),
                sig("VMFS volume header at 1 MiB", Kind.VOLUME_MANAGER, "VMFS_volume_member", MIB, false, SIZE,
                        f -> write(f, MIB, VMFS_VOLUME)),
                sig("VMFS at 2 MiB", Kind.FILESYSTEM, "VMFS", 2 * MIB, false, SIZE, f -> write(f, 2 * MIB, VMFS)),
                sig("Promise FastTrak 3087 sectors before the end", Kind.VOLUME_MANAGER,
                        "promise_fasttrack_raid_member", PROMISE, false, SIZE,
                        f -> write(f, PROMISE, "Promise Technology, Inc.")),
                sig("dos partition table", Kind.PARTITION_TABLE, "dos", 0x1FE, false, SIZE,
                        f -> { write(f, 0x1BE + 16 + 4, new byte[] {(byte) 0x83}); bootSignature(f); }),
                sig("protective MBR", Kind.PARTITION_TABLE, "PMBR", 0x1FE, false, SIZE,
                        f -> { write(f, 0x1BE + 4, new byte[] {(byte) 0xEE}); bootSignature(f); }));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("handWrittenSignatures")
    void findsHandWrittenSignatures(String name, Signature expected, long size, Consumer<Path> writer) {
        Path file = sparse(dir, "image", size);
        writer.accept(file);

        assertThat(probe(file)).isEqualTo(new ProbeResult.Signed(List.of(expected)));
    }

    @Test
    void whatLooksLikeAVmfsHeaderBehindAFilesystemIsItsData() {
        Path file = sparse(dir, "ext4-holding-a-vmfs-image", SIZE);
        write(file, 1024 + 0x38, new byte[] {0x53, (byte) 0xEF});
        write(file, 2 * MIB, VMFS);

        assertThat(probe(file)).isInstanceOfSatisfying(ProbeResult.Signed.class, r -> assertThat(r.found())
                .extracting(Signature::type)
                .containsExactly("ext2"));
    }

    @Test
    void anMbrWithoutPartitionsIsStillADosTable() {
        // What sfdisk writes for "label: dos", and what libblkid calls a dos table.
        Path file = sparse(dir, "mbr", SIZE);
        bootSignature(file);

        assertThat(probe(file)).isEqualTo(new ProbeResult.Signed(List.of(
                new Signature(Kind.PARTITION_TABLE, "dos", 0x1FE))));
    }

    @Test
    void anEmptyMbrInFrontOfAnLvmLabelIsThePhysicalVolumeAlone() {
        // How a PV is made bootable; libblkid calls the disk an LVM2_member and no dos table.
        Path file = sparse(dir, "bootable-pv", SIZE);
        bootSignature(file);
        write(file, 512, "LABELONE");
        write(file, 512 + 0x18, "LVM2 001");

        assertThat(probe(file)).isEqualTo(new ProbeResult.Signed(List.of(
                new Signature(Kind.VOLUME_MANAGER, "LVM2_member", 0x218))));
    }

    @Test
    void aSectorEndingIn55aaWithGarbageEntriesIsNoPartitionTable() {
        Path file = sparse(dir, "mbr", SIZE);
        write(file, 0x1BE, new byte[] {0x12, 0, 0, 0, (byte) 0x83});
        bootSignature(file);

        assertThat(probe(file)).isInstanceOf(ProbeResult.NotEmpty.class);
    }

    @Test
    void fatTextWithoutAPlausibleBootSectorIsNotVfat() {
        Path file = sparse(dir, "fat-text", SIZE);
        write(file, 0x36, "FAT16   ");

        assertThat(probe(file)).isInstanceOf(ProbeResult.NotEmpty.class);
    }

    @Test
    void aMinixMagicNeedsASuperblockThatMakesSense() {
        Path zeroInodes = sparse(dir, "minix-no-inodes", SIZE);
        write(zeroInodes, 0x410, new byte[] {0x7F, 0x13}); // v1's magic, every count 0
        Path extToo = sparse(dir, "minix-in-ext", SIZE);
        minixV1OrV2(extToo, ByteOrder.LITTLE_ENDIAN, 0x137F);
        write(extToo, 1024 + 0x38, new byte[] {0x53, (byte) 0xEF}); // an ext superblock wins, as in libblkid

        assertThat(probe(zeroInodes)).isInstanceOf(ProbeResult.NotEmpty.class);
        assertThat(probe(extToo)).isInstanceOfSatisfying(ProbeResult.Signed.class, r -> assertThat(r.found())
                .extracting(Signature::type)
                .containsExactly("ext2"));
    }

    @Test
    void md1MagicNeedsItsVersion() {
        Path file = sparse(dir, "md", SIZE);
        writeLe32(file, 0x1000, MD_MAGIC);

        assertThat(probe(file)).isInstanceOf(ProbeResult.NotEmpty.class);
    }

    @Test
    void severalSignaturesAreAllReportedInOffsetOrder() {
        Path file = sparse(dir, "layered", SIZE);
        write(file, 0x10040, "_BHRfS_M");
        write(file, 512, "LABELONE");
        write(file, 512 + 0x18, "LVM2 001");

        assertThat(probe(file)).isInstanceOfSatisfying(ProbeResult.Signed.class, r -> assertThat(r.found())
                .extracting(Signature::type)
                .containsExactly("LVM2_member", "btrfs"));
    }

    @Test
    void describeNamesWhatWasFound() {
        Path file = sparse(dir, "described", SIZE);
        write(file, 0x10040, "_BHRfS_M");

        assertThat(probe(file).describe()).isEqualTo("holds btrfs at offset 0x10040");
    }

    /** A Minix v1 or v2 superblock as mkfs.minix writes one for 64 MiB, in {@code order}. */
    private static void minixV1OrV2(Path file, ByteOrder order, int magic) {
        ByteBuffer sb = ByteBuffer.allocate(24).order(order)
                .putShort((short) 21856) // s_ninodes
                .putShort((short) 0) // s_nzones (v1 only)
                .putShort((short) 3) // s_imap_blocks
                .putShort((short) 8) // s_zmap_blocks
                .putShort((short) 700) // s_firstdatazone
                .putShort((short) 0) // s_log_zone_size
                .putInt(0x7FFFFFFF) // s_max_size
                .putShort((short) magic)
                .putShort((short) 1) // s_state: valid
                .putInt(65536); // s_zones (v2)
        write(file, 1024, sb.array());
    }

    private static void bootSignature(Path file) {
        write(file, 0x1FE, new byte[] {0x55, (byte) 0xAA});
    }

    private static Arguments sig(String name, Kind kind, String type, long offset, boolean backup, long size,
            Consumer<Path> writer) {
        return Arguments.of(name, new Signature(kind, type, offset, backup), size, writer);
    }
}
