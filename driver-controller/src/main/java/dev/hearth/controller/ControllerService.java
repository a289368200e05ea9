package dev.hearth.controller;

import dev.hearth.csi.Topology;
import dev.hearth.csi.VolumeCapabilities;
import dev.hearth.csi.v1.ControllerGetCapabilitiesRequest;
import dev.hearth.csi.v1.ControllerGetCapabilitiesResponse;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.ControllerServiceCapability;
import dev.hearth.csi.v1.ControllerServiceCapability.RPC.Type;
import dev.hearth.csi.v1.CreateVolumeRequest;
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
import dev.hearth.storage.Pools;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * CSI Controller for this node's pools. hearth runs one controller per node (DESIGN §2): it
 * only ever creates volumes here, and says so through each volume's topology.
 */
public final class ControllerService extends ControllerGrpc.ControllerImplBase {

    private final Pools pools;
    private final String nodeId;
    private final ControllerGetCapabilitiesResponse capabilities;

    public ControllerService(Pools pools, String nodeId) {
        this.pools = pools;
        this.nodeId = nodeId;
        ControllerGetCapabilitiesResponse.Builder builder = ControllerGetCapabilitiesResponse.newBuilder();
        for (Type type : List.of(Type.CREATE_DELETE_VOLUME, Type.LIST_VOLUMES, Type.GET_CAPACITY,
                Type.SINGLE_NODE_MULTI_WRITER)) {
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
        if (request.hasVolumeContentSource()) {
            throw invalid("volume_content_source is not supported by this driver version");
        }
        StorageClassParameters parameters = StorageClassParameters.of(request.getParametersMap(), pools);
        var requirements = request.getAccessibilityRequirements();
        if (requirements.getRequisiteCount() > 0 && !Topology.anyNames(requirements.getRequisiteList(), nodeId)) {
            throw new StorageException.Exhausted("accessibility_requirements exclude node " + nodeId
                    + ", the only node this controller provisions on");
        }
        CapacityRange range = new CapacityRange(request.getCapacityRange().getRequiredBytes(),
                request.getCapacityRange().getLimitBytes());
        Pool pool = parameters.pool();
        pools.findByName(request.getName()).filter(v -> !v.id().pool().equals(pool.name())).ifPresent(v -> {
            throw new StorageException.Conflict("volume '" + request.getName() + "' exists already in pool '"
                    + v.id().pool() + "', not '" + pool.name() + "'");
        });
        Volume volume = pool.create(new VolumeRequest(request.getName(), range, parameters.poolParameters()));
        response.onNext(CreateVolumeResponse.newBuilder().setVolume(toCsi(volume)).build());
        response.onCompleted();
    }

    @Override
    public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> response) {
        if (request.getVolumeId().isEmpty()) {
            throw invalid("volume_id is required");
        }
        // An ID this driver never minted names no volume, and deleting nothing succeeds.
        VolumeId.parse(request.getVolumeId()).ifPresent(id -> pools.of(id).ifPresent(pool -> pool.delete(id)));
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
        if (request.getMaxEntries() < 0) {
            throw invalid("max_entries must not be negative: " + request.getMaxEntries());
        }
        String token = request.getStartingToken();
        if (!token.isEmpty() && VolumeId.parse(token).isEmpty()) {
            throw Status.ABORTED.withDescription("starting_token '" + token + "' was not issued by this driver")
                    .asRuntimeException();
        }
        List<Volume> volumes = pools.all().stream()
                .flatMap(p -> p.list().stream())
                .filter(v -> token.isEmpty() || v.id().toString().compareTo(token) >= 0)
                .sorted(Comparator.comparing(v -> v.id().toString()))
                .toList();
        int count = request.getMaxEntries() == 0 ? volumes.size() : Math.min(request.getMaxEntries(), volumes.size());
        ListVolumesResponse.Builder result = ListVolumesResponse.newBuilder();
        for (Volume volume : volumes.subList(0, count)) {
            result.addEntries(ListVolumesResponse.Entry.newBuilder().setVolume(toCsi(volume)));
        }
        if (count < volumes.size()) {
            result.setNextToken(volumes.get(count).id().toString());
        }
        response.onNext(result.build());
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
                .orElseThrow(() -> new StorageException.NotFound("volume " + id + " does not exist"));
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
        if (!wanted.pool().name().equals(volume.id().pool()) || !wanted.poolParameters().equals(volume.parameters())) {
            return Optional.of("volume " + volume.id() + " was made in pool '" + volume.id().pool() + "' with "
                    + volume.parameters() + ", not in pool '" + wanted.pool().name() + "' with "
                    + wanted.poolParameters());
        }
        return Optional.empty();
    }

    private dev.hearth.csi.v1.Volume toCsi(Volume volume) {
        return dev.hearth.csi.v1.Volume.newBuilder()
                .setVolumeId(volume.id().toString())
                .setCapacityBytes(volume.sizeBytes())
                .putVolumeContext(StorageClassParameters.POOL, volume.id().pool())
                .addAccessibleTopology(Topology.of(nodeId))
                .build();
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
        return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
    }
}
