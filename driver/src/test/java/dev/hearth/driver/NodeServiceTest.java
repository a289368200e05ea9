package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MAX_VOLUMES;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.NODE;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static dev.hearth.driver.TestDriver.withMode;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodeGetCapabilitiesRequest;
import dev.hearth.csi.v1.NodeGetInfoRequest;
import dev.hearth.csi.v1.NodeGetInfoResponse;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeServiceCapability;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.Topology;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.VolumeId;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Node service of a running driver, through its unix socket: real loop devices, mkfs and
 * mounts under a temporary directory, as the kubelet would drive them.
 */
class NodeServiceTest extends DriverFixture {

    private void delete(String id) {
        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    }

    private static Optional<MountEntry> mountAt(Path path) throws IOException {
        return MountInfo.read().stream().filter(m -> m.mountPoint().equals(path)).reduce((a, b) -> b);
    }

    private static long mountCount(Path path) throws IOException {
        return MountInfo.read().stream().filter(m -> m.mountPoint().equals(path)).count();
    }

    private static void writeSynced(Path file, String text) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
            channel.force(true);
        }
    }

    private static boolean isAllZeros(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        return Arrays.equals(bytes, new byte[bytes.length]);
    }

    private static byte[] read(Path file, long offset, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            while (buffer.hasRemaining() && channel.read(buffer, offset + buffer.position()) > 0) {
                // until full or end of file
            }
        }
        return buffer.array();
    }

    // Filesystem volumes

    /** The whole life of a filesystem volume; returns nothing, asserts every step a user would see. */
    private void filesystemLifecycle(String requestedFs, String expectedFs, long size) throws IOException {
        String id = driver.create("pvc-" + expectedFs, size, mount(requestedFs)).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");

        kubelet.stage(id, staging, mount(requestedFs));
        MountEntry staged = mountAt(staging).orElseThrow(() -> new AssertionError("nothing mounted at " + staging));
        assertThat(staged.fsType()).isEqualTo(expectedFs);
        assertThat(driver.poolLoopDevices()).singleElement().satisfies(loop -> {
            assertThat(loop.backingFile()).isEqualTo(driver.image(id).toRealPath());
            assertThat(staged.source()).isEqualTo(loop.device().path().toString());
        });

        kubelet.publish(id, staging, target, mount(requestedFs), false);
        MountEntry published = mountAt(target).orElseThrow(() -> new AssertionError("nothing mounted at " + target));
        assertThat(published.readOnly()).isFalse();
        assertThat(published.fsType()).isEqualTo(expectedFs);

        writeSynced(target.resolve("hello.txt"), "hello from " + expectedFs);
        assertThat(Files.readString(target.resolve("hello.txt"))).isEqualTo("hello from " + expectedFs);
        assertThat(Files.readString(staging.resolve("hello.txt"))).isEqualTo("hello from " + expectedFs);

        kubelet.unpublish(id, target);
        assertThat(target).doesNotExist();
        assertThat(mountAt(staging)).isPresent();

        kubelet.unstage(id, staging);
        assertThat(mountAt(staging)).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();

        delete(id);
        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void filesystemVolumeLivesAndDiesAsExt4WhenNoFsTypeIsGiven() throws IOException {
        filesystemLifecycle("", "ext4", 64 * MIB);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.xfs")
    void filesystemVolumeLivesAndDiesAsXfs() throws IOException {
        filesystemLifecycle("xfs", "xfs", 512 * MIB);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.btrfs")
    void filesystemVolumeLivesAndDiesAsBtrfs() throws IOException {
        filesystemLifecycle("btrfs", "btrfs", 256 * MIB);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void readOnlyPublishRefusesWrites(boolean byReadonlyFlag) throws IOException {
        VolumeCapability capability = byReadonlyFlag ? mount("ext4") : withMode(mount("ext4"), Mode.SINGLE_NODE_READER_ONLY);
        String id = driver.create("pvc-ro", 64 * MIB, capability).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-ro");
        kubelet.stage(id, staging, capability);
        writeSynced(staging.resolve("seed.txt"), "written before publish");

        kubelet.publish(id, staging, target, capability, byReadonlyFlag);

        assertThat(mountAt(target)).get().extracting(MountEntry::readOnly).isEqualTo(true);
        assertThat(Files.readString(target.resolve("seed.txt"))).isEqualTo("written before publish");
        assertThatThrownBy(() -> writeSynced(target.resolve("new.txt"), "must not land"))
                .isInstanceOf(FileSystemException.class)
                .hasMessageContaining("Read-only file system");
        assertThat(staging.resolve("new.txt")).doesNotExist();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void oneVolumeCanBePublishedToTwoPodsOfThisNode() throws IOException {
        String id = driver.create("pvc-shared", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path first = kubelet.targetFor("pod-1");
        Path second = kubelet.targetFor("pod-2");
        kubelet.stage(id, staging, mount("ext4"));

        kubelet.publish(id, staging, first, mount("ext4"), false);
        kubelet.publish(id, staging, second, mount("ext4"), false);
        writeSynced(first.resolve("from-pod-1"), "one");

        assertThat(Files.readString(second.resolve("from-pod-1"))).isEqualTo("one");
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void stageAndPublishAreIdempotent() throws IOException {
        String id = driver.create("pvc-again", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");

        kubelet.stage(id, staging, mount("ext4"));
        kubelet.stage(id, staging, mount("ext4"));
        kubelet.publish(id, staging, target, mount("ext4"), false);
        kubelet.publish(id, staging, target, mount("ext4"), false);

        assertThat(mountCount(staging)).isEqualTo(1);
        assertThat(mountCount(target)).isEqualTo(1);
        assertThat(driver.poolLoopDevices()).hasSize(1);

        kubelet.unpublish(id, target);
        kubelet.unpublish(id, target);
        kubelet.unstage(id, staging);
        kubelet.unstage(id, staging);
        assertThat(mountCount(target)).isZero();
        assertThat(mountCount(staging)).isZero();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void restagingAfterUnstageKeepsTheData() throws IOException {
        String id = driver.create("pvc-keep", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");
        kubelet.stage(id, staging, mount("ext4"));
        kubelet.publish(id, staging, target, mount("ext4"), false);
        writeSynced(target.resolve("precious.txt"), "do not reformat me");
        kubelet.unpublish(id, target);
        kubelet.unstage(id, staging);

        Path newTarget = kubelet.targetFor("pod-2");
        kubelet.stage(id, staging, mount("ext4"));
        kubelet.publish(id, staging, newTarget, mount("ext4"), false);

        assertThat(Files.readString(newTarget.resolve("precious.txt"))).isEqualTo("do not reformat me");
    }

    /** The node keeps no state in memory: a restarted driver reads what is staged and published from the host. */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aRestartedDriverCarriesOnWithWhatIsStagedAndPublished() throws IOException {
        String id = driver.create("pvc-restart", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");
        kubelet.stage(id, staging, mount("ext4"));
        kubelet.publish(id, staging, target, mount("ext4"), false);
        writeSynced(target.resolve("before-restart.txt"), "still here");

        driver.restart();

        assertThat(driver.create("pvc-restart", 64 * MIB, mount("ext4")).getVolumeId()).isEqualTo(id);
        kubelet.stage(id, staging, mount("ext4"));
        kubelet.publish(id, staging, target, mount("ext4"), false);
        assertThat(driver.poolLoopDevices()).hasSize(1);
        assertThat(mountCount(staging)).isEqualTo(1);
        assertThat(mountCount(target)).isEqualTo(1);
        assertThat(Files.readString(target.resolve("before-restart.txt"))).isEqualTo("still here");

        kubelet.unpublish(id, target);
        kubelet.unstage(id, staging);
        delete(id);
        assertThat(driver.poolLoopDevices()).isEmpty();
        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void stagingAsAnotherFilesystemThanTheVolumeHoldsIsRefusedAndKeepsTheData() throws IOException {
        String id = driver.create("pvc-fs", 512 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, mount("ext4"));
        writeSynced(staging.resolve("precious.txt"), "ext4 data");
        kubelet.unstage(id, staging);

        assertFails(() -> kubelet.stage(id, staging, mount("xfs")), Code.FAILED_PRECONDITION, "ext4", "xfs");
        assertThat(mountAt(staging)).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();

        kubelet.stage(id, staging, mount("ext4"));
        assertThat(Files.readString(staging.resolve("precious.txt"))).isEqualTo("ext4 data");
    }

    @Test
    @RequiresRoot
    void stagingWithAFilesystemHearthDoesNotMakeIsInvalidAndLeavesNoLoopDevice() throws IOException {
        String id = driver.create("pvc-ntfs", 64 * MIB, mount("ext4")).getVolumeId();

        assertFails(() -> kubelet.stage(id, kubelet.stagingFor(id), mount("ntfs")), Code.INVALID_ARGUMENT, "ntfs");

        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void stagingWithAMountOptionTheFilesystemRejectsIsInvalidAndLeavesNothingMounted() throws IOException {
        String id = driver.create("pvc-opts", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        VolumeCapability capability = mount("ext4").toBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4").addMountFlags("no_such_option"))
                .build();

        assertFails(() -> kubelet.stage(id, staging, capability), Code.INVALID_ARGUMENT, "no_such_option");

        assertThat(mountAt(staging)).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void stagingHonoursMountFlags() throws IOException {
        String id = driver.create("pvc-flags", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        VolumeCapability capability = mount("ext4").toBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4")
                        .addMountFlags("noatime").addMountFlags("nodev"))
                .build();

        kubelet.stage(id, staging, capability);

        assertThat(mountAt(staging)).get().satisfies(m -> {
            assertThat(m.hasMountOption("noatime")).isTrue();
            assertThat(m.hasMountOption("nodev")).isTrue();
        });
    }

    // Block volumes

    @Test
    @RequiresRoot
    void blockVolumeIsTheLoopDeviceAtTheTargetAndItsBytesLandInTheImage() throws IOException {
        String id = driver.create("pvc-block", 64 * MIB, block()).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");

        kubelet.stage(id, staging, block());
        LoopAttachment loop = driver.poolLoopDevices().getFirst();
        assertThat(driver.poolLoopDevices()).hasSize(1);
        assertThat(mountAt(staging)).as("a block volume mounts nothing at staging").isEmpty();

        kubelet.publish(id, staging, target, block(), false);
        assertThat(BlockDevices.isBlockDevice(target)).as("%s is a block device", target).isTrue();
        assertThat(Files.getAttribute(target, "unix:rdev"))
                .isEqualTo(Files.getAttribute(loop.device().path(), "unix:rdev"));
        assertThat(mountAt(target)).isPresent();

        byte[] bytes = TestData.random((int) MIB, 42);
        long offset = 8 * MIB;
        try (FileChannel device = FileChannel.open(target, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            assertThat(device.size()).isEqualTo(64 * MIB);
            device.write(ByteBuffer.wrap(bytes), offset);
            device.force(true);
        }
        assertThat(read(target, offset, bytes.length)).isEqualTo(bytes);
        assertThat(read(driver.image(id), offset, bytes.length)).isEqualTo(bytes);

        kubelet.unpublish(id, target);
        assertThat(target).doesNotExist();
        kubelet.unstage(id, staging);
        assertThat(driver.poolLoopDevices()).isEmpty();
        delete(id);
        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    @RequiresRoot
    void blockStageAndPublishAreIdempotent() throws IOException {
        String id = driver.create("pvc-block", 16 * MIB, block()).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");

        kubelet.stage(id, staging, block());
        kubelet.stage(id, staging, block());
        kubelet.publish(id, staging, target, block(), false);
        kubelet.publish(id, staging, target, block(), false);

        assertThat(driver.poolLoopDevices()).hasSize(1);
        assertThat(mountCount(target)).isEqualTo(1);

        kubelet.unpublish(id, target);
        kubelet.unpublish(id, target);
        kubelet.unstage(id, staging);
        kubelet.unstage(id, staging);
        assertThat(target).doesNotExist();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    /**
     * A read-only bind mount does not make a device node read-only: the kernel checks the mount's
     * read-only flag only for regular files, directories and links. What a pod gets must refuse
     * writes by itself.
     */
    @Test
    @RequiresRoot
    void readOnlyBlockPublishRefusesWrites() throws IOException {
        String id = driver.create("pvc-block-ro", 16 * MIB, block()).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");
        kubelet.stage(id, staging, block());

        kubelet.publish(id, staging, target, block(), true);
        kubelet.publish(id, staging, target, block(), true);

        assertThat(mountCount(target)).isEqualTo(1);
        assertThat(mountAt(target)).get().extracting(MountEntry::readOnly).isEqualTo(true);
        assertThat(driver.poolLoopDevices()).as("the volume's device and one read-only view").hasSize(2);
        assertThatThrownBy(() -> {
            try (FileChannel device = FileChannel.open(target, StandardOpenOption.WRITE)) {
                device.write(ByteBuffer.wrap(TestData.random(4096, 7)), 0);
                device.force(true);
            }
        }).isInstanceOf(IOException.class);
        assertThat(read(driver.image(id), 0, 4096)).isEqualTo(new byte[4096]);

        kubelet.unpublish(id, target);
        assertThat(target).doesNotExist();
        assertThat(driver.poolLoopDevices()).hasSize(1);
        kubelet.unstage(id, staging);
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    // Conflicts and preconditions

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void publishingAnotherVolumeAtAnOccupiedTargetIsAlreadyExists() throws IOException {
        String first = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        String second = driver.create("pvc-2", 64 * MIB, mount("ext4")).getVolumeId();
        Path target = kubelet.targetFor("pod-1");
        kubelet.stage(first, kubelet.stagingFor(first), mount("ext4"));
        kubelet.stage(second, kubelet.stagingFor(second), mount("ext4"));
        kubelet.publish(first, kubelet.stagingFor(first), target, mount("ext4"), false);

        assertFails(() -> kubelet.publish(second, kubelet.stagingFor(second), target, mount("ext4"), false),
                Code.ALREADY_EXISTS, target.toString());
        assertFails(() -> kubelet.publish(first, kubelet.stagingFor(first), target, mount("ext4"), true),
                Code.ALREADY_EXISTS, target.toString());
        assertThat(mountCount(target)).isEqualTo(1);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void stagingAtAPathAnotherVolumeOccupiesIsAlreadyExistsAndLeavesNoLoopDevice() throws IOException {
        String first = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        String second = driver.create("pvc-2", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(first);
        kubelet.stage(first, staging, mount("ext4"));

        assertFails(() -> kubelet.stage(second, staging, mount("ext4")), Code.ALREADY_EXISTS, staging.toString());

        assertThat(driver.poolLoopDevices()).extracting(LoopAttachment::backingFile)
                .containsExactly(driver.image(first).toRealPath());
        assertThat(mountCount(staging)).isEqualTo(1);
    }

    /**
     * The staging path of a publish must hold the volume published: otherwise one volume's data
     * lands in the pods of another. Mounter.publishFilesystem binds whatever is mounted at the
     * staging path and has no way to be told which device belongs there.
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void publishingAVolumeFromAnotherVolumesStagingPathIsRefused() throws IOException {
        String first = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        String second = driver.create("pvc-2", 64 * MIB, mount("ext4")).getVolumeId();
        Path firstStaging = kubelet.stagingFor(first);
        kubelet.stage(first, firstStaging, mount("ext4"));
        kubelet.stage(second, kubelet.stagingFor(second), mount("ext4"));
        writeSynced(firstStaging.resolve("secret-of-pvc-1"), "not for pvc-2's pods");
        Path target = kubelet.targetFor("pod-of-pvc-2");

        assertFails(() -> kubelet.publish(second, firstStaging, target, mount("ext4"), false), Code.FAILED_PRECONDITION,
                second);

        assertThat(mountAt(target)).isEmpty();
        assertThat(target.resolve("secret-of-pvc-1")).doesNotExist();
    }

    @Test
    void publishingAFilesystemVolumeThatIsNotStagedIsFailedPrecondition() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Path target = kubelet.targetFor("pod-1");

        assertFails(() -> kubelet.publish(id, kubelet.stagingFor(id), target, mount("ext4"), false),
                Code.FAILED_PRECONDITION, kubelet.stagingFor(id).toString());
        assertThat(mountAt(target)).isEmpty();
    }

    @Test
    void publishingABlockVolumeThatIsNotStagedIsFailedPrecondition() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, block()).getVolumeId();
        Path target = kubelet.targetFor("pod-1");

        assertFails(() -> kubelet.publish(id, kubelet.stagingFor(id), target, block(), false),
                Code.FAILED_PRECONDITION, id);
        assertThat(target).doesNotExist();
    }

    @Test
    @RequiresRoot
    void deletingAStagedVolumeIsFailedPreconditionUntilItIsUnstaged() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, block()).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, block());

        assertFails(() -> delete(id), Code.FAILED_PRECONDITION, id);
        assertThat(driver.image(id)).exists();

        kubelet.unstage(id, staging);
        delete(id);
        assertThat(driver.poolFiles()).isEmpty();
    }

    @Test
    void unstageAndUnpublishOfWhatWasNeverThereSucceed() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();

        kubelet.unpublish(id, kubelet.targetFor("pod-1"));
        kubelet.unstage(id, kubelet.stagingFor(id));
        kubelet.unstage(VolumeId.mint("default", "never-made").toString(), kubelet.stagingFor("never"));

        assertThat(driver.image(id)).exists();
    }

    // Bad requests

    @ParameterizedTest
    @ValueSource(strings = {"default-aaaaaaaaaaaaaaaaaaaaaaaaaa", "no-such-volume", "../../etc/passwd"})
    void stagingOrPublishingAVolumeThatDoesNotExistIsNotFound(String id) throws IOException {
        assertFails(() -> kubelet.stage(id, kubelet.stagingFor("x"), mount("ext4")), Code.NOT_FOUND, id);
        assertFails(() -> kubelet.publish(id, kubelet.stagingFor("x"), kubelet.targetFor("pod-1"), mount("ext4"),
                false), Code.NOT_FOUND, id);
    }

    @Test
    void requestsWithoutVolumeIdAreInvalid() throws IOException {
        Path staging = kubelet.stagingFor("x");
        Path target = kubelet.targetFor("pod-1");

        assertFails(() -> kubelet.stage("", staging, mount("ext4")), Code.INVALID_ARGUMENT, "volume_id");
        assertFails(() -> kubelet.publish("", staging, target, mount("ext4"), false), Code.INVALID_ARGUMENT,
                "volume_id");
        assertFails(() -> kubelet.unpublish("", target), Code.INVALID_ARGUMENT, "volume_id");
        assertFails(() -> kubelet.unstage("", staging), Code.INVALID_ARGUMENT, "volume_id");
    }

    @Test
    void requestsWithoutPathsOrCapabilityAreInvalid() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");
        var node = driver.node();

        assertFails(() -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setVolumeCapability(mount("ext4")).build()), Code.INVALID_ARGUMENT, "staging_target_path");
        assertFails(() -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).build()), Code.INVALID_ARGUMENT, "volume_capability");
        assertFails(() -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(mount("ext4")).build()),
                Code.INVALID_ARGUMENT, "target_path");
        assertFails(() -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setTargetPath(target.toString()).setVolumeCapability(mount("ext4")).build()),
                Code.INVALID_ARGUMENT, "staging_target_path");
        assertFails(() -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).build()),
                Code.INVALID_ARGUMENT, "volume_capability");
        assertFails(() -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).build()),
                Code.INVALID_ARGUMENT, "target_path");
        assertFails(() -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).build()),
                Code.INVALID_ARGUMENT, "staging_target_path");
    }

    @Test
    void stagingWithAMultiNodeAccessModeIsInvalid() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        VolumeCapability multiNode = withMode(mount("ext4"), Mode.MULTI_NODE_MULTI_WRITER);

        assertFails(() -> kubelet.stage(id, kubelet.stagingFor(id), multiNode), Code.INVALID_ARGUMENT,
                "MULTI_NODE_MULTI_WRITER");
    }

    @ParameterizedTest
    @ValueSource(strings = {"relative/staging", "{dir}/a/../staging", "{dir}/./staging", "{dir}//staging",
            "{dir}/staging/"})
    void pathsThatAreRelativeOrNotNormalizedAreInvalid(String template) throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        String path = template.replace("{dir}", dir.toString());
        Path target = kubelet.targetFor("pod-1");

        assertFails(() -> driver.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(path).setVolumeCapability(mount("ext4")).build()),
                Code.INVALID_ARGUMENT, "staging_target_path", path);
        assertFails(() -> driver.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(kubelet.stagingFor(id).toString()).setTargetPath(path)
                .setVolumeCapability(mount("ext4")).build()), Code.INVALID_ARGUMENT, "target_path", path);
        assertFails(() -> driver.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setTargetPath(path).build()), Code.INVALID_ARGUMENT, "target_path", path);
        assertThat(driver.poolLoopDevices()).isEmpty();
        assertThat(target).doesNotExist();
    }

    @ParameterizedTest
    @ValueSource(strings = {"a\0b", "NNN", "EEE"})
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void pathsNoSystemCallTakesAreInvalidInEveryPathFieldAndNameTheField(String kind) throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Kubelet.Published published = kubelet.stageAndPublish(id, mount("ext4"), "pod-1");
        // A NUL; a name longer than NAME_MAX; a path of 3001 characters but 4501 bytes, past PATH_MAX.
        String path = dir + "/" + kind.replace("NNN", "n".repeat(256)).replace("EEE", "\u00e9/".repeat(1_500));
        var node = driver.node();

        assertFails(() -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(path).setVolumeCapability(mount("ext4")).build()),
                Code.INVALID_ARGUMENT, "staging_target_path");
        assertFails(() -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(published.staging().toString()).setTargetPath(path)
                .setVolumeCapability(mount("ext4")).build()), Code.INVALID_ARGUMENT, "target_path");
        assertFails(() -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(path).setTargetPath(kubelet.targetFor("pod-2").toString())
                .setVolumeCapability(mount("ext4")).build()), Code.INVALID_ARGUMENT, "staging_target_path");
        assertFails(() -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setTargetPath(path).build()), Code.INVALID_ARGUMENT, "target_path");
        assertFails(() -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(path).build()), Code.INVALID_ARGUMENT, "staging_target_path");
        assertFails(() -> node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                .setVolumePath(path).build()), Code.INVALID_ARGUMENT, "volume_path");
        assertFails(() -> node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id)
                .setVolumePath(path).build()), Code.INVALID_ARGUMENT, "volume_path");

        assertThat(mountAt(published.target())).isPresent();
        assertThat(mountCount(published.staging())).isEqualTo(1);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void stagingAGrownExt4VolumeAtASecondPathLeavesTheFirstMountAlone() throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        Path first = kubelet.stagingFor(id);
        kubelet.stage(id, first, mount("ext4"));
        writeSynced(first.resolve("kept.txt"), "written through the first staging path");
        // Grown where its filesystem is not mounted: the image and the device grow, the filesystem does not.
        kubelet.expand(id, Files.createDirectories(dir.resolve("not-the-volume")), 128 * MIB);
        Path second = kubelet.stagingFor("second");

        kubelet.stage(id, second, mount("ext4"));

        assertThat(Files.readString(second.resolve("kept.txt"))).isEqualTo("written through the first staging path");
        assertThat(mountCount(first)).isEqualTo(1);
        kubelet.unstage(id, second);
        kubelet.unstage(id, first);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void pathsThatAFileOccupiesAreInvalidAndNothingIsFormattedOrLeftAttached() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Path file = Files.writeString(dir.resolve("a-file"), "not a directory");

        assertFails(() -> kubelet.stage(id, file, mount("ext4")), Code.INVALID_ARGUMENT,
                "staging path '" + file + "' exists and is not a directory");
        assertFails(() -> kubelet.stage(id, file.resolve("staging"), mount("ext4")), Code.INVALID_ARGUMENT,
                "lies under '" + file + "', which exists and is not a directory");
        assertThat(driver.poolLoopDevices()).isEmpty();
        assertThat(isAllZeros(driver.image(id))).as("the image is untouched").isTrue();

        Kubelet.Published published = kubelet.stageAndPublish(id, mount("ext4"), "pod-1");
        assertFails(() -> kubelet.publish(id, published.staging(), file, mount("ext4")), Code.INVALID_ARGUMENT,
                "target path '" + file + "' exists and is not a directory");
        assertFails(() -> kubelet.publish(id, published.staging(), file.resolve("vol"), mount("ext4")),
                Code.INVALID_ARGUMENT, "which exists and is not a directory");
        assertThat(file).hasContent("not a directory");
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void publishingIntoAVolumePublishedReadOnlyIsAFailedPrecondition() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path readOnly = kubelet.targetFor("pod-1");
        kubelet.stage(id, staging, mount("ext4"));
        kubelet.publish(id, staging, readOnly, mount("ext4"), true);

        assertFails(() -> kubelet.publish(id, staging, readOnly.resolve("inside"), mount("ext4")),
                Code.FAILED_PRECONDITION, "target path '" + readOnly.resolve("inside") + "' cannot be made",
                "is on a read-only mount");

        assertThat(mountAt(readOnly.resolve("inside"))).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void mountingOverADirectoryWithAMountBeneathItIsRefusedSoNothingIsHidden() throws IOException {
        String inner = driver.create("pvc-inner", 16 * MIB, mount("ext4")).getVolumeId();
        String outer = driver.create("pvc-outer", 16 * MIB, mount("ext4")).getVolumeId();
        Path above = kubelet.stagingFor("above");
        kubelet.stage(inner, above.resolve("inner"), mount("ext4"));
        Kubelet.Published published = kubelet.stageAndPublish(outer, mount("ext4"), "pod-1");

        assertFails(() -> kubelet.stage(outer, above, mount("ext4")), Code.FAILED_PRECONDITION,
                "staging path '" + above + "' has '" + above.resolve("inner") + "' mounted beneath it");
        assertFails(() -> kubelet.publish(outer, published.staging(), above, mount("ext4")), Code.FAILED_PRECONDITION,
                "target path '" + above + "' has '" + above.resolve("inner") + "' mounted beneath it");

        assertThat(mountAt(above)).isEmpty();
        kubelet.unstage(inner, above.resolve("inner"));
        assertThat(mountAt(above.resolve("inner"))).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void unstagingAMountThatAnotherMountHidesIsAFailedPreconditionSayingWhy() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Path above = kubelet.stagingFor("above");
        Path staging = above.resolve("inner");
        kubelet.stage(id, staging, mount("ext4"));
        Path cover = Files.createDirectories(dir.resolve("cover"));
        Mounts.bind(cover, above, false); // made by someone else: the driver refuses to mount over a mount

        assertFails(() -> kubelet.unstage(id, staging), Code.FAILED_PRECONDITION,
                "'" + staging + "' is in the mount table but cannot be reached");

        Mounts.unmount(above);
        kubelet.unstage(id, staging);
        assertThat(mountAt(staging)).isEmpty();
    }

    @Test
    @RequiresRoot
    void stagingAVolumeAsAFilesystemTooBigForItIsAFailedPreconditionAndFormatsNothing() throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, block()).getVolumeId(); // no filesystem asked for at create

        assertFails(() -> kubelet.stage(id, kubelet.stagingFor(id), mount("xfs")), Code.FAILED_PRECONDITION,
                "is 64.0 MiB, smaller than the 300.0 MiB that xfs needs");

        assertThat(driver.poolLoopDevices()).isEmpty();
        assertThat(isAllZeros(driver.image(id))).as("the image is untouched").isTrue();
    }

    @Test
    @RequiresRoot
    void publishingABlockVolumeOntoADirectoryThatHoldsFilesIsInvalidAndKeepsThem() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, block()).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, block());
        Path target = Files.createDirectories(kubelet.targetFor("pod-1"));
        writeSynced(target.resolve("precious.txt"), "kept");

        assertFails(() -> kubelet.publish(id, staging, target, block()), Code.INVALID_ARGUMENT,
                "is a directory that holds files");

        assertThat(target.resolve("precious.txt")).hasContent("kept");
        assertThat(mountAt(target)).isEmpty();
    }

    /**
     * A mount over a directory hides what it holds from everyone on the node: a stage or a publish
     * onto one that holds files is refused before anything is formatted or mounted. The kubelet
     * never leaves files there; a hostile or mistaken request (a target of /etc) would.
     */
    @Test
    @RequiresRoot
    void stagingOrPublishingAFilesystemOntoADirectoryThatHoldsFilesIsInvalidAndHidesNothing() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Path occupied = kubelet.stagingFor(id + "-occupied");
        writeSynced(occupied.resolve("precious.txt"), "kept");

        assertFails(() -> kubelet.stage(id, occupied, mount("ext4")), Code.INVALID_ARGUMENT,
                occupied.toString(), "is a directory that holds files");

        assertThat(mountAt(occupied)).isEmpty();
        assertThat(isAllZeros(driver.image(id))).as("nothing was formatted").isTrue();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, mount("ext4"));
        Path target = Files.createDirectories(kubelet.targetFor("pod-1"));
        writeSynced(target.resolve("precious.txt"), "kept");

        assertFails(() -> kubelet.publish(id, staging, target, mount("ext4")), Code.INVALID_ARGUMENT,
                target.toString(), "is a directory that holds files");

        assertThat(mountAt(target)).isEmpty();
        assertThat(target.resolve("precious.txt")).hasContent("kept");
        assertThat(occupied.resolve("precious.txt")).hasContent("kept");
        kubelet.unstage(id, staging);
    }

    /**
     * A bind over a file hides it on the node, and one over a device node (a disk's /dev/sda) sends
     * every later open of that name to this volume: a block publish goes onto a new or empty file only.
     */
    @Test
    @RequiresRoot
    void publishingABlockVolumeOverAFileWithDataOrADeviceNodeIsInvalidAndHidesNothing() throws Exception {
        String id = driver.create("pvc-1", 16 * MIB, block()).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        kubelet.stage(id, staging, block());
        Path file = kubelet.targetFor("pod-1");
        writeSynced(file, "kept");
        Path node = kubelet.targetFor("pod-2");
        assertThat(new ProcessBuilder("mknod", node.toString(), "c", "1", "3").inheritIO().start().waitFor()).isZero();
        Path empty = Files.createFile(kubelet.targetFor("pod-3"));

        assertFails(() -> kubelet.publish(id, staging, file, block()), Code.INVALID_ARGUMENT,
                file.toString(), "holds a file with data");
        assertFails(() -> kubelet.publish(id, staging, node, block()), Code.INVALID_ARGUMENT,
                node.toString(), "holds something that is no file or directory");
        kubelet.publish(id, staging, empty, block());

        assertThat(mountAt(file)).isEmpty();
        assertThat(mountAt(node)).isEmpty();
        assertThat(file).hasContent("kept");
        assertThat(mountAt(empty)).isPresent();
        kubelet.unpublish(id, empty);
        kubelet.unstage(id, staging);
        assertThat(file).hasContent("kept");
        assertThat(node).exists();
    }

    /**
     * The kernel's own filesystems hold its objects, not directories: a publish onto /dev would hide
     * device nodes from the whole node (or, made there, be a device directory of its own), and a mkdir
     * in /proc or /sys is refused by the kernel (which was INTERNAL). Each is the request's mistake,
     * and nothing is made or mounted.
     */
    @Test
    @RequiresRoot
    void stagingOrPublishingOnTheKernelsOwnFilesystemsIsInvalidAndMakesNothing() throws IOException {
        String fs = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        String raw = driver.create("pvc-2", 16 * MIB, block()).getVolumeId();
        String name = "hearth-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        Path staging = kubelet.stagingFor(fs);
        Path rawStaging = kubelet.stagingFor(raw);
        List<Path> made = new ArrayList<>(List.of(Path.of("/proc", name), Path.of("/sys", name)));
        boolean devtmpfs = MountInfo.containing(Path.of("/dev", name)).orElseThrow().fsType().equals("devtmpfs");
        if (devtmpfs) {
            made.add(Path.of("/dev", name));
        }
        try {
            assertFails(() -> kubelet.stage(fs, made.get(0), mount("ext4")), Code.INVALID_ARGUMENT,
                    "'/proc', the kernel's proc filesystem");
            kubelet.stage(fs, staging, mount("ext4"));
            kubelet.stage(raw, rawStaging, block());
            assertFails(() -> kubelet.publish(fs, staging, made.get(1), mount("ext4")), Code.INVALID_ARGUMENT,
                    "'/sys', the kernel's sysfs filesystem");
            assertFails(() -> kubelet.publish(raw, rawStaging, made.get(1), block()), Code.INVALID_ARGUMENT,
                    "'/sys', the kernel's sysfs filesystem");
            if (devtmpfs) {
                assertFails(() -> kubelet.publish(fs, staging, made.get(2), mount("ext4")), Code.INVALID_ARGUMENT,
                        "'/dev', the kernel's devtmpfs filesystem");
                assertFails(() -> kubelet.publish(raw, rawStaging, made.get(2), block()), Code.INVALID_ARGUMENT,
                        "'/dev', the kernel's devtmpfs filesystem");
            }

            for (Path path : made) {
                assertThat(mountAt(path)).as(path.toString()).isEmpty();
                assertThat(Files.exists(path)).as(path.toString()).isFalse();
            }
            kubelet.unstage(fs, staging);
            kubelet.unstage(raw, rawStaging);
        } finally { // what a regression would leave on the node itself
            for (Path path : made) {
                while (mountAt(path).isPresent()) {
                    Mounts.unmount(path);
                }
                Files.deleteIfExists(path);
            }
        }
    }

    /** A directory the driver may not write in (immutable here; squashed root on NFS) is the node's state, not INTERNAL. */
    @Test
    @RequiresRoot
    @RequiresTools("chattr")
    void publishingIntoADirectoryTheDriverMayNotWriteIsAPreconditionAndMakesNothing() throws Exception {
        String fs = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        String raw = driver.create("pvc-2", 16 * MIB, block()).getVolumeId();
        Path staging = kubelet.stagingFor(fs);
        Path rawStaging = kubelet.stagingFor(raw);
        kubelet.stage(fs, staging, mount("ext4"));
        kubelet.stage(raw, rawStaging, block());
        Path locked = Files.createDirectories(dir.resolve("pods/pod-1/volumes"));
        assertThat(new ProcessBuilder("chattr", "+i", locked.toString()).inheritIO().start().waitFor()).isZero();
        try {
            assertFails(() -> kubelet.publish(fs, staging, locked.resolve("fs"), mount("ext4")),
                    Code.FAILED_PRECONDITION, "is not writable by the driver on this node");
            assertFails(() -> kubelet.publish(raw, rawStaging, locked.resolve("raw"), block()),
                    Code.FAILED_PRECONDITION, "is not writable by the driver on this node");
            assertFails(() -> kubelet.stage(fs, locked.resolve("staging"), mount("ext4")),
                    Code.FAILED_PRECONDITION, "is not writable by the driver on this node");
        } finally {
            assertThat(new ProcessBuilder("chattr", "-i", locked.toString()).inheritIO().start().waitFor()).isZero();
        }
        try (var children = Files.list(locked)) {
            assertThat(children).isEmpty();
        }
        kubelet.unstage(fs, staging);
        kubelet.unstage(raw, rawStaging);
    }

    @Test
    void unpublishingAPathUnderAFileSucceedsForNothingCanBePublishedThere() throws IOException {
        Path file = Files.writeString(dir.resolve("a-file"), "not a directory");

        kubelet.unpublish("default-aaaaaaaaaaaaaaaaaaaaaaaaaa", file.resolve("vol"));

        assertThat(file).hasContent("not a directory");
    }

    @Test
    void unpublishingADirectoryThatHoldsFilesButNoMountKeepsThemAndSaysWhy() throws IOException {
        Path target = kubelet.targetFor("pod-1");
        Files.createDirectories(target);
        writeSynced(target.resolve("precious.txt"), "not the driver's to delete");

        assertFails(() -> kubelet.unpublish("default-aaaaaaaaaaaaaaaaaaaaaaaaaa", target), Code.FAILED_PRECONDITION,
                target.toString(), "holds files");

        assertThat(target.resolve("precious.txt")).hasContent("not the driver's to delete");
    }

    @Test
    void pathsThroughASymbolicLinkAreInvalidAndNothingIsMountedThere() throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
        Path link = Files.createSymbolicLink(dir.resolve("link"), elsewhere);
        Path linkedStaging = link.resolve("staging");
        Path linkedTarget = Files.createSymbolicLink(dir.resolve("target-link"), elsewhere);

        assertFails(() -> kubelet.stage(id, linkedStaging, mount("ext4")), Code.INVALID_ARGUMENT,
                linkedStaging.toString(), "symbolic link");
        assertFails(() -> kubelet.publish(id, kubelet.stagingFor(id), linkedTarget, mount("ext4"), false),
                Code.INVALID_ARGUMENT, linkedTarget.toString(), "symbolic link");
        assertFails(() -> kubelet.unpublish(id, linkedTarget), Code.INVALID_ARGUMENT, linkedTarget.toString());
        assertFails(() -> kubelet.unstage(id, linkedStaging), Code.INVALID_ARGUMENT, linkedStaging.toString());

        assertThat(elsewhere).isEmptyDirectory();
        assertThat(linkedTarget).isSymbolicLink();
        assertThat(TestDriver.mountsUnder(dir.toRealPath())).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    // Node information

    @Test
    void nodeInfoGivesTheNodeIdItsTopologyAndTheVolumeLimit() {
        NodeGetInfoResponse info = driver.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance());

        assertThat(info.getNodeId()).isEqualTo(NODE);
        assertThat(info.getAccessibleTopology()).isEqualTo(
                Topology.newBuilder().putSegments("topology.hearth.dev/node", NODE).build());
        assertThat(info.getMaxVolumesPerNode()).isEqualTo(MAX_VOLUMES);
    }

    @Test
    void nodeCapabilitiesAreExactlyWhatIsImplemented() {
        List<NodeServiceCapability> capabilities = driver.node()
                .nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();

        assertThat(capabilities).extracting(c -> c.getRpc().getType())
                .containsExactlyInAnyOrder(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
                        NodeServiceCapability.RPC.Type.GET_VOLUME_STATS, NodeServiceCapability.RPC.Type.VOLUME_CONDITION,
                        NodeServiceCapability.RPC.Type.VOLUME_MOUNT_GROUP, NodeServiceCapability.RPC.Type.EXPAND_VOLUME);
    }
}
