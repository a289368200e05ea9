package dev.hearth.driver;

import dev.hearth.controller.ControllerService;
import dev.hearth.driver.metrics.Metrics;
import dev.hearth.driver.metrics.MetricsAddress;
import dev.hearth.driver.metrics.MetricsServer;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.ErrorMapping;
import dev.hearth.driver.server.GrpcServer;
import dev.hearth.driver.server.HandlerThreads;
import dev.hearth.driver.server.LockKeys;
import dev.hearth.driver.server.RequestLogging;
import dev.hearth.driver.server.UnparseableRequests;
import dev.hearth.driver.server.VolumeLockInterceptor;
import dev.hearth.driver.server.VolumeLocks;
import dev.hearth.identity.IdentityService;
import dev.hearth.linux.Host;
import dev.hearth.node.NodeService;
import dev.hearth.storage.Pool;
import dev.hearth.storage.PoolFeature;
import dev.hearth.storage.Pools;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.device.DevicePool;
import dev.hearth.storage.device.DevicePoolConfig;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.lvm.LvmPool;
import dev.hearth.storage.lvm.LvmPoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Formatter;
import dev.hearth.storage.fs.Grower;
import dev.hearth.storage.mount.FormatJournal;
import dev.hearth.storage.mount.Mounter;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Logger;

