package dev.hearth.driver.server;

import com.google.protobuf.Message;
import dev.hearth.csi.v1.ControllerExpandVolumeRequest;
import dev.hearth.csi.v1.ControllerGetCapabilitiesRequest;
import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.ControllerModifyVolumeRequest;
import dev.hearth.csi.v1.ControllerPublishVolumeRequest;
import dev.hearth.csi.v1.ControllerUnpublishVolumeRequest;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.GetPluginCapabilitiesRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.GetSnapshotRequest;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodeGetCapabilitiesRequest;
import dev.hearth.csi.v1.NodeGetInfoRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.VolumeId;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The {@link VolumeLocks} keys a request takes, all together: the volumes and snapshots it reads or
 * changes, and the path a node call mounts on or unmounts from. A volume's key is its
 * {@link VolumeId#key()}, which CreateVolume derives from the name, so a create and every later call
 * on that volume meet; a snapshot's is {@value #SNAPSHOT} and its {@link SnapshotId#key()} likewise;
 * a path's is {@value #PATH} and the path. An ID hearth never minted is its own key. Every request type
 * of the served services has its case here, locked or not, so a new RPC is a decision.
 */
public final class LockKeys {

    /** Puts snapshot keys apart from volume keys. */
    public static final String SNAPSHOT = "snapshot:";

    /** Puts the keys of a node call's staging or target path apart from the others. */
    public static final String PATH = "path:";

    private LockKeys() {}

    /** The keys {@code request} must hold, sorted; none for a request about no volume or snapshot. */
    public static Set<String> of(Message request) {
        return decided(request).orElse(Set.of());
    }

    /** The keys, or empty for a request type no case decides about. */
    static Optional<Set<String>> decided(Message request) {
        Set<String> keys = new TreeSet<>();
        switch (request) {
            case CreateVolumeRequest r -> {
                if (!r.getName().isEmpty()) {
                    keys.add(VolumeId.keyOf(r.getName()));
                }
                // The source is read while the new volume is filled: it must not be deleted meanwhile.
                if (r.hasVolumeContentSource()) {
                    VolumeContentSource source = r.getVolumeContentSource();
                    switch (source.getTypeCase()) {
                        case VOLUME -> addVolume(keys, source.getVolume().getVolumeId());
                        case SNAPSHOT -> addSnapshot(keys, source.getSnapshot().getSnapshotId());
                        case TYPE_NOT_SET -> {}
                    }
                }
            }
            // A snapshot reads its source while it is taken; a second one of the same name would race it.
            case CreateSnapshotRequest r -> {
                addVolume(keys, r.getSourceVolumeId());
                if (!r.getName().isEmpty()) {
                    keys.add(SNAPSHOT + SnapshotId.keyOf(r.getName()));
                }
            }
            case DeleteSnapshotRequest r -> addSnapshot(keys, r.getSnapshotId());
            case DeleteVolumeRequest r -> addVolume(keys, r.getVolumeId());
            case ControllerPublishVolumeRequest r -> addVolume(keys, r.getVolumeId());
            case ControllerUnpublishVolumeRequest r -> addVolume(keys, r.getVolumeId());
            case ValidateVolumeCapabilitiesRequest r -> addVolume(keys, r.getVolumeId());
            case ControllerExpandVolumeRequest r -> addVolume(keys, r.getVolumeId());
            case ControllerGetVolumeRequest r -> addVolume(keys, r.getVolumeId());
            case ControllerModifyVolumeRequest r -> addVolume(keys, r.getVolumeId());
            // The path too: two volumes sent to one path at once would both find it free and stack
            // their mounts there. The kubelet's paths name their volume, so its calls never meet.
            case NodeStageVolumeRequest r -> addVolumeAndPath(keys, r.getVolumeId(), r.getStagingTargetPath());
            case NodeUnstageVolumeRequest r -> addVolumeAndPath(keys, r.getVolumeId(), r.getStagingTargetPath());
            case NodePublishVolumeRequest r -> addVolumeAndPath(keys, r.getVolumeId(), r.getTargetPath());
            case NodeUnpublishVolumeRequest r -> addVolumeAndPath(keys, r.getVolumeId(), r.getTargetPath());
            case NodeExpandVolumeRequest r -> addVolume(keys, r.getVolumeId());
            case NodeGetVolumeStatsRequest r -> addVolume(keys, r.getVolumeId());
            // About no one volume, or only reading what a list would show: never held up by a slow call.
            case GetPluginInfoRequest _, GetPluginCapabilitiesRequest _, ProbeRequest _,
                    ListVolumesRequest _, GetCapacityRequest _, ControllerGetCapabilitiesRequest _,
                    ListSnapshotsRequest _, GetSnapshotRequest _,
                    NodeGetCapabilitiesRequest _, NodeGetInfoRequest _ -> {}
            default -> {
                return Optional.empty();
            }
        }
        return Optional.of(keys);
    }

    /** Whether {@code key} is a snapshot's, and whose: for the message of a busy call. */
    static Optional<String> snapshotOf(String key) {
        return key.startsWith(SNAPSHOT) ? Optional.of(key.substring(SNAPSHOT.length())) : Optional.empty();
    }

    /** Whether {@code key} is a node path's, and which: for the message of a busy call. */
    static Optional<String> pathOf(String key) {
        return key.startsWith(PATH) ? Optional.of(key.substring(PATH.length())) : Optional.empty();
    }

    private static void addVolumeAndPath(Set<String> keys, String id, String path) {
        addVolume(keys, id);
        if (!path.isEmpty()) {
            keys.add(PATH + path);
        }
    }

    private static void addVolume(Set<String> keys, String id) {
        if (!id.isEmpty()) {
            keys.add(VolumeId.parse(id).map(VolumeId::key).orElse(id));
        }
    }

    private static void addSnapshot(Set<String> keys, String id) {
        if (!id.isEmpty()) {
            keys.add(SNAPSHOT + SnapshotId.parse(id).map(SnapshotId::key).orElse(id));
        }
    }
}
