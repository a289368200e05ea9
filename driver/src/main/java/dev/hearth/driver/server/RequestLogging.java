package dev.hearth.driver.server;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One INFO line per finished call, for example {@code method=CreateVolume volume=pvc-1 code=OK
 * duration=12.3ms}, plus {@code error="..."} when it failed. At FINE also each request, with its
 * secrets stripped. Outermost interceptor, so it sees the status the client gets.
 */
public final class RequestLogging implements ServerInterceptor {

    private static final Logger LOG = Logger.getLogger(RequestLogging.class.getName());

    /** Which request field names the volume a call is about, in order of preference. */
    private static final List<String> VOLUME_FIELDS = List.of("volume_id", "name", "snapshot_id", "source_volume_id");

    private final ConcurrentHashMap<Descriptor, List<FieldDescriptor>> volumeFields = new ConcurrentHashMap<>();
    private final SecretStripper stripper = new SecretStripper();

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Rpc rpc = new Rpc(call.getMethodDescriptor().getBareMethodName(), System.nanoTime());
        ServerCall<Q, R> logged = new SimpleForwardingServerCall<>(call) {
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
                    rpc.volume = volumeOf(request);
                    if (LOG.isLoggable(Level.FINE)) {
                        LOG.fine("method=" + rpc.method + " request={" + stripper.toText(request) + "}");
                    }
                }
                super.onMessage(message);
            }

            @Override
            public void onCancel() {
                rpc.finish(Status.CANCELLED.withDescription("cancelled by the client"));
                super.onCancel();
            }
        };
    }

    private Optional<String> volumeOf(Message request) {
        for (FieldDescriptor field : volumeFields.computeIfAbsent(request.getDescriptorForType(), RequestLogging::volumeFieldsOf)) {
            String value = (String) request.getField(field);
            if (!value.isEmpty()) {
                return Optional.of(value);
            }
        }
        return Optional.empty();
    }

    private static List<FieldDescriptor> volumeFieldsOf(Descriptor type) {
        return VOLUME_FIELDS.stream()
                .map(type::findFieldByName)
                .filter(f -> f != null && !f.isRepeated() && f.getJavaType() == FieldDescriptor.JavaType.STRING)
                .toList();
    }

    /** One call's facts. The volume is written by the listener and read when the call closes. */
    private static final class Rpc {

        private final String method;
        private final long started;
        private final AtomicBoolean finished = new AtomicBoolean();
        private volatile Optional<String> volume = Optional.empty();

        Rpc(String method, long started) {
            this.method = method;
            this.started = started;
        }

        void finish(Status status) {
            if (finished.getAndSet(true)) {
                return;
            }
            double millis = (System.nanoTime() - started) / 1e6;
            StringBuilder line = new StringBuilder("method=").append(method);
            volume.ifPresent(v -> line.append(" volume=").append(value(v)));
            line.append(" code=").append(status.getCode());
            line.append(String.format(Locale.ROOT, " duration=%.1fms", millis));
            if (!status.isOk()) {
                line.append(" error=").append(quoted(description(status)));
            }
            LOG.info(line.toString());
        }

        private static String description(Status status) {
            if (status.getDescription() != null) {
                return status.getDescription();
            }
            return status.getCause() != null ? status.getCause().toString() : "";
        }

        private static String value(String value) {
            return value.chars().anyMatch(c -> c <= ' ' || c == '"' || c == '=') ? quoted(value) : value;
        }

        private static String quoted(String text) {
            StringBuilder out = new StringBuilder("\"");
            for (char c : text.toCharArray()) {
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> out.append(c);
                }
            }
            return out.append('"').toString();
        }
    }
}
