package dev.hearth.driver.server;

import com.google.protobuf.Message;
import dev.hearth.csi.v1.ControllerExpandVolumeRequest;
import dev.hearth.csi.v1.ControllerGetVolumeRequest;
import dev.hearth.csi.v1.ControllerModifyVolumeRequest;
import dev.hearth.csi.v1.ControllerPublishVolumeRequest;
import dev.hearth.csi.v1.ControllerUnpublishVolumeRequest;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateSnapshotResponse;
import dev.hearth.csi.v1.CreateVolumeGroupSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.CreateVolumeResponse;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetMetadataAllocatedRequest;
import dev.hearth.csi.v1.GetSnapshotRequest;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import io.grpc.Status;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One line per finished call, for example {@code method=CreateVolume name=pvc-1
 * volume_id=default_3q... code=OK duration=12.3ms}: the request's names and IDs under their CSI
 * field names, the ID a create minted (from its response), the code and the duration, plus {@code
 * error="..."} when it failed. OK is logged at INFO, a failure at WARNING, INTERNAL and UNKNOWN (a
 * bug or a failure of the node, not of the request) at SEVERE with the cause's stack trace in the
 * same record, unless a tool's refusal explains it all. A call cancelled before its request was
 * complete did nothing, and is logged at FINE. At FINE also each request, with its secrets stripped. Outermost interceptor, so it
 * sees the status the client gets, and the cause {@link ErrorMapping} kept in it.
 */
public final class RequestLogging implements ServerInterceptor {

    private static final Logger LOG = Logger.getLogger(RequestLogging.class.getName());

