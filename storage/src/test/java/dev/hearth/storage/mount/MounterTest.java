package dev.hearth.storage.mount;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.FileOps;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.file.ImageEmptiness;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Formatter;
import dev.hearth.storage.fs.Grower;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.SignatureProbe;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Real loop devices, real mkfs, real mounts: everything a node does to stage and publish a volume. */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "blkid"})
class MounterTest {

    private static final Optional<FilesystemType> ANY = Optional.empty();

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private final ToolRunner tools = new ToolRunner();
    private static final VolumeId VOLUME = VolumeId.mint("test", "mounter-test-volume");

    private Mounter mounter;
    private FormatJournal journal;
    private int blankDevices;

    @BeforeEach
    void newMounter() throws IOException {
        journal = new FormatJournal(dir.resolve("state/formatting"));
        mounter = new Mounter(new Formatter(tools), journal, new Grower(tools));
    }

    /** The proof a file pool gives: the extent map of the loop device's backing image. */
    private static Mounter.EmptyProof provenBy(Path device) {
        return () -> {
            try {
                Path image = Loop.list().stream().filter(a -> a.device().path().equals(device)).findFirst()
                        .orElseThrow().backingFile();
                return ImageEmptiness.of(image);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
    }

    // --- stage ---

    /** The warm-up after a start probes a blank file of its own, and mounts and writes nothing. */
    @Test
    void warmUpWritesAndMountsNothing() throws IOException {
        Path blank = dir.resolve("blank");
        try (FileChannel channel = FileChannel.open(blank, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.allocate(1), 4 * MIB - 1);
        }
        long modified = Files.getLastModifiedTime(blank).toMillis();

        mounter.warmUp(blank);
        mounter.warmUp(blank);

        assertThat(Files.getLastModifiedTime(blank).toMillis()).isEqualTo(modified);
        assertThat(Scratch.readAt(blank, 0, (int) (4 * MIB))).containsOnly(0);
        assertThat(MountInfo.read()).noneMatch(m -> m.mountPoint().startsWith(dir) || m.source().equals(blank.toString()));
    }

    @Test
    void stageFormatsABlankDeviceAsExt4AndMountsIt() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of());

        MountEntry mounted = MountInfo.at(staging).orElseThrow();
        assertThat(mounted.fsType()).isEqualTo("ext4");
        assertThat(mounted.source()).isEqualTo(device.toString());
        assertThat(mounter.isMounted(staging)).isTrue();
        Files.writeString(staging.resolve("hello.txt"), "hello");
        assertThat(Files.readString(staging.resolve("hello.txt"))).isEqualTo("hello");
        assertThat(Formatter.detect(probe(device))).contains(FilesystemType.EXT4);
    }