/** The one place where hearth is wired together: pools, services, interceptors and the server. */
public final class Driver implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(Driver.class.getName());

    /**
     * Everything a running driver is made from.
     *
     * @param host the machine whose prerequisites Probe, /healthz and {@link HostGate} check
     */
    public record Settings(Endpoint endpoint, String nodeId, String driverName, Path stateDir,
            List<? extends PoolConfig> pools, String defaultPool, long maxVolumes, Optional<MetricsAddress> metricsAddress,
            FilesystemType defaultFsType, Host host) {

        public Settings {
            pools = List.copyOf(pools);
        }

        /** On this machine. */
        public Settings(Endpoint endpoint, String nodeId, String driverName, Path stateDir,
                List<? extends PoolConfig> pools,
                String defaultPool, long maxVolumes, Optional<MetricsAddress> metricsAddress,
                FilesystemType defaultFsType) {
            this(endpoint, nodeId, driverName, stateDir, pools, defaultPool, maxVolumes, metricsAddress, defaultFsType,
                    HostCheck.localHost());
        }
    }

    private final GrpcServer server;
    private final ExecutorService handlers;
    private final Pools pools;
    private final Metrics metrics;
    private final Optional<MetricsServer> metricsServer;
    private final Thread warmUp;

    private Driver(GrpcServer server, ExecutorService handlers, Pools pools, Metrics metrics,
            Optional<MetricsServer> metricsServer, Thread warmUp) {
        this.server = server;
        this.handlers = handlers;
        this.pools = pools;
        this.metrics = metrics;
        this.metricsServer = metricsServer;
        this.warmUp = warmUp;
    }

    public static Driver start(Settings settings) throws IOException {
        List<Pool> opened = new ArrayList<>();
        try {
            for (PoolConfig config : settings.pools()) {
                opened.add(switch (config) {
                    case FilePoolConfig file -> FilePool.open(file);
                    case LvmPoolConfig lvm -> LvmPool.open(lvm);
                    case DevicePoolConfig device -> DevicePool.open(device);
                    default -> throw new IllegalArgumentException("no pool kind " + config.kind());
                });
            }
            return start(settings, new Pools(opened, settings.defaultPool()));
        } catch (IOException | RuntimeException e) {
            opened.forEach(Pool::close);
            throw e;
        }
    }

    /** The driver's state directory and every pool's: no node call's path may lie in them. */
    private static List<Path> ownDirectories(Settings settings, Pools pools) {
        List<Path> own = new java.util.ArrayList<>(List.of(settings.stateDir()));
        pools.all().forEach(pool -> own.addAll(pool.ownDirectories()));
        return own;
    }

    private static Driver start(Settings settings, Pools pools) throws IOException {
        ToolRunner tools = new ToolRunner();
        Grower grower = new Grower(tools);
        FormatJournal journal = new FormatJournal(settings.stateDir().resolve("formatting"));
        for (VolumeId gone : journal.forgetDeleted(id -> mayExist(pools, id))) {
            LOG.info(() -> "dropped the records of " + gone + ", deleted by a DeleteVolume that did not finish");
        }
        Formatter formatter = new Formatter(tools);
        Mounter mounter = new Mounter(formatter, journal, grower, settings.defaultFsType());
        // A loop device a warm-up killed in its rehearsal left over its scratch image: gone before serving.
        try {
            Rehearsal.releaseLeftovers(settings.stateDir());
        } catch (IOException e) { // the warm-up tries again, and serving does not depend on it
            LOG.warning(() -> "could not detach what a warm-up killed in its rehearsal left: " + e.getMessage());
        }
        boolean expansion = pools.anyHas(PoolFeature.EXPANSION);
        UnparseableRequests requests = new UnparseableRequests();
        HostCheck host = new HostCheck(settings.host(), settings.defaultFsType());
        Supplier<Optional<String>> problem = () -> problem(host, pools);
        var services = List.of(
                new IdentityService(settings.driverName(), version(), problem, expansion).bindService(),
                new ControllerService(pools, settings.nodeId(), settings.defaultFsType(), journal::forget)
                        .bindService(),
                new NodeService(settings.nodeId(), settings.maxVolumes(), pools, mounter, grower,
                        settings.stateDir().resolve("ephemeral"), ownDirectories(settings, pools)).bindService())
                .stream().map(requests::lenient).toList();
        Metrics metrics = Metrics.create(version(), settings.nodeId(), pools.all(), p -> p.snapshots().map(s -> s.list().size()).orElse(0),
                problem);
        HostGate gate = new HostGate(host);
        var interceptors = List.of(new RequestLogging(), metrics.interceptor(), requests, gate,
                new VolumeLockInterceptor(new VolumeLocks(), LockKeys::of), new ErrorMapping());
        // Platform threads: a handler waits in native calls, which would hold a virtual thread's carrier.
        ExecutorService handlers = HandlerThreads.create();
        GrpcServer server = null;
        try {
            server = GrpcServer.start(settings.endpoint(), services, interceptors, handlers);
            // After the socket is up, so /healthz never says ok for a driver that does not serve yet.
            Optional<MetricsServer> http = settings.metricsAddress().isEmpty() ? Optional.empty()
                    : Optional.of(metrics.serve(settings.metricsAddress().get()));
            // The first lifecycle's read-only paths, run before a request needs them (the JVM's cold code).
            Thread warmUp = WarmUp.start(pools, mounter, gate, settings.stateDir(),
                    new Rehearsal.Setup(settings.nodeId(), settings.defaultFsType(), formatter, grower),
                    metrics::prepare, HandlerThreads.activity(handlers));
            return new Driver(server, handlers, pools, metrics, http, warmUp);
        } catch (IOException | RuntimeException e) {
            if (server != null) {
                server.close();
            }
            handlers.shutdownNow();
            metrics.close();
            throw e;
        }
    }

    public Optional<MetricsAddress> metricsAddress() {
        return metricsServer.map(MetricsServer::address);
    }

    public Endpoint endpoint() {
        return server.endpoint();
    }

    /** Stops taking calls, lets running ones finish within {@code grace}, then stops. */
    public void shutdown(Duration grace) {
        long deadline = System.nanoTime() + grace.toNanos();
        server.shutdown(grace);
        // The server is done once its connections are: a call whose client hung up (cancelled) may
        // still be at work. It has what is left of the grace to finish; past that it is interrupted.
        handlers.shutdown();
        try {
            if (!handlers.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                LOG.warning(() -> "calls still at work after the grace of " + grace + ", interrupting them");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        metricsServer.ifPresent(MetricsServer::close); // before the pools close: the gauges read them
        handlers.shutdownNow();
        WarmUp.stop(warmUp); // what it made in the state directory goes with it
        metrics.close();
        pools.all().forEach(Pool::close);
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    @Override
    public void close() {
        shutdown(Duration.ofSeconds(5));
    }

    /** The build's version, from the resource Maven filters at build time. */
    public static String version() {
        return BuildInfo.read().version();
    }

    /**
     * Whether the volume may still exist: true unless its pool is here and says it is gone. A pool
     * that cannot look (its volume group missing at boot) keeps the volume's records.
     */
    private static boolean mayExist(Pools pools, VolumeId id) {
        try {
            return pools.of(id).map(pool -> pool.find(id).isPresent()).orElse(true);
        } catch (RuntimeException e) {
            return true;
        }
    }

    /** Everything that keeps the driver from serving: the node's lacks, then each pool's. */
    private static Optional<String> problem(HostCheck host, Pools pools) {
        List<String> problems = new ArrayList<>(host.problems());
        pools.all().stream().map(Pool::problem).filter(Objects::nonNull).forEach(problems::add);
        return problems.isEmpty() ? Optional.empty() : Optional.of(String.join("; ", problems));
    }
}
