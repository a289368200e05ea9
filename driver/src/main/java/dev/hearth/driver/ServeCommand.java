package dev.hearth.driver;

import dev.hearth.driver.metrics.MetricsAddress;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.LogFormat;
import dev.hearth.driver.server.ShutdownSignal;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

/**
 * The daemon: serves CSI Identity, Controller and Node for this node's pools until SIGTERM.
 *
 * <p>Its command line is built with picocli's programmatic API, not its annotations as the other
 * commands' are: reading annotations makes the JDK generate a proxy class for each annotation type
 * (through the class-file API, cold on every start), and {@code @Command} and {@code @Option} cost
 * the daemon 45-60 ms of each start that way (issue 11). It parses and prints its help as before.
 */
final class ServeCommand implements Callable<Integer> {

    private static final Logger LOG = Logger.getLogger(ServeCommand.class.getName());

    private final CommandSpec spec = CommandSpec.wrapWithoutInspection(this).name("serve")
            .versionProvider(new Main.Version());

    ServeCommand() {
        spec.usageMessage().sortOptions(false)
                .description("Serve the CSI Identity, Controller and Node services for this node's pools.");
        option("--endpoint", "URL", String.class, "unix:///csi/csi.sock",
                "Where to serve: unix:///path/to/csi.sock (what the sidecars and kubelet use), or tcp://host:port "
                        + "for tests. A stale socket file is replaced. Default: ${DEFAULT-VALUE}.");
        option("--node-id", "ID", String.class, "${env:NODE_ID}",
                "This node's name in Kubernetes (spec.nodeName). It becomes the volumes' topology segment "
                        + "topology.hearth.dev/node. Default: the NODE_ID environment variable.");
        option("--driver-name", "NAME", String.class, "csi.hearth.dev",
                "The CSI driver name reported by GetPluginInfo. Default: ${DEFAULT-VALUE}.");
        option("--state-dir", "DIR", Path.class, "/var/lib/hearth",
                "Where the driver keeps its state on the node; pools without a dir live under DIR/pools/NAME. "
                        + "Default: ${DEFAULT-VALUE}.");
        spec.addOption(OptionSpec.builder("--pool").paramLabel("SPEC").type(List.class).auxiliaryTypes(String.class)
                .description("A pool, as comma-separated key=value: name (default 'default'), kind (file), dir "
                        + "(default DIR/pools/NAME of the state dir; any other dir must exist, unless create=true), "
                        + "capacity (e.g. 100Gi; default: the filesystem's size less the reserve), reserve (what is "
                        + "kept free on the filesystem, e.g. 10Gi or 5%%; default 15%%), provisioning (thick|thin, "
                        + "default thick), direct-io (true|false, default true), default-size (default 1Gi). kind=lvm "
                        + "takes vg, thinpool, overprovision, wipe, default-size; kind=device (a whole disk per volume) "
                        + "takes disks (path globs separated by |), min-size, model, rotational, wipe "
                        + "(zero|discard|signatures) and check (sampled|full); see the README. Repeat "
                        + "for several pools. Default: one file pool named 'default' under the state dir.")
                .build());
        option("--default-pool", "NAME", String.class, null,
                "The pool used when a StorageClass names none (hearth.dev/pool). Default: the first.");
        option("--max-volumes", "N", long.class, "1000",
                "How many hearth volumes the scheduler may place on this node. Default: ${DEFAULT-VALUE}.");
        spec.addOption(OptionSpec.builder("--shutdown-grace").paramLabel("DURATION").type(Duration.class)
                .converters(new DurationConverter()).defaultValue("PT30S")
                .description("On SIGTERM, how long running calls may take to finish (e.g. 30s, 2m). Default: 30s.")
                .build());
        option("--default-fs-type", "TYPE", String.class, "ext4",
                "The filesystem a blank volume gets when its StorageClass names none (csi.storage.k8s.io/fstype): "
                        + "ext4, xfs or btrfs. Default: ${DEFAULT-VALUE}.");
        option("--metrics-address", "[HOST]:PORT", String.class, ":9818",
                "Where to serve Prometheus metrics (/metrics) and a readiness check (/healthz) over plain HTTP: "
                        + ":PORT for every interface, HOST:PORT or [IPv6]:PORT for one; empty turns it off. "
                        + "Default: ${DEFAULT-VALUE} (9808 is the livenessprobe sidecar's).");
        option("--log-level", "LEVEL", String.class, "info",
                "error, warn, info or debug (debug logs requests, secrets stripped). Default: info.");
        Main.addStandardHelpOptions(spec);
    }

    /** This command's model, for picocli's {@code addSubcommand}. */
    CommandSpec spec() {
        return spec;
    }

    private void option(String name, String label, Class<?> type, String defaultValue, String description) {
        spec.addOption(OptionSpec.builder(name).paramLabel(label).type(type).defaultValue(defaultValue)
                .description(description).build());
    }

    /** An option's value once parsed: what was given, or its default. */
    private <T> T value(String option) {
        return spec.findOption(option).getValue();
    }

