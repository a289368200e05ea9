package dev.hearth.driver.metrics;

import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.GrpcServer;
import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.ServerInterceptor;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/** The driver's real gRPC server on 127.0.0.1 with a channel to it, closed as one. */
final class TestGrpc implements AutoCloseable {

    private final ExecutorService executor;
    private final GrpcServer server;
    private final ManagedChannel channel;

    private TestGrpc(ExecutorService executor, GrpcServer server) {
        this.executor = executor;
        this.server = server;
        this.channel = Channels.channelTo(server.endpoint());
    }

    static TestGrpc start(List<ServerInterceptor> interceptors, BindableService... services) throws IOException {
        ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
        try {
            GrpcServer server = GrpcServer.start(new Endpoint.Tcp("127.0.0.1", 0),
                    Arrays.stream(services).map(BindableService::bindService).toList(), interceptors, executor);
            return new TestGrpc(executor, server);
        } catch (IOException | RuntimeException e) {
            executor.shutdownNow();
            throw e;
        }
    }

    ManagedChannel channel() {
        return channel;
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow();
        server.close();
        executor.shutdownNow();
        channel.awaitTermination(5, TimeUnit.SECONDS);
    }
}
