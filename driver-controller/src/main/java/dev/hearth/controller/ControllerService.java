package dev.hearth.controller;

import dev.hearth.csi.Topology;
import dev.hearth.csi.VolumeCapabilities;
import dev.hearth.csi.v1.ControllerGetCapabilitiesRequest;
import dev.hearth.csi.v1.ControllerGetCapabilitiesResponse;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.ControllerServiceCapability;
import dev.hearth.csi.v1.ControllerServiceCapability.RPC.Type;
import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.ControllerGetVolumeResponse;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateSnapshotResponse;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteSnapshotResponse;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.ListSnapshotsResponse;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.csi.v1.CreateVolumeResponse;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeResponse;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.GetCapacityResponse;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.ListVolumesResponse;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Pool;
import dev.hearth.storage.PoolFeature;
import dev.hearth.storage.Pools;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.VolumeSource;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * CSI Controller for this node's pools. hearth runs one controller per node (DESIGN §2): it
 * only ever creates volumes here, and says so through each volume's topology.
 */
public final class ControllerService extends ControllerGrpc.ControllerImplBase {

    private final Consumer<VolumeId> deleted;
    private final Pools pools;
    private final String nodeId;
    /** This node as a volume's accessible topology: a message with a map, built once, not once a volume. */
    private final dev.hearth.csi.v1.Topology topology;
    /** A ListVolumes entry's status of a healthy volume, also built once. */
    private static final ListVolumesResponse.VolumeStatus HEALTHY = listStatus(VolumeCondition.NORMAL);
    private final FilesystemType defaultFsType;
    private final ControllerGetCapabilitiesResponse capabilities;
    private final SnapshotRpcs snapshots;
    private volatile SortedIds lastSorted;

    public ControllerService(Pools pools, String nodeId) {
        this(pools, nodeId, FilesystemType.DEFAULT);
    }

    /** @param defaultFsType what NodeStage makes when a capability names no filesystem */
    public ControllerService(Pools pools, String nodeId, FilesystemType defaultFsType) {
        this(pools, nodeId, defaultFsType, id -> {});
    }

    /**
     * @param defaultFsType what NodeStage makes when a capability names no filesystem
     * @param deleted runs after DeleteVolume has deleted a volume (and again when it is retried):
     *     what the node keeps about the volume beside its pool goes with it
     */
    public ControllerService(Pools pools, String nodeId, FilesystemType defaultFsType, Consumer<VolumeId> deleted) {
        this.pools = pools;
        this.deleted = deleted;
        this.nodeId = nodeId;
        this.topology = Topology.of(nodeId);
        this.defaultFsType = defaultFsType;
        this.snapshots = new SnapshotRpcs(pools);
        ControllerGetCapabilitiesResponse.Builder builder = ControllerGetCapabilitiesResponse.newBuilder();
        List<Type> types = new ArrayList<>(List.of(Type.CREATE_DELETE_VOLUME, Type.LIST_VOLUMES, Type.GET_CAPACITY,
                Type.SINGLE_NODE_MULTI_WRITER, Type.GET_VOLUME, Type.VOLUME_CONDITION));
        // Advertised when any pool can; a request reaching a pool that cannot is refused by that pool's name.
        if (pools.anyHas(PoolFeature.SNAPSHOTS)) {
            types.addAll(List.of(Type.CREATE_DELETE_SNAPSHOT, Type.LIST_SNAPSHOTS));
        }
        if (pools.anyHas(PoolFeature.CLONES)) {
            types.add(Type.CLONE_VOLUME);
        }
        for (Type type : types) {
            builder.addCapabilities(ControllerServiceCapability.newBuilder()
                    .setRpc(ControllerServiceCapability.RPC.newBuilder().setType(type)));
        }
        this.capabilities = builder.build();
    }