    @Override
    public Integer call() throws Exception {
        String nodeId = value("--node-id");
        long maxVolumes = value("--max-volumes");
        String defaultPool = value("--default-pool");
        String metricsAddress = value("--metrics-address");
        String defaultFsType = value("--default-fs-type");
        String endpoint = value("--endpoint");
        String driverName = value("--driver-name");
        Duration shutdownGrace = value("--shutdown-grace");
        Level level = parse(() -> level(value("--log-level")));
        if (nodeId == null || nodeId.isBlank()) {
            throw new ParameterException(spec.commandLine(), "--node-id (or NODE_ID) is required");
        }
        if (maxVolumes < 0) {
            throw new ParameterException(spec.commandLine(), "--max-volumes must not be negative, got " + maxVolumes);
        }
        Path state = this.<Path>value("--state-dir").toAbsolutePath().normalize();
        List<PoolSpec> specs = poolSpecs(state);
        List<PoolConfig> configs = specs.stream().map(PoolSpec::config).toList();
        Optional<MetricsAddress> metrics = metricsAddress.isBlank() ? Optional.empty()
                : Optional.of(parse(() -> MetricsAddress.parse(metricsAddress)));
        FilesystemType fsType = parse(() -> FilesystemType.parse(defaultFsType));
        Driver.Settings settings = new Driver.Settings(parse(() -> Endpoint.parse(endpoint)), nodeId, driverName,
                state, configs, defaultPool, maxVolumes, metrics, fsType);
        LogFormat.install(level);
        reportHost(new HostCheck(settings.host(), fsType));
        Driver driver;
        try {
            Directories.prepareState(state);
            for (PoolSpec pool : specs) {
                Directories.checkPool(pool, state);
            }
            driver = Driver.start(settings);
        } catch (IOException e) {
            // The node's state is in the way (a pool or socket in use, a file where a directory goes).
            LOG.severe("cannot start: " + Directories.describe(e));
            return 1;
        }
        record(state);
        specs.forEach(s -> s.file().flatMap(PoolReport::capacityWarning).ifPresent(LOG::warning));
        LOG.info(() -> "hearth " + Driver.version() + " serving " + driver.endpoint() + " for node " + nodeId
                + "; pools: " + String.join("; ", configs.stream().map(PoolReport::describe).toList())
                + "; default filesystem " + fsType.kernelName()
                + driver.metricsAddress().map(a -> "; metrics on " + a).orElse(""));
        try (ShutdownSignal signal = ShutdownSignal.install(() -> {
            LOG.info("stopping: letting running calls finish for up to " + shutdownGrace.toSeconds() + "s");
            driver.shutdown(shutdownGrace);
        })) {
            driver.awaitTermination();
        }
        LOG.info("stopped");
        return 0;
    }

    /**
     * Records, once this driver serves, the flags it serves with (for {@code hearth volumes}); after
     * the start, so a second serve refused for a pool in use never overwrites the running one's.
     * Without the record the driver still serves: only the inspection needs its pools named again.
     */
    private void record(Path state) {
        ServeRecord record = new ServeRecord(givenPools(), Optional.ofNullable(value("--default-pool")), state,
                value("--driver-name"), Instant.now());
        try {
            record.write();
        } catch (IOException e) {
            LOG.warning("could not record this driver's flags in " + ServeRecord.file(state) + " (hearth volumes "
                    + "reads them): " + Directories.describe(e));
        }
    }

    /** The --pool flags as given, or the one default pool's spec. */
    private List<String> givenPools() {
        List<String> pools = value("--pool");
        return pools == null || pools.isEmpty() ? List.of("name=default") : pools;
    }

    /** The --pool flags (or the one default pool), each with a name and a directory of its own. */
    private List<PoolSpec> poolSpecs(Path state) {
        List<PoolSpec> specs = new ArrayList<>();
        for (String pool : givenPools()) {
            specs.add(parse(() -> PoolSpec.parse(pool, state)));
        }
        checkDistinct(specs);
        List<String> names = specs.stream().map(s -> s.config().name()).toList();
        String defaultPool = value("--default-pool");
        if (defaultPool != null && !names.contains(defaultPool)) {
            throw new ParameterException(spec.commandLine(), "--default-pool '" + defaultPool + "' names no pool; "
                    + "pools: " + String.join(", ", names));
        }
        return specs;
    }

    /** Two pools cannot share a name, nor a directory (the second would find it locked by the first). */
    private void checkDistinct(List<PoolSpec> specs) {
        for (int i = 0; i < specs.size(); i++) {
            for (int j = 0; j < i; j++) {
                PoolConfig a = specs.get(j).config();
                PoolConfig b = specs.get(i).config();
                if (a.name().equals(b.name())) {
                    throw new ParameterException(spec.commandLine(), "pool name '" + a.name()
                            + "' is given twice (--pool); each pool needs a name of its own");
                }
                if (a instanceof FilePoolConfig fa && b instanceof FilePoolConfig fb
                        && fa.directory().equals(fb.directory())) {
                    throw new ParameterException(spec.commandLine(), "pools '" + a.name() + "' and '" + b.name()
                            + "' have the same directory " + fa.directory() + "; each pool needs one of its own");
                }
            }
        }
    }

    /** The node's lacks, logged at start with their remedies; the driver serves on and Probe reports them. */
    private static void reportHost(HostCheck host) {
        List<String> problems = host.problems();
        for (String problem : problems) {
            LOG.severe("this node cannot serve volumes until this is fixed: " + problem);
        }
        for (String unavailable : host.unavailableOtherTypes()) {
            LOG.warning(unavailable);
        }
    }

    /** Runs a flag's parser; whatever it refuses (any runtime exception) becomes a usage error with its message. */
    private <T> T parse(java.util.function.Supplier<T> parser) {
        try {
            return parser.get();
        } catch (RuntimeException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage() == null ? e.toString() : e.getMessage());
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
