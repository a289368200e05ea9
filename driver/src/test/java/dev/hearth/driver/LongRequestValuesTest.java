package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.fromSnapshot;
import static dev.hearth.driver.TestDriver.fromVolume;
import static dev.hearth.driver.TestDriver.mount;
import static dev.hearth.driver.TestDriver.withMountGroup;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.linux.testing.RequiresRoot;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A request value of 70,000 characters (an ID, a name, a path, a parameter) never comes back whole
 * in the status: a client with grpc-java's default limit on metadata (8 KiB) must get the status
 * the CSI spec gives, with a message that names the value by a short prefix and its length, and
 * not a transport error about headers too large.
 */
class LongRequestValuesTest extends DriverFixture {

    private static final String LONG = "v".repeat(70_000);
    /** What a message shows of {@link #LONG}. */
    private static final String SHOWN = "vvvvvvvv…' (70000 chars)";

    /** One call with a long value in it, given a real volume and its staging path to make it reach far. */
    @FunctionalInterface
    interface Call {
        void make(Stubs stubs, String volumeId, Path staging) throws IOException;
    }

    record Stubs(ControllerGrpc.ControllerBlockingStub controller, NodeGrpc.NodeBlockingStub node, Kubelet kubelet) {

        void stage(String volumeId, Path staging, VolumeCapability capability) {
            node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(volumeId)
                    .setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build());
        }
    }

    private ManagedChannel channel;

    @BeforeEach
    void connectWithDefaultLimits() {
        channel = Grpc.newChannelBuilder("unix://" + driver.socket(), InsecureChannelCredentials.create())
                .maxInboundMetadataSize(8 * 1024) // grpc-java's default, said out loud
                .build();
    }

    @AfterEach
    void disconnect() throws InterruptedException {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    static Stream<Arguments> calls() {
        VolumeCapability ext4 = mount("ext4");
        return Stream.of(
                call("CreateVolume with a long name that exists with another size", Code.ALREADY_EXISTS,
                        (s, id, staging) -> {
                            s.controller().createVolume(CreateVolumeRequest.newBuilder().setName(LONG)
                                    .setCapacityRange(dev.hearth.csi.v1.CapacityRange.newBuilder()
                                            .setRequiredBytes(16 * MIB)).addVolumeCapabilities(ext4).build());
                            s.controller().createVolume(CreateVolumeRequest.newBuilder().setName(LONG)
                                    .setCapacityRange(dev.hearth.csi.v1.CapacityRange.newBuilder()
                                            .setRequiredBytes(64 * MIB)).addVolumeCapabilities(ext4).build());
                        }),
                call("CreateVolume from a long snapshot ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-2")
                                .addVolumeCapabilities(ext4).setVolumeContentSource(fromSnapshot(LONG)).build())),
                call("CreateVolume from a long volume ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-2")
                                .addVolumeCapabilities(ext4).setVolumeContentSource(fromVolume(LONG)).build())),
                call("CreateVolume with a long parameter key", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-2")
                                .addVolumeCapabilities(ext4).putParameters(LONG, "x").build())),
                call("CreateVolume with a long pool name", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-2")
                                .addVolumeCapabilities(ext4).putParameters("hearth.dev/pool", LONG).build())),
                call("CreateVolume with a long provisioning", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-2")
                                .addVolumeCapabilities(ext4).putParameters("hearth.dev/provisioning", LONG).build())),
                call("CreateVolume with a long fs_type", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.controller().createVolume(CreateVolumeRequest.newBuilder().setName("pvc-2")
                                .addVolumeCapabilities(mount(LONG)).build())),
                call("ValidateVolumeCapabilities of a long ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.controller().validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
                                .setVolumeId(LONG).addVolumeCapabilities(ext4).build())),
                call("ControllerGetVolume of a long ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.controller().controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(LONG)
                                .build())),
                call("ListVolumes from a long token", Code.ABORTED, (s, id, staging) ->
                        s.controller().listVolumes(ListVolumesRequest.newBuilder().setStartingToken(LONG).build())),
                call("ListSnapshots from a long token", Code.ABORTED, (s, id, staging) ->
                        s.controller().listSnapshots(ListSnapshotsRequest.newBuilder().setStartingToken(LONG)
                                .build())),
                call("GetCapacity of a long pool name", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.controller().getCapacity(GetCapacityRequest.newBuilder()
                                .putParameters("hearth.dev/pool", LONG).build())),
                call("CreateSnapshot of a long source ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName("snap-1")
                                .setSourceVolumeId(LONG).build())),
                call("CreateSnapshot with a long parameter key", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName(LONG)
                                .setSourceVolumeId(id).putParameters(LONG, "x").build())),
                call("NodeStageVolume of a long ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.stage(LONG, staging, ext4)),
                call("NodeStageVolume at a long path", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                                .setStagingTargetPath("/" + LONG.substring(1)).setVolumeCapability(ext4).build())),
                call("NodeStageVolume with a long mount flag", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.stage(id, staging, ext4.toBuilder().setMount(ext4.getMount().toBuilder()
                                .addMountFlags("," + LONG.substring(1))).build())),
                call("NodeStageVolume with a long volume_mount_group", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.stage(id, staging, withMountGroup(ext4, LONG))),
                call("NodeUnstageVolume at a long path", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                                .setStagingTargetPath("/" + LONG.substring(1)).build())),
                call("NodePublishVolume of a long ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(LONG)
                                .setStagingTargetPath(staging.toString())
                                .setTargetPath(s.kubelet().targetFor("pod-1").toString())
                                .setVolumeCapability(ext4).build())),
                call("NodePublishVolume at a long path", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                                .setStagingTargetPath(staging.toString()).setTargetPath("/" + LONG.substring(1))
                                .setVolumeCapability(ext4).build())),
                call("NodePublishVolume of an ephemeral volume of a long size", Code.INVALID_ARGUMENT,
                        (s, id, staging) -> s.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                                .setVolumeId("csi-1").setTargetPath(s.kubelet().targetFor("pod-1").toString())
                                .setVolumeCapability(ext4).putVolumeContext("csi.storage.k8s.io/ephemeral", "true")
                                .putVolumeContext("hearth.dev/size", LONG).build())),
                call("NodePublishVolume of an ephemeral volume with a long attribute", Code.INVALID_ARGUMENT,
                        (s, id, staging) -> s.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                                .setVolumeId("csi-1").setTargetPath(s.kubelet().targetFor("pod-1").toString())
                                .setVolumeCapability(ext4).putVolumeContext("csi.storage.k8s.io/ephemeral", "true")
                                .putVolumeContext(LONG, "x").build())),
                call("NodeUnpublishVolume at a long path", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                                .setTargetPath("/" + LONG.substring(1)).build())),
                call("NodeGetVolumeStats of a long ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(LONG)
                                .setVolumePath(staging.toString()).build())),
                call("NodeGetVolumeStats at a long path", Code.INVALID_ARGUMENT, (s, id, staging) ->
                        s.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                                .setVolumePath("/" + LONG.substring(1)).build())),
                call("NodeExpandVolume of a long ID", Code.NOT_FOUND, (s, id, staging) ->
                        s.node().nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(LONG)
                                .setVolumePath(staging.toString()).build())));
    }

    private static Arguments call(String name, Code code, Call call) {
        return Arguments.of(name, code, call);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("calls")
    @RequiresRoot
    void aLongValueGetsTheStatusWithAShortMessageNotATransportError(String name, Code code, Call call)
            throws IOException {
        String id = driver.create("pvc-1", 16 * MIB, mount("ext4")).getVolumeId();
        Stubs stubs = new Stubs(ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS),
                NodeGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS), kubelet);

        Throwable thrown = catchThrowable(() -> call.make(stubs, id, kubelet.stagingFor(id)));

        assertThat(thrown).as(name).isInstanceOf(StatusRuntimeException.class);
        Status status = ((StatusRuntimeException) thrown).getStatus();
        assertThat(status.getCode()).as("%s: %s", name, status).isEqualTo(code);
        assertThat(status.getDescription()).as(name).contains(SHOWN);
        assertThat(status.getDescription().getBytes(StandardCharsets.UTF_8).length).as(name).isLessThan(1024);
    }
}
