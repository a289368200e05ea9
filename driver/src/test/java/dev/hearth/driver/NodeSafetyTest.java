package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static dev.hearth.driver.TestDriver.withMountGroup;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.linux.Loop;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import io.grpc.Status;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Issue 8's node-side data safety, seen through the socket as the kubelet sees it. */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "mkfs.xfs", "fsfreeze"})
class NodeSafetyTest extends DriverFixture {

    @Test
    void aRawBlockVolumeWrittenInTheMiddleIsNeverFormattedWhenStagedAsAFilesystemLater() throws IOException {
        String id = driver.create("raw-then-fs", 128 * MIB, block()).getVolumeId();
        Kubelet.Published raw = kubelet.stageAndPublish(id, block(), "db-0");
        byte[] data = TestData.random((int) (4 * MIB), 64);
        try (FileChannel device = FileChannel.open(raw.target(), StandardOpenOption.WRITE)) {
            device.write(ByteBuffer.wrap(data), 64 * MIB); // no signature; the first and last MiB stay zeros
            device.force(true);
        }
        kubelet.takeDown(raw);

        Path staging = kubelet.stagingFor(id + "-fs");
        assertFails(() -> kubelet.stage(id, staging, mount("ext4")), Status.Code.FAILED_PRECONDITION,
                "not provably empty", "offset " + 64 * MIB);

        assertThat(MountInfo.at(staging)).isEmpty();
        Kubelet.Published again = kubelet.stageAndPublish(id, block(), "db-1");
        try (FileChannel device = FileChannel.open(again.target(), StandardOpenOption.READ)) {
            ByteBuffer read = ByteBuffer.allocate(data.length);
            device.read(read, 64 * MIB);
            assertThat(read.array()).as("the raw user's data is intact").isEqualTo(data);
        }
        kubelet.takeDown(again);
    }

    /**
     * A stage killed inside mkfs leaves a format record, the licence for its retry to format again.
     * If the claim is given up instead (DeleteVolume) and made again under the same name, the new
     * volume has the same ID: the old record must not license a format over the new one's data.
     */
    @Test
    void aDeletedVolumesFormatRecordDoesNotLicenseAFormatOverItsSuccessor() throws IOException {
        String id = driver.create("reborn", 128 * MIB, block()).getVolumeId();
        Path records = Files.createDirectories(driver.dir().resolve("state/formatting"));
        Files.writeString(records.resolve(id + ".formatting"), "/dev/loop7\n"); // a stage killed in mkfs
        Files.writeString(records.resolve(id + ".growing"), "/dev/loop7\n"); // one killed in resize2fs

        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());

