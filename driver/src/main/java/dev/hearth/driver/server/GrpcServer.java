package dev.hearth.driver.server;

import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.okhttp.OkHttpServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import javax.net.ServerSocketFactory;

/**
 * The daemon's gRPC server on one {@link Endpoint}. Handlers run on the executor the caller gives
 * (the driver passes virtual threads).
 *
 * <p>The transport is grpc-okhttp's server: blocking sockets, one thread that accepts and one that
 * reads each connection (a node has a handful: the sidecars and the kubelet), in a pool of this
 * server's own; at most {@link ConnectionLimit#DEFAULT} connections at once. It replaced grpc-netty's (issue 11): for a daemon on every node that answers a few
 * calls a minute, Netty's event loops, buffer pools and native transport cost more than they give.
 * Side by side on the same services (a bare server answering every call empty, image flags): the
 * socket was up in about half the time, and the process held 8-19 MiB less. A unix socket is the
 * JDK's own ({@link UnixServerSocket}); a TCP one is the JDK's ServerSocket.
 */
public final class GrpcServer implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(GrpcServer.class.getName());

    /** How long shutdownNow may take to tear down transports before we stop waiting. */
    private static final Duration FORCED_STOP = Duration.ofSeconds(5);

    /**
     * The most calls one connection may have open at once, which the server announces in its HTTP/2
     * settings (SETTINGS_MAX_CONCURRENT_STREAMS; grpc-java's default is no limit). A client's gRPC
     * holds further calls until one ends, so a provisioner's 100 workers on one connection are
     * served as before; a client that ignores it has the extra streams refused, which gRPC retries.
     * With {@link ConnectionLimit#DEFAULT}, it bounds the calls the driver holds in memory at once.
     */
    static final int MAX_CALLS_PER_CONNECTION = 256;

    /** How long a start waits for the socket to answer its own call before it serves anyway. */
    private static final Duration SELF_CHECK_TIMEOUT = Duration.ofSeconds(10);

    private final Server server;
    private final Endpoint endpoint;
    private final Optional<SocketFile> socketFile;
    private final ExecutorService transport;
    private final CountDownLatch terminated = new CountDownLatch(1);
    private volatile boolean shutdown;

    private GrpcServer(Server server, Endpoint endpoint, Optional<SocketFile> socketFile, ExecutorService transport) {
        this.server = server;
        this.endpoint = endpoint;
        this.socketFile = socketFile;
        this.transport = transport;
    }

    /**
     * Binds and starts serving.
     *
     * @param interceptors applied to every service, outermost first: the first sees each call
     *     before and after all the others
     * @throws IOException when the endpoint cannot be bound, including when another process serves
     *     the socket or a file that is not a socket sits at its path
     */
    public static GrpcServer start(
            Endpoint endpoint,
            List<ServerServiceDefinition> services,
            List<ServerInterceptor> interceptors,
            Executor executor)
            throws IOException {
        return start(endpoint, services, interceptors, executor, ConnectionLimit.DEFAULT, ConnectionLimit.SILENCE);
    }

    /**
     * As {@link #start(Endpoint, List, List, Executor)}, with at most {@code maxConnections} open at
     * once, and a connection closed if it says nothing for {@code silence}.
     */
    static GrpcServer start(
            Endpoint endpoint,
            List<ServerServiceDefinition> services,
            List<ServerInterceptor> interceptors,
            Executor executor,
            int maxConnections,
            Duration silence)
            throws IOException {
        Objects.requireNonNull(executor, "executor");
        ConnectionLimit limit = new ConnectionLimit(maxConnections, endpoint, silence);
        return switch (endpoint) {
            case Endpoint.Unix unix -> startUnix(unix, services, interceptors, executor, limit);
            case Endpoint.Tcp tcp -> startTcp(tcp, services, interceptors, executor, limit);
        };
    }

    private static GrpcServer startUnix(
            Endpoint.Unix unix,
            List<ServerServiceDefinition> services,
            List<ServerInterceptor> interceptors,
            Executor executor,
            ConnectionLimit limit)
            throws IOException {
        SocketFile socket = new SocketFile(unix.path());
        socket.prepare();
        ExecutorService transport = transportThreads();
        try {
            Server server = build(
                            UnixDomainSocketAddress.of(socket.bindPath()),
                            new Accepting.UnixFactory(limit),
                            transport,
                            services,
                            interceptors,
                            executor)
                    .build();
            try {
                socket.bind(server::start);
                check(socket.bindPath());
                socket.publish();
            } catch (IOException | RuntimeException e) {
                // Bound but not made private, or not under its name: nobody may use it.
                server.shutdownNow();
                socket.deleteHidden();
                throw e;
            }
            LOG.info(() -> "serving on " + unix);
            return new GrpcServer(server, unix, Optional.of(socket), transport);
        } catch (IOException | RuntimeException e) {
            transport.shutdownNow();
            throw e;
        }
    }

    /**
     * Makes one call to the socket under its hidden name ({@link SelfCheck}), so that the first
     * connection a sidecar makes does not run the transport's code cold. A server that does not
     * answer it is published anyway, with a warning: its clients will tell the rest.
     */
    private static void check(Path socket) {
        long started = System.nanoTime();
        try {
            SelfCheck.run(socket, SELF_CHECK_TIMEOUT);
            LOG.fine(() -> String.format("answered its own call in %.1f ms", (System.nanoTime() - started) / 1e6));
        } catch (IOException e) {
            LOG.warning(() -> "the socket did not answer its own call (" + e.getMessage() + "); serving anyway");
        }
    }

    private static GrpcServer startTcp(
            Endpoint.Tcp tcp,
            List<ServerServiceDefinition> services,
            List<ServerInterceptor> interceptors,
            Executor executor,
            ConnectionLimit limit)
            throws IOException {
        ExecutorService transport = transportThreads();
        try {
            Server server = build(
                            new InetSocketAddress(tcp.host(), tcp.port()),
                            new Accepting.TcpFactory(limit),
                            transport,
                            services,
                            interceptors,
                            executor)
                    .build()
                    .start();
            Endpoint bound = new Endpoint.Tcp(tcp.host(), server.getPort());
            LOG.info(() -> "serving on " + bound);
            return new GrpcServer(server, bound, Optional.empty(), transport);
        } catch (IOException | RuntimeException e) {
            transport.shutdownNow();
            throw e;
        }
    }

    private static OkHttpServerBuilder build(
            SocketAddress address,
            ServerSocketFactory sockets,
            Executor transport,
            List<ServerServiceDefinition> services,
            List<ServerInterceptor> interceptors,
            Executor executor) {
        OkHttpServerBuilder builder = OkHttpServerBuilder.forPort(address, InsecureServerCredentials.create())
                .socketFactory(sockets)
                .transportExecutor(transport)
                .maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION)
                .executor(executor);
        services.forEach(builder::addService);
        // ServerBuilder.intercept runs the last added first; callers list the outermost first.
        interceptors.reversed().forEach(builder::intercept);
        return builder;
    }

    /**
     * The transport's threads: the accept loop and one reader per connection, each blocked in a
     * read nearly all the time, and the short tasks that write answers. Platform threads, not
     * virtual ones: a handler that sits in a long native call (an ioctl, a mount) holds a virtual
     * thread's carrier, and the transport must go on reading and answering meanwhile.
     */
    private static ExecutorService transportThreads() {
        return Executors.newCachedThreadPool(Thread.ofPlatform().name("hearth-grpc-io-", 0).daemon().factory());
    }

    /** The endpoint served; for TCP with port 0, the port actually bound. */
    public Endpoint endpoint() {
        return endpoint;
    }

    /** Whether {@link #shutdown} has begun; from then on no new call is accepted. */
    public boolean isShutdown() {
        return shutdown;
    }

    /**
     * Stops accepting calls at once, lets the calls in flight finish until {@code grace} has passed,
     * then cancels the rest; removes the socket file. Returns once the server has stopped. Calling
     * it again (say, from the signal handler and from main) waits for the first call to finish.
     */
    public synchronized void shutdown(Duration grace) {
        if (terminated.getCount() == 0) {
            return;
        }
        LOG.info(() -> "shutting down " + endpoint + ", grace " + grace);
        try {
            server.shutdown();
            // The listener is closed by now: removing the socket lets a successor bind at once.
            socketFile.ifPresent(SocketFile::delete);
            shutdown = true;
            if (!server.awaitTermination(grace.toNanos(), TimeUnit.NANOSECONDS)) {
                if (!grace.isZero()) {
                    LOG.warning(() -> "calls still running after " + grace + ", cancelling them");
                }
                server.shutdownNow();
                if (!server.awaitTermination(FORCED_STOP.toNanos(), TimeUnit.NANOSECONDS)) {
                    LOG.warning(() -> "transports still open after cancelling, giving up on them");
                }
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        } finally {
            shutdown = true;
            transport.shutdown();
            socketFile.ifPresent(SocketFile::delete);
            terminated.countDown();
            LOG.info(() -> "stopped serving on " + endpoint);
        }
    }

    /** Blocks until {@link #shutdown} has finished. */
    public void awaitTermination() throws InterruptedException {
        terminated.await();
    }

    /** Stops without grace: for tests and for error paths where nobody waits for answers. */
    @Override
    public void close() {
        shutdown(Duration.ZERO);
    }
}
