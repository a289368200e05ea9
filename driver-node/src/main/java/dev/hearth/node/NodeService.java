package dev.hearth.node;

import dev.hearth.csi.Topology;
import dev.hearth.csi.VolumeCapabilities;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodeExpandVolumeResponse;
import dev.hearth.csi.v1.NodeGetCapabilitiesRequest;
import dev.hearth.csi.v1.NodeGetCapabilitiesResponse;
import dev.hearth.csi.v1.NodeGetInfoRequest;
import dev.hearth.csi.v1.NodeGetInfoResponse;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsResponse;
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
import dev.hearth.linux.MountInfo;
import dev.hearth.storage.Expansion;
import dev.hearth.storage.Pool;
import dev.hearth.storage.PoolFeature;
import dev.hearth.linux.MountInfo;
import dev.hearth.storage.Pools;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Grower;
import dev.hearth.storage.mount.Mounter;
import dev.hearth.storage.mount.NodePath;
import dev.hearth.storage.mount.VolumeHealth;
import dev.hearth.storage.mount.VolumeStager;
import dev.hearth.storage.mount.VolumeUsage;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * CSI Node: attaches a volume as a block device, mounts it at the staging path (making a
 * filesystem only on an empty device), and binds it into pods. Stateless: the mount table and
 * the loop devices are the record of what is staged and published.
 */
public final class NodeService extends NodeGrpc.NodeImplBase {

    private final Pools pools;
    /** The driver's state directory and its pools' directories: no request's path may lie in them. */
    private final List<Path> own;
    private final Mounter mounter;
    private final VolumeStager stager;
    private final Grower grower;
    private final EphemeralVolumes ephemeral;
    private final NodeGetInfoResponse info;
    private final NodeGetCapabilitiesResponse capabilities;

    /**
     * @param ephemeralStaging where ephemeral inline volumes are staged (under the driver's state directory)
     * @param ownDirectories the driver's state directory and its pools' directories, where no staging or
     *     target path of a request may lie
     */
    public NodeService(String nodeId, long maxVolumes, Pools pools, Mounter mounter, Grower grower,
            Path ephemeralStaging, List<Path> ownDirectories) {
        // With no link in them, as NodePath sees a request's path; as given where not made yet.
        this.own = ownDirectories.stream().map(MountInfo::canonical).distinct().toList();
        this.pools = pools;
        this.mounter = mounter;
        this.grower = grower;
        this.stager = new VolumeStager(pools, mounter);
        this.ephemeral = new EphemeralVolumes(pools, stager, ephemeralStaging);
        this.info = NodeGetInfoResponse.newBuilder()
                .setNodeId(nodeId)
                .setMaxVolumesPerNode(maxVolumes)
                .setAccessibleTopology(Topology.of(nodeId))
                .build();
        NodeGetCapabilitiesResponse.Builder builder = NodeGetCapabilitiesResponse.newBuilder();
        List<NodeServiceCapability.RPC.Type> types = new ArrayList<>(List.of(
                NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME, NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
                NodeServiceCapability.RPC.Type.VOLUME_CONDITION, NodeServiceCapability.RPC.Type.VOLUME_MOUNT_GROUP));
        if (pools.anyHas(PoolFeature.EXPANSION)) {
            types.add(NodeServiceCapability.RPC.Type.EXPAND_VOLUME);
        }
        for (NodeServiceCapability.RPC.Type type : types) {
            builder.addCapabilities(NodeServiceCapability.newBuilder()
                    .setRpc(NodeServiceCapability.RPC.newBuilder().setType(type)));
        }
        this.capabilities = builder.build();
    }

