package dev.hearth.driver.bench;

import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.GrpcServer;
import io.grpc.MethodDescriptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.stub.ServerCalls;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;

/**
 * The floor of test/bench/csi's start and RSS rows for a driver on this stack: hearth's own gRPC
 * server ({@link GrpcServer}: grpc-java, its okhttp transport, a unix socket) serving the three CSI services
 * with an empty answer to every call, and nothing else: no pool, no state, no metrics, no logging.
 * What the JVM, grpc-java and protobuf-java cost before any driver code runs. It needs only
 * hearth.jar beside its own classes.
 *
 * <pre>java [JVM flags] -cp hearth.jar:bare.jar dev.hearth.driver.bench.BareServer unix:///path/csi.sock</pre>
 */
public final class BareServer {
    private BareServer() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: BareServer unix:///path/csi.sock");
            System.exit(2);
        }
        GrpcServer.start(Endpoint.parse(args[0]), emptyServices(), List.of(), Executors.newCachedThreadPool());
        // serves until SIGTERM, which ends the JVM normally (and so writes a dynamic archive if asked)
        Thread.currentThread().join();
    }

    /** The CSI services (Identity, Controller, Node), answering every call with an empty response. */
    static List<ServerServiceDefinition> emptyServices() {
        List<ServerServiceDefinition> services = new ArrayList<>();
        for (ServiceDescriptor service : List.of(IdentityGrpc.getServiceDescriptor(),
                ControllerGrpc.getServiceDescriptor(), NodeGrpc.getServiceDescriptor())) {
            var definition = ServerServiceDefinition.builder(service);
            for (MethodDescriptor<?, ?> method : service.getMethods()) {
                definition.addMethod(emptyAnswer(method));
            }
            services.add(definition.build());
        }
        return services;
    }

    /** A handler for METHOD that answers every request with the response type's empty message. */
    private static <Q, R> ServerMethodDefinition<Q, R> emptyAnswer(MethodDescriptor<Q, R> method) {
        @SuppressWarnings("unchecked")
        R empty = ((MethodDescriptor.PrototypeMarshaller<R>) method.getResponseMarshaller()).getMessagePrototype();
        return ServerMethodDefinition.create(method, ServerCalls.asyncUnaryCall((request, answer) -> {
            answer.onNext(empty);
            answer.onCompleted();
        }));
    }
}
