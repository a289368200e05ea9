package dev.hearth.storage.probe;

import static dev.hearth.storage.probe.Images.MIB;
import static dev.hearth.storage.probe.Images.probe;
import static dev.hearth.storage.probe.Images.sparse;
import static dev.hearth.storage.probe.Images.zero;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.probe.Signature.Kind;
import dev.hearth.storage.tool.ToolRunner;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Images made by the real tools on sparse files, each also listed by wipefs (read-only: no -a)
 * so our offsets are checked against libblkid's, not just against our own reading of them.
 */
class RealImagesProbeTest {

    private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(2);
    private static final long EXT_1K_BACKUP_MAGIC = 8193 * 1024 + 0x38;

    private final ToolRunner tools = new ToolRunner();

    @TempDir
    Path dir;

    @Test
    @RequiresTools({"mkfs.ext4", "wipefs"})
    void ext4WithOneKibBlocksAndItsBackupSuperblock() {
        Path file = made(64 * MIB, "mkfs.ext4", "-q", "-b", "1024");

        assertThat(found(file)).containsExactly(
                new Signature(Kind.FILESYSTEM, "ext4", 0x438),
                new Signature(Kind.FILESYSTEM, "ext4", EXT_1K_BACKUP_MAGIC, true));
        agreesWithWipefs(file);
    }

    @Test
    @RequiresTools({"mkfs.ext4", "wipefs"})
    void ext4WithFourKibBlocksKeepsItsBackupAt128Mib() {
        Path file = made(256 * MIB, "mkfs.ext4", "-q", "-b", "4096");

        assertThat(found(file)).containsExactly(
                new Signature(Kind.FILESYSTEM, "ext4", 0x438),
                new Signature(Kind.FILESYSTEM, "ext4", 128 * MIB + 0x38, true));
        agreesWithWipefs(file);
    }

    @Test
    @RequiresTools({"mkfs.ext3", "mkfs.ext2", "mke2fs", "wipefs"})
    void ext3Ext2AndExternalJournalsAreToldApart() {
        Path ext3 = made(64 * MIB, "mkfs.ext3", "-q");
        Path ext2 = made(64 * MIB, "mkfs.ext2", "-q");
        Path jbd = made(64 * MIB, "mke2fs", "-q", "-O", "journal_dev", "-b", "4096");

        assertThat(primaryTypes(ext3)).containsExactly("ext3");
        assertThat(primaryTypes(ext2)).containsExactly("ext2");
        assertThat(primaryTypes(jbd)).containsExactly("jbd");
        agreesWithWipefs(ext3);
        agreesWithWipefs(ext2);
        agreesWithWipefs(jbd);
    }

    @Test
    @RequiresTools({"mkfs.xfs", "wipefs"})
    void xfs() {
        Path file = made(320 * MIB, "mkfs.xfs", "-q");

        assertThat(found(file)).containsExactly(new Signature(Kind.FILESYSTEM, "xfs", 0));
        agreesWithWipefs(file);
    }

    @Test
    @RequiresTools({"mkfs.btrfs", "wipefs"})
    void btrfsAndItsMirrorAt64Mib() {
        Path file = made(128 * MIB, "mkfs.btrfs", "-q");

        assertThat(found(file)).containsExactly(
                new Signature(Kind.FILESYSTEM, "btrfs", 0x10040),
                new Signature(Kind.FILESYSTEM, "btrfs", 64 * MIB + 0x40, true));
        agreesWithWipefs(file);
    }

    @Test
    @RequiresTools({"mkswap", "wipefs"})
    void swap() {
        Path file = made(64 * MIB, "mkswap", "-q");

        assertThat(found(file)).containsExactly(new Signature(Kind.SWAP, "swap", 4096 - 10));
        agreesWithWipefs(file);
    }

