package dev.hearth.driver;

import static dev.hearth.driver.CsiAssertions.assertFails;
import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static dev.hearth.driver.TestDriver.withMountGroup;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.ListVolumesResponse;
import dev.hearth.csi.v1.NodeGetVolumeStatsResponse;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.Volume;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.csi.v1.VolumeUsage;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * CSI ephemeral inline volumes: the kubelet publishes a volume it never asked the controller for,
 * sized by the pod's attributes, and unpublishing it is its end.
 */
class EphemeralVolumeTest extends DriverFixture {

    /** The kubelet's handle for an inline volume: "csi-" and a SHA-256 of the pod and volume name. */
    private static final String KUBELET_ID = "csi-4b227777d4dd1fc61c6f884f48641d02b4d121d3fd328cb08b5531fcacdabf8a";

    private static Map<String, String> attributes(String size) {
        Map<String, String> attributes = new HashMap<>(Map.of(
                "csi.storage.k8s.io/ephemeral", "true",
                "csi.storage.k8s.io/pod.name", "web-0",
                "csi.storage.k8s.io/pod.namespace", "default",
                "csi.storage.k8s.io/serviceAccount.name", "default"));
        attributes.put("hearth.dev/size", size);
        return attributes;
    }

    private void publish(Path target, Map<String, String> attributes, VolumeCapability capability) {
        publish(KUBELET_ID, target, attributes, capability);
    }