    @Override
    public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> response) {
        if (request.getName().isEmpty()) {
            throw invalid("name is required");
        }
        VolumeCapabilities.require(request.getVolumeCapabilitiesList());
        request.getVolumeCapabilitiesList().forEach(ControllerService::requireKnownFilesystem);
        StorageClassParameters parameters = StorageClassParameters.of(request.getParametersMap(), pools);
        Optional<VolumeSource> source = request.hasVolumeContentSource()
                ? Optional.of(contentSource(request.getVolumeContentSource(), parameters.pool()))
                : Optional.empty();
        var requirements = request.getAccessibilityRequirements();
        if (requirements.getRequisiteCount() > 0 && !Topology.anyNames(requirements.getRequisiteList(), nodeId)) {
            throw new StorageException.Exhausted("accessibility_requirements exclude node " + nodeId
                    + ", the only node this controller provisions on");
        }
        CapacityRange range = new CapacityRange(request.getCapacityRange().getRequiredBytes(),
                request.getCapacityRange().getLimitBytes());
        // A restore or clone that names no size takes its source's, which already holds its filesystem.
        if (source.isEmpty() || range.requiredBytes() > 0 || range.limitBytes() > 0) {
            range = fitFilesystems(range, request.getVolumeCapabilitiesList());
        }
        Pool pool = parameters.pool();
        // The target pool answers a repeated name itself (pool.create); the other pools are asked here.
        pools.findByName(request.getName(), pool).ifPresent(v -> {
            throw new StorageException.Conflict("volume " + Quoted.of(request.getName()) + " exists already in pool '"
                    + v.id().pool() + "', not '" + pool.name() + "'");
        });
        Volume volume = pool.create(new VolumeRequest(request.getName(), range, parameters.poolParameters(), source,
                parameters.claim()));
        response.onNext(CreateVolumeResponse.newBuilder().setVolume(toCsi(volume)).build());
        response.onCompleted();
    }

    @Override
    public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> response) {
        if (request.getVolumeId().isEmpty()) {
            throw invalid("volume_id is required");
        }
        // An ID this driver never minted names no volume, and deleting nothing succeeds.
        VolumeId.parse(request.getVolumeId()).ifPresent(id -> pools.of(id).ifPresent(pool -> {
            pool.delete(id);
            deleted.accept(id);
        }));
        response.onNext(DeleteVolumeResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest request,
            StreamObserver<ValidateVolumeCapabilitiesResponse> response) {
        if (request.getVolumeId().isEmpty()) {
            throw invalid("volume_id is required");
        }
        if (request.getVolumeCapabilitiesCount() == 0) {
            throw invalid("volume_capabilities are required");
        }
        Volume volume = findVolume(request.getVolumeId());
        ValidateVolumeCapabilitiesResponse.Builder result = ValidateVolumeCapabilitiesResponse.newBuilder();
        Optional<String> problem = request.getVolumeCapabilitiesList().stream()
                .map(c -> VolumeCapabilities.unsupported(c).or(() -> unknownFilesystem(c)))
                .flatMap(Optional::stream)
                .findFirst()
                .or(() -> parametersProblem(request.getParametersMap(), volume));
        if (problem.isPresent()) {
            result.setMessage(problem.get());
        } else {
            result.setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                    .addAllVolumeCapabilities(request.getVolumeCapabilitiesList())
                    .putAllVolumeContext(request.getVolumeContextMap())
                    .putAllParameters(request.getParametersMap())
                    .putAllMutableParams(request.getMutableParamsMap()));
        }
        response.onNext(result.build());
        response.onCompleted();
    }

    @Override
    public void listVolumes(ListVolumesRequest request, StreamObserver<ListVolumesResponse> response) {
        // Only IDs are sorted and paged (a file pool names its volumes with one directory listing);
        // then the page's volumes alone are read, with one listing per pool (an lvm pool: one lvs).
        // Each ID's string is made once: sorting 1,000 by toString made 20,000 of them a page.
        List<Named> ids = sortedIds();
        Page<Named> page = Page.of(ids, Named::name, request.getStartingToken(),
                request.getMaxEntries(), token -> VolumeId.parse(token).isPresent());
        java.util.Map<String, List<VolumeId>> byPool = page.entries().stream().map(Named::id)
                .collect(java.util.stream.Collectors.groupingBy(VolumeId::pool));
        java.util.Map<VolumeId, Volume> found = new java.util.HashMap<>();
        java.util.Map<String, Pool.Listing> listings = new java.util.HashMap<>();
        byPool.forEach((name, wanted) -> pools.byName(name).ifPresent(pool -> {
            Pool.Listing listing = pool.listing(wanted);
            listings.put(name, listing);
            listing.volumes().forEach(v -> found.put(v.id(), v));
        }));
        ListVolumesResponse.Builder result = ListVolumesResponse.newBuilder().setNextToken(page.nextToken());
        for (Named named : page.entries()) {
            VolumeId id = named.id();
            Volume volume = found.get(id);
            if (volume == null) {
                continue; // deleted since the IDs were listed
            }
            VolumeCondition condition = listings.get(id.pool()).condition().apply(volume);
            result.addEntries(ListVolumesResponse.Entry.newBuilder().setVolume(toCsi(volume))
                    .setStatus(condition.equals(VolumeCondition.NORMAL) ? HEALTHY : listStatus(condition)));
        }
        response.onNext(result.build());
        response.onCompleted();
    }

    private static ListVolumesResponse.VolumeStatus listStatus(VolumeCondition condition) {
        return ListVolumesResponse.VolumeStatus.newBuilder().setVolumeCondition(dev.hearth.csi.v1.VolumeCondition
                .newBuilder().setAbnormal(condition.abnormal()).setMessage(condition.message())).build();
    }

    @Override
    public void controllerGetVolume(ControllerGetVolumeRequest request,
            StreamObserver<ControllerGetVolumeResponse> response) {
        if (request.getVolumeId().isEmpty()) {
            throw invalid("volume_id is required");
        }
        Volume volume = findVolume(request.getVolumeId());
        response.onNext(ControllerGetVolumeResponse.newBuilder().setVolume(toCsi(volume))
                .setStatus(ControllerGetVolumeResponse.VolumeStatus.newBuilder().setVolumeCondition(condition(volume)))
                .build());
        response.onCompleted();
    }

    @Override
    public void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> response) {
        response.onNext(CreateSnapshotResponse.newBuilder().setSnapshot(snapshots.create(request)).build());
        response.onCompleted();
    }

    @Override
    public void deleteSnapshot(DeleteSnapshotRequest request, StreamObserver<DeleteSnapshotResponse> response) {
        snapshots.delete(request.getSnapshotId());
        response.onNext(DeleteSnapshotResponse.getDefaultInstance());
        response.onCompleted();
    }

    @Override
    public void listSnapshots(ListSnapshotsRequest request, StreamObserver<ListSnapshotsResponse> response) {
        response.onNext(snapshots.list(request));
        response.onCompleted();
    }

    @Override
    public void getCapacity(GetCapacityRequest request, StreamObserver<GetCapacityResponse> response) {
        request.getVolumeCapabilitiesList().forEach(VolumeCapabilities::require);
        StorageClassParameters parameters = StorageClassParameters.of(request.getParametersMap(), pools);
        GetCapacityResponse.Builder result = GetCapacityResponse.newBuilder();
        if (!request.hasAccessibleTopology() || Topology.names(request.getAccessibleTopology(), nodeId)) {
            Capacity capacity = parameters.pool().capacity();
            result.setAvailableCapacity(capacity.availableBytes())
                    .setMaximumVolumeSize(com.google.protobuf.Int64Value.of(capacity.maximumVolumeBytes()))
                    .setMinimumVolumeSize(com.google.protobuf.Int64Value.of(capacity.minimumVolumeBytes()));
        }
        response.onNext(result.build());
        response.onCompleted();
    }

    @Override
    public void controllerGetCapabilities(ControllerGetCapabilitiesRequest request,
            StreamObserver<ControllerGetCapabilitiesResponse> response) {
        response.onNext(capabilities);
        response.onCompleted();
    }

    private Volume findVolume(String id) {
        return VolumeId.parse(id).flatMap(pools::find)
                .orElseThrow(() -> new StorageException.NotFound("volume " + Quoted.of(id) + " does not exist"));
    }

    /**
     * CSI confirms parameters only if the volume satisfies them: they must be valid, and a create
     * with them would have made this volume (same pool, same pool settings).
     */
    private Optional<String> parametersProblem(Map<String, String> parameters, Volume volume) {
        if (parameters.isEmpty()) {
            return Optional.empty();
        }
        StorageClassParameters wanted;
        try {
            wanted = StorageClassParameters.of(parameters, pools);
        } catch (StorageException.InvalidArgument e) {
            return Optional.of(e.getMessage());
        }
        Map<String, String> madeWith = volume.parameters();
        if (!wanted.pool().name().equals(volume.id().pool()) || !wanted.poolParameters().equals(madeWith)) {
            return Optional.of("volume " + volume.id() + " was made in pool '" + volume.id().pool() + "' with "
                    + madeWith + ", not in pool '" + wanted.pool().name() + "' with "
                    + wanted.poolParameters());
        }
        return Optional.empty();
    }

    private dev.hearth.csi.v1.Volume toCsi(Volume volume) {
        dev.hearth.csi.v1.Volume.Builder csi = dev.hearth.csi.v1.Volume.newBuilder()
                .setVolumeId(volume.id().toString())
                .setCapacityBytes(volume.sizeBytes())
                .putVolumeContext(StorageClassParameters.POOL, volume.id().pool())
                .addAccessibleTopology(topology);
        volume.source().ifPresent(source -> csi.setContentSource(switch (source) {
            case VolumeSource.FromSnapshot(SnapshotId id) -> VolumeContentSource.newBuilder().setSnapshot(
                    VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(id.toString())).build();
            case VolumeSource.FromVolume(VolumeId id) -> VolumeContentSource.newBuilder().setVolume(
                    VolumeContentSource.VolumeSource.newBuilder().setVolumeId(id.toString())).build();
        }));
        return csi.build();
    }

    /** The source named by a request, which must exist in the pool the new volume goes to. */
    private VolumeSource contentSource(VolumeContentSource source, Pool pool) {
        VolumeSource parsed = switch (source.getTypeCase()) {
            case SNAPSHOT -> new VolumeSource.FromSnapshot(SnapshotId.parse(source.getSnapshot().getSnapshotId())
                    .filter(this::snapshotMayExist)
                    .orElseThrow(() -> new StorageException.NotFound("source snapshot "
                            + Quoted.of(source.getSnapshot().getSnapshotId()) + " does not exist on node " + nodeId
                            + " (a snapshot stays on the node of its volume: restore it there)")));
            case VOLUME -> new VolumeSource.FromVolume(pools.existing(source.getVolume().getVolumeId())
                    .orElseThrow(() -> new StorageException.NotFound("source volume "
                            + Quoted.of(source.getVolume().getVolumeId()) + " does not exist on node " + nodeId
                            + " (a clone is made on the node of its source volume)")));
            case TYPE_NOT_SET -> throw invalid("volume_content_source names neither a snapshot nor a volume");
        };
        String sourcePool = switch (parsed) {
            case VolumeSource.FromSnapshot(SnapshotId id) -> id.pool();
            case VolumeSource.FromVolume(VolumeId id) -> id.pool();
        };
        if (!sourcePool.equals(pool.name())) {
            throw invalid("the source is in pool '" + sourcePool + "' but the new volume would go to pool '"
                    + pool.name() + "'; a restore or clone stays in its source's pool");
        }
        switch (parsed) {
            case VolumeSource.FromSnapshot _ -> Pools.requireFeature(pool, PoolFeature.SNAPSHOTS, "restore snapshots");
            case VolumeSource.FromVolume _ -> Pools.requireFeature(pool, PoolFeature.CLONES, "clone volumes");
        }
        return parsed;
    }

    /**
     * Whether a restore's snapshot is not known to be missing. A pool without snapshots cannot say
     * (one taken before its snapshots were switched off is not its to read); the refusal by the
     * pool's name that follows answers for it.
     */
    private boolean snapshotMayExist(SnapshotId id) {
        return pools.byName(id.pool())
                .map(pool -> pool.snapshots().map(s -> s.find(id).isPresent()).orElse(true))
                .orElse(false);
    }

    private dev.hearth.csi.v1.VolumeCondition condition(Volume volume) {
        VolumeCondition condition = pools.of(volume.id()).orElseThrow().condition(volume.id());
        return dev.hearth.csi.v1.VolumeCondition.newBuilder().setAbnormal(condition.abnormal())
                .setMessage(condition.message()).build();
    }

    /**
     * The range raised to what the largest requested filesystem needs: a volume too small for its
     * mkfs would be created and then fail at every NodeStage.
     */
    private CapacityRange fitFilesystems(CapacityRange range, List<VolumeCapability> capabilities) {
        Optional<FilesystemType> largest = capabilities.stream()
                .filter(VolumeCapability::hasMount)
                .map(c -> c.getMount().getFsType().isBlank() ? defaultFsType : FilesystemType.parse(c.getMount().getFsType()))
                .max(Comparator.comparingLong(FilesystemType::minimumBytes));
        return largest.map(type -> range.atLeast(type.minimumBytes(), "an " + type.kernelName() + " filesystem"))
                .orElse(range);
    }

    private static void requireKnownFilesystem(VolumeCapability capability) {
        unknownFilesystem(capability).ifPresent(reason -> {
            throw invalid(reason);
        });
    }

    private static Optional<String> unknownFilesystem(VolumeCapability capability) {
        if (!capability.hasMount()) {
            return Optional.empty();
        }
        try {
            FilesystemType.parse(capability.getMount().getFsType());
            return Optional.empty();
        } catch (IllegalArgumentException e) {
            return Optional.of(e.getMessage());
        }
    }

    private static RuntimeException invalid(String message) {
        return new StorageException.InvalidArgument(message);
    }

    /** A volume's ID with its string, which orders and pages the listing. */
    private record Named(String name, VolumeId id) {}

    /** The pools' ID lists a sorting was made from (compared by identity), and the sorting. */
    private record SortedIds(List<List<VolumeId>> sources, List<Named> sorted) {}

    /**
     * Every pool's IDs, sorted by name; the last sorting again while every pool hands back the very
     * lists it was made from (a file pool keeps its listing while no record came or went), so a
     * walk through the pages of 1,000 volumes sorts them once, not once a page.
     */
    private List<Named> sortedIds() {
        List<List<VolumeId>> sources = pools.all().stream().map(Pool::ids).toList();
        SortedIds last = lastSorted;
        if (last != null && sameLists(last.sources(), sources)) {
            return last.sorted();
        }
        List<Named> sorted = sources.stream()
                .flatMap(List::stream)
                .map(id -> new Named(id.toString(), id))
                .sorted(Comparator.comparing(Named::name))
                .toList();
        lastSorted = new SortedIds(sources, sorted);
        return sorted;
    }

    private static boolean sameLists(List<List<VolumeId>> a, List<List<VolumeId>> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i) != b.get(i)) {
                return false;
            }
        }
        return true;
    }
}
