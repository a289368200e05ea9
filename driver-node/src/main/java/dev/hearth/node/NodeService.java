package dev.hearth.node;

import dev.hearth.csi.Topology;
import dev.hearth.csi.VolumeCapabilities;
import dev.hearth.csi.v1.NodeGetCapabilitiesRequest;
import dev.hearth.csi.v1.NodeGetCapabilitiesResponse;
import dev.hearth.csi.v1.NodeGetInfoRequest;
import dev.hearth.csi.v1.NodeGetInfoResponse;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodePublishVolumeResponse;
import dev.hearth.csi.v1.NodeServiceCapability;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeResponse;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeResponse;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeResponse;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Pools;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.mount.Mounter;
import dev.hearth.storage.mount.NodePath;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.Optional;

/**
 * CSI Node: attaches a volume as a block device, mounts it at the staging path (making a
 * filesystem only on an empty device), and binds it into pods. Stateless: the mount table and
 * the loop devices are the record of what is staged and published.
 */
public final class NodeService extends NodeGrpc.NodeImplBase {

    private static final System.Logger LOG = System.getLogger(NodeService.class.getName());

    private final Pools pools;
    private final Mounter mounter;
    private final NodeGetInfoResponse info;
    private final NodeGetCapabilitiesResponse capabilities;

    public NodeService(String nodeId, long maxVolumes, Pools pools, Mounter mounter) {
        this.pools = pools;
        this.mounter = mounter;
        this.info = NodeGetInfoResponse.newBuilder()
                .setNodeId(nodeId)
                .setMaxVolumesPerNode(maxVolumes)
                .setAccessibleTopology(Topology.of(nodeId))
                .build();
        this.capabilities = NodeGetCapabilitiesResponse.newBuilder()
                .addCapabilities(NodeServiceCapability.newBuilder().setRpc(NodeServiceCapability.RPC.newBuilder()
                        .setType(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME)))
                .build();
    }

    @Override
    public void nodeStageVolume(NodeStageVolumeRequest request, StreamObserver<NodeStageVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        Path staging = NodePath.check(request.getStagingTargetPath(), "staging_target_path");
        VolumeCapability capability = requireCapability(request.hasVolumeCapability(), request.getVolumeCapability());
        VolumeId id = existingVolume(request.getVolumeId());
        Pool pool = pools.of(id).orElseThrow();
        boolean wasAttached = pool.attachedDevice(id).isPresent();
        boolean wasMounted = capability.hasMount() && mounter.isMounted(staging);
        Path device = pool.attach(id);
        if (capability.hasMount()) {
            try {
                mounter.stageFilesystem(id, device, staging, filesystem(capability),
                        capability.getMount().getMountFlagsList());
            } catch (RuntimeException e) {
                // What this call attached goes again, unless it is now mounted; a mount that was
                // there before (another volume's) is not a reason to keep it.
                if (!wasAttached && (wasMounted || !mounter.isMounted(staging))) {
                    detachQuietly(pool, id);
                }
                throw e;
            }
        }
        response.onNext(NodeStageVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void nodeUnstageVolume(NodeUnstageVolumeRequest request,
            StreamObserver<NodeUnstageVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        Path staging = NodePath.check(request.getStagingTargetPath(), "staging_target_path");
        mounter.unstage(staging);
        VolumeId.parse(request.getVolumeId()).ifPresent(id -> pools.of(id).ifPresent(pool -> pool.detach(id)));
        response.onNext(NodeUnstageVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void nodePublishVolume(NodePublishVolumeRequest request,
            StreamObserver<NodePublishVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        Path target = NodePath.check(request.getTargetPath(), "target_path");
        VolumeCapability capability = requireCapability(request.hasVolumeCapability(), request.getVolumeCapability());
        Path staging = NodePath.check(request.getStagingTargetPath(), "staging_target_path");
        VolumeId id = existingVolume(request.getVolumeId());
        boolean readOnly = request.getReadonly() || VolumeCapabilities.readOnly(capability);
        Path device = pools.of(id).orElseThrow().attachedDevice(id).orElseThrow(() ->
                new StorageException.Precondition("volume " + id + " is not staged on this node (at "
                        + staging + " or elsewhere): its device is not attached"));
        if (capability.hasBlock()) {
            mounter.publishBlock(device, target, readOnly);
        } else {
            mounter.publishFilesystem(id, device, staging, target, readOnly);
        }
        response.onNext(NodePublishVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void nodeUnpublishVolume(NodeUnpublishVolumeRequest request,
            StreamObserver<NodeUnpublishVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        Path target = NodePath.check(request.getTargetPath(), "target_path");
        mounter.unpublish(target);
        response.onNext(NodeUnpublishVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void nodeGetInfo(NodeGetInfoRequest request, StreamObserver<NodeGetInfoResponse> response) {
        response.onNext(info);
        response.onCompleted();
    }

    @Override
    public void nodeGetCapabilities(NodeGetCapabilitiesRequest request,
            StreamObserver<NodeGetCapabilitiesResponse> response) {
        response.onNext(capabilities);
        response.onCompleted();
    }

    private VolumeId existingVolume(String volumeId) {
        return VolumeId.parse(volumeId).filter(id -> pools.find(id).isPresent())
                .orElseThrow(() -> new StorageException.NotFound("volume " + volumeId + " does not exist on this node"));
    }

    private static void requireVolumeId(String volumeId) {
        if (volumeId.isEmpty()) {
            throw Status.INVALID_ARGUMENT.withDescription("volume_id is required").asRuntimeException();
        }
    }

    private static VolumeCapability requireCapability(boolean present, VolumeCapability capability) {
        if (!present) {
            throw Status.INVALID_ARGUMENT.withDescription("volume_capability is required").asRuntimeException();
        }
        VolumeCapabilities.require(capability);
        return capability;
    }

    private static Optional<FilesystemType> filesystem(VolumeCapability capability) {
        String fsType = capability.getMount().getFsType();
        if (fsType.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(FilesystemType.parse(fsType));
        } catch (IllegalArgumentException e) {
            throw Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException();
        }
    }

    private static void detachQuietly(Pool pool, VolumeId id) {
        try {
            pool.detach(id);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not detach " + id + " after a failed stage: " + e.getMessage());
        }
    }
}
