package dev.hearth.driver.metrics;

import dev.hearth.storage.Pool;
import io.grpc.ServerInterceptor;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

/**
 * The driver's metrics, made once at start: one registry with the pools' gauges, the readiness
 * check, the build, the process and the JVM, and the interceptor that counts calls. Every series
 * carries the node's name as {@code node}, as TopoLVM's do, so that a dashboard tells nodes apart
 * however it is scraped. The HTTP side is started apart ({@link #serve}), once the CSI socket is
 * up, so that {@code /healthz} never answers for a driver that does not serve yet. The process and
 * JVM meters come later still ({@link #bindRuntime}): they read the JVM's management beans, whose
 * start costs a cold JVM 40-50 ms of CPU. Bound beside the socket's start, that CPU fell on the
 * first lifecycle begun the moment Probe says ready; the warm-up binds them now ({@link #prepare}),
 * or the first scrape, whichever comes first. Without the HTTP side nobody reads them, and they are
 * never bound.
 */
public final class Metrics implements AutoCloseable {

    private final PrometheusMeterRegistry registry;
    private final RpcMetrics rpc;
    private final Readiness readiness;
    /** Whether {@link #serve} has been called: the runtime meters are bound only then. */
    private boolean served;
    /** Whether {@link #close} has been called: a late warm-up binds nothing then. */
    private boolean closed;
    /** Bound by {@link #bindRuntime}; unhooked by {@link #close}. */
    private JvmGcMetrics gc;

    private Metrics(PrometheusMeterRegistry registry, RpcMetrics rpc, Readiness readiness) {
        this.registry = registry;
        this.rpc = rpc;
        this.readiness = readiness;
    }

    /**
     * @param version the driver's version, for {@code hearth_build_info}
     * @param node this node's name
     * @param snapshotCount how many snapshots a pool holds (the driver passes its snapshots part's
     *     count, 0 for a pool without one)
     * @param problem the readiness check Probe uses: empty when the driver can serve, else why not
     */
    public static Metrics create(String version, String node, List<Pool> pools, ToIntFunction<Pool> snapshotCount,
            Supplier<Optional<String>> problem) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("node", node);
        Gauge.builder("hearth.build.info", () -> 1)
                .description("Always 1; the labels name the running build")
                .tags("version", version, "java_version", Runtime.version().toString())
                .register(registry);
        Readiness readiness = new Readiness(problem);
        Gauge.builder("hearth.ready", readiness, Readiness::asGauge)
                .strongReference(true)
                .description("1 while /healthz answers 200 (every pool usable), 0 while it answers 503")
                .register(registry);
        new PoolMetrics(pools, snapshotCount).bindTo(registry);
        return new Metrics(registry, new RpcMetrics(registry), readiness);
    }

    /** Goes outside ErrorMapping and the volume locks, so it counts the codes clients get. */
    public ServerInterceptor interceptor() {
        return rpc;
    }

    /**
     * The calls of a volume's life, whose meters {@link #prepare} registers ahead: the calls whose
     * first run after a start a pod waits on. The rest get theirs at their first call, so that a
     * method nobody calls (one hearth does not offer, say) adds no 17 series to every scrape.
     */
    static final List<String> LIFECYCLE = List.of("CreateVolume", "NodeStageVolume", "NodePublishVolume",
            "NodeUnpublishVolume", "NodeUnstageVolume", "DeleteVolume");

    /**
     * Registers, for code OK, the call meters of the calls of a volume's life ({@link #LIFECYCLE}):
     * see {@link RpcMetrics#prepare}; and, once {@link #serve} has been called, binds the process
     * and JVM meters ({@link #bindRuntime}). The warm-up does it, a little after the driver serves.
     */
    public void prepare() {
        rpc.prepare(LIFECYCLE);
        bindRuntime();
    }

    /**
     * Starts {@code /metrics} and {@code /healthz} on the address; the caller closes the server. Once
     * per driver. The process and JVM meters are bound by {@link #prepare} or by the first scrape.
     */
    public synchronized MetricsServer serve(MetricsAddress address) throws IOException {
        if (served) {
            throw new IllegalStateException("metrics are served already");
        }
        MetricsServer server = MetricsServer.start(address, registry, readiness, this::bindRuntime);
        served = true;
        return server;
    }

    /**
     * Binds the process and JVM meters if the metrics are served and they are not bound yet; does
     * nothing otherwise, so that a scrape may call it each time.
     */
    synchronized void bindRuntime() {
        if (!served || closed || gc != null) {
            return;
        }
        new ProcessMetrics().bindTo(registry);
        // The ones micrometer-core has that cost nothing between scrapes; heap matters on a node.
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        gc = new JvmGcMetrics();
        gc.bindTo(registry);
    }

    /** Whether the process and JVM meters are bound. */
    synchronized boolean runtimeBound() {
        return gc != null;
    }

    /** Unhooks the GC listener from the JVM. Close the {@link MetricsServer} first. */
    @Override
    public synchronized void close() {
        closed = true;
        if (gc != null) {
            gc.close();
        }
        registry.close();
    }
}
