package dev.hearth.driver;

import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Refuses, with FAILED_PRECONDITION and the remedy, the calls that would set something up on a
 * node that lacks what they need: without root, the loop driver or a kernel with LOOP_CONFIGURE,
 * CreateVolume, CreateSnapshot, NodeStage, NodePublish and NodeExpand; without a filesystem's
 * tools, the calls that would make that filesystem. Teardown and reads always pass, so a broken
 * node can still let go of what it holds.
 */
final class HostGate implements ServerInterceptor {

    /** Marks a NodePublishVolume that creates and formats its own volume (CSI ephemeral inline). */
    private static final String EPHEMERAL = "csi.storage.k8s.io/ephemeral";

    private final HostCheck check;

    HostGate(HostCheck check) {
        this.check = check;
    }

    /** Why the node cannot do what {@code request} asks, if it cannot. */
    Optional<String> refusal(Object request) {
        if (!(request instanceof CreateVolumeRequest || request instanceof CreateSnapshotRequest
                || request instanceof NodeStageVolumeRequest || request instanceof NodePublishVolumeRequest
                || request instanceof NodeExpandVolumeRequest)) {
            return Optional.empty();
        }
        List<String> machine = check.machineProblems();
        if (!machine.isEmpty()) {
            return Optional.of("this node cannot serve volumes: " + String.join("; ", machine));
        }
        return formatted(request).flatMap(this::typeOf).flatMap(check::unavailable);
    }

    /** The mount capabilities of a request that may make a filesystem. */
    private static Optional<VolumeCapability> formatted(Object request) {
        Stream<VolumeCapability> capabilities = switch (request) {
            case CreateVolumeRequest create -> create.getVolumeCapabilitiesList().stream();
            case NodeStageVolumeRequest stage -> Stream.of(stage.getVolumeCapability());
            case NodePublishVolumeRequest publish when "true".equals(publish.getVolumeContextMap().get(EPHEMERAL)) ->
                    Stream.of(publish.getVolumeCapability());
            default -> Stream.empty();
        };
        return capabilities.filter(VolumeCapability::hasMount).findFirst();
    }

    /** An empty fs_type is the default's, judged by {@link HostCheck}; an unknown one is the service's to refuse. */
    private Optional<FilesystemType> typeOf(VolumeCapability capability) {
        String name = capability.getMount().getFsType();
        try {
            return Optional.of(name.isBlank() ? check.defaultType() : FilesystemType.parse(name));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
            ServerCallHandler<Q, R> next) {
        ServerCall.Listener<Q> listener = next.startCall(call, headers);
        return new SimpleForwardingServerCallListener<>(listener) {
            // Listener callbacks of one call never overlap, so a plain field is enough.
            private boolean refused;

            @Override
            public void onMessage(Q message) {
                if (refused) {
                    return;
                }
                Optional<String> reason = refusal(message);
                if (reason.isPresent()) {
                    refused = true;
                    call.close(Status.FAILED_PRECONDITION.withDescription(reason.get()), new Metadata());
                    return;
                }
                super.onMessage(message);
            }

            @Override
            public void onHalfClose() {
                if (!refused) {
                    super.onHalfClose();
                }
            }

            @Override
            public void onReady() {
                if (!refused) {
                    super.onReady();
                }
            }
        };
    }
}
