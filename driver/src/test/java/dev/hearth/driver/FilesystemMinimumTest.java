package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A filesystem volume is never made too small for its mkfs: it would be created and then fail at
 * every NodeStage. xfs needs 300 MiB, btrfs 128 MiB (hearth's margin over mkfs.btrfs's 109).
 */
@RequiresRoot
@RequiresTools({"mkfs.xfs", "mkfs.btrfs"})
class FilesystemMinimumTest extends DriverFixture {

    @ParameterizedTest(name = "{0}")
    @CsvSource({"xfs, 300", "btrfs, 128"})
    void aVolumeAskedSmallerThanItsFilesystemIsMadeAtTheMinimumAndStages(String fsType, long minimumMib)
            throws IOException {
        String id = driver.create("small-" + fsType, 64 * MIB, mount(fsType)).getVolumeId();

        assertThat(driver.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntries(0)
                .getVolume().getCapacityBytes()).isEqualTo(minimumMib * MIB);
        Kubelet.Published fs = kubelet.stageAndPublish(id, mount(fsType), "app-0");
        assertThat(MountInfo.at(fs.staging())).hasValueSatisfying(m -> assertThat(m.fsType()).isEqualTo(fsType));
        kubelet.takeDown(fs);
    }

    @Test
    void aLimitBelowTheFilesystemsMinimumIsOutOfRangeNamingTheMinimumAndMakesNothing() {
        assertFails(() -> driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("tiny-xfs")
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(64 * MIB).setLimitBytes(200 * MIB))
                        .addVolumeCapabilities(mount("xfs")).build()),
                Status.Code.OUT_OF_RANGE, "xfs", "300.0 MiB");

        assertThat(driver.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
                .isEmpty();
    }

    @Test
    void aBlockVolumeHasNoFilesystemMinimum() {
        assertThat(driver.create("small-block", 8 * MIB, block()).getCapacityBytes()).isEqualTo(8 * MIB);
    }

    @Test
    void anEphemeralXfsVolumeAskedSmallerIsMadeAtTheMinimum() throws IOException {
        Path target = kubelet.targetFor("inline");
        String kubeletId = "csi-0b1c0a7d5e3a0c5f6a4f2e1d0c9b8a7f6e5d4c3b2a1908f7e6d5c4b3a2918f7e";
        driver.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(kubeletId)
                .setTargetPath(target.toString()).setVolumeCapability(mount("xfs"))
                .putAllVolumeContext(Map.of("csi.storage.k8s.io/ephemeral", "true", "hearth.dev/size", "64Mi"))
                .build());

        assertThat(MountInfo.at(target)).hasValueSatisfying(m -> assertThat(m.fsType()).isEqualTo("xfs"));
        assertThat(FileSystems.statvfs(target).totalBytes()).as("a 300 MiB xfs, not a 64 MiB one").isGreaterThan(200 * MIB);
        driver.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(kubeletId)
                .setTargetPath(target.toString()).build());
    }
}
