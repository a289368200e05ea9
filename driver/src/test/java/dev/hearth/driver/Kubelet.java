package dev.hearth.driver;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsResponse;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The node calls as the kubelet makes them, on the paths it lays out under the test's directory:
 * it makes the staging directory and a target's parent, the driver the rest.
 */
final class Kubelet {

    /** A volume staged and published into one pod. */
    record Published(String volumeId, Path staging, Path target) {}

    private final TestDriver driver;

    Kubelet(TestDriver driver) {
        this.driver = driver;
    }

    Path stagingFor(String volumeId) throws IOException {
        return Files.createDirectories(driver.dir().resolve("plugins/staging").resolve(volumeId));
    }

    Path targetFor(String pod) throws IOException {
        return Files.createDirectories(driver.dir().resolve("pods").resolve(pod).resolve("volumes")).resolve("vol");
    }

    void stage(String volumeId, Path staging, VolumeCapability capability) {
        driver.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build());
    }

    void publish(String volumeId, Path staging, Path target, VolumeCapability capability) {
        publish(volumeId, staging, target, capability, false);
    }

    /** {@code readOnly} is the request's readonly flag, set when the pod mounts the volume read-only. */
    void publish(String volumeId, Path staging, Path target, VolumeCapability capability, boolean readOnly) {
        driver.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(capability).setReadonly(readOnly).build());
    }

    Published stageAndPublish(String volumeId, VolumeCapability capability, String pod) throws IOException {
        Path staging = stagingFor(volumeId);
        Path target = targetFor(pod);
        stage(volumeId, staging, capability);
        publish(volumeId, staging, target, capability);
        return new Published(volumeId, staging, target);
    }

    void unpublish(String volumeId, Path target) {
        driver.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setTargetPath(target.toString()).build());
    }

    void unstage(String volumeId, Path staging) {
        driver.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setStagingTargetPath(staging.toString()).build());
    }

    /** The pod goes away and the volume with it from this node: unpublish, then unstage. */
    void takeDown(Published published) {
        unpublish(published.volumeId(), published.target());
        unstage(published.volumeId(), published.staging());
    }

    NodeGetVolumeStatsResponse stats(String volumeId, Path volumePath) {
        return driver.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(volumeId)
                .setVolumePath(volumePath.toString()).build());
    }

    /** NodeExpandVolume to {@code requiredBytes}; returns the capacity the driver reports. */
    long expand(String volumeId, Path volumePath, long requiredBytes) {
        return driver.node().nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setVolumePath(volumePath.toString())
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(requiredBytes)).build())
                .getCapacityBytes();
    }
}