        assertThat(driver.create("reborn", 128 * MIB, block()).getVolumeId()).isEqualTo(id);
        Kubelet.Published raw = kubelet.stageAndPublish(id, block(), "db-0");
        byte[] data = TestData.random((int) MIB, 66);
        try (FileChannel device = FileChannel.open(raw.target(), StandardOpenOption.WRITE)) {
            device.write(ByteBuffer.wrap(data), 64 * MIB);
            device.force(true);
        }
        kubelet.takeDown(raw);
        assertFails(() -> kubelet.stage(id, kubelet.stagingFor(id + "-fs"), mount("ext4")),
                Status.Code.FAILED_PRECONDITION, "not provably empty");
        try (var left = Files.list(records)) {
            assertThat(left.toList()).as("the deleted volume's records").isEmpty();
        }
    }

    /**
     * The same when the DeleteVolume was killed after the volume went and before it dropped the
     * records, and never retried (a provisioner retries; a client on the socket may not): the next
     * start drops them. FuzzCrashIT met such a record, left for a volume no call could name.
     */
    @Test
    void aStartDropsTheRecordsOfAVolumeWhoseDeleteWasCutShort() throws IOException {
        String id = driver.create("cut-short", 128 * MIB, block()).getVolumeId();
        String kept = driver.create("kept", 128 * MIB, block()).getVolumeId();
        Path records = Files.createDirectories(driver.dir().resolve("state/formatting"));
        for (String volume : List.of(id, kept)) {
            Files.writeString(records.resolve(volume + ".formatting"), "/dev/loop7\n"); // a stage killed in mkfs
        }
        Files.writeString(records.resolve(id + ".growing"), "/dev/loop7\n");
        // What the delete had done when it was killed: the volume's files gone, its records not.
        try (var files = Files.list(driver.poolDir())) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith(id)).toList()) {
                Files.delete(file);
            }
        }

        driver.restart();

        try (var left = Files.list(records)) {
            assertThat(left.map(p -> p.getFileName().toString()).toList()).as("the records after the start")
                    .containsExactly(kept + ".formatting");
        }
    }

    /**
     * The same, the raw user never syncing: what the device's last close wrote to the image is what
     * the proof sees when a stage attaches the volume again. (Skipping the stage's flush of a device
     * it attached itself was tried for this: no faster, as mkfs's own flush then commits the pool
     * filesystem's journal instead.)
     */
    @Test
    void aRawWriteNeverSyncedIsStillSeenWhenTheVolumeIsAttachedAgainForAFilesystem() throws IOException {
        String id = driver.create("raw-unsynced", 128 * MIB, block()).getVolumeId();
        Kubelet.Published raw = kubelet.stageAndPublish(id, block(), "db-0");
        byte[] data = TestData.random((int) MIB, 65);
        try (FileChannel device = FileChannel.open(raw.target(), StandardOpenOption.WRITE)) {
            device.write(ByteBuffer.wrap(data), 96 * MIB); // buffered, never synced
        }
        kubelet.takeDown(raw);

        Path staging = kubelet.stagingFor(id + "-fs");
        assertFails(() -> kubelet.stage(id, staging, mount("ext4")), Status.Code.FAILED_PRECONDITION,
                "not provably empty", "offset " + 96 * MIB);

        assertThat(MountInfo.at(staging)).isEmpty();
    }

    @Test
    void aNewThickVolumeIsProvablyEmptyAndFormatted() throws IOException {
        String id = driver.create("fresh", 64 * MIB, mount("ext4")).getVolumeId();

        Kubelet.Published fs = kubelet.stageAndPublish(id, mount("ext4"), "web-0");

        assertThat(MountInfo.at(fs.staging())).hasValueSatisfying(m -> assertThat(m.fsType()).isEqualTo("ext4"));
        kubelet.takeDown(fs);
    }

    @Test
    void stagingAgainAtTheSamePathAsAnotherFilesystemIsAlreadyExists() throws IOException {
        String id = driver.create("staged-ext4", 320 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, mount("ext4"));

        assertFails(() -> kubelet.stage(id, staging, mount("xfs")), Status.Code.ALREADY_EXISTS,
                "already staged", "as ext4, not xfs");
        assertFails(() -> kubelet.stage(id, staging, block()), Status.Code.ALREADY_EXISTS,
                "already staged there as a ext4 filesystem");

        kubelet.stage(id, staging, mount("ext4")); // the same request again is still fine
        kubelet.unstage(id, staging);
    }

    @Test
    void stagingAsAFilesystemWhileTheVolumeIsPublishedAsRawBlockIsAlreadyExists() throws IOException {
        String id = driver.create("in-raw-use", 64 * MIB, block()).getVolumeId();
        Kubelet.Published raw = kubelet.stageAndPublish(id, block(), "db-0");

        Path staging = kubelet.stagingFor(id + "-fs");
        assertFails(() -> kubelet.stage(id, staging, mount("ext4")), Status.Code.ALREADY_EXISTS,
                "published as a raw block device at " + raw.target());

        assertThat(MountInfo.at(staging)).isEmpty();
        kubelet.takeDown(raw);
    }

    @Test
    void eachPublishAppliesItsPodsMountGroupAndTheLastOneOwnsTheRoot() throws IOException {
        String id = driver.create("shared", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, withMountGroup(mount("ext4"), "1000"));
        Path first = kubelet.targetFor("pod-a");
        kubelet.publish(id, staging, first, withMountGroup(mount("ext4"), "1000"));
        assertThat(Files.getAttribute(first, "unix:gid")).isEqualTo(1000);

        Path second = kubelet.targetFor("pod-b");
        kubelet.publish(id, staging, second, withMountGroup(mount("ext4"), "2000"));

        assertThat(Files.getAttribute(second, "unix:gid")).isEqualTo(2000);
        assertThat(Files.getAttribute(first, "unix:gid")).as("one root, one group").isEqualTo(2000);
        assertThat((int) Files.getAttribute(second, "unix:mode") & 02070).isEqualTo(02070);
        kubelet.unpublish(id, first);
        kubelet.unpublish(id, second);
        kubelet.unstage(id, staging);
    }

    @Test
    void aMountGroupThatIsNoGroupIdIsInvalidOnPublishAsOnStage() throws IOException {
        String id = driver.create("bad-group", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, mount("ext4"));
        Path target = kubelet.targetFor("pod-a");

        assertFails(() -> kubelet.publish(id, staging, target, withMountGroup(mount("ext4"), "wheel")),
                Status.Code.INVALID_ARGUMENT, "volume_mount_group");
        assertFails(() -> kubelet.stage(id, kubelet.stagingFor(id + "-2"), withMountGroup(mount("ext4"), "-5")),
                Status.Code.INVALID_ARGUMENT, "volume_mount_group");

        assertThat(MountInfo.at(target)).isEmpty();
        kubelet.unstage(id, staging);
    }

    @Test
    void aVolumeLeftFrozenIsThawedByUnstageAndCanBeDeleted() throws IOException {
        String id = driver.create("left-frozen", 64 * MIB, mount("ext4")).getVolumeId();
        Kubelet.Published fs = kubelet.stageAndPublish(id, mount("ext4"), "web-0");
        // As a driver killed inside a snapshot leaves it: frozen by a process that is gone.
        ScratchFilesystem.run(List.of("fsfreeze", "--freeze", fs.staging().toString()));
        kubelet.takeDown(fs); // the pod is gone; before this fix the frozen filesystem kept its loop device

        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
        Path pool = driver.poolDir().toRealPath();
        assertThat(Loop.list()).noneMatch(a -> a.backingFile().startsWith(pool));
    }

    @Test
    void anInvalidPublishLeavesNoMountOrTarget() throws IOException {
        String id = driver.create("publish-check", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, mount("ext4"));
        Path target = kubelet.targetFor("pod-x");
        VolumeCapability bad = withMountGroup(mount("ext4"), "not-a-gid");

        assertFails(() -> driver.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(bad).build()), Status.Code.INVALID_ARGUMENT);

        assertThat(Files.exists(target)).isFalse();
        kubelet.unstage(id, staging);
    }

    /**
     * A path in the driver's own directories (its state, a pool's directory) is refused in every
     * call that mounts or removes, before anything is done: a volume staged over the empty format
     * journal would hide its records, a publish into a pool's directory would put a directory among
     * its images, and an unpublish there would remove an empty directory of the driver's.
     */
    @Test
    void pathsInTheDriversOwnDirectoriesAreRefusedAndLeftAsTheyWere() throws IOException {
        String id = driver.create("own-dirs", 64 * MIB, mount("ext4")).getVolumeId();
        Path journal = driver.dir().resolve("state/formatting");
        assertThat(journal).isEmptyDirectory();
        Path inPool = driver.poolDir().resolve("target");
        Path staging = kubelet.stagingFor(id);

        assertFails(() -> kubelet.stage(id, journal, mount("ext4")), Status.Code.INVALID_ARGUMENT,
                "staging_target_path '" + journal + "' lies in '" + driver.dir().resolve("state").toRealPath() + "'",
                "a directory of hearth's own");
        kubelet.stage(id, staging, mount("ext4"));
        assertFails(() -> driver.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(inPool.toString())
                .setVolumeCapability(mount("ext4")).build()), Status.Code.INVALID_ARGUMENT, "lies in '"
                + driver.poolDir().toRealPath() + "'");
        assertFails(() -> kubelet.unpublish(id, journal), Status.Code.INVALID_ARGUMENT, "hearth's own");
        assertFails(() -> kubelet.unstage(id, journal), Status.Code.INVALID_ARGUMENT, "hearth's own");

        assertThat(journal).isEmptyDirectory();
        assertThat(MountInfo.at(journal)).isEmpty();
        assertThat(inPool).doesNotExist();
        kubelet.unstage(id, staging);
    }

    @Test
    void unpublishAndUnstageNeverTouchWhatHearthDidNotMountOrMake() throws IOException {
        String id = driver.create("hostile", 64 * MIB, mount("ext4")).getVolumeId();
        Path precious = Files.writeString(Files.createDirectories(dir.resolve("etc")).resolve("passwd"), "root:x:0:0\n");
        Path hostMount = Files.createDirectories(dir.resolve("boot"));
        ScratchFilesystem.run(List.of("mount", "-t", "tmpfs", "tmpfs", hostMount.toString()));
        driver.cleanup().add(() -> ScratchFilesystem.unmountIfMounted(hostMount));

        assertFails(() -> kubelet.unpublish(id, precious), Status.Code.FAILED_PRECONDITION, "never data");
        assertFails(() -> kubelet.unpublish(id, hostMount), Status.Code.FAILED_PRECONDITION, "not this volume's");
        assertFails(() -> kubelet.unstage(id, hostMount), Status.Code.FAILED_PRECONDITION, "not this volume's");
        assertFails(() -> kubelet.unstage("not-a-hearth-id", hostMount), Status.Code.FAILED_PRECONDITION);

        assertThat(precious).hasContent("root:x:0:0\n");
        assertThat(MountInfo.at(hostMount)).hasValueSatisfying(m -> assertThat(m.fsType()).isEqualTo("tmpfs"));
    }

    /**
     * An unstage sent while the raw block volume is still published (the kubelet never does so; a
     * hostile or broken client may, and FuzzCrashIT's did). A bind of a device node does not hold the
     * device open, so detaching the loop device would leave the pod's device file naming a loop
     * device free for the next volume staged on the node: another tenant's data. It is refused, and
     * the pod's device keeps its own data.
     */
    @Test
    void anUnstageOfABlockVolumeStillPublishedIsRefusedAndTheNextVolumeIsNotThePodsDevice() throws IOException {
        String id = driver.create("raw-a", 128 * MIB, block()).getVolumeId();
        Kubelet.Published raw = kubelet.stageAndPublish(id, block(), "db-0");
        byte[] mine = TestData.random((int) MIB, 67);
        try (FileChannel device = FileChannel.open(raw.target(), StandardOpenOption.WRITE)) {
            device.write(ByteBuffer.wrap(mine), 0);
            device.force(true);
        }

        assertFails(() -> kubelet.unstage(id, raw.staging()), Status.Code.FAILED_PRECONDITION,
                raw.target().toString());

        String other = driver.create("raw-b", 128 * MIB, block()).getVolumeId();
        Kubelet.Published theirs = kubelet.stageAndPublish(other, block(), "db-1");
        try (FileChannel device = FileChannel.open(raw.target(), StandardOpenOption.READ)) {
            ByteBuffer read = ByteBuffer.allocate(mine.length);
            device.read(read, 0);
            assertThat(read.array()).as("the pod's device is still its own volume").isEqualTo(mine);
        }
        kubelet.takeDown(theirs);
        kubelet.takeDown(raw);
        assertThat(TestDriver.mountsUnder(driver.dir().toRealPath())).isEmpty();
    }

    /** A block volume made and staged, the only one on the node: its ID, staging path and loop device. */
    private record StagedBlock(String id, Path staging, Path device) {}

    private StagedBlock stagedBlock(String name) throws IOException {
        String id = driver.create(name, 128 * MIB, block()).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, block());
        return new StagedBlock(id, staging, driver.poolLoopDevices().getFirst().device().path());
    }

    /**
     * Someone else has the volume's loop device open when the kubelet unstages it (a backup reading
     * the disk, a probe, a tool a kill left running), so its detach waits for that last close; then
     * the pod comes back to this node and the volume is staged and published again before that close.
     * The device must stay the volume's: if the last close let it go while the pod's bind still named
     * it, the next volume staged on the node would get that device, and the pod another tenant's data.
     */
    @Test
    void aDeviceStillOpenAfterItsUnstageStaysTheVolumesWhenItIsStagedAgain() throws IOException {
        StagedBlock raw = stagedBlock("raw-a");
        byte[] mine = TestData.random((int) MIB, 68);
        try (FileChannel channel = FileChannel.open(raw.device(), StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(mine), 0);
            channel.force(true);
        }
        Path target = kubelet.targetFor("db-0");
        try (FileChannel holder = FileChannel.open(raw.device(), StandardOpenOption.READ)) {
            kubelet.unstage(raw.id(), raw.staging());
            kubelet.stage(raw.id(), raw.staging(), block());
            kubelet.publish(raw.id(), raw.staging(), target, block());
        }

        String other = driver.create("raw-b", 128 * MIB, block()).getVolumeId();
        Kubelet.Published theirs = kubelet.stageAndPublish(other, block(), "db-1");
        try (FileChannel channel = FileChannel.open(target, StandardOpenOption.READ)) {
            ByteBuffer read = ByteBuffer.allocate(mine.length);
            channel.read(read, 0);
            assertThat(TestData.sha256(read.array())).as("the pod's device is still its own volume")
                    .isEqualTo(TestData.sha256(mine));
        }
        kubelet.takeDown(theirs);
        kubelet.takeDown(new Kubelet.Published(raw.id(), raw.staging(), target));
        assertThat(TestDriver.mountsUnder(driver.dir().toRealPath())).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    /**
     * The same without the second stage: a publish of a volume whose device only waits for that last
     * close to go is refused, as not staged, and binds nothing that the close would leave naming a
     * free device.
     */
    @Test
    void aPublishOfABlockVolumeWhoseDeviceIsBeingDetachedIsRefused() throws IOException {
        StagedBlock raw = stagedBlock("raw-a");
        Path target = kubelet.targetFor("db-0");
        try (FileChannel holder = FileChannel.open(raw.device(), StandardOpenOption.READ)) {
            kubelet.unstage(raw.id(), raw.staging());

            assertFails(() -> kubelet.publish(raw.id(), raw.staging(), target, block()),
                    Status.Code.FAILED_PRECONDITION, "is being detached");
            assertFails(() -> kubelet.publish(raw.id(), raw.staging(), target, block(), true),
                    Status.Code.FAILED_PRECONDITION, "is being detached");
        }

        assertThat(target).doesNotExist();
        assertThat(TestDriver.mountsUnder(driver.dir().toRealPath())).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    /**
     * The holder need not be another process: a client that unstages a filesystem volume before it
     * unpublishes it leaves the pod's bind holding the device, so the unstage's detach waits for the
     * unpublish. A raw block publish of that volume meanwhile would be freed under it by that very
     * unpublish, and is refused. (The order of FuzzCrashIT's failure in CI, whose end state this is.)
     */
    @Test
    void aBlockPublishBetweenAnEarlyUnstageAndTheUnpublishThatFreesTheDeviceIsRefused() throws IOException {
        String id = driver.create("early-unstage", 64 * MIB, mount("ext4")).getVolumeId();
        Kubelet.Published fs = kubelet.stageAndPublish(id, mount("ext4"), "web-0");
        kubelet.unstage(id, fs.staging());
        Path target = kubelet.targetFor("db-0");

        assertFails(() -> kubelet.publish(id, fs.staging(), target, block()), Status.Code.FAILED_PRECONDITION,
                "is being detached");
        assertFails(() -> driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()),
                Status.Code.FAILED_PRECONDITION, "it was unstaged, but something still has it open");

        kubelet.unpublish(id, fs.target());
        assertThat(target).doesNotExist();
        assertThat(TestDriver.mountsUnder(driver.dir().toRealPath())).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }
}