    @Test
    @RequiresTools({"mkfs.vfat", "wipefs"})
    void vfatIsAFilesystemNotAPartitionTable() {
        Path fat16 = made(64 * MIB, "mkfs.vfat");
        Path fat32 = made(64 * MIB, "mkfs.vfat", "-F", "32");

        assertThat(found(fat16)).containsExactly(new Signature(Kind.FILESYSTEM, "vfat", 0x36));
        assertThat(found(fat32)).containsExactly(new Signature(Kind.FILESYSTEM, "vfat", 0x52));
        agreesWithWipefs(fat16);
        agreesWithWipefs(fat32);
    }

    @Test
    @RequiresTools({"sfdisk", "wipefs"})
    void anMbrIsAPartitionTableAndNothingElse() {
        Path file = partitioned("dos", "83");

        assertThat(found(file)).containsExactly(new Signature(Kind.PARTITION_TABLE, "dos", 0x1FE));
        agreesWithWipefs(file);
    }

    @Test
    @RequiresTools({"sfdisk", "wipefs"})
    void gptWithItsBackupAndProtectiveMbr() {
        Path file = partitioned("gpt", "L");

        assertThat(found(file)).containsExactly(
                new Signature(Kind.PARTITION_TABLE, "PMBR", 0x1FE),
                new Signature(Kind.PARTITION_TABLE, "gpt", 0x200),
                new Signature(Kind.PARTITION_TABLE, "gpt", 64 * MIB - 512, true));
        agreesWithWipefs(file);
    }

    @Test
    @RequiresTools("mkfs.ext4")
    void ext4WithItsFirst4KibOverwrittenIsStillFound() {
        Path file = made(64 * MIB, "mkfs.ext4", "-q", "-b", "1024");
        zero(file, 0, 4096);

        assertThat(found(file)).containsExactly(new Signature(Kind.FILESYSTEM, "ext4", EXT_1K_BACKUP_MAGIC, true));
    }

    @Test
    @RequiresTools("mkfs.ext4")
    void ext4WithHeadAndTailWipedIsStillFoundByItsBackup() {
        Path file = made(64 * MIB, "mkfs.ext4", "-q", "-b", "1024");
        zero(file, 0, MIB);
        zero(file, 63 * MIB, MIB);

        assertThat(probe(file)).isInstanceOf(ProbeResult.Signed.class);
    }

    @Test
    @RequiresTools({"mkfs.ext4", "wipefs"})
    void ext4AfterWipefsAllIsStillNotEmpty() {
        Path file = made(64 * MIB, "mkfs.ext4", "-q", "-b", "1024");
        tools.run(List.of("wipefs", "-q", "-a", file.toString()), TOOL_TIMEOUT);

        assertThat(found(file)).containsExactly(new Signature(Kind.FILESYSTEM, "ext4", EXT_1K_BACKUP_MAGIC, true));
    }

    @Test
    @RequiresTools("mkfs.btrfs")
    void btrfsWithHeadAndTailWipedIsStillFoundByItsMirror() {
        Path file = made(128 * MIB, "mkfs.btrfs", "-q");
        zero(file, 0, MIB);
        zero(file, 127 * MIB, MIB);

        assertThat(found(file)).containsExactly(new Signature(Kind.FILESYSTEM, "btrfs", 64 * MIB + 0x40, true));
    }

    @Test
    @RequiresTools("mkfs.xfs")
    void xfsWithItsSuperblockOverwrittenIsNotEmpty() {
        Path file = made(320 * MIB, "mkfs.xfs", "-q");
        zero(file, 0, 4096);

        assertThat(probe(file)).isInstanceOf(ProbeResult.NotEmpty.class);
    }

    @Test
    @RequiresTools("wipefs")
    void vmfsAndPromiseHeadersBeyondTheProbedRegionsAreWhereLibblkidLooks() {
        Path vmfs = sparse(dir, "vmfs", 64 * MIB);
        Images.write(vmfs, MIB, new byte[] {0x0d, (byte) 0xd0, 0x01, (byte) 0xc0});
        Images.write(vmfs, 2 * MIB, new byte[] {0x5e, (byte) 0xf1, (byte) 0xab, 0x2f});
        Path promise = sparse(dir, "promise", 64 * MIB);
        Images.write(promise, (64 * MIB / 512 - 3087) * 512, "Promise Technology, Inc.");

        assertThat(primaryTypes(vmfs)).containsExactly("VMFS_volume_member", "VMFS");
        assertThat(primaryTypes(promise)).containsExactly("promise_fasttrack_raid_member");
        agreesWithWipefs(vmfs);
        agreesWithWipefs(promise);
    }

