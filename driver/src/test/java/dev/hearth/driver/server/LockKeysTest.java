package dev.hearth.driver.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeGroupSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.VolumeId;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class LockKeysTest {

    /** The RPCs that run unlocked by decision: about no one volume or snapshot, or only reading a list. */
    private static final Set<String> UNLOCKED = Set.of(
            "GetPluginInfo", "GetPluginCapabilities", "Probe",
            "ListVolumes", "GetCapacity", "ControllerGetCapabilities", "ListSnapshots", "GetSnapshot",
            "NodeGetCapabilities", "NodeGetInfo");

    private static CreateVolumeRequest clone(String name, String sourceVolumeId) {
        return CreateVolumeRequest.newBuilder().setName(name).setVolumeContentSource(VolumeContentSource.newBuilder()
                .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(sourceVolumeId))).build();
    }

    private static CreateVolumeRequest restore(String name, String snapshotId) {
        return CreateVolumeRequest.newBuilder().setName(name).setVolumeContentSource(VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId))).build();
    }

    @Test
    void createAndEveryLaterCallOnThatVolumeShareOneLockKey() {
        String id = VolumeId.mint("default", "pvc-1").toString();
        String key = VolumeId.keyOf("pvc-1");

        List<Message> sameVolume = List.of(
                CreateVolumeRequest.newBuilder().setName("pvc-1").build(),
                DeleteVolumeRequest.newBuilder().setVolumeId(id).build(),
                DeleteVolumeRequest.newBuilder().setVolumeId(VolumeId.mint("fast", "pvc-1").toString()).build(),
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(id).build(),
                NodeStageVolumeRequest.newBuilder().setVolumeId(id).build(),
                NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).build(),
                NodePublishVolumeRequest.newBuilder().setVolumeId(id).build(),
                NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).build(),
                NodeExpandVolumeRequest.newBuilder().setVolumeId(id).build(),
                NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id).build(),
                CreateSnapshotRequest.newBuilder().setName("snap-1").setSourceVolumeId(id).build(),
                clone("pvc-2", id));

        assertThat(sameVolume).allSatisfy(request ->
                assertThat(LockKeys.of(request)).as(request.getDescriptorForType().getName()).contains(key));
    }

    @Test
    void differentVolumesAndCallsAboutNoVolumeDoNotShareALock() {
        assertThat(LockKeys.of(CreateVolumeRequest.newBuilder().setName("pvc-2").build()))
                .doesNotContainAnyElementsOf(LockKeys.of(CreateVolumeRequest.newBuilder().setName("pvc-1").build()));
        assertThat(LockKeys.of(CreateVolumeRequest.getDefaultInstance())).isEmpty();
        assertThat(LockKeys.of(DeleteVolumeRequest.getDefaultInstance())).isEmpty();
        assertThat(LockKeys.of(GetCapacityRequest.getDefaultInstance())).isEmpty();
        assertThat(LockKeys.of(ListVolumesRequest.getDefaultInstance())).isEmpty();
        assertThat(LockKeys.of(ProbeRequest.getDefaultInstance())).isEmpty();
        assertThat(LockKeys.of(DeleteVolumeRequest.newBuilder().setVolumeId("garbage").build()))
                .as("an ID hearth never minted is its own key")
                .containsExactly("garbage");
    }

    @Test
    void cloneAndRestoreTakeTheirSourceWithTheirName() {
        String source = VolumeId.mint("default", "pvc-src").toString();
        String snapshot = SnapshotId.mint("default", "snap-1").toString();

        assertThat(LockKeys.of(clone("pvc-2", source)))
                .containsExactlyInAnyOrder(VolumeId.keyOf("pvc-2"), VolumeId.keyOf("pvc-src"));
        assertThat(LockKeys.of(restore("pvc-2", snapshot)))
                .containsExactlyInAnyOrder(VolumeId.keyOf("pvc-2"), "snapshot:" + SnapshotId.keyOf("snap-1"));
        assertThat(LockKeys.of(restore("pvc-2", "foreign")))
                .containsExactlyInAnyOrder(VolumeId.keyOf("pvc-2"), "snapshot:foreign");
    }

    @Test
    void createSnapshotTakesItsSourceAndItsNameWhichDeleteSnapshotMeets() {
        String source = VolumeId.mint("default", "pvc-src").toString();
        String snapshotKey = "snapshot:" + SnapshotId.keyOf("snap-1");

        assertThat(LockKeys.of(CreateSnapshotRequest.newBuilder().setName("snap-1").setSourceVolumeId(source).build()))
                .containsExactlyInAnyOrder(VolumeId.keyOf("pvc-src"), snapshotKey);
        assertThat(LockKeys.of(DeleteSnapshotRequest.newBuilder()
                .setSnapshotId(SnapshotId.mint("fast", "snap-1").toString()).build()))
                .containsExactly(snapshotKey);
    }

    /** Two volumes sent to one path at once would both find it free; the path's key keeps them apart. */
    @Test
    void nodeCallsTakeTheirPathWhichTwoVolumesOnOnePathShare() {
        String first = VolumeId.mint("default", "pvc-1").toString();
        String second = VolumeId.mint("default", "pvc-2").toString();

        assertThat(LockKeys.of(NodeStageVolumeRequest.newBuilder().setVolumeId(first).setStagingTargetPath("/s").build()))
                .containsExactlyInAnyOrder(VolumeId.keyOf("pvc-1"), "path:/s");
        assertThat(LockKeys.of(NodeUnstageVolumeRequest.newBuilder().setVolumeId(second).setStagingTargetPath("/s").build()))
                .containsExactlyInAnyOrder(VolumeId.keyOf("pvc-2"), "path:/s");
        assertThat(LockKeys.of(NodePublishVolumeRequest.newBuilder().setVolumeId(first).setStagingTargetPath("/s")
                        .setTargetPath("/t").build()))
                .as("a publish only reads its staging path")
                .containsExactlyInAnyOrder(VolumeId.keyOf("pvc-1"), "path:/t");
        assertThat(LockKeys.of(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(second).setTargetPath("/t").build()))
                .containsExactlyInAnyOrder(VolumeId.keyOf("pvc-2"), "path:/t");
        assertThat(LockKeys.of(NodeUnpublishVolumeRequest.getDefaultInstance())).isEmpty();
        assertThat(VolumeLockInterceptor.busyMessage("path:/t"))
                .isEqualTo("an operation on path '/t' is already in progress");
    }

    @Test
    void snapshotKeysNeverMeetVolumeKeys() {
        // A volume named like a snapshot's hashed name gets the snapshot's bare key; the prefix keeps them apart.
        assertThat(LockKeys.of(CreateVolumeRequest.newBuilder().setName("snapshot:snap-1").build()))
                .doesNotContainAnyElementsOf(LockKeys.of(DeleteSnapshotRequest.newBuilder()
                        .setSnapshotId(SnapshotId.mint("default", "snap-1").toString()).build()));
        assertThat(LockKeys.of(DeleteVolumeRequest.newBuilder().setVolumeId("x").build()))
                .doesNotContainAnyElementsOf(LockKeys.of(DeleteSnapshotRequest.newBuilder().setSnapshotId("x").build()));
    }

    /**
     * Every RPC of the services hearth serves has a case in {@link LockKeys}, and the ones that take no
     * key are exactly {@link #UNLOCKED}: a new RPC fails here until someone decides what it locks.
     */
    @Test
    void everyServedRpcIsDecidedAndOnlyTheListedOnesRunUnlocked() {
        List<MethodDescriptor<?, ?>> methods = Stream.of(IdentityGrpc.getServiceDescriptor(),
                        ControllerGrpc.getServiceDescriptor(), NodeGrpc.getServiceDescriptor())
                .map(ServiceDescriptor::getMethods)
                .flatMap(c -> c.stream())
                .toList();
        Set<String> unlocked = new TreeSet<>();
        for (MethodDescriptor<?, ?> method : methods) {
            Message request = everyIdSet(prototypeOf(method));
            assertThat(LockKeys.decided(request)).as(method.getBareMethodName() + " has a case").isPresent();
            if (LockKeys.of(request).isEmpty()) {
                unlocked.add(method.getBareMethodName());
            }
        }

        assertThat(methods).hasSizeGreaterThan(20);
        assertThat(unlocked).containsExactlyInAnyOrderElementsOf(UNLOCKED);
    }

    @Test
    void aRequestOfNoServedServiceIsUndecidedAndTakesNothing() {
        Message unserved = CreateVolumeGroupSnapshotRequest.newBuilder().setName("group").build();

        assertThat(LockKeys.decided(unserved)).isEmpty();
        assertThat(LockKeys.of(unserved)).isEmpty();
    }

    private static Message prototypeOf(MethodDescriptor<?, ?> method) {
        return (Message) ((MethodDescriptor.PrototypeMarshaller<?>) method.getRequestMarshaller()).getMessagePrototype();
    }

    /** The request with each of its own string fields set, so any ID it carries is there to lock. */
    private static Message everyIdSet(Message prototype) {
        Message.Builder builder = prototype.toBuilder();
        for (FieldDescriptor field : prototype.getDescriptorForType().getFields()) {
            if (!field.isRepeated() && field.getJavaType() == FieldDescriptor.JavaType.STRING) {
                builder.setField(field, "x");
            }
        }
        return builder.build();
    }
}
