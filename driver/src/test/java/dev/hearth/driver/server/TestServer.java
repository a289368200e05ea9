package dev.hearth.driver.server;

import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.ServerInterceptor;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A real {@link GrpcServer} on a real endpoint with a real channel to it, closed as one. Public for
 * the tests of the interceptors outside this package (metrics).
 */
public final class TestServer implements AutoCloseable {

    /** Both ways the daemon can listen; tests that talk gRPC run over each. */
    enum Transport {
        UNIX,
        TCP;

        Endpoint endpoint(Path dir) {
            return switch (this) {
                case UNIX -> new Endpoint.Unix(dir.resolve("hearth.sock"));
                case TCP -> new Endpoint.Tcp("127.0.0.1", 0);
            };
        }
    }

    private final ExecutorService executor;
    private final GrpcServer server;
    private final ManagedChannel channel;

    private TestServer(ExecutorService executor, GrpcServer server) {
        this.executor = executor;
        this.server = server;
        this.channel = Channels.channelTo(server.endpoint());
    }

    public static TestServer start(Endpoint endpoint, List<ServerInterceptor> interceptors, BindableService... services)
            throws IOException {
        return start(endpoint, interceptors, ConnectionLimit.DEFAULT, ConnectionLimit.SILENCE, services);
    }

    /** A server that keeps at most {@code maxConnections} open at once, and closes a silent one after {@code silence}. */
    static TestServer start(Endpoint endpoint, List<ServerInterceptor> interceptors, int maxConnections,
            Duration silence, BindableService... services) throws IOException {
        ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
        try {
            GrpcServer server = GrpcServer.start(
                    endpoint,
                    Arrays.stream(services).map(BindableService::bindService).toList(),
                    interceptors,
                    executor,
                    maxConnections,
                    silence);
            return new TestServer(executor, server);
        } catch (IOException | RuntimeException e) {
            executor.shutdownNow();
            throw e;
        }
    }

    /** Polls, since the things waited for (netty threads, a flag) have nothing to wait on. */
    static void waitUntil(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within 10 s");
            }
            Thread.sleep(10);
        }
    }

    GrpcServer server() {
        return server;
    }

    public ManagedChannel channel() {
        return channel;
    }

    @Override
    public void close() {
        channel.shutdownNow();
        server.close();
        executor.shutdownNow();
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
            executor.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