    /**
     * What makes blkid -p redundant on a device the probe calls empty: it reads nothing else. Data
     * everywhere but the first and last MiB and the places of {@link OutlyingSignatures} (and of the
     * LUKS2 second headers there) goes unseen by both; a header at one of those places, by neither.
     */
    @Test
    @RequiresTools("blkid")
    void blkidFindsNothingOnADeviceTheProbeCallsEmpty() {
        long size = 64 * MIB;
        Path file = sparse(dir, "noise-between", size);
        byte[] noise = new byte[(int) (size - 2 * MIB)];
        new Random(11).nextBytes(noise);
        Images.write(file, MIB, noise);
        for (long place : new long[] {MIB, 2 * MIB, 4 * MIB}) {
            zero(file, place, 4096);
        }
        zero(file, (size / 512 - 3087) * 512, 512);

        assertThat(probe(file)).isEqualTo(ProbeResult.EMPTY);
        assertThat(blkid(file)).isEqualTo(2); // nothing found

        Images.write(file, 2 * MIB, new byte[] {0x5e, (byte) 0xf1, (byte) 0xab, 0x2f});
        assertThat(primaryTypes(file)).containsExactly("VMFS");
        assertThat(blkid(file)).isZero();
    }

    private int blkid(Path file) {
        return tools.runAllowingFailure(List.of("blkid", "-p", file.toString()), TOOL_TIMEOUT).exitCode();
    }

    private Path made(long size, String... mkfs) {
        Path file = sparse(dir, "image-" + mkfs[0] + "-" + System.nanoTime(), size);
        List<String> command = new ArrayList<>(List.of(mkfs));
        command.add(file.toString());
        tools.run(command, TOOL_TIMEOUT);
        return file;
    }

    private Path partitioned(String label, String partitionType) {
        Path file = sparse(dir, "disk-" + label, 64 * MIB);
        // sfdisk reads its script from stdin, which the runner closes; a shell pipes it in (tests only).
        tools.run(List.of("/bin/sh", "-c", "printf 'label: %s\\n,10M,%s\\n' \"$1\" \"$2\" | sfdisk -q \"$3\"",
                "sh", label, partitionType, file.toString()), TOOL_TIMEOUT);
        return file;
    }

    private static List<Signature> found(Path file) {
        ProbeResult result = probe(file);
        assertThat(result).isInstanceOf(ProbeResult.Signed.class);
        return ((ProbeResult.Signed) result).found();
    }

    private static List<String> primaryTypes(Path file) {
        return found(file).stream().filter(s -> !s.backup()).map(Signature::type).toList();
    }

    /** Every primary signature we report, wipefs reports at the same offset, and we miss no type it knows. */
    private void agreesWithWipefs(Path file) {
        String listing = tools.run(List.of("wipefs", "--noheadings", "--output", "TYPE,OFFSET", file.toString()),
                TOOL_TIMEOUT).stdout();
        Set<String> theirs = listing.lines()
                .map(l -> l.strip().split("\\s+"))
                .map(f -> f[0] + "@" + Long.decode(f[1]))
                .collect(Collectors.toSet());
        List<Signature> ours = found(file);
        assertThat(theirs).containsAll(ours.stream().filter(s -> !s.backup()).map(s -> s.type() + "@" + s.offset()).toList());
        assertThat(ours.stream().map(Signature::type).collect(Collectors.toSet()))
                .containsAll(theirs.stream().map(t -> t.substring(0, t.indexOf('@'))).toList());
    }
}
