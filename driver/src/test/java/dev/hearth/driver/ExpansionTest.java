package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.POOL_CAPACITY;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.driver.Kubelet.Published;
import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountFlags;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * NodeExpandVolume: the image, its loop device and the filesystem on it grow, while pods use it.
 * (ext4 grows online only with CAP_SYS_RESOURCE, which this sandbox's root lacks; its online case
 * is tested on a user-mode Linux host. Here ext4 grows offline, when it is next staged.)
 */
class ExpansionTest extends DriverFixture {

    private long capacityOf(String id) {
        return driver.controller().controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(id)
                .build()).getVolume().getCapacityBytes();
    }

    private static int mountId(Path path) throws IOException {
        return MountInfo.at(path).map(MountEntry::mountId).orElseThrow(() -> new AssertionError(path + " unmounted"));
    }

    /** Publishes a volume of {@code from} bytes, grows it to {@code to} and checks what its pod sees. */
    private void growsWhileMounted(String fsType, long from, long to) throws IOException {
        String id = driver.create("pvc-" + fsType, from, mount(fsType)).getVolumeId();
        Published published = kubelet.stageAndPublish(id, mount(fsType), "pod-1");
        String sha = TestData.writeSynced(published.target().resolve("data.bin"), TestData.random((int) MIB, 5));
        long filesystemBefore = TestData.filesystemBytes(published.target());
        int stagingMount = mountId(published.staging());
        int targetMount = mountId(published.target());

        long capacity = kubelet.expand(id, published.target(), to);

        assertThat(capacity).isEqualTo(to);
        assertThat(capacityOf(id)).isEqualTo(to);
        assertThat(Files.size(driver.image(id))).isEqualTo(to);
        long filesystemAfter = TestData.filesystemBytes(published.target());
        assertThat(filesystemAfter).isGreaterThan(filesystemBefore + (to - from) * 9 / 10);
        assertThat(mountId(published.staging())).as("the same mount, never unmounted").isEqualTo(stagingMount);
        assertThat(mountId(published.target())).isEqualTo(targetMount);
        assertThat(TestData.sha256(published.target().resolve("data.bin"))).isEqualTo(sha);
        TestData.writeSynced(published.target().resolve("after.txt"), "written after growing");

        assertThat(kubelet.expand(id, published.target(), to)).as("again: nothing more to do").isEqualTo(to);
        assertThat(TestData.filesystemBytes(published.target())).isEqualTo(filesystemAfter);
        assertThat(Files.size(driver.image(id))).isEqualTo(to);
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.xfs", "xfs_growfs"})
    void expandingAPublishedXfsGrowsItsMountedFilesystem() throws IOException {
        growsWhileMounted("xfs", 320 * MIB, 640 * MIB);
    }

    /** A 320 MiB xfs volume staged read-write and published read-only to pod-1. */
    private Published xfsPublishedReadOnly(String name) throws IOException {
        String id = driver.create(name, 320 * MIB, mount("xfs")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        Path target = kubelet.targetFor("pod-1");
        kubelet.stage(id, staging, mount("xfs"));
        kubelet.publish(id, staging, target, mount("xfs"), true);
        return new Published(id, staging, target);
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.xfs", "xfs_growfs"})
    void expandingAnXfsVolumePublishedReadOnlyGrowsItThroughItsStagingMount() throws IOException {
        Published published = xfsPublishedReadOnly("pvc-ro");
        String id = published.volumeId();
        Path target = published.target();
        long before = TestData.filesystemBytes(target);

        long capacity = kubelet.expand(id, target, 640 * MIB);

        assertThat(capacity).isEqualTo(640 * MIB);
        assertThat(TestData.filesystemBytes(target)).isGreaterThan(before + 288 * MIB);
        assertThat(MountInfo.at(target).orElseThrow().readOnly()).as("the pod's mount stays read-only").isTrue();
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.xfs", "xfs_growfs"})
    void expandingAnXfsMountedOnlyReadOnlyIsFailedPreconditionAndGrowsItOnceItIsWritableAgain() throws IOException {
        Published published = xfsPublishedReadOnly("pvc-all-ro");
        String id = published.volumeId();
        Path staging = published.staging();
        Path target = published.target();
        // The staging mount read-only too, as an operator's remount would leave it: xfs_growfs has nowhere to grow it.
        Mounts.mount(null, staging, null, MountFlags.MS_REMOUNT | MountFlags.MS_BIND | MountFlags.MS_RDONLY, null);
        long before = TestData.filesystemBytes(target);

        assertFails(() -> kubelet.expand(id, target, 640 * MIB), Code.FAILED_PRECONDITION, "mounted only read-only",
                "it can grow once it is mounted read-write");
        assertThat(TestData.filesystemBytes(target)).as("the filesystem as it was").isEqualTo(before);

        Mounts.mount(null, staging, null, MountFlags.MS_REMOUNT | MountFlags.MS_BIND, null);
        assertThat(kubelet.expand(id, target, 640 * MIB)).as("retried once writable").isEqualTo(640 * MIB);
        assertThat(TestData.filesystemBytes(target)).isGreaterThan(before + 288 * MIB);
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.btrfs", "btrfs"})
    void expandingAPublishedBtrfsGrowsItsMountedFilesystem() throws IOException {
        growsWhileMounted("btrfs", 128 * MIB, 256 * MIB);
    }

    @Test
    @RequiresRoot
    void expandingAPublishedBlockVolumeGrowsTheDeviceThePodHas() throws IOException {
        String id = driver.create("pvc-block", 32 * MIB, block()).getVolumeId();
        Published published = kubelet.stageAndPublish(id, block(), "pod-1");
        byte[] bytes = TestData.random((int) MIB, 9);
        try (FileChannel device = FileChannel.open(published.target(), StandardOpenOption.WRITE)) {
            device.write(ByteBuffer.wrap(bytes), 31 * MIB);
            device.force(true);
        }

        long capacity = kubelet.expand(id, published.target(), 64 * MIB);

        assertThat(capacity).isEqualTo(64 * MIB);
        assertThat(BlockDevices.size(published.target())).isEqualTo(64 * MIB);
        try (FileChannel device = FileChannel.open(published.target(), StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            ByteBuffer back = ByteBuffer.allocate(bytes.length);
            device.read(back, 31 * MIB);
            assertThat(back.array()).isEqualTo(bytes);
            device.write(ByteBuffer.wrap(bytes), 63 * MIB); // where the device used to end
            device.force(true);
        }
        assertThat(kubelet.expand(id, published.target(), 64 * MIB)).isEqualTo(64 * MIB);
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "e2fsck", "resize2fs"})
    void anExt4ExpandedWhileUnstagedFillsItsNewSizeWhenNextStaged() throws IOException {
        String id = driver.create("pvc-ext4", 64 * MIB, mount("ext4")).getVolumeId();
        Published first = kubelet.stageAndPublish(id, mount("ext4"), "pod-1");
        String sha = TestData.writeSynced(first.target().resolve("data.bin"), TestData.random((int) MIB, 5));
        long filesystemBefore = TestData.filesystemBytes(first.target());
        kubelet.takeDown(first);

        assertThat(kubelet.expand(id, first.staging(), 128 * MIB)).isEqualTo(128 * MIB);
        Published again = kubelet.stageAndPublish(id, mount("ext4"), "pod-2");

        // Each MiB added to an ext4 this small gives it over 0.9 MiB; the rest goes to inode tables.
        assertThat(TestData.filesystemBytes(again.target())).isGreaterThan(filesystemBefore + 64 * MIB * 9 / 10);
        assertThat(TestData.sha256(again.target().resolve("data.bin"))).isEqualTo(sha);
    }

    @Test
    @RequiresRoot
    void expandingBeyondWhatThePoolHasIsResourceExhaustedAndLeavesTheVolumeAsItWas() throws IOException {
        String id = driver.create("pvc-block", 32 * MIB, block()).getVolumeId();
        Published published = kubelet.stageAndPublish(id, block(), "pod-1");
        long available = driver.available();

        assertFails(() -> kubelet.expand(id, published.target(), POOL_CAPACITY + MIB), Code.RESOURCE_EXHAUSTED,
                "pool 'default'");

        assertThat(BlockDevices.size(published.target())).isEqualTo(32 * MIB);
        assertThat(Files.size(driver.image(id))).isEqualTo(32 * MIB);
        assertThat(capacityOf(id)).isEqualTo(32 * MIB);
        assertThat(driver.available()).isEqualTo(available);
    }

    /** A volume_path that holds another volume's publish is not where this volume is: nothing of either grows. */
    @Test
    @RequiresRoot
    void expandingAtAPathThatHoldsAnotherVolumeIsNotFoundAndGrowsNothing() throws IOException {
        String id = driver.create("pvc-1", 32 * MIB, block()).getVolumeId();
        String other = driver.create("pvc-2", 32 * MIB, block()).getVolumeId();
        kubelet.stageAndPublish(id, block(), "pod-1");
        expandingAtTheTargetOfIsNotFoundAndGrowsNothing(id, other);
    }

    /**
     * The same for a volume not staged on this node (found by CsiFuzzTest, seed 506): nothing of it
     * can be mounted anywhere, so whatever is at the path is something else. Before, its image grew
     * and the call answered OK.
     */
    @Test
    @RequiresRoot
    void expandingAVolumeNotStagedHereAtAPathThatHoldsAnotherVolumeIsNotFoundAndGrowsNothing() throws IOException {
        String id = driver.create("pvc-1", 32 * MIB, block()).getVolumeId();
        String other = driver.create("pvc-2", 32 * MIB, block()).getVolumeId();
        expandingAtTheTargetOfIsNotFoundAndGrowsNothing(id, other);
    }

    /** {@code other} (32 MiB, block) published into a pod; expanding {@code id} (32 MiB) at its target. */
    private void expandingAtTheTargetOfIsNotFoundAndGrowsNothing(String id, String other) throws IOException {
        Published elsewhere = kubelet.stageAndPublish(other, block(), "pod-2");

        assertFails(() -> kubelet.expand(id, elsewhere.target(), 64 * MIB), Code.NOT_FOUND,
                elsewhere.target().toString(), "something else is mounted there");

        assertThat(Files.size(driver.image(id))).isEqualTo(32 * MIB);
        assertThat(capacityOf(id)).isEqualTo(32 * MIB);
        assertThat(BlockDevices.size(elsewhere.target())).isEqualTo(32 * MIB);
    }

    @Test
    void expandingToLessThanTheVolumeHasLeavesItAsItIs() throws IOException {
        String id = driver.create("pvc-1", 32 * MIB, mount("ext4")).getVolumeId();

        assertThat(kubelet.expand(id, kubelet.stagingFor(id), 16 * MIB)).isEqualTo(32 * MIB);

        assertThat(Files.size(driver.image(id))).isEqualTo(32 * MIB);
    }

    @ParameterizedTest
    @ValueSource(strings = {"default-aaaaaaaaaaaaaaaaaaaaaaaaaa", "no-such-volume", "../../etc/passwd"})
    void expandingAVolumeThatDoesNotExistIsNotFound(String id) throws IOException {
        assertFails(() -> kubelet.expand(id, kubelet.stagingFor("x"), 64 * MIB), Code.NOT_FOUND, id);
    }

    @Test
    void expandingWithoutVolumeIdOrPathIsInvalidArgument() throws IOException {
        String id = driver.create("pvc-1", 32 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);

        assertFails(() -> driver.node().nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id)
                .build()), Code.INVALID_ARGUMENT, "volume_path");
        assertFails(() -> kubelet.expand("", staging, 64 * MIB), Code.INVALID_ARGUMENT, "volume_id");
        assertFails(() -> kubelet.expand(id, Path.of("relative/path"), 64 * MIB), Code.INVALID_ARGUMENT,
                "relative/path");
        assertThat(Files.size(driver.image(id))).isEqualTo(32 * MIB);
    }
}