    private void publish(String volumeId, Path target, Map<String, String> attributes, VolumeCapability capability) {
        driver.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setTargetPath(target.toString()).setVolumeCapability(capability)
                .putAllVolumeContext(attributes).build());
    }

    private List<Volume> volumes() {
        return driver.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
                .map(ListVolumesResponse.Entry::getVolume).toList();
    }

    private List<Path> ephemeralStaging() throws IOException {
        Path root = dir.resolve("state/ephemeral");
        if (!Files.exists(root)) {
            return List.of();
        }
        try (Stream<Path> entries = Files.list(root)) {
            return entries.toList();
        }
    }

    /** What a failed or finished ephemeral volume must leave: no volume, image, loop device or mount. */
    private void assertNothingLeft(Path target) throws IOException {
        assertThat(volumes()).isEmpty();
        assertThat(driver.poolFiles()).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
        assertThat(MountInfo.at(target)).isEmpty();
        assertThat(TestDriver.mountsUnder(dir.toRealPath())).isEmpty();
        assertThat(ephemeralStaging()).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void publishMakesMountsAndUnpublishRemovesTheWholeVolume() throws IOException {
        Path target = kubelet.targetFor("web-0");

        publish(target, attributes("64Mi"), mount("ext4"));

        assertThat(MountInfo.at(target)).get().extracting(MountEntry::fsType).isEqualTo("ext4");
        String sha = TestData.writeSynced(target.resolve("scratch.bin"), TestData.random((int) MIB, 3));
        assertThat(TestData.sha256(target.resolve("scratch.bin"))).isEqualTo(sha);
        assertThat(volumes()).singleElement().extracting(Volume::getCapacityBytes).isEqualTo(64 * MIB);
        assertThat(driver.poolLoopDevices()).hasSize(1);

        kubelet.unpublish(KUBELET_ID, target);

        assertThat(target).doesNotExist();
        assertNothingLeft(target);
        kubelet.unpublish(KUBELET_ID, target);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anEphemeralVolumeWhoseKubeletIdLooksLikeOursIsStillRemovedOnUnpublish() throws IOException {
        String oursInShape = dev.hearth.storage.VolumeId.mint("default", "no-such-volume").toString();
        Path target = kubelet.targetFor("odd-0");
        publish(oursInShape, target, attributes("64Mi"), mount("ext4"));

        kubelet.unpublish(oursInShape, target);

        assertThat(target).doesNotExist();
        assertNothingLeft(target);
    }

    /**
     * A client that gives an inline volume the ID of a persistent volume (the kubelet's own are
     * {@code csi-} and hex; found by CsiFuzzTest's teardown): the persistent volume's publish must
     * still come off its target by that ID, and the inline volume off its own. Before, the inline
     * volume claimed every unpublish of that ID and refused the persistent one's target ("not this
     * volume's"), which no retry could end.
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anInlineVolumeWithAPersistentVolumesIdLeavesThatVolumesUnpublishAlone() throws IOException {
        String persistent = driver.create("pv-0", 64 * MIB, mount("ext4")).getVolumeId();
        Kubelet.Published published = kubelet.stageAndPublish(persistent, mount("ext4"), "pv-pod");
        Path inline = kubelet.targetFor("inline-pod");
        publish(persistent, inline, attributes("64Mi"), mount("ext4"));
        assertThat(volumes()).hasSize(2);

        kubelet.unpublish(persistent, published.target());

        assertThat(MountInfo.at(published.target())).isEmpty();
        assertThat(published.target()).doesNotExist();
        assertThat(MountInfo.at(inline)).as("the inline volume, still published").isPresent();
        assertThat(volumes()).hasSize(2);

        kubelet.unpublish(persistent, inline);

        assertThat(MountInfo.at(inline)).isEmpty();
        assertThat(volumes()).extracting(Volume::getVolumeId).containsExactly(persistent);
        kubelet.unstage(persistent, published.staging());
        driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(persistent).build());
        assertNothingLeft(inline);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void publishingTheSameEphemeralVolumeAgainIsTheSameVolume() throws IOException {
        Path target = kubelet.targetFor("web-0");
        publish(target, attributes("64Mi"), mount("ext4"));
        TestData.writeSynced(target.resolve("kept.txt"), "still here");

        publish(target, attributes("64Mi"), mount("ext4"));

        assertThat(volumes()).hasSize(1);
        assertThat(driver.poolLoopDevices()).hasSize(1);
        assertThat(MountInfo.read().stream().filter(m -> m.mountPoint().equals(target))).hasSize(1);
        assertThat(Files.readString(target.resolve("kept.txt"))).isEqualTo("still here");
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void statsOfAnEphemeralVolumeAreAskedForByTheKubeletsId() throws IOException {
        Path target = kubelet.targetFor("web-0");
        publish(target, attributes("64Mi"), mount("ext4"));

        NodeGetVolumeStatsResponse stats = kubelet.stats(KUBELET_ID, target);

        assertThat(stats.getVolumeCondition().getAbnormal()).isFalse();
        assertThat(stats.getUsageList()).filteredOn(u -> u.getUnit() == VolumeUsage.Unit.BYTES).singleElement()
                .extracting(VolumeUsage::getTotal).isEqualTo(FileSystems.statvfs(target).totalBytes());
    }

    @ParameterizedTest
    @ValueSource(strings = {"lots", "1.5Gi", "64Qi", "-64Mi"})
    @RequiresRoot
    void anEphemeralVolumeWithASizeThatIsNoSizeIsInvalidAndLeavesNothing(String size) throws IOException {
        Path target = kubelet.targetFor("web-0");

        assertFails(() -> publish(target, attributes(size), mount("ext4")), Code.INVALID_ARGUMENT,
                "hearth.dev/size", size);

        assertNothingLeft(target);
    }

    @Test
    @RequiresRoot
    void anEphemeralVolumeWithAnAttributeHearthDoesNotKnowIsInvalidAndLeavesNothing() throws IOException {
        Path target = kubelet.targetFor("web-0");
        Map<String, String> attributes = attributes("64Mi");
        attributes.put("hearth.dev/colour", "blue");

        assertFails(() -> publish(target, attributes, mount("ext4")), Code.INVALID_ARGUMENT,
                "unknown volume attribute 'hearth.dev/colour'; accepted: csi.storage.k8s.io/*, hearth.dev/pool, "
                        + "hearth.dev/provisioning, hearth.dev/size");

        assertNothingLeft(target);
    }

    @Test
    @RequiresRoot
    void anEphemeralVolumeInAPoolThisNodeDoesNotHaveIsInvalid() throws IOException {
        Path target = kubelet.targetFor("web-0");
        Map<String, String> attributes = attributes("64Mi");
        attributes.put("hearth.dev/pool", "nope");

        assertFails(() -> publish(target, attributes, mount("ext4")), Code.INVALID_ARGUMENT, "nope");

        assertNothingLeft(target);
    }

    @Test
    @RequiresRoot
    void anEphemeralBlockVolumeIsInvalid() throws IOException {
        Path target = kubelet.targetFor("web-0");

        assertFails(() -> publish(target, attributes("64Mi"), block()), Code.INVALID_ARGUMENT, "block");

        assertNothingLeft(target);
    }

    /**
     * The kubelet's target already has a mount that is not this volume's: the publish fails with
     * the volume made, attached and staged, and must take all that down, but not the other mount.
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aPublishThatFailsHalfWayLeavesNoVolumeAndLeavesAnotherMountAlone() throws IOException {
        Path target = Files.createDirectories(kubelet.targetFor("web-0"));
        Mounts.mount("tmpfs", target, "tmpfs", 0, "size=1m");
        driver.cleanup().add(() -> ScratchFilesystem.unmountIfMounted(target));
        TestData.writeSynced(target.resolve("theirs.txt"), "someone else's");

        assertFails(() -> publish(target, attributes("64Mi"), mount("ext4")), Code.ALREADY_EXISTS,
                target.toString());

        assertThat(MountInfo.at(target)).get().extracting(MountEntry::fsType).isEqualTo("tmpfs");
        assertThat(Files.readString(target.resolve("theirs.txt"))).isEqualTo("someone else's");
        assertThat(volumes()).isEmpty();
        assertThat(driver.poolFiles()).isEmpty();
        assertThat(driver.poolLoopDevices()).isEmpty();
        assertThat(ephemeralStaging()).isEmpty();
    }

    /**
     * A target that is a file with data: the publish makes and stages the volume before it finds it
     * cannot mount there, and must take the volume down again while leaving the file as it was. The
     * kubelet's unpublish after it has nothing of a volume to remove and refuses the file alone.
     * (Found by FuzzCrashIT: the taking down refused the file and kept the volume for good.)
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aPublishOntoAFileWithDataLeavesNoVolumeAndTheFileAsItWas() throws IOException {
        Path target = kubelet.targetFor("web-0");
        Files.writeString(target, "someone's data");

        assertFails(() -> publish(target, attributes("64Mi"), mount("ext4")), Code.INVALID_ARGUMENT,
                "exists and is not a directory");

        assertThat(Files.readString(target)).isEqualTo("someone's data");
        assertNothingLeft(target);
        assertFails(() -> kubelet.unpublish(KUBELET_ID, target), Code.FAILED_PRECONDITION, "a file with data");
        assertThat(Files.readString(target)).isEqualTo("someone's data");
    }

    /** The same with a target directory that holds files, which the mount would have hidden. */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aPublishOntoADirectoryThatHoldsFilesLeavesNoVolumeAndTheFilesAsTheyWere() throws IOException {
        Path target = Files.createDirectories(kubelet.targetFor("web-0"));
        Files.writeString(target.resolve("index.html"), "someone's data");

        assertFails(() -> publish(target, attributes("64Mi"), mount("ext4")), Code.INVALID_ARGUMENT,
                "is a directory that holds files");

        assertThat(Files.readString(target.resolve("index.html"))).isEqualTo("someone's data");
        assertNothingLeft(target);
        assertFails(() -> kubelet.unpublish(KUBELET_ID, target), Code.FAILED_PRECONDITION, "holds files");
        assertThat(Files.readString(target.resolve("index.html"))).isEqualTo("someone's data");
    }

    /**
     * An inline volume whose target someone has since filled with a file of data, nothing mounted:
     * the kubelet's unpublish removes the volume, which holds nothing the target shows, and refuses
     * the file alone. Kept, the volume would be left for good: nobody deletes an inline volume.
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anUnpublishWhoseTargetHoldsAFileWithDataStillRemovesTheVolume() throws IOException {
        Path target = kubelet.targetFor("web-0");
        publish(target, attributes("64Mi"), mount("ext4"));
        Mounts.unmount(target);
        Files.delete(target);
        Files.writeString(target, "someone's data");

        assertFails(() -> kubelet.unpublish(KUBELET_ID, target), Code.FAILED_PRECONDITION, "a file with data");

        assertThat(Files.readString(target)).isEqualTo("someone's data");
        assertNothingLeft(target);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anEphemeralVolumeWithAMountOptionTheFilesystemRejectsLeavesNothing() throws IOException {
        Path target = kubelet.targetFor("web-0");
        VolumeCapability capability = mount("ext4").toBuilder().setMount(VolumeCapability.MountVolume.newBuilder()
                .setFsType("ext4").addMountFlags("nonsense_option=1")).build();

        assertFails(() -> publish(target, attributes("64Mi"), capability), Code.INVALID_ARGUMENT,
                "nonsense_option=1");

        assertNothingLeft(target);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anEphemeralVolumeWithAMountGroupGivesItsRootThatGroup() throws IOException {
        Path target = kubelet.targetFor("web-0");

        publish(target, attributes("64Mi"), withMountGroup(mount("ext4"), "1234"));

        assertThat(Files.getAttribute(target, "unix:gid")).isEqualTo(1234);
        assertThat((int) Files.getAttribute(target, "unix:mode") & 02070).isEqualTo(02070);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anEphemeralVolumeWithAMountGroupThatIsNoGroupIdIsInvalidAndLeavesNothing() throws IOException {
        Path target = kubelet.targetFor("web-0");

        assertFails(() -> publish(target, attributes("64Mi"), withMountGroup(mount("ext4"), "wheel")),
                Code.INVALID_ARGUMENT, "wheel");

        assertNothingLeft(target);
    }

    /** A hearth volume ID that names no volume: how a client other than the kubelet may name an inline volume. */
    private static final String HEARTH_SHAPED = dev.hearth.storage.VolumeId.mint("default", "inline-0").toString();

    /**
     * A publish killed after it made the volume's staging directory and before the volume, or an
     * unpublish killed after it deleted the volume and before the directory: the unpublish the
     * kubelet retries finds the directory and removes it.
     */
    @ParameterizedTest
    @ValueSource(strings = {KUBELET_ID, "default-aaaaaaaaaaaaaaaaaaaaaaaaaa"})
    @RequiresRoot
    void anUnpublishRemovesTheStagingDirectoryAKillLeftWithoutItsVolume(String kubeletId) throws IOException {
        Path staging = Files.createDirectories(dir.resolve("state/ephemeral").resolve(
                dev.hearth.storage.VolumeId.mint("default", "ephemeral:" + kubeletId).toString()));
        Path target = kubelet.targetFor("web-0");

        kubelet.unpublish(kubeletId, target);

        assertThat(staging).doesNotExist();
        assertNothingLeft(target);
    }

    /**
     * A publish killed after it made the volume (not yet staged, a client's ID of hearth's shape,
     * which the driver finds by its staging directory alone): the unpublish removes the volume.
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anUnpublishRemovesTheVolumeOfAPublishKilledBeforeItStagedIt() throws IOException {
        Path target = kubelet.targetFor("web-0");
        publish(HEARTH_SHAPED, target, attributes("64Mi"), mount("ext4"));
        Path staging = dir.resolve("state/ephemeral").resolve(volumes().getFirst().getVolumeId());
        Mounts.unmount(target); // what stays of the publish: the volume, attached, and its staging directory
        Mounts.unmount(staging);

        kubelet.unpublish(HEARTH_SHAPED, target);

        assertThat(staging).doesNotExist();
        assertNothingLeft(target);
    }

    @Test
    @RequiresRoot
    void anEphemeralVolumeThePoolCannotHoldLeavesNoStagingDirectory() throws IOException {
        Path target = kubelet.targetFor("web-0");

        assertFails(() -> publish(target, attributes("64Ti"), mount("ext4")), Code.RESOURCE_EXHAUSTED);

        assertNothingLeft(target);
    }

    /**
     * The pod's inline volume was being formatted when the driver was killed: the format record the
     * kill left must go with the volume when the kubelet unpublishes it, as DeleteVolume drops a
     * persistent volume's, or it would license a format of a volume made again under that ID.
     */
    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void anUnpublishDropsTheFormatRecordAKillLeft() throws IOException {
        Path target = kubelet.targetFor("web-0");
        publish(target, attributes("64Mi"), mount("ext4"));
        String id = volumes().getFirst().getVolumeId();
        Path record = Files.writeString(dir.resolve("state/formatting").resolve(id + ".formatting"), "/dev/loop0\n");

        kubelet.unpublish(KUBELET_ID, target);

        assertThat(record).doesNotExist();
        assertNothingLeft(target);
    }
}
