package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.ListVolumesResponse;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsResponse;
import dev.hearth.csi.v1.VolumeCondition;
import dev.hearth.csi.v1.VolumeUsage;
import dev.hearth.csi.v1.VolumeUsage.Unit;
import dev.hearth.driver.Kubelet.Published;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.FsStats;
import dev.hearth.linux.MountFlags;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * NodeGetVolumeStats and the volume condition the node and the controller report: the numbers a
 * kubelet shows for a volume, and what happens to a volume's image or mounts behind the driver's back.
 */
class VolumeStatsTest extends DriverFixture {

    private static VolumeUsage usage(NodeGetVolumeStatsResponse stats, Unit unit) {
        return stats.getUsageList().stream().filter(u -> u.getUnit() == unit).findFirst()
                .orElseThrow(() -> new AssertionError("no " + unit + " usage in " + stats));
    }

    private VolumeCondition controllerCondition(String id) {
        return driver.controller().controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(id)
                .build()).getStatus().getVolumeCondition();
    }

    private VolumeCondition listedCondition(String id) {
        return driver.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
                .filter(e -> e.getVolume().getVolumeId().equals(id)).findFirst()
                .map(ListVolumesResponse.Entry::getStatus).orElseThrow().getVolumeCondition();
    }

    // Usage

    @ParameterizedTest
    @ValueSource(strings = {"ext4", "xfs"})
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "mkfs.xfs"})
    void statsOfAMountedFilesystemAreItsBytesAndInodesAsStatvfsCountsThem(String fsType) throws IOException {
        String id = driver.create("pvc-" + fsType, 320 * MIB, mount(fsType)).getVolumeId();
        Published published = kubelet.stageAndPublish(id, mount(fsType), "pod-1");
        long usedBefore = usage(kubelet.stats(id, published.target()), Unit.BYTES).getUsed();
        long inodesBefore = usage(kubelet.stats(id, published.target()), Unit.INODES).getUsed();
        for (int i = 0; i < 10; i++) {
            TestData.writeSynced(published.target().resolve("file-" + i), TestData.random((int) MIB, i));
        }

        NodeGetVolumeStatsResponse stats = kubelet.stats(id, published.target());

        FsStats fs = FileSystems.statvfs(published.target());
        VolumeUsage bytes = usage(stats, Unit.BYTES);
        assertThat(bytes.getTotal()).isEqualTo(fs.totalBytes());
        assertThat(bytes.getAvailable()).isEqualTo(fs.availableBytes());
        assertThat(bytes.getUsed()).isEqualTo(fs.totalBytes() - fs.freeBytes())
                .isGreaterThanOrEqualTo(usedBefore + 10 * MIB);
        assertThat(bytes.getAvailable()).isLessThanOrEqualTo(bytes.getTotal() - bytes.getUsed());
        VolumeUsage inodes = usage(stats, Unit.INODES);
        assertThat(inodes.getTotal()).isEqualTo(fs.totalInodes());
        assertThat(inodes.getAvailable()).isEqualTo(fs.freeInodes());
        assertThat(inodes.getUsed()).isEqualTo(fs.totalInodes() - fs.freeInodes())
                .isGreaterThanOrEqualTo(inodesBefore + 10);
        assertThat(stats.getVolumeCondition().getAbnormal()).isFalse();
    }

    @Test
    @RequiresRoot
    void statsOfABlockVolumeAreItsSize() throws IOException {
        String id = driver.create("pvc-block", 48 * MIB, block()).getVolumeId();
        Published published = kubelet.stageAndPublish(id, block(), "pod-1");

        NodeGetVolumeStatsResponse stats = kubelet.stats(id, published.target());

        assertThat(stats.getUsageList()).singleElement().satisfies(u -> {
            assertThat(u.getUnit()).isEqualTo(Unit.BYTES);
            assertThat(u.getTotal()).isEqualTo(48 * MIB);
        });
        assertThat(stats.getVolumeCondition().getAbnormal()).isFalse();
    }

    // Condition

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aVolumeWhoseImageFileIsDeletedIsAbnormalOnTheNodeAndInTheController() throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        Published published = kubelet.stageAndPublish(id, mount("ext4"), "pod-1");
        assertThat(controllerCondition(id).getAbnormal()).isFalse();

        Files.delete(driver.image(id));

        VolumeCondition node = kubelet.stats(id, published.target()).getVolumeCondition();
        assertThat(node.getAbnormal()).isTrue();
        assertThat(node.getMessage()).contains(driver.image(id).toString()).contains("missing");
        assertThat(controllerCondition(id).getAbnormal()).isTrue();
        assertThat(controllerCondition(id).getMessage()).contains(driver.image(id).toString());
        assertThat(listedCondition(id).getAbnormal()).isTrue();
        assertThat(listedCondition(id).getMessage()).contains(driver.image(id).toString());
    }

    /** Someone ran {@code umount -l} on the pod's mount: the path is an empty directory now, not the volume. */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aVolumeUnmountedBehindTheDriversBackIsAbnormalAndHasNoUsage() throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        Published published = kubelet.stageAndPublish(id, mount("ext4"), "pod-1");

        Mounts.unmount(published.target(), MountFlags.MNT_DETACH);

        NodeGetVolumeStatsResponse stats = kubelet.stats(id, published.target());
        assertThat(stats.getVolumeCondition().getAbnormal()).isTrue();
        assertThat(stats.getVolumeCondition().getMessage())
                .contains("nothing is mounted at " + published.target());
        assertThat(stats.getUsageList()).as("the numbers would be those of the filesystem under the path")
                .isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aVolumeUnstagedBehindTheDriversBackIsAbnormal() throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        Published published = kubelet.stageAndPublish(id, mount("ext4"), "pod-1");

        Mounts.unmount(published.target(), MountFlags.MNT_DETACH);
        Mounts.unmount(published.staging(), MountFlags.MNT_DETACH);

        VolumeCondition condition = kubelet.stats(id, published.target()).getVolumeCondition();
        assertThat(condition.getAbnormal()).isTrue();
        assertThat(condition.getMessage()).contains("nothing is mounted at " + published.target());
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anExt4ThatRecordsAnErrorIsAbnormal() throws IOException, InterruptedException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        Published published = kubelet.stageAndPublish(id, mount("ext4"), "pod-1");
        String device = driver.poolLoopDevices().getFirst().device().path().getFileName().toString();

        Files.writeString(Path.of("/sys/fs/ext4", device, "trigger_fs_error"), "hearth test");

        // ext4 records the error in its superblock from a work queue, a moment later; kubelets poll.
        VolumeCondition condition = kubelet.stats(id, published.target()).getVolumeCondition();
        for (long deadline = System.nanoTime() + 10_000_000_000L;
                !condition.getAbnormal() && System.nanoTime() < deadline; ) {
            Thread.sleep(50);
            condition = kubelet.stats(id, published.target()).getVolumeCondition();
        }
        assertThat(condition.getAbnormal()).as("%s", condition).isTrue();
        assertThat(condition.getMessage()).contains("1 errors", "e2fsck");
    }

    // Bad requests

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void statsOfAPathWhereTheVolumeIsNotIsNotFound() throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        kubelet.stageAndPublish(id, mount("ext4"), "pod-1");

        assertFails(() -> kubelet.stats(id, Path.of("some/path")), Code.NOT_FOUND, "some/path");
        assertFails(() -> kubelet.stats(id, dir.resolve("pods/pod-2/volumes/vol")), Code.NOT_FOUND,
                dir.resolve("pods/pod-2/volumes/vol").toString());
    }

    /**
     * A path that holds another volume's publish, or a host filesystem, is not where this volume is:
     * its usage was reported under this volume's ID. A device node that is no publish (here the other
     * volume's own loop device) shows nothing of the volume either.
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void statsAtAPathThatHoldsSomethingElseAreNotFoundAndShowNothingOfIt() throws IOException {
        String fs = driver.create("pvc-fs", 64 * MIB, mount("ext4")).getVolumeId();
        String raw = driver.create("pvc-raw", 48 * MIB, block()).getVolumeId();
        Published fsPublished = kubelet.stageAndPublish(fs, mount("ext4"), "pod-1");
        Published rawPublished = kubelet.stageAndPublish(raw, block(), "pod-2");
        Path fsDevice = Path.of(MountInfo.at(fsPublished.staging()).orElseThrow().source());

        assertFails(() -> kubelet.stats(fs, rawPublished.target()), Code.NOT_FOUND,
                rawPublished.target().toString(), "something else is mounted there");
        assertFails(() -> kubelet.stats(raw, fsPublished.target()), Code.NOT_FOUND,
                fsPublished.target().toString(), "something else is mounted there");
        assertFails(() -> kubelet.stats(fs, Path.of("/")), Code.NOT_FOUND, "something else is mounted there");
        NodeGetVolumeStatsResponse atDeviceNode = kubelet.stats(raw, fsDevice);
        assertThat(atDeviceNode.getUsageList()).as("the size of %s", fsDevice).isEmpty();
        assertThat(atDeviceNode.getVolumeCondition().getAbnormal()).isTrue();

        assertThat(usage(kubelet.stats(raw, rawPublished.target()), Unit.BYTES).getTotal()).isEqualTo(48 * MIB);
        assertThat(kubelet.stats(fs, fsPublished.staging()).getVolumeCondition().getAbnormal()).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"default-aaaaaaaaaaaaaaaaaaaaaaaaaa", "no-such-volume", "../../etc/passwd"})
    void statsOfAVolumeThatDoesNotExistIsNotFound(String id) {
        assertFails(() -> kubelet.stats(id, dir), Code.NOT_FOUND, id);
    }

    @Test
    void statsWithoutVolumeIdOrPathIsInvalidArgument() {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();

        assertFails(() -> kubelet.stats("", dir), Code.INVALID_ARGUMENT, "volume_id");
        assertFails(() -> driver.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                .build()), Code.INVALID_ARGUMENT, "volume_path");
    }
}
