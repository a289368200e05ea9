package dev.hearth.driver;

import dev.hearth.driver.metrics.MetricsAddress;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.LogFormat;
import dev.hearth.driver.server.ShutdownSignal;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** The daemon: serves CSI Identity, Controller and Node for this node's pools until SIGTERM. */
@Command(name = "serve", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Serve the CSI Identity, Controller and Node services for this node's pools.")
final class ServeCommand implements Callable<Integer> {

    private static final Logger LOG = Logger.getLogger(ServeCommand.class.getName());

    @Spec
    CommandSpec spec;

    @Option(names = "--endpoint", defaultValue = "unix:///csi/csi.sock", paramLabel = "URL",
            description = "Where to serve: unix:///path/to/csi.sock (what the sidecars and kubelet use), "
                    + "or tcp://host:port for tests. A stale socket file is replaced. Default: ${DEFAULT-VALUE}.")
    String endpoint;

    @Option(names = "--node-id", defaultValue = "${env:NODE_ID}", paramLabel = "ID",
            description = "This node's name in Kubernetes (spec.nodeName). It becomes the volumes' topology "
                    + "segment topology.hearth.dev/node. Default: the NODE_ID environment variable.")
    String nodeId;

    @Option(names = "--driver-name", defaultValue = "csi.hearth.dev", paramLabel = "NAME",
            description = "The CSI driver name reported by GetPluginInfo. Default: ${DEFAULT-VALUE}.")
    String driverName;

    @Option(names = "--state-dir", defaultValue = "/var/lib/hearth", paramLabel = "DIR",
            description = "Where the driver keeps its state on the node; pools without a dir live under "
                    + "DIR/pools/NAME. Default: ${DEFAULT-VALUE}.")
    Path stateDir;

    @Option(names = "--pool", paramLabel = "SPEC",
            description = "A pool, as comma-separated key=value: name (default 'default'), kind (file), dir, "
                    + "capacity (e.g. 100Gi; default: the filesystem's size), provisioning (thick|thin, default "
                    + "thick), direct-io (true|false, default true), default-size (default 1Gi). Repeat for "
                    + "several pools. Default: one file pool named 'default' under the state dir.")
    List<String> pools = new ArrayList<>();

    @Option(names = "--default-pool", paramLabel = "NAME",
            description = "The pool used when a StorageClass names none (hearth.dev/pool). Default: the first.")
    String defaultPool;

    @Option(names = "--max-volumes", defaultValue = "1000", paramLabel = "N",
            description = "How many hearth volumes the scheduler may place on this node. Default: ${DEFAULT-VALUE}.")
    long maxVolumes;

    @Option(names = "--shutdown-grace", defaultValue = "PT30S", paramLabel = "DURATION",
            converter = DurationConverter.class,
            description = "On SIGTERM, how long running calls may take to finish (e.g. 30s, 2m). Default: 30s.")
    Duration shutdownGrace;

    @Option(names = "--default-fs-type", defaultValue = "ext4", paramLabel = "TYPE",
            description = "The filesystem a blank volume gets when its StorageClass names none "
                    + "(csi.storage.k8s.io/fstype): ext4, xfs or btrfs. Default: ${DEFAULT-VALUE}.")
    String defaultFsType;

    @Option(names = "--metrics-address", defaultValue = ":9818", paramLabel = "[HOST]:PORT",
            description = "Where to serve Prometheus metrics (/metrics) and a readiness check (/healthz) over plain "
                    + "HTTP: :PORT for every interface, HOST:PORT or [IPv6]:PORT for one; empty turns it off. "
                    + "Default: ${DEFAULT-VALUE} (9808 is the livenessprobe sidecar's).")
    String metricsAddress;

    @Option(names = "--log-level", defaultValue = "info", paramLabel = "LEVEL",
            description = "error, warn, info or debug (debug logs requests, secrets stripped). Default: info.")
    String logLevel;

    @Override
    public Integer call() throws Exception {
        Level level = parse(() -> level(logLevel));
        if (nodeId == null || nodeId.isBlank()) {
            throw new ParameterException(spec.commandLine(), "--node-id (or NODE_ID) is required");
        }
        if (maxVolumes < 0) {
            throw new ParameterException(spec.commandLine(), "--max-volumes must not be negative, got " + maxVolumes);
        }
        LogFormat.install(level);
        List<FilePoolConfig> configs = new ArrayList<>();
        for (String pool : pools.isEmpty() ? List.of("name=default") : pools) {
            configs.add(parse(() -> PoolSpec.parse(pool, stateDir)));
        }
        Endpoint where = parse(() -> Endpoint.parse(endpoint));
        Optional<MetricsAddress> metrics = metricsAddress.isBlank() ? Optional.empty()
                : Optional.of(parse(() -> MetricsAddress.parse(metricsAddress)));
        Driver driver;
        try {
            driver = Driver.start(new Driver.Settings(where, nodeId, driverName, stateDir, configs, defaultPool,
                    maxVolumes, metrics, parse(() -> FilesystemType.parse(defaultFsType))));
        } catch (IllegalArgumentException e) {
            // The set of pools is wrong (a name given twice, an unknown --default-pool): the flags' fault.
            throw new ParameterException(spec.commandLine(), e.getMessage());
        } catch (IOException e) {
            // The node's state is in the way (a pool or socket in use, a file where the socket goes).
            LOG.severe("cannot start: " + e.getMessage());
            return 1;
        }
        LOG.info(() -> "hearth " + Driver.version() + " serving " + driver.endpoint() + " for node " + nodeId
                + " with pools " + configs.stream().map(c -> c.name() + "=" + c.directory()).toList()
                + driver.metricsAddress().map(a -> ", metrics on " + a).orElse(""));
        try (ShutdownSignal signal = ShutdownSignal.install(() -> {
            LOG.info("stopping: letting running calls finish for up to " + shutdownGrace.toSeconds() + "s");
            driver.shutdown(shutdownGrace);
        })) {
            driver.awaitTermination();
        }
        LOG.info("stopped");
        return 0;
    }

    private <T> T parse(java.util.function.Supplier<T> parser) {
        try {
            return parser.get();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        } catch (RuntimeException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage(), e, null, null);
        }
    }

    static Level level(String name) {
        return switch (name.toLowerCase(java.util.Locale.ROOT)) {
            case "error" -> Level.SEVERE;
            case "warn", "warning" -> Level.WARNING;
            case "info" -> Level.INFO;
            case "debug" -> Level.FINE;
            default -> throw new IllegalArgumentException("unknown log level '" + name + "'");
        };
    }
}
