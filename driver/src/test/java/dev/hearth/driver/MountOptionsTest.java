package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.mount;
import static dev.hearth.driver.TestDriver.withMountGroup;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.driver.Kubelet.Published;
import dev.hearth.linux.MountInfo;
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
 * What a volume capability asks of the mount beyond the filesystem: the pod's fsGroup
 * (VOLUME_MOUNT_GROUP) and mount flags, and the requests that must change nothing on the node.
 */
class MountOptionsTest extends DriverFixture {

    private static VolumeCapability withFlag(String flag) {
        return mount("ext4").toBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4").addMountFlags(flag)).build();
    }

    // fsGroup

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aMountGroupGivesTheVolumeRootThatGroupWithGroupWriteAndSetgid() throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        VolumeCapability capability = withMountGroup(mount("ext4"), "1234");

        Published published = kubelet.stageAndPublish(id, capability, "pod-1");

        Path root = published.target();
        assertThat(Files.getAttribute(root, "unix:gid")).isEqualTo(1234);
        assertThat((int) Files.getAttribute(root, "unix:mode") & 02070).as("g+rwx and setgid").isEqualTo(02070);
        Path created = Files.createDirectory(root.resolve("made-by-the-pod"));
        assertThat(Files.getAttribute(created, "unix:gid")).as("inherited through setgid").isEqualTo(1234);
    }

    @ParameterizedTest
    @ValueSource(strings = {"wheel", "-1", "12.5", "99999999999"})
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aMountGroupThatIsNoGroupIdIsInvalidAndLeavesNothingStaged(String group) throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);

        assertFails(() -> kubelet.stage(id, staging, withMountGroup(mount("ext4"), group)), Code.INVALID_ARGUMENT,
                "volume_mount_group", group);

        assertThat(MountInfo.at(staging)).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    // Mount flags

    @ParameterizedTest
    @ValueSource(strings = {"bind", "rbind", "remount", "nonsense_option=1", "shared"})
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void stagingWithAnInvalidMountFlagIsInvalidAndLeavesNothingMountedOrAttached(String flag) throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);

        assertFails(() -> kubelet.stage(id, staging, withFlag(flag)), Code.INVALID_ARGUMENT, flag);

        assertThat(MountInfo.at(staging)).isEmpty();
        assertThat(TestDriver.mountsUnder(dir.toRealPath())).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aVolumeRefusedForAMountFlagStagesFineWithoutIt() throws IOException {
        String id = driver.create("pvc-1", 64 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor(id);
        assertFails(() -> kubelet.stage(id, staging, withFlag("nonsense_option=1")), Code.INVALID_ARGUMENT);

        kubelet.stage(id, staging, withFlag("noatime"));

        assertThat(MountInfo.at(staging)).get().satisfies(m -> assertThat(m.hasMountOption("noatime")).isTrue());
    }
}