    @Test
    void stageAgainIsANoOp() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");
        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, Optional.of(FilesystemType.EXT4), List.of());
        Files.writeString(staging.resolve("data"), "written after the first stage");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, Optional.of(FilesystemType.EXT4), List.of());

        assertThat(mountsAt(staging)).hasSize(1);
        assertThat(Files.readString(staging.resolve("data"))).isEqualTo("written after the first stage");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"XFS, 320, xfs", "BTRFS, 128, btrfs"})
    @RequiresTools({"mkfs.xfs", "mkfs.btrfs", "blkid"})
    void stageMakesTheFilesystemAskedFor(FilesystemType type, long sizeMib, String fsType) throws IOException {
        Path device = blankDevice(sizeMib * MIB);
        Path staging = mountPoint("staging");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, Optional.of(type), List.of());

        assertThat(MountInfo.at(staging)).hasValueSatisfying(e -> assertThat(e.fsType()).isEqualTo(fsType));
        Files.writeString(staging.resolve("f"), "on " + fsType);
        assertThat(Files.readString(staging.resolve("f"))).isEqualTo("on " + fsType);
    }

    @Test
    void stageRefusesADeviceHoldingDataAndLeavesItUntouched() throws IOException {
        Path backing = sparseFile("disk.img", 64 * MIB);
        byte[] data = new byte[(int) MIB];
        new Random(42).nextBytes(data);
        Scratch.writeAt(backing, 0, data);
        Path device = attach(backing);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining(device.toString());

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(Scratch.readAt(backing, 0, data.length)).isEqualTo(data);
    }

    @Test
    void stageRefusesDataAtTheEndOfTheDevice() throws IOException {
        Path backing = sparseFile("disk.img", 64 * MIB);
        byte[] tail = "a backup GPT, a RAID superblock, someone's data".getBytes();
        Scratch.writeAt(backing, 64 * MIB - 4096, tail);
        Path device = attach(backing);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class);

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(Scratch.readAt(backing, 0, (int) MIB)).containsOnly(0);
        assertThat(Scratch.readAt(backing, 64 * MIB - 4096, tail.length)).isEqualTo(tail);
    }

    /** VMFS keeps its header at 2 MiB, past the first MiB: libblkid looks there, and so does our probe. */
    @Test
    void stageRefusesAVmfsHeaderPastTheFirstMib() throws IOException {
        Path backing = sparseFile("disk.img", 64 * MIB);
        byte[] vmfs = {0x5e, (byte) 0xf1, (byte) 0xab, 0x2f};
        Scratch.writeAt(backing, 2 * MIB, vmfs);
        Path device = attach(backing);
        Path staging = mountPoint("staging");

        // As if the pool could not see the write: the probe must still refuse.
        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, () -> Emptiness.PROVEN, staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("VMFS");

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(Scratch.readAt(backing, 0, (int) MIB)).containsOnly(0);
        assertThat(Scratch.readAt(backing, 2 * MIB, vmfs.length)).isEqualTo(vmfs);
        assertThat(journal.isOpen(VOLUME)).as("a refused format leaves no licence to force one later").isFalse();
    }

    @Test
    void stageFormatsAgainOverItsOwnInterruptedMkfs() throws IOException {
        Path backing = sparseFile("disk.img", 64 * MIB);
        Path device = attach(backing);
        Path staging = mountPoint("staging");
        halfFormat(backing);
        journal.begin(VOLUME, device); // what a stage that crashed inside mkfs leaves behind

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of());

        assertThat(MountInfo.at(staging).orElseThrow().fsType()).isEqualTo("ext4");
        assertThat(journal.isOpen(VOLUME)).isFalse();
    }

    @Test
    void stageRefusesHalfWrittenFilesystemRemainsWithoutAJournalEntry() throws IOException {
        Path backing = sparseFile("disk.img", 64 * MIB);
        Path device = attach(backing);
        Path staging = mountPoint("staging");
        halfFormat(backing);

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class);

        assertThat(mountsAt(staging)).isEmpty();
    }

    @Test
    void aCompletedFormatClosesItsJournalEntry() throws IOException {
        Path device = blankDevice(64 * MIB);

        mounter.stageFilesystem(VOLUME, device, provenBy(device), mountPoint("staging"), ANY, List.of());

        assertThat(journal.isOpen(VOLUME)).isFalse();
    }

    /**
     * What a stage killed inside its offline resize2fs leaves (FileCrashIT found it): the growth
     * record open, and an ext4 that e2fsck -p refuses ("UNEXPECTED INCONSISTENCY"). The retried
     * stage repairs it with -y, grows it and mounts it, the data in it as it was.
     */
    @Test
    @RequiresTools({"e2fsck", "resize2fs", "debugfs"})
    void stageRepairsAndGrowsAnExt4WhoseOfflineGrowWasCutShort() throws Exception {
        byte[] data = new byte[256 * 1024];
        new Random(7).nextBytes(data);
        Path device = cutShortGrow(data);
        journal.beginGrowth(VOLUME, device); // what the killed stage left behind

        stageAndCheckRepairedAndGrown(device, data);
    }

    /**
     * What a stage killed inside the e2fsck -p before its grow leaves (LvmCrashUmlIT found it): -p
     * rewrites the superblock's changed fields one write at a time, and killed between two it
     * leaves a superblock whose checksum does not match, which -p refuses (exit 8). The record is
     * open since the check began: the retried stage repairs it with -y, grows it and mounts it.
     */
    @Test
    @RequiresTools({"e2fsck", "resize2fs"})
    void stageRepairsAnExt4WhoseSuperblockAKilledCheckLeftHalfWritten() throws Exception {
        byte[] data = new byte[64 * 1024];
        new Random(8).nextBytes(data);
        Path backing = ext4OnAGrownDevice(data);
        try (FileChannel channel = FileChannel.open(backing, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), 1024 + 0x40); // s_lastcheck, checksum unchanged
        }
        Path device = attach(backing);
        assertThat(fsck(device)).as("e2fsck -fn of the ext4 with the half-written superblock").isNotZero();
        journal.beginGrowth(VOLUME, device); // what the stage killed in its check leaves behind now

        stageAndCheckRepairedAndGrown(device, data);
    }

    /** The same damage with no record of a grow of ours: not repaired, not mounted, left as found. */
    @Test
    @RequiresTools({"e2fsck", "resize2fs", "debugfs"})
    void stageLeavesADamagedExt4AloneWithoutARecordOfItsOwnGrow() throws Exception {
        Path device = cutShortGrow(new byte[4096]);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("e2fsck -p does not repair")
                .hasMessageContaining("repair it (e2fsck -f)");

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(fsck(device)).as("e2fsck -fn: still as damaged as it was").isEqualTo(4);
        assertThat(journal.isGrowing(VOLUME)).isFalse();
    }

    /**
     * An xfs whose superblock fails its checksum (a clone of a damaged volume, a disk gone bad): the
     * kernel refuses to mount it, and the stage says what is wrong and how to repair it, as the
     * volume's state rather than a failure of the driver. Nothing is formatted, mounted or repaired.
     */
    @Test
    @RequiresTools("mkfs.xfs")
    void stageOfADamagedXfsIsAPreconditionThatNamesTheRepair() throws Exception {
        Path backing = sparseFile("xfs.img", 320 * MIB);
        tools.run(List.of("mkfs.xfs", "-q", "-f", backing.toString()), Duration.ofMinutes(2));
        try (FileChannel channel = FileChannel.open(backing, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(new byte[] {'x'}), 108); // sb_fname, covered by the superblock's CRC
        }
        Path device = attach(backing);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("the xfs filesystem on " + device + " does not mount")
                .hasMessageContaining("xfs_repair");

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(journal.isOpen(VOLUME)).isFalse();
        try (FileChannel channel = FileChannel.open(backing, StandardOpenOption.READ)) {
            ByteBuffer magic = ByteBuffer.allocate(4);
            channel.read(magic, 0);
            assertThat(new String(magic.array(), java.nio.charset.StandardCharsets.US_ASCII)).as("not reformatted")
                    .isEqualTo("XFSB");
        }
    }

    /**
     * A 64 MiB ext4 holding {@code data}, on a device grown to 96 MiB, with its resize inode
     * cleared: one of the states a resize2fs killed midway leaves, which -p will not repair.
     */
    private Path cutShortGrow(byte[] data) throws Exception {
        Path backing = ext4OnAGrownDevice(data);
        tools.run(List.of("debugfs", "-w", "-R", "clri <7>", backing.toString()), Duration.ofMinutes(1));
        Path device = attach(backing);
        assertThat(fsck(device)).as("e2fsck -fn of the damaged ext4").isEqualTo(4);
        return device;
    }

    /** A 64 MiB ext4 holding {@code data} in the file "data", in an image grown to 96 MiB: a stage grows it. */
    private Path ext4OnAGrownDevice(byte[] data) throws Exception {
        Path source = Files.createDirectories(dir.resolve("source"));
        Files.write(source.resolve("data"), data);
        Path backing = sparseFile("disk.img", 64 * MIB);
        tools.run(List.of("mkfs.ext4", "-q", "-F", "-d", source.toString(), backing.toString()), Duration.ofMinutes(2));
        try (FileChannel channel = FileChannel.open(backing, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.allocate(1), 96 * MIB - 1);
        }
        return backing;
    }

    /** The retried stage, with the growth record open: repaired, grown to the device, mounted with its data. */
    private void stageAndCheckRepairedAndGrown(Path device, byte[] data) throws Exception {
        Path staging = mountPoint("staging");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of());

        assertThat(Files.readAllBytes(staging.resolve("data"))).isEqualTo(data);
        assertThat(Files.getFileStore(staging).getTotalSpace()).as("grown to the device").isGreaterThan(80 * MIB);
        assertThat(journal.isGrowing(VOLUME)).isFalse();
        Mounts.unmount(staging);
        assertThat(fsck(device)).as("e2fsck -fn after the stage").isZero();
    }

    private static int fsck(Path device) throws Exception {
        Process fsck = new ProcessBuilder("e2fsck", "-fn", device.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        assertThat(fsck.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return fsck.exitValue();
    }

    /** An ext4 whose first 4 KiB (primary superblock) never got written: a crash inside mkfs. */
    private void halfFormat(Path backing) throws IOException {
        tools.run(List.of("mkfs.ext4", "-q", "-F", backing.toString()), Duration.ofMinutes(2));
        Scratch.writeAt(backing, 0, new byte[4096]);
        assertThat(SignatureProbe.probe(backing)).isNotInstanceOf(ProbeResult.Empty.class);
    }

    @Test
    @RequiresTools("mkfs.xfs")
    void stageRefusesToReformatXfsAsExt4() throws IOException {
        Path device = blankDevice(320 * MIB);
        tools.run(List.of("mkfs.xfs", "-q", "-K", device.toString()), Duration.ofMinutes(2));
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, Optional.of(FilesystemType.EXT4), List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("xfs");

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(Formatter.detect(probe(device))).contains(FilesystemType.XFS);
    }

    @Test
    @RequiresTools("mkfs.xfs")
    void stageMountsAnExistingFilesystemOfAnyKindWhenNoneIsAsked() throws IOException {
        Path device = blankDevice(320 * MIB);
        tools.run(List.of("mkfs.xfs", "-q", "-K", device.toString()), Duration.ofMinutes(2));
        Path staging = mountPoint("staging");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of());

        assertThat(MountInfo.at(staging)).hasValueSatisfying(e -> assertThat(e.fsType()).isEqualTo("xfs"));
    }

    @Test
    @RequiresTools("mkfs.ext4")
    void stageMountsAnExistingExt4WithoutReformatting() throws IOException {
        Path content = Files.createDirectory(dir.resolve("content"));
        Files.writeString(content.resolve("precious.txt"), "made before the volume was staged");
        Path backing = sparseFile("disk.img", 64 * MIB);
        tools.run(List.of("mkfs.ext4", "-q", "-F", "-d", content.toString(), backing.toString()), Duration.ofMinutes(2));
        Path device = attach(backing);
        Path staging = mountPoint("staging");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, Optional.of(FilesystemType.EXT4), List.of());

        assertThat(Files.readString(staging.resolve("precious.txt"))).isEqualTo("made before the volume was staged");
    }

    @Test
    void stageAppliesMountFlags() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of("noatime", "nodev", "errors=remount-ro"));

        MountEntry mounted = MountInfo.at(staging).orElseThrow();
        assertThat(mounted.hasMountOption("noatime")).isTrue();
        assertThat(mounted.hasMountOption("nodev")).isTrue();
        assertThat(mounted.hasSuperOption("errors=remount-ro")).isTrue();
    }

    @Test
    void stageRejectsAForbiddenFlagBeforeTouchingTheDevice() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of("noatime", "bind")))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("bind");

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(probe(device).isEmpty()).isTrue();
    }

    @Test
    void stageWithAnOptionTheFilesystemRejectsIsInvalidAndMountsNothing() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of("no_such_option=1")))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessageContaining("no_such_option=1");

        assertThat(mountsAt(staging)).isEmpty();
    }

    @Test
    void stageOntoAPathHoldingAnotherDeviceConflicts() throws IOException {
        Path first = blankDevice(64 * MIB);
        Path second = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");
        mounter.stageFilesystem(VOLUME, first, provenBy(first), staging, ANY, List.of());

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, second, provenBy(second), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining(first.toString());

        assertThat(mountsAt(staging)).singleElement()
                .satisfies(e -> assertThat(e.source()).isEqualTo(first.toString()));
        assertThat(probe(second).isEmpty()).isTrue();
    }

    @Test
    @RequiresTools("mkfs.xfs")
    void stageThatMkfsCannotServeFailsAsAStorageErrorAndMountsNothing() throws IOException {
        Path device = Scratch.attach(cleanup, sparseFile("read-only.img", 512 * MIB), true, true).path();
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, Optional.of(FilesystemType.XFS), List.of()))
                .isInstanceOf(StorageException.Failed.class)
                .hasMessageContaining("mkfs.xfs")
                .satisfies(e -> assertThat(((StorageException.Failed) e).explainedByTool())
                        .as("mkfs ran and said no; its stderr is the explanation").isTrue());

        assertThat(mountsAt(staging)).isEmpty();
    }

    @Test
    void stageOfAFilesystemTheDeviceIsTooSmallForIsRefusedBeforeMkfs() throws IOException {
        Path device = blankDevice(64 * MIB); // xfs wants at least 300 MB

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), mountPoint("staging"),
                Optional.of(FilesystemType.XFS), List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("is 64.0 MiB, smaller than the 300.0 MiB that xfs needs");

        assertThat(probe(device)).isInstanceOf(ProbeResult.Empty.class);
        assertThat(journal.isOpen(VOLUME)).isFalse();
    }

    @Test
    void unstageUnmountsKeepsTheDataAndIsIdempotent() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");
        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of());
        Files.writeString(staging.resolve("data"), "survives unstage");

        mounter.unstage(staging, Optional.of(device));
        mounter.unstage(staging, Optional.of(device));
        mounter.unstage(dir.resolve("never-staged"), Optional.of(device));

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(staging.resolve("data")).doesNotExist();
        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of());
        assertThat(Files.readString(staging.resolve("data"))).isEqualTo("survives unstage");
    }

    // --- publish a filesystem ---

    @Test
    void publishBindsTheStagedFilesystemOntoTheTarget() throws IOException {
        Path staging = stagedExt4();
        Files.writeString(staging.resolve("from-staging"), "1");
        Path target = mountPoint("pods/uid/volumes/mount");

        publish(staging, target, false);

        assertThat(Files.readString(target.resolve("from-staging"))).isEqualTo("1");
        Files.writeString(target.resolve("from-pod"), "2");
        assertThat(Files.readString(staging.resolve("from-pod"))).isEqualTo("2");
        MountEntry published = MountInfo.at(target).orElseThrow();
        MountEntry staged = MountInfo.at(staging).orElseThrow();
        assertThat(published.major()).isEqualTo(staged.major());
        assertThat(published.minor()).isEqualTo(staged.minor());
        assertThat(published.readOnly()).isFalse();
    }

    @Test
    void publishReadOnlyRefusesWrites() throws IOException {
        Path staging = stagedExt4();
        Files.writeString(staging.resolve("existing"), "readable");
        Path target = mountPoint("target");

        publish(staging, target, true);

        assertThat(MountInfo.at(target)).hasValueSatisfying(e -> assertThat(e.readOnly()).isTrue());
        assertThat(Files.readString(target.resolve("existing"))).isEqualTo("readable");
        assertThatThrownBy(() -> Files.writeString(target.resolve("new"), "x"))
                .isInstanceOf(FileSystemException.class)
                .hasMessageContaining("Read-only file system");
        assertThatThrownBy(() -> Files.writeString(target.resolve("existing"), "overwritten"))
                .isInstanceOf(FileSystemException.class);
        assertThat(Files.readString(staging.resolve("existing"))).isEqualTo("readable");
        Files.writeString(staging.resolve("still-writable"), "staging itself stays read-write");
    }

    @Test
    void publishTwiceIsIdempotent() throws IOException {
        Path staging = stagedExt4();
        Path target = mountPoint("target");

        publish(staging, target, true);
        publish(staging, target, true);

        assertThat(mountsAt(target)).hasSize(1);
    }

    @Test
    void publishWithTheOtherAccessModeConflicts() throws IOException {
        Path staging = stagedExt4();
        Path target = mountPoint("target");
        publish(staging, target, false);

        assertThatThrownBy(() -> publish(staging, target, true))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining("read-write");

        assertThat(mountsAt(target)).singleElement().satisfies(e -> assertThat(e.readOnly()).isFalse());
    }

    @Test
    void publishOntoAnotherFilesystemConflicts() throws IOException {
        Path staging = stagedExt4();
        Path target = mountPoint("target");
        Files.createDirectories(target);
        Mounts.mount("tmpfs", target, "tmpfs", 0, "size=1m");
        Files.writeString(target.resolve("someone-else"), "x");

        assertThatThrownBy(() -> publish(staging, target, false))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining(target.toString());

        assertThat(mountsAt(target)).singleElement().satisfies(e -> assertThat(e.fsType()).isEqualTo("tmpfs"));
        assertThat(target.resolve("someone-else")).exists();
    }

    @Test
    void publishOfAVolumeThatIsNotStagedIsAPreconditionFailure() throws IOException {
        Path staging = Files.createDirectory(dir.resolve("staging"));
        Path target = mountPoint("target");

        assertThatThrownBy(() -> publish(staging, target, false))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining(staging.toString());

        assertThat(target).doesNotExist();
    }

    @Test
    void publishFromAStagingPathHoldingAnotherDeviceIsRefused() throws IOException {
        Path staging = stagedExt4();
        Files.writeString(staging.resolve("not-yours"), "x");
        Path otherDevice = blankDevice(64 * MIB);
        Path target = mountPoint("target");

        assertThatThrownBy(() -> mounter.publishFilesystem(VOLUME, otherDevice, staging, target, false))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining(otherDevice.toString());

        assertThat(mountsAt(target)).isEmpty();
        assertThat(target.resolve("not-yours")).doesNotExist();
    }

    @Test
    void unpublishUnmountsRemovesTheTargetAndIsIdempotent() throws IOException {
        Path staging = stagedExt4();
        Path target = mountPoint("pods/uid/volumes/mount");
        publish(staging, target, false);
        Files.writeString(target.resolve("data"), "kept on the volume");

        mounter.unpublish(target, Optional.of(deviceOf(staging)));
        mounter.unpublish(target, Optional.of(deviceOf(staging)));

        assertThat(mountsAt(target)).isEmpty();
        assertThat(target).doesNotExist();
        assertThat(Files.readString(staging.resolve("data"))).isEqualTo("kept on the volume");
    }

    // --- publish a block device ---

    @Test
    void publishBlockBindsTheDeviceOntoAFile() throws IOException {
        Path backing = sparseFile("disk.img", 64 * MIB);
        Path device = attach(backing);
        Path target = mountPoint("pods/uid/volumeDevices/dev");

        mounter.publishBlock(VOLUME, device, target, false);

        assertThat(BlockDevices.isBlockDevice(target)).isTrue();
        assertThat(BlockDevices.size(target)).isEqualTo(64 * MIB);
        byte[] block = new byte[4096];
        new Random(7).nextBytes(block);
        Scratch.writeAt(target, 3 * MIB, block);
        assertThat(Scratch.readAt(backing, 3 * MIB, block.length)).isEqualTo(block);
    }

    @Test
    void publishBlockTwiceIsIdempotent() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path target = mountPoint("dev");

        mounter.publishBlock(VOLUME, device, target, false);
        mounter.publishBlock(VOLUME, device, target, false);

        assertThat(mountsAt(target)).hasSize(1);
    }

    @Test
    void publishBlockOfAnotherDeviceOntoAPublishedTargetConflicts() throws IOException {
        Path first = blankDevice(64 * MIB);
        Path second = blankDevice(64 * MIB);
        Path target = mountPoint("dev");
        mounter.publishBlock(VOLUME, first, target, false);

        assertThatThrownBy(() -> mounter.publishBlock(VOLUME, second, target, false))
                .isInstanceOf(StorageException.Conflict.class);

        assertThat(mountsAt(target)).hasSize(1);
        assertThat(MountInfo.at(target).orElseThrow().root()).isEqualTo("/" + first.getFileName());
    }

    @Test
    void publishBlockReadOnlyRefusesWritesAndUnpublishReleasesTheView() throws IOException {
        Path backing = sparseFile("disk.img", 64 * MIB);
        Path device = attach(backing);
        Path target = mountPoint("pods/uid/volumeDevices/ro");
        detachViewsAfterwards(device);

        mounter.publishBlock(VOLUME, device, target, true);
        mounter.publishBlock(VOLUME, device, target, true);

        assertThat(mountsAt(target)).hasSize(1);
        assertThat(BlockDevices.size(target)).isEqualTo(64 * MIB);
        byte[] block = new byte[4096];
        new Random(11).nextBytes(block);
        assertThatThrownBy(() -> Scratch.writeAt(target, 3 * MIB, block)).isInstanceOf(IOException.class);
        assertThat(Scratch.readAt(backing, 3 * MIB, block.length)).isEqualTo(new byte[block.length]);
        assertThatThrownBy(() -> mounter.publishBlock(VOLUME, device, target, false))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining("read-only");

        mounter.unpublish(target, Optional.of(device));

        assertThat(Files.exists(target)).isFalse();
        assertThat(Loop.list()).noneMatch(view -> view.backingFile().equals(device));
    }

    @Test
    void unstageReleasesTheViewAReadOnlyPublishKilledBeforeItsBindLeft() throws IOException {
        Path backing = sparseFile("disk.img", 64 * MIB);
        Path device = attach(backing);
        Path published = mountPoint("pods/a/volumeDevices/ro");
        detachViewsAfterwards(device);
        mounter.publishBlock(VOLUME, device, published, true); // a view bound at one target
        Path orphan = ReadOnlyViews.create(device); // what a second publish killed before its bind left

        mounter.releaseUnboundViews(VOLUME, Optional.of(device));

        assertThat(Loop.list()).as("the bound view stays, the unbound one goes")
                .filteredOn(view -> view.backingFile().equals(device))
                .extracting(view -> view.device().path())
                .hasSize(1)
                .doesNotContain(orphan);
        assertThat(journal.hasViews(VOLUME)).as("a view is still bound: the record stays").isTrue();

        mounter.unpublish(published, Optional.of(device));
        ReadOnlyViews.create(device); // and one more, left by a publish killed again
        mounter.releaseUnboundViews(VOLUME, Optional.of(device));

        assertThat(Loop.list()).noneMatch(view -> view.backingFile().equals(device));
        assertThat(journal.hasViews(VOLUME)).isFalse();
        Loop.detach(LoopDevice.fromPath(device).orElseThrow());
        assertThat(Loop.describe(LoopDevice.fromPath(device).orElseThrow()))
                .as("nothing holds the volume's device open any more: it detaches at once").isEmpty();
    }

    /**
     * An LV's device is named by a link under udev (/dev/mapper/vg-lv leads to /dev/dm-3), and the
     * kernel resolves the link when it binds, so the mount table and sysfs show the node, not the
     * name the driver gave. Every question asked of a block publish must see through the link.
     */
    @Test
    void aDeviceNamedByALinkIsPublishedFoundAndReleasedLikeItsNode() throws IOException {
        Path node = blankDevice(64 * MIB);
        Path device = Files.createSymbolicLink(Files.createDirectories(dir.resolve("mapper")).resolve("vg-lv"), node);
        Path target = mountPoint("pods/a/volumeDevices/rw");
        Path readOnly = mountPoint("pods/b/volumeDevices/ro");
        detachViewsAfterwards(node);

        mounter.publishBlock(VOLUME, device, target, false);
        mounter.publishBlock(VOLUME, device, target, false);
        mounter.publishBlock(VOLUME, device, readOnly, true);
        mounter.publishBlock(VOLUME, device, readOnly, true);
        ReadOnlyViews.create(device); // what a third publish killed before its bind left

        assertThat(mountsAt(target)).hasSize(1);
        assertThat(mountsAt(readOnly)).hasSize(1);
        assertThatThrownBy(() -> mounter.publishBlock(VOLUME, device, target, true))
                .isInstanceOf(StorageException.Conflict.class).hasMessageContaining("published read-write");
        assertThatThrownBy(() -> mounter.unstage(mountPoint("staging"), Optional.of(device)))
                .isInstanceOf(StorageException.Precondition.class).hasMessageContaining("published as a raw block device");
        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(node), mountPoint("staging"), ANY,
                List.of())).isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining("published as a raw block device");
        mounter.releaseUnboundViews(VOLUME, Optional.of(device));
        assertThat(Loop.list()).as("the bound view stays, the unbound one goes")
                .filteredOn(view -> view.backingFile().equals(node)).hasSize(1);

        mounter.unpublish(target, Optional.of(device));
        mounter.unpublish(readOnly, Optional.of(device));

        assertThat(Files.exists(target)).isFalse();
        assertThat(Files.exists(readOnly)).isFalse();
        assertThat(Loop.list()).noneMatch(view -> view.backingFile().equals(node));
        mounter.unstage(mountPoint("staging"), Optional.of(device));
    }

    @Test
    void publishBlockReplacesAnEmptyDirectoryLeftAtTheTarget() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path target = mountPoint("dev");
        Files.createDirectories(target);

        mounter.publishBlock(VOLUME, device, target, false);

        assertThat(BlockDevices.isBlockDevice(target)).isTrue();
    }

    @Test
    void unpublishOfABlockTargetRemovesTheFileAndIsIdempotent() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path target = mountPoint("dev");
        mounter.publishBlock(VOLUME, device, target, false);

        mounter.unpublish(target, Optional.of(device));
        mounter.unpublish(target, Optional.of(device));

        assertThat(mountsAt(target)).isEmpty();
        assertThat(target).doesNotExist();
        assertThat(BlockDevices.isBlockDevice(device)).isTrue();
    }

    // --- provably empty (issue 8) ---

    @Test
    void stageRefusesABlankLookingDeviceWrittenInTheMiddleAndLeavesTheDataAlone() throws IOException {
        Path backing = sparseFile("raw-user.img", 128 * MIB);
        byte[] data = new byte[(int) (4 * MIB)];
        new Random(8).nextBytes(data);
        Scratch.writeAt(backing, 64 * MIB, data); // no signature, zeros in the first and last MiB
        Path device = attach(backing);
        assertThat(probe(device)).as("the sampling probe alone would call it empty").isInstanceOf(ProbeResult.Empty.class);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("not provably empty")
                .hasMessageContaining("offset " + 64 * MIB);

        assertThat(mountsAt(staging)).isEmpty();
        assertThat(Scratch.readAt(backing, 64 * MIB, data.length)).isEqualTo(data);
    }

    @Test
    void stageRefusesWhatARawUserWroteThatIsStillInTheDevicesPageCache() throws IOException {
        Path backing = sparseFile("cached.img", 128 * MIB);
        Path device = attach(backing);
        byte[] data = new byte[(int) MIB];
        new Random(9).nextBytes(data);
        try (FileChannel raw = FileChannel.open(device, StandardOpenOption.WRITE)) {
            raw.write(ByteBuffer.wrap(data), 32 * MIB); // buffered, never synced
        }
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("not provably empty");

        assertThat(Scratch.readAt(backing, 32 * MIB, data.length)).isEqualTo(data);
    }

    @Test
    void stageFormatsAThickImageWhoseBlocksAreOnlyReserved() throws IOException {
        Path backing = sparseFile("thick.img", 64 * MIB);
        FileOps.fallocate(backing, 0, 64 * MIB);
        Path device = attach(backing);
        Path staging = mountPoint("staging");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of());

        assertThat(MountInfo.at(staging)).hasValueSatisfying(e -> assertThat(e.fsType()).isEqualTo("ext4"));
    }

    @Test
    void stageRefusesWhenThePoolCannotTell() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device,
                () -> new Emptiness.Unknown("its history is unknown"), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("its history is unknown");
        assertThat(probe(device)).isInstanceOf(ProbeResult.Empty.class);
    }

    // --- the same volume staged again with another capability (issue 8) ---

    @Test
    void stageAgainAsAnotherFilesystemIsAConflict() throws IOException {
        Path staging = stagedExt4();
        Path device = Path.of(MountInfo.at(staging).orElseThrow().source());

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging,
                Optional.of(FilesystemType.XFS), List.of()))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining("already staged at " + staging + " as ext4, not xfs");
        assertThat(mountsAt(staging)).singleElement().satisfies(e -> assertThat(e.fsType()).isEqualTo("ext4"));
    }

    /** Staged at a second path with the same read-only state: the kernel shares the filesystem. */
    @Test
    void stageAtASecondPathMountsTheSameFilesystemThere() throws IOException {
        Path staging = stagedExt4();
        Path device = Path.of(MountInfo.at(staging).orElseThrow().source());
        Files.writeString(staging.resolve("data"), "written at the first path");
        Path second = mountPoint("second");

        mounter.stageFilesystem(VOLUME, device, provenBy(device), second, ANY, List.of());

        assertThat(Files.readString(second.resolve("data"))).isEqualTo("written at the first path");
    }

    /**
     * The kernel will not mount a filesystem read-only beside a read-write mount of it, or the
     * other way round (EBUSY: the read-only state is the superblock's, shared by both). Found by
     * CsiFuzzTest (seed 13, 20,000 requests), which got INTERNAL for it.
     */
    @ParameterizedTest(name = "first {0}, then {1}")
    @CsvSource({"'', ro", "ro, ''"})
    void stageAtASecondPathWithTheOtherReadOnlyStateIsAConflictAndMountsNothing(String first, String then)
            throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");
        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, options(first));
        Path second = mountPoint("second");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), second, ANY, options(then)))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessage("volume " + VOLUME + " is staged " + (first.isEmpty() ? "read-write" : "read-only") + " at "
                        + staging + "; the kernel mounts a filesystem either read-only or read-write, so it cannot be"
                        + " staged " + (then.isEmpty() ? "read-write" : "read-only") + " at " + second + " too");

        assertThat(mountsAt(second)).isEmpty();
        assertThat(mountsAt(staging)).singleElement().satisfies(e -> assertThat(e.source()).isEqualTo(device.toString()));
    }

    /**
     * The same refusal when the read-only mount is one this driver cannot see, in another mount
     * namespace (another container's): the kernel's EBUSY is the node's state, not a failure of
     * the driver's.
     */
    @Test
    @RequiresTools({"unshare", "mount"})
    void stageOfADeviceMountedReadOnlyInAnotherNamespaceIsAPreconditionAndMountsNothing() throws Exception {
        Path staging = stagedExt4();
        Path device = Path.of(MountInfo.at(staging).orElseThrow().source());
        Mounts.unmount(staging);
        Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
        Process other = new ProcessBuilder("unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount -o ro " + device + " " + elsewhere + " && echo mounted && exec sleep 120")
                .redirectErrorStream(true).start();
        cleanup.add(() -> {
            other.destroyForcibly();
            other.onExit().join();
        });
        assertThat(other.inputReader().readLine()).isEqualTo("mounted");
        assertThat(mountsAt(elsewhere)).as("not in this namespace").isEmpty();

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessage("mounting " + device + " at " + staging + ": mount(" + device + " -> " + staging
                        + ", ext4): EBUSY (Device or resource busy); the device is held elsewhere on this node");

        assertThat(mountsAt(staging)).isEmpty();
    }

    private static List<String> options(String flag) {
        return flag.isEmpty() ? List.of() : List.of(flag);
    }

    @Test
    void stageAsBlockWhereTheVolumeIsStagedAsAFilesystemIsAConflict() throws IOException {
        Path staging = stagedExt4();
        Path device = Path.of(MountInfo.at(staging).orElseThrow().source());

        assertThatThrownBy(() -> mounter.stageBlock(VOLUME, device, staging))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining("already staged there as a ext4 filesystem");
    }

    @Test
    void stageAsAFilesystemWhileTheRawDeviceIsPublishedIsAConflict() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path target = mountPoint("pod/block");
        mounter.publishBlock(VOLUME, device, target, false);
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining("published as a raw block device at " + target);
        assertThat(mountsAt(staging)).isEmpty();
        assertThat(probe(device)).isInstanceOf(ProbeResult.Empty.class);
    }

    @Test
    void stageAsAFilesystemWhileTheRawDeviceIsPublishedReadOnlyIsAConflict() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path target = mountPoint("pod/block");
        detachViewsAfterwards(device);
        mounter.publishBlock(VOLUME, device, target, true); // binds a read-only loop device over it
        Path staging = mountPoint("staging");

        assertThatThrownBy(() -> mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of()))
                .isInstanceOf(StorageException.Conflict.class)
                .hasMessageContaining("published as a raw block device at " + target);
        assertThat(mountsAt(staging)).isEmpty();
        assertThat(probe(device)).isInstanceOf(ProbeResult.Empty.class);
    }

    // --- a mount busy for a moment ---

    @Test
    void unpublishWaitsForAMountBusyOnlyAMoment() throws Exception {
        Path staging = stagedExt4();
        Path target = mountPoint("pods/uid/volumes/busy");
        publish(staging, target, false);
        FileChannel open = FileChannel.open(target.resolve("held"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        // Closed 60 ms after the unpublish begins: a process exiting, a fork's copy of the descriptor.
        CompletableFuture<Void> closed = CompletableFuture.runAsync(() -> {
            try {
                Thread.sleep(60);
                open.close();
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });

        mounter.unpublish(target, Optional.of(deviceOf(staging)));

        closed.get(10, TimeUnit.SECONDS);
        assertThat(mountsAt(target)).isEmpty();
        assertThat(Files.exists(target)).isFalse();
    }

    @Test
    void unpublishOfAMountKeptBusyIsRefusedAndLeftMounted() throws Exception {
        Path staging = stagedExt4();
        Path target = mountPoint("pods/uid/volumes/busy");
        publish(staging, target, false);
        try (FileChannel open = FileChannel.open(target.resolve("held"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            assertThatThrownBy(() -> mounter.unpublish(target, Optional.of(deviceOf(staging))))
                    .isInstanceOf(StorageException.Precondition.class)
                    .hasMessageContaining("is busy");
            assertThat(mountsAt(target)).hasSize(1);
        }
        mounter.unpublish(target, Optional.of(deviceOf(staging)));
        assertThat(mountsAt(target)).isEmpty();
    }

    // --- a filesystem left frozen (issue 8) ---

    @Test
    void unstageThawsAFilesystemLeftFrozenSoItsDeviceIsReleased() throws Exception {
        Path staging = stagedExt4();
        Path device = Path.of(MountInfo.at(staging).orElseThrow().source());
        // Frozen by a process that is gone now: a driver killed inside a snapshot.
        ScratchFilesystem.run(List.of("fsfreeze", "--freeze", staging.toString()));

        mounter.unstage(staging, Optional.of(device));

        assertThat(mountsAt(staging)).isEmpty();
        Path again = mountPoint("again");
        Files.createDirectories(again);
        Mounts.mount(device.toString(), again, "ext4", 0, "");
        CompletableFuture<Path> write = CompletableFuture.supplyAsync(() -> {
            try {
                return Files.writeString(again.resolve("after"), "not frozen");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        assertThat(write.get(10, TimeUnit.SECONDS)).hasContent("not frozen");
    }

    // --- only what hearth mounted (issue 8: hostile paths) ---

    @Test
    void unstageRefusesAMountThatIsNotTheVolumesAndLeavesItMounted() throws IOException {
        Path staging = stagedExt4();
        Path other = blankDevice(64 * MIB);

        assertThatThrownBy(() -> mounter.unstage(staging, Optional.of(other)))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("not this volume's");
        assertThatThrownBy(() -> mounter.unstage(staging, Optional.empty()))
                .isInstanceOf(StorageException.Precondition.class);

        assertThat(mountsAt(staging)).hasSize(1);
    }

    @Test
    void unpublishRefusesAMountThatIsNotTheVolumesAndLeavesItMounted() throws IOException {
        Path staging = stagedExt4();
        Path target = mountPoint("pods/uid/volumes/mount");
        publish(staging, target, false);
        Path other = blankDevice(64 * MIB);

        assertThatThrownBy(() -> mounter.unpublish(target, Optional.of(other)))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("not this volume's");

        assertThat(mountsAt(target)).hasSize(1);
    }

    @Test
    void unpublishNeverRemovesAFileWithDataOrADeviceNode() throws IOException {
        Path file = Files.writeString(dir.resolve("passwd"), "root:x:0:0::/root:/bin/sh\n");
        Path node = blankDevice(64 * MIB); // a device node: /dev/null or a disk for a hostile request

        assertThatThrownBy(() -> mounter.unpublish(file, Optional.empty()))
                .isInstanceOf(StorageException.Precondition.class).hasMessageContaining("never data");
        assertThatThrownBy(() -> mounter.unpublish(node, Optional.empty()))
                .isInstanceOf(StorageException.Precondition.class);

        assertThat(file).hasContent("root:x:0:0::/root:/bin/sh\n");
        assertThat(BlockDevices.isBlockDevice(node)).isTrue();
    }

    /**
     * A target inside a read-only mount (a hostile or mistaken path under a volume published
     * read-only): the kernel refuses to remove its empty directory with EROFS, which is the node's
     * state, not a failure of the driver; the directory stays.
     */
    @Test
    void unpublishOfATargetOnAReadOnlyMountIsRefusedAsAPrecondition() throws IOException {
        Path source = Files.createDirectories(dir.resolve("ro-source/sub"));
        Path view = Files.createDirectories(mountPoint("ro-view"));
        Mounts.bind(source.getParent(), view, true);
        Path target = view.resolve("sub");

        assertThatThrownBy(() -> mounter.unpublish(target, Optional.empty()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("read-only mount").hasMessageContaining("EROFS");

        assertThat(target).isDirectory();
    }

    /**
     * An empty directory that is a mount point through another path (a bind of its parent made
     * without the mounts beneath): nothing is mounted on it at the target's path, yet rmdir answers
     * EBUSY. Refused as a precondition, and the mount on the other path stays.
     */
    @Test
    void unpublishOfADirectoryMountedThroughAnotherPathIsRefusedAsAPrecondition() throws IOException {
        Path under = Files.createDirectories(mountPoint("busy-source/sub"));
        Mounts.mount("tmpfs", under, "tmpfs", 0, "size=1m");
        Path view = Files.createDirectories(mountPoint("busy-view"));
        Mounts.bind(under.getParent(), view, false); // not recursive: view/sub is the bare directory
        Path target = view.resolve("sub");
        assertThat(mountsAt(target)).isEmpty();

        assertThatThrownBy(() -> mounter.unpublish(target, Optional.empty()))
                .isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("mount point through another path").hasMessageContaining("EBUSY");

        assertThat(target).isDirectory();
        assertThat(mountsAt(under)).singleElement().satisfies(e -> assertThat(e.fsType()).isEqualTo("tmpfs"));
    }

    /** A block volume's target file cannot be made on a read-only mount: a precondition, nothing bound. */
    @Test
    void publishBlockOnAReadOnlyMountIsRefusedAsAPrecondition() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path source = Files.createDirectories(dir.resolve("block-ro-source"));
        Path view = Files.createDirectories(mountPoint("block-ro-view"));
        Mounts.bind(source, view, true);
        Path target = view.resolve("volume-device");

        assertThatThrownBy(() -> mounter.publishBlock(VOLUME, device, target, false))
                .isInstanceOf(StorageException.Precondition.class).hasMessageContaining("read-only mount");

        assertThat(target).doesNotExist();
        assertThat(mountsAt(target)).isEmpty();
    }

    // --- helpers ---

    private static Path deviceOf(Path staging) throws IOException {
        return Path.of(MountInfo.at(staging).orElseThrow().source());
    }

    /** Publishes what the staging path holds, naming its device as the node service would. */
    private void publish(Path staging, Path target, boolean readOnly) throws IOException {
        Path device = MountInfo.at(staging).map(e -> Path.of(e.source())).orElse(Path.of("/dev/loop-none"));
        mounter.publishFilesystem(VOLUME, device, staging, target, readOnly);
    }

    private Path stagedExt4() throws IOException {
        Path device = blankDevice(64 * MIB);
        Path staging = mountPoint("staging");
        mounter.stageFilesystem(VOLUME, device, provenBy(device), staging, ANY, List.of());
        return staging;
    }

    /** The read-only views over the device that a test leaves are detached after it, however it ends. */
    private void detachViewsAfterwards(Path device) {
        cleanup.add(() -> {
            for (LoopAttachment view : Loop.list()) {
                if (view.backingFile().equals(device)) {
                    Loop.detach(view.device());
                }
            }
        });
    }

    /** A path under the test directory whose mounts are undone after the test, however it ends. */
    private Path mountPoint(String relative) {
        Path path = dir.resolve(relative);
        cleanup.add(() -> {
            while (MountInfo.at(path).isPresent()) {
                Mounts.unmount(path);
            }
        });
        return path;
    }

    private Path blankDevice(long size) throws IOException {
        return attach(sparseFile("disk" + blankDevices++ + ".img", size));
    }

    private Path attach(Path backing) throws IOException {
        return Scratch.attach(cleanup, backing, false, true).path();
    }

    private Path sparseFile(String name, long size) throws IOException {
        return Scratch.sparseFile(dir.resolve(name), size);
    }

    private static ProbeResult probe(Path device) throws IOException {
        return SignatureProbe.probe(device, BlockDevices.size(device));
    }

    private static List<MountEntry> mountsAt(Path path) throws IOException {
        Path wanted = path.toAbsolutePath().normalize();
        return MountInfo.read().stream().filter(e -> e.mountPoint().equals(wanted)).toList();
    }
}
