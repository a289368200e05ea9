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
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Answers INVALID_ARGUMENT to a request whose bytes are no message of its type (a string field
 * that is not UTF-8, a truncated field). grpc-java parses a request before any interceptor sees
 * it, and answers a parse failure UNKNOWN, "Application error processing RPC", without a word in
 * our log. So {@link #lenient} gives each method a marshaller that turns a failed parse into an
 * empty request marked with the failure, and this interceptor answers such a request itself.
 *
 * <p>The same marshaller counts a large request before it parses it ({@link RequestMemory}): one
 * that would take more of the heap than the large requests in flight leave is not parsed but
 * marked, and answered RESOURCE_EXHAUSTED here; what a parsed one reserved is released when its
 * call ends.
 */
public final class UnparseableRequests implements ServerInterceptor {

    /** The largest field number protobuf allows: no CSI message will ever use it. */
    private static final int MARK = (1 << 29) - 1;
    /** The next one down: marks a request refused for the memory it would take. */
    private static final int TOO_LARGE = MARK - 1;
    /**
     * What the parse on this thread reserved for the message it returned. grpc hands a parsed
     * message to the listeners at once, on the thread that parsed it, so {@link #interceptCall}'s
     * listener takes it over in the same breath.
     */
    private static final ThreadLocal<long[]> PARSED = ThreadLocal.withInitial(() -> new long[1]);

    private final RequestMemory memory;

    /** Large requests together may take a quarter of the heap once parsed. */
    public UnparseableRequests() {
        this(RequestMemory.forThisHeap());
    }

    UnparseableRequests(RequestMemory memory) {
        this.memory = memory;
    }

    /** The service with every method's request parsed leniently, as this interceptor expects. */
    public ServerServiceDefinition lenient(ServerServiceDefinition service) {
        ServerServiceDefinition.Builder builder =
                ServerServiceDefinition.builder(service.getServiceDescriptor().getName());
        for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
            add(builder, method);
        }
        return builder.build();
    }

    private <Q, R> void add(ServerServiceDefinition.Builder builder, ServerMethodDefinition<Q, R> method) {
        MethodDescriptor<Q, R> descriptor = method.getMethodDescriptor();
        if (!(descriptor.getRequestMarshaller() instanceof PrototypeMarshaller<Q> parser)
                || !(parser.getMessagePrototype() instanceof Message)) {
            builder.addMethod(method);
            return;
        }
        builder.addMethod(descriptor.toBuilder(new Lenient<>(parser, memory), descriptor.getResponseMarshaller())
                .build(), method.getServerCallHandler());
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        return new SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
            private boolean rejected;
            private long reserved;

            @Override
            public void onMessage(Q message) {
                long[] parsed = PARSED.get();
                reserved += parsed[0];
                parsed[0] = 0;
                if (message instanceof Message request && request.getUnknownFields().hasField(TOO_LARGE)) {
                    rejected = true;
                    call.close(Status.RESOURCE_EXHAUSTED.withDescription(reason(request, TOO_LARGE)), new Metadata());
                    return;
                }
                if (message instanceof Message request && request.getUnknownFields().hasField(MARK)) {
                    rejected = true;
                    call.close(Status.INVALID_ARGUMENT.withDescription("the request is not a valid "
                            + request.getDescriptorForType().getFullName() + ": " + reason(request, MARK)),
                            new Metadata());
                    return;
                }
                super.onMessage(message);
            }

            @Override
            public void onComplete() {
                release();
                super.onComplete();
            }

            @Override
            public void onCancel() {
                release();
                super.onCancel();
            }

            private void release() {
                memory.release(reserved);
                reserved = 0;
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

    private static String reason(Message request, int mark) {
        return request.getUnknownFields().getField(mark).getLengthDelimitedList().getFirst().toStringUtf8();
    }

    /**
     * Parses as the generated marshaller does; what it cannot parse becomes an empty, marked request,
     * and so does a large one that does not fit in the memory left for large requests.
     */
    private record Lenient<Q>(PrototypeMarshaller<Q> parser, RequestMemory memory) implements PrototypeMarshaller<Q> {

        private static final long MIB = 1 << 20;

        @Override
        public InputStream stream(Q value) {
            return parser.stream(value);
        }

        @Override
        public Q parse(InputStream stream) {
            long[] parsed = PARSED.get();
            if (parsed[0] != 0) { // parsed on this thread, and never handed to a call: the call is gone
                memory.release(parsed[0]);
                parsed[0] = 0;
            }
            int size = available(stream);
            if (size < RequestMemory.SMALL) {
                return parseOrMark(stream);
            }
            Message prototype = (Message) parser.getMessagePrototype();
            String type = prototype.getDescriptorForType().getFullName();
            if (!memory.tryReserve(size)) { // the copy the fields are counted in
                return mark(TOO_LARGE, busy(type, size));
            }
            long held = size; // what this parse holds and gives back, unless the call takes it over
            try {
                byte[] wire = stream.readAllBytes();
                long estimate = Math.max(size, RequestMemory.estimate(wire, prototype.getDescriptorForType()));
                if (estimate > memory.limit()) {
                    return mark(TOO_LARGE, "the " + type + " of " + wire.length + " bytes would take about "
                            + estimate / MIB + " MiB of the driver's memory once parsed; a request may take at most "
                            + memory.limit() / MIB + " MiB");
                }
                if (!memory.tryReserve(estimate - size)) {
                    return mark(TOO_LARGE, busy(type, wire.length));
                }
                held = 0;
                parsed[0] = estimate; // the call's listener takes it over and releases it when the call ends
                return parseOrMark(new ByteArrayInputStream(wire));
            } catch (IOException | RuntimeException e) {
                return mark(MARK, "reading its " + size + " bytes: " + e.getMessage());
            } finally {
                memory.release(held); // an exception or an error included
            }
        }

        private String busy(String type, int size) {
            return "the driver's memory for large requests (" + memory.limit() / MIB + " MiB) is taken by those"
                    + " in flight; retry the " + type + " of " + size + " bytes once they are answered";
        }

        private static int available(InputStream stream) {
            try {
                return stream.available(); // grpc's message streams know their length
            } catch (IOException e) {
                return 0;
            }
        }

        private Q parseOrMark(InputStream stream) {
            try {
                return parser.parse(stream);
            } catch (RuntimeException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                return mark(MARK, String.valueOf(cause.getMessage()));
            }
        }

        private Q mark(int field, String reason) {
            UnknownFieldSet mark = UnknownFieldSet.newBuilder().addField(field, UnknownFieldSet.Field.newBuilder()
                    .addLengthDelimited(ByteString.copyFromUtf8(reason)).build()).build();
            @SuppressWarnings("unchecked")
            Q marked = (Q) ((Message) parser.getMessagePrototype()).toBuilder().setUnknownFields(mark).build();
            return marked;
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
