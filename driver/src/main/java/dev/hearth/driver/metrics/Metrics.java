package dev.hearth.driver.metrics;

import dev.hearth.storage.Pool;
import io.grpc.ServerInterceptor;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
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
 * The driver's metrics, made once at start: one registry with the pools' gauges, the JVM's basics,
 * and the interceptor that counts calls. The HTTP side is started apart ({@link #serve}), once the
 * CSI socket is up, so that {@code /healthz} never answers for a driver that does not serve yet.
 */
public final class Metrics implements AutoCloseable {

    private final PrometheusMeterRegistry registry;
    private final RpcMetrics rpc;
    private final JvmGcMetrics gc;

    private Metrics(PrometheusMeterRegistry registry, RpcMetrics rpc, JvmGcMetrics gc) {
        this.registry = registry;
        this.rpc = rpc;
        this.gc = gc;
    }

    /**
     * @param snapshotCount how many snapshots a pool holds (the driver passes
     *     {@code p -> p.listSnapshots().size()})
     */
    public static Metrics create(List<Pool> pools, ToIntFunction<Pool> snapshotCount) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new PoolMetrics(pools, snapshotCount).bindTo(registry);
        // The ones micrometer-core has that cost nothing between scrapes; heap and fds matter on a node.
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        JvmGcMetrics gc = new JvmGcMetrics();
        gc.bindTo(registry);
        return new Metrics(registry, new RpcMetrics(registry), gc);
    }

    /** Goes outside ErrorMapping and the volume locks, so it counts the codes clients get. */
    public ServerInterceptor interceptor() {
        return rpc;
    }

    /**
     * Starts {@code /metrics} and {@code /healthz} on the address; the caller closes the server.
     *
     * @param problem the readiness check Probe uses: empty when the driver can serve
     */
    public MetricsServer serve(MetricsAddress address, Supplier<Optional<String>> problem) throws IOException {
        return MetricsServer.start(address, registry, problem);
    }

    /** Unhooks the GC listener from the JVM. Close the {@link MetricsServer} first. */
    @Override
    public void close() {
        gc.close();
        registry.close();
    }
}
