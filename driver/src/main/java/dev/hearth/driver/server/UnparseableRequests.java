package dev.hearth.driver.server;

import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import com.google.protobuf.UnknownFieldSet;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.MethodDescriptor.PrototypeMarshaller;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import java.io.InputStream;

/**
 * Answers INVALID_ARGUMENT to a request whose bytes are no message of its type (a string field
 * that is not UTF-8, a truncated field). grpc-java parses a request before any interceptor sees
 * it, and answers a parse failure UNKNOWN, "Application error processing RPC", without a word in
 * our log. So {@link #lenient} gives each method a marshaller that turns a failed parse into an
 * empty request marked with the failure, and this interceptor answers such a request itself.
 */
public final class UnparseableRequests implements ServerInterceptor {

    /** The largest field number protobuf allows: no CSI message will ever use it. */
    private static final int MARK = (1 << 29) - 1;

    /** The service with every method's request parsed leniently, as this interceptor expects. */
    public static ServerServiceDefinition lenient(ServerServiceDefinition service) {
        ServerServiceDefinition.Builder builder =
                ServerServiceDefinition.builder(service.getServiceDescriptor().getName());
        for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
            add(builder, method);
        }
        return builder.build();
    }

    private static <Q, R> void add(ServerServiceDefinition.Builder builder, ServerMethodDefinition<Q, R> method) {
        MethodDescriptor<Q, R> descriptor = method.getMethodDescriptor();
        if (!(descriptor.getRequestMarshaller() instanceof PrototypeMarshaller<Q> parser)
                || !(parser.getMessagePrototype() instanceof Message)) {
            builder.addMethod(method);
            return;
        }
        builder.addMethod(descriptor.toBuilder(new Lenient<>(parser), descriptor.getResponseMarshaller()).build(),
                method.getServerCallHandler());
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        return new SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
            private boolean rejected;

            @Override
            public void onMessage(Q message) {
                if (message instanceof Message request && request.getUnknownFields().hasField(MARK)) {
                    rejected = true;
                    String reason = request.getUnknownFields().getField(MARK).getLengthDelimitedList().getFirst()
                            .toStringUtf8();
                    call.close(Status.INVALID_ARGUMENT.withDescription("the request is not a valid "
                            + request.getDescriptorForType().getFullName() + ": " + reason), new Metadata());
                    return;
                }
                super.onMessage(message);
            }

            @Override
            public void onHalfClose() {
                if (!rejected) {
                    super.onHalfClose();
                }
            }

            @Override
            public void onReady() {
                if (!rejected) {
                    super.onReady();
                }
            }
        };
    }

    /** Parses as the generated marshaller does; what it cannot parse becomes an empty, marked request. */
    private record Lenient<Q>(PrototypeMarshaller<Q> parser) implements PrototypeMarshaller<Q> {

        @Override
        public InputStream stream(Q value) {
            return parser.stream(value);
        }

        @Override
        public Q parse(InputStream stream) {
            try {
                return parser.parse(stream);
            } catch (RuntimeException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                UnknownFieldSet mark = UnknownFieldSet.newBuilder().addField(MARK, UnknownFieldSet.Field.newBuilder()
                        .addLengthDelimited(ByteString.copyFromUtf8(String.valueOf(cause.getMessage()))).build())
                        .build();
                @SuppressWarnings("unchecked")
                Q marked = (Q) ((Message) parser.getMessagePrototype()).toBuilder().setUnknownFields(mark).build();
                return marked;
            }
        }

        @Override
        public Q getMessagePrototype() {
            return parser.getMessagePrototype();
        }

        @Override
        public Class<Q> getMessageClass() {
            return parser.getMessageClass();
        }
    }
}