    private final SecretStripper stripper = new SecretStripper();

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Rpc rpc = new Rpc(call.getMethodDescriptor().getBareMethodName(), System.nanoTime());
        ServerCall<Q, R> logged = new SimpleForwardingServerCall<>(call) {
            @Override
            public void sendMessage(R message) {
                rpc.minted = minted(message);
                super.sendMessage(message);
            }

            @Override
            public void close(Status status, Metadata trailers) {
                // Logged before the answer leaves, so the line exists once the client has it.
                rpc.finish(status);
                super.close(status, trailers);
            }
        };
        return new SimpleForwardingServerCallListener<>(next.startCall(logged, headers)) {
            @Override
            public void onMessage(Q message) {
                if (message instanceof Message request) {
                    rpc.ids = idsOf(request);
                    if (LOG.isLoggable(Level.FINE)) {
                        LOG.fine("method=" + rpc.method + " request={" + stripper.toText(request) + "}");
                    }
                }
                super.onMessage(message);
            }

            @Override
            public void onHalfClose() {
                rpc.handled = true; // a unary call's handler runs in this callback
                super.onHalfClose();
            }

            @Override
            public void onCancel() {
                if (rpc.handled) {
                    rpc.finish(Status.CANCELLED.withDescription("cancelled by the client"));
                } else {
                    // Nothing ran: a client that opens and resets streams by the thousand (HTTP/2
                    // rapid reset) would otherwise write a warning for each.
                    rpc.finish(Status.CANCELLED.withDescription("cancelled by the client before its request was "
                            + "complete; nothing was done"), Level.FINE);
                }
                super.onCancel();
            }
        };
    }

    /**
     * {@code name=pvc-1 volume_id=...}: each of the request's ID fields that is set, in the order
     * name, volume_id, source_volume_id, snapshot_id. Read with each message's own getters:
     * protobuf's reflection ({@code getField}) builds a table of accessors per message type by
     * Java reflection the first time, which cost each kind of call ~1.5 ms on its first request.
     * RequestLoggingTest checks the list against the descriptors of every CSI request.
     */
    public static String idsOf(Object request) {
        return switch (request) {
            case CreateVolumeRequest r -> ids(r.getName(), "", "", "");
            case DeleteVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case ControllerPublishVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case ControllerUnpublishVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case ValidateVolumeCapabilitiesRequest r -> ids("", r.getVolumeId(), "", "");
            case ControllerGetVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case ControllerModifyVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case ControllerExpandVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case CreateSnapshotRequest r -> ids(r.getName(), "", r.getSourceVolumeId(), "");
            case DeleteSnapshotRequest r -> ids("", "", "", r.getSnapshotId());
            case GetSnapshotRequest r -> ids("", "", "", r.getSnapshotId());
            case ListSnapshotsRequest r -> ids("", "", r.getSourceVolumeId(), r.getSnapshotId());
            case CreateVolumeGroupSnapshotRequest r -> ids(r.getName(), "", "", "");
            case GetMetadataAllocatedRequest r -> ids("", "", "", r.getSnapshotId());
            case NodeStageVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case NodeUnstageVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case NodePublishVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case NodeUnpublishVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            case NodeGetVolumeStatsRequest r -> ids("", r.getVolumeId(), "", "");
            case NodeExpandVolumeRequest r -> ids("", r.getVolumeId(), "", "");
            default -> "";
        };
    }

    private static String ids(String name, String volumeId, String sourceVolumeId, String snapshotId) {
        StringBuilder ids = new StringBuilder();
        id(ids, "name", name);
        id(ids, "volume_id", volumeId);
        id(ids, "source_volume_id", sourceVolumeId);
        id(ids, "snapshot_id", snapshotId);
        return ids.toString();
    }

    private static void id(StringBuilder ids, String field, String value) {
        if (!value.isEmpty()) {
            ids.append(' ').append(field).append('=').append(value(value));
        }
    }

    /** The ID a create answered with, which its request cannot name: the link from a name to its volume. */
    private static String minted(Object response) {
        return switch (response) {
            case CreateVolumeResponse r when !r.getVolume().getVolumeId().isEmpty() ->
                    " volume_id=" + value(r.getVolume().getVolumeId());
            case CreateSnapshotResponse r when !r.getSnapshot().getSnapshotId().isEmpty() ->
                    " snapshot_id=" + value(r.getSnapshot().getSnapshotId());
            default -> "";
        };
    }

    /** An ID as the line shows it: whole if it is a plain token, else quoted, escaped and cut short like a message. */
    private static String value(String value) {
        boolean plain = value.length() <= Quoted.LIMIT
                && value.chars().allMatch(c -> c > ' ' && c <= '~' && c != '"' && c != '=' && c != '\'');
        return plain ? value : Quoted.of(value);
    }

    /** The level an operator should see a call's line at. */
    static Level levelOf(Status.Code code) {
        return switch (code) {
            case OK -> Level.INFO;
            case INTERNAL, UNKNOWN -> Level.SEVERE;
            default -> Level.WARNING;
        };
    }

    /** One call's facts. The IDs are written by the listener and the call, and read when it closes. */
    private static final class Rpc {

        private final String method;
        private final long started;
        private final AtomicBoolean finished = new AtomicBoolean();
        private volatile String ids = "";
        private volatile String minted = "";
        /** Whether the request was complete and its handler ran (or was about to). */
        private volatile boolean handled;

        Rpc(String method, long started) {
            this.method = method;
            this.started = started;
        }

        void finish(Status status) {
            finish(status, levelOf(status.getCode()));
        }

        void finish(Status status, Level level) {
            if (finished.getAndSet(true)) {
                return;
            }
            double millis = (System.nanoTime() - started) / 1e6;
            StringBuilder line = new StringBuilder("method=").append(method).append(ids).append(minted);
            line.append(" code=").append(status.getCode());
            line.append(String.format(Locale.ROOT, " duration=%.1fms", millis));
            if (!status.isOk()) {
                line.append(" error=").append(LogFormat.quoted(description(status)));
            }
            LOG.log(level, line.toString(), level == Level.SEVERE ? stackWorthy(status.getCause()) : null);
        }

        /**
         * The cause whose stack trace the line carries, if any. Only a failure of the driver itself
         * earns one; a refused request is explained by its error, and so is a tool that ran and said
         * no, whose stderr is in the error and whose stack would only show hearth's way to it.
         */
        private static Throwable stackWorthy(Throwable cause) {
            return cause instanceof StorageException.Failed failed && failed.explainedByTool() ? null : cause;
        }

        private static String description(Status status) {
            if (status.getDescription() != null) {
                return status.getDescription();
            }
            return status.getCause() != null ? status.getCause().toString() : "";
        }
    }
}