    @Override
    public void nodeStageVolume(NodeStageVolumeRequest request, StreamObserver<NodeStageVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        Path staging = checked(request.getStagingTargetPath(), "staging_target_path");
        VolumeCapability capability = requireCapability(request.hasVolumeCapability(), request.getVolumeCapability());
        Optional<Integer> group = mountGroup(capability); // refused before anything is attached or mounted
        VolumeId volume = existing(request.getVolumeId());
        if (capability.hasMount()) {
            stager.stageFilesystem(volume, staging, filesystem(capability), capability.getMount().getMountFlagsList(),
                    group);
        } else {
            stager.stageBlock(volume, staging);
        }
        response.onNext(NodeStageVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void nodeUnstageVolume(NodeUnstageVolumeRequest request,
            StreamObserver<NodeUnstageVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        Path staging = checked(request.getStagingTargetPath(), "staging_target_path");
        stager.unstage(VolumeId.parse(request.getVolumeId()), staging);
        response.onNext(NodeUnstageVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void nodePublishVolume(NodePublishVolumeRequest request,
            StreamObserver<NodePublishVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        Path target = checked(request.getTargetPath(), "target_path");
        VolumeCapability capability = requireCapability(request.hasVolumeCapability(), request.getVolumeCapability());
        boolean readOnly = request.getReadonly() || VolumeCapabilities.readOnly(capability);
        if (EphemeralVolumes.requested(request.getVolumeContextMap())) {
            Optional<Integer> group = mountGroup(capability); // refused before the volume is made
            ephemeral.publish(request.getVolumeId(), request.getVolumeContextMap(), capability, target, readOnly,
                    filesystem(capability), group);
            response.onNext(NodePublishVolumeResponse.getDefaultInstance());
            response.onCompleted();
            return;
        }
        Path staging = checked(request.getStagingTargetPath(), "staging_target_path");
        Optional<Integer> group = mountGroup(capability); // the same rule as at stage, before anything is done
        VolumeId id = existing(request.getVolumeId());
        if (capability.hasBlock()) {
            stager.publishBlock(id, staging, target, readOnly);
        } else {
            stager.publishFilesystem(id, staging, target, readOnly, group);
        }
        response.onNext(NodePublishVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void nodeUnpublishVolume(NodeUnpublishVolumeRequest request,
            StreamObserver<NodeUnpublishVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        Path target = checked(request.getTargetPath(), "target_path");
        // An ephemeral volume goes with its publish, whatever its kubelet ID looks like.
        if (!ephemeral.unpublish(request.getVolumeId(), target)) {
            stager.unpublish(VolumeId.parse(request.getVolumeId()), target);
        }
        response.onNext(NodeUnpublishVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void nodeExpandVolume(NodeExpandVolumeRequest request, StreamObserver<NodeExpandVolumeResponse> response) {
        requireVolumeId(request.getVolumeId());
        if (request.getVolumePath().isEmpty()) {
            throw new StorageException.InvalidArgument("volume_path is required");
        }
        VolumeId id = resolve(request.getVolumeId());
        Path volumePath = NodePath.check(request.getVolumePath(), "volume_path");
        Pool pool = pools.of(id).orElseThrow();
        Expansion expansion = Pools.expansionOf(pool, "expand volumes");
        var range = new dev.hearth.storage.CapacityRange(request.getCapacityRange().getRequiredBytes(),
                request.getCapacityRange().getLimitBytes());
        // One read of the mount table, before anything grows: the volume's mounts change only under its lock, held here.
        Mounter.Growth growth = mounter.growthAt(pool.attachedDevice(id), volumePath);
        if (growth instanceof Mounter.Growth.Other) {
            throw new StorageException.NotFound("volume " + Quoted.of(request.getVolumeId()) + " is not at "
                    + Quoted.of(request.getVolumePath()) + ": something else is mounted there");
        }
        Volume volume = expansion.expand(id, range);
        if (growth instanceof Mounter.Growth.Filesystem filesystem) {
            grower.growMounted(filesystem.device(), filesystem.writableMount(), filesystem.type());
        }
        response.onNext(NodeExpandVolumeResponse.newBuilder().setCapacityBytes(volume.sizeBytes()).build());
        response.onCompleted();
    }

    @Override
    public void nodeGetVolumeStats(NodeGetVolumeStatsRequest request,
            StreamObserver<NodeGetVolumeStatsResponse> response) {
        requireVolumeId(request.getVolumeId());
        if (request.getVolumePath().isEmpty()) {
            throw new StorageException.InvalidArgument("volume_path is required");
        }
        VolumeId id = resolve(request.getVolumeId());
        if (!Files.exists(NodePath.of(request.getVolumePath(), "volume_path"))) {
            throw new StorageException.NotFound("volume " + Quoted.of(request.getVolumeId()) + " is not published at "
                    + Quoted.of(request.getVolumePath()));
        }
        Path volumePath = NodePath.check(request.getVolumePath(), "volume_path");
        Pool pool = pools.of(id).orElseThrow();
        Optional<Path> device = pool.attachedDevice(id);
        VolumeHealth.AtPath at = VolumeHealth.at(device, volumePath);
        if (at == VolumeHealth.AtPath.OTHER) { // another volume's publish, a host mount: never its usage under this ID
            throw new StorageException.NotFound("volume " + Quoted.of(request.getVolumeId()) + " is not published at "
                    + Quoted.of(request.getVolumePath()) + ": something else is mounted there");
        }
        VolumeCondition condition = VolumeHealth.check(pool.condition(id), device, volumePath, at);
        NodeGetVolumeStatsResponse.Builder stats = NodeGetVolumeStatsResponse.newBuilder()
                .setVolumeCondition(dev.hearth.csi.v1.VolumeCondition.newBuilder()
                        .setAbnormal(condition.abnormal()).setMessage(condition.message()));
        if (at == VolumeHealth.AtPath.VOLUME) {
            switch (VolumeUsage.of(volumePath)) {
                case VolumeUsage.Filesystem fs -> stats
                        .addUsage(usage(dev.hearth.csi.v1.VolumeUsage.Unit.BYTES, fs.totalBytes(), fs.availableBytes(), fs.usedBytes()))
                        .addUsage(usage(dev.hearth.csi.v1.VolumeUsage.Unit.INODES, fs.totalInodes(), fs.freeInodes(), fs.usedInodes()));
                case VolumeUsage.Block block -> stats.addUsage(dev.hearth.csi.v1.VolumeUsage.newBuilder()
                        .setUnit(dev.hearth.csi.v1.VolumeUsage.Unit.BYTES).setTotal(block.totalBytes()));
            }
        }
        response.onNext(stats.build());
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

    /** The volume an ID names: one of ours, or an ephemeral volume the kubelet knows by its own ID. */
    private VolumeId resolve(String volumeId) {
        return pools.existing(volumeId)
                .or(() -> ephemeral.find(volumeId))
                .orElseThrow(() -> new StorageException.NotFound("volume " + Quoted.of(volumeId)
                        + " does not exist on this node"));
    }

    private static dev.hearth.csi.v1.VolumeUsage usage(dev.hearth.csi.v1.VolumeUsage.Unit unit, long total,
            long available, long used) {
        return dev.hearth.csi.v1.VolumeUsage.newBuilder().setUnit(unit).setTotal(total).setAvailable(available)
                .setUsed(used).build();
    }

    /** The fsGroup the kubelet asks the driver to apply (VOLUME_MOUNT_GROUP), if any. */
    private static Optional<Integer> mountGroup(VolumeCapability capability) {
        String group = capability.getMount().getVolumeMountGroup();
        if (group.isEmpty()) {
            return Optional.empty();
        }
        try {
            int gid = Integer.parseInt(group);
            if (gid < 0) {
                throw new NumberFormatException();
            }
            return Optional.of(gid);
        } catch (NumberFormatException e) {
            throw new StorageException.InvalidArgument("volume_mount_group must be a numeric group id, not "
                    + Quoted.of(group));
        }
    }

    /** The ID of a volume that exists here; a pool tells as cheaply as it can (an lvm pool: its device node). */
    private VolumeId existing(String volumeId) {
        return pools.existing(volumeId)
                .orElseThrow(() -> new StorageException.NotFound("volume " + Quoted.of(volumeId)
                        + " does not exist on this node"));
    }

    private static void requireVolumeId(String volumeId) {
        if (volumeId.isEmpty()) {
            throw new StorageException.InvalidArgument("volume_id is required");
        }
    }

    private static VolumeCapability requireCapability(boolean present, VolumeCapability capability) {
        if (!present) {
            throw new StorageException.InvalidArgument("volume_capability is required");
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
            throw new StorageException.InvalidArgument(e.getMessage());
        }
    }

    /**
     * {@link NodePath#check}, and refused if it lies in a directory of hearth's own: a volume mounted
     * over a pool's empty snapshot directory would take the next snapshots into itself, one over the
     * format journal would hide its records, and an unpublish there would remove an empty directory
     * of ours. The kubelet's paths never lie there; a request that names one gets nothing done.
     */
    private Path checked(String raw, String field) {
        Path path = NodePath.check(raw, field);
        for (Path directory : own) {
            if (path.startsWith(directory)) {
                throw new StorageException.InvalidArgument(field + " " + Quoted.of(raw) + " lies in "
                        + Quoted.of(directory.toString()) + ", a directory of hearth's own (its state, or a pool's"
                        + " volumes, records or snapshots); hearth mounts nothing and removes nothing there");
            }
        }
        return path;
    }
}
