package dev.hearth.controller;

import com.google.protobuf.Timestamp;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.ListSnapshotsResponse;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Pools;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Snapshots;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The snapshot half of the Controller service: CSI validation and mapping around the pools' snapshots. */
final class SnapshotRpcs {

    private final Pools pools;

    SnapshotRpcs(Pools pools) {
        this.pools = pools;
    }

    dev.hearth.csi.v1.Snapshot create(CreateSnapshotRequest request) {
        if (request.getName().isEmpty()) {
            throw invalid("name is required");
        }
        if (request.getSourceVolumeId().isEmpty()) {
            throw invalid("source_volume_id is required");
        }
        requireNoParameters(request.getParametersMap());
        VolumeId source = pools.existing(request.getSourceVolumeId())
                .orElseThrow(() -> new StorageException.NotFound("source volume "
                        + Quoted.of(request.getSourceVolumeId()) + " does not exist"));
        Pool pool = pools.of(source).orElseThrow();
        Snapshots snapshots = Pools.snapshotsOf(pool, "take snapshots");
        for (Pool other : pools.all()) {
            SnapshotId sameName = SnapshotId.mint(other.name(), request.getName());
            other.snapshots().flatMap(s -> s.find(sameName))
                    .filter(s -> !s.source().equals(source))
                    .ifPresent(s -> {
                        throw new StorageException.Conflict("snapshot " + Quoted.of(request.getName())
                                + " exists already, of volume " + s.source());
                    });
        }
        return toCsi(snapshots.create(request.getName(), source));
    }

    void delete(String snapshotId) {
        if (snapshotId.isEmpty()) {
            throw invalid("snapshot_id is required");
        }
        SnapshotId.parse(snapshotId).ifPresent(id -> pools.byName(id.pool()).flatMap(Pool::snapshots)
                .ifPresent(s -> s.delete(id)));
    }

    ListSnapshotsResponse list(ListSnapshotsRequest request) {
        List<Snapshot> all;
        if (!request.getSnapshotId().isEmpty()) {
            all = SnapshotId.parse(request.getSnapshotId())
                    .flatMap(id -> pools.byName(id.pool()).flatMap(Pool::snapshots).flatMap(s -> s.find(id)))
                    .stream().toList();
        } else {
            all = pools.all().stream().flatMap(p -> p.snapshots().stream()).flatMap(s -> s.list().stream())
                    .sorted(Comparator.comparing(s -> s.id().toString())).toList();
        }
        String source = request.getSourceVolumeId();
        List<Snapshot> matching = all.stream().filter(s -> source.isEmpty() || s.source().toString().equals(source))
                .toList();
        Page<Snapshot> page = Page.of(matching, s -> s.id().toString(), request.getStartingToken(),
                request.getMaxEntries(), token -> SnapshotId.parse(token).isPresent());
        ListSnapshotsResponse.Builder response = ListSnapshotsResponse.newBuilder().setNextToken(page.nextToken());
        page.entries().forEach(s -> response.addEntries(ListSnapshotsResponse.Entry.newBuilder().setSnapshot(toCsi(s))));
        return response.build();
    }

    static dev.hearth.csi.v1.Snapshot toCsi(Snapshot snapshot) {
        return dev.hearth.csi.v1.Snapshot.newBuilder()
                .setSnapshotId(snapshot.id().toString())
                .setSourceVolumeId(snapshot.source().toString())
                .setSizeBytes(snapshot.sizeBytes())
                .setCreationTime(Timestamp.newBuilder().setSeconds(snapshot.createdAt().getEpochSecond())
                        .setNanos(snapshot.createdAt().getNano()))
                .setReadyToUse(snapshot.readyToUse())
                .build();
    }

    /** Snapshots take no class parameters yet; Kubernetes' own metadata keys are accepted and ignored. */
    private static void requireNoParameters(Map<String, String> parameters) {
        Optional<String> unknown = parameters.keySet().stream()
                .filter(k -> !k.startsWith(StorageClassParameters.KUBERNETES))
                .findFirst();
        unknown.ifPresent(key -> {
            throw invalid("unknown snapshot parameter " + Quoted.of(key) + ": hearth's snapshots take no parameters"
                    + " (only the " + StorageClassParameters.KUBERNETES + "* keys Kubernetes adds are accepted)");
        });
    }

    private static RuntimeException invalid(String message) {
        return new StorageException.InvalidArgument(message);
    }
}
