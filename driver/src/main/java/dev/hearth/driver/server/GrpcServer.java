package dev.hearth.driver.server;

import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.IoHandlerFactory;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The daemon's gRPC server on one {@link Endpoint}. Handlers run on the executor the caller gives
 * (the driver passes virtual threads); netty itself gets one accepting and one I/O thread, because
 * this process runs on every node and has little traffic.
 */
public final class GrpcServer implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(GrpcServer.class.getName());

    /** How long shutdownNow may take to tear down transports before we stop waiting. */
    private static final Duration FORCED_STOP = Duration.ofSeconds(5);

    /** How long a start waits for the socket to answer its own call before it serves anyway. */
    private static final Duration SELF_CHECK_TIMEOUT = Duration.ofSeconds(10);

    private final Server server;
    private final Endpoint endpoint;
    private final Optional<SocketFile> socketFile;
    private final Groups groups;
    private final CountDownLatch terminated = new CountDownLatch(1);
    private volatile boolean shutdown;

    private GrpcServer(Server server, Endpoint endpoint, Optional<SocketFile> socketFile, Groups groups) {
        this.server = server;
        this.endpoint = endpoint;
        this.socketFile = socketFile;
        this.groups = groups;
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
        Objects.requireNonNull(executor, "executor");
        return switch (endpoint) {
            case Endpoint.Unix unix -> startUnix(unix, services, interceptors, executor);
            case Endpoint.Tcp tcp -> startTcp(tcp, services, interceptors, executor);
        };
    }

    private static GrpcServer startUnix(
            Endpoint.Unix unix,
            List<ServerServiceDefinition> services,
            List<ServerInterceptor> interceptors,
            Executor executor)
            throws IOException {
        if (!Epoll.isAvailable()) {
            throw new IOException(
                    "cannot serve " + unix + ": netty's epoll transport is unavailable", Epoll.unavailabilityCause());
        }
        SocketFile socket = new SocketFile(unix.path());
        socket.prepare();
        Groups groups = Groups.of(EpollIoHandler.newFactory());
        try {
            Server server = build(
                            new DomainSocketAddress(socket.bindPath().toString()),
                            EpollServerDomainSocketChannel.class,
                            groups,
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
            return new GrpcServer(server, unix, Optional.of(socket), groups);
        } catch (IOException | RuntimeException e) {
            groups.shutdown();
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
            Executor executor)
            throws IOException {
        Groups groups = Groups.of(NioIoHandler.newFactory());
        try {
            Server server = build(
                            new InetSocketAddress(tcp.host(), tcp.port()),
                            NioServerSocketChannel.class,
                            groups,
                            services,
                            interceptors,
                            executor)
                    .build()
                    .start();
            Endpoint bound = new Endpoint.Tcp(tcp.host(), server.getPort());
            LOG.info(() -> "serving on " + bound);
            return new GrpcServer(server, bound, Optional.empty(), groups);
        } catch (IOException | RuntimeException e) {
            groups.shutdown();
            throw e;
        }
    }

    private static NettyServerBuilder build(
            SocketAddress address,
            Class<? extends ServerChannel> channelType,
            Groups groups,
            List<ServerServiceDefinition> services,
            List<ServerInterceptor> interceptors,
            Executor executor) {
        NettyServerBuilder builder = NettyServerBuilder.forAddress(address)
                .channelType(channelType)
                .bossEventLoopGroup(groups.boss())
                .workerEventLoopGroup(groups.workers())
                .executor(executor);
        if (address instanceof DomainSocketAddress) {
            // grpc asks every accepted connection for TCP keepalive; a unix socket has none, and
            // netty would log a warning for each connection.
            builder.withChildOption(ChannelOption.SO_KEEPALIVE, null);
        }
        services.forEach(builder::addService);
        // ServerBuilder.intercept runs the last added first; callers list the outermost first.
        interceptors.reversed().forEach(builder::intercept);
        return builder;
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
            groups.shutdown();
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

    /** Netty threads owned by one server; a shared default group would outlive it. */
    private record Groups(EventLoopGroup boss, EventLoopGroup workers) {

        private static final Duration STOP_TIMEOUT = Duration.ofSeconds(5);

        static Groups of(IoHandlerFactory handlers) {
            return new Groups(
                    new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("hearth-grpc-boss", true), handlers),
                    new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("hearth-grpc-io", true), handlers));
        }

        /**
         * A handler thread may still be finishing a write when the server reports termination; the
         * quiet period lets netty accept that last task instead of logging a rejected one.
         */
        private static final Duration QUIET_PERIOD = Duration.ofMillis(100);

        void shutdown() {
            var bossDone = boss.shutdownGracefully(0, STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            var workersDone = workers.shutdownGracefully(
                    QUIET_PERIOD.toMillis(), STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            bossDone.awaitUninterruptibly(STOP_TIMEOUT.toMillis());
            workersDone.awaitUninterruptibly(STOP_TIMEOUT.toMillis());
        }
    }
}
