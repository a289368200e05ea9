package dev.hearth.driver;

import dev.hearth.driver.inspect.Inspection;
import dev.hearth.driver.inspect.Inspector;
import dev.hearth.driver.inspect.VolumesJson;
import dev.hearth.driver.inspect.VolumesTable;
import dev.hearth.driver.server.LogFormat;
import dev.hearth.storage.Pool;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.device.DevicePool;
import dev.hearth.storage.device.DevicePoolConfig;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.lvm.LvmPool;
import dev.hearth.storage.lvm.LvmPoolConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code hearth volumes}: what this node's pools hold, from the node's own state, with or without
 * a driver running (beside one, through {@code kubectl exec}). The pools are those {@code hearth
 * serve} recorded in the state directory at its start, or those {@code --pool} names; each is
 * opened read-only, so nothing is made, locked, attached, cleared or thawed.
 */
@Command(name = "volumes", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        sortOptions = false,
        description = "List this node's pools, their volumes (claim, size, backing store, device, mounts, condition) "
                + "and orphans, read from the node without a running driver and without changing anything. Exit "
                + "code 0 when everything could be read, 1 when something could not (what was read is still shown).")
final class VolumesCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--state-dir", defaultValue = "/var/lib/hearth", paramLabel = "DIR",
            description = "The state directory hearth serve runs with; its pools are read from the record serve "
                    + "writes there (serve.properties). Default: ${DEFAULT-VALUE}.")
    Path stateDir;

    @Option(names = "--pool", paramLabel = "SPEC",
            description = "A pool as hearth serve takes it (see hearth serve --help); repeat for several. Given, "
                    + "these are read instead of the pools serve recorded.")
    List<String> pools = new ArrayList<>();

    @Option(names = "--default-pool", paramLabel = "NAME",
            description = "With --pool: which pool is the default. Default: the first.")
    String defaultPool;

    @Option(names = "--driver-name", paramLabel = "NAME",
            description = "The driver name whose kubelet mounts are hearth's. Default: the one serve recorded, "
                    + "else csi.hearth.dev.")
    String driverName;

    @Option(names = {"-o", "--output"}, defaultValue = "table", paramLabel = "FORMAT",
            description = "table (for people) or json (for scripts; field names in the README). "
                    + "Default: ${DEFAULT-VALUE}.")
    String output;

    @Override
    public Integer call() {
        if (!output.equals("table") && !output.equals("json")) {
            throw new ParameterException(spec.commandLine(), "--output must be table or json, not '" + output + "'");
        }
        LogFormat.install(Level.WARNING);
        PrintWriter err = spec.commandLine().getErr();
        Path state = stateDir.toAbsolutePath().normalize();
        Optional<Settings> settings = settings(state, err);
        if (settings.isEmpty()) {
            return 1;
        }
        Inspection inspection = new Inspector(settings.get().stateDir(), settings.get().driverName(),
                VolumesCommand::openReadOnly).inspect(settings.get().pools(), settings.get().defaultPool());
        PrintWriter out = spec.commandLine().getOut();
        out.print(output.equals("json") ? VolumesJson.render(inspection) : VolumesTable.render(inspection));
        out.flush();
        for (String error : inspection.errors()) {
            err.println("hearth volumes: " + error);
        }
        err.flush();
        return inspection.errors().isEmpty() ? 0 : 1;
    }

    /** What to inspect: the pools given, or serve's record of them. */
    private record Settings(Path stateDir, String driverName, List<PoolConfig> pools, String defaultPool) {}

    private Optional<Settings> settings(Path state, PrintWriter err) {
        if (!pools.isEmpty()) {
            List<PoolConfig> configs = new ArrayList<>();
            for (String pool : pools) {
                try {
                    configs.add(PoolSpec.parse(pool, state).config());
                } catch (IllegalArgumentException e) {
                    throw new ParameterException(spec.commandLine(), e.getMessage());
                }
            }
            return Optional.of(new Settings(state, named(Optional.empty()), configs, chosen(configs, defaultPool)));
        }
        if (!Files.isDirectory(state)) {
            err.println("hearth volumes: state directory " + state + " does not exist; give the one hearth serve runs "
                    + "with (--state-dir), or name the pools (--pool)");
            return Optional.empty();
        }
        ServeRecord record;
        try {
            record = ServeRecord.read(state);
        } catch (NoSuchFileException e) {
            err.println("hearth volumes: " + ServeRecord.file(state) + " does not exist: hearth serve writes it "
                    + "when it starts with --state-dir " + state + ". Has it run on this node with that state "
                    + "directory? Otherwise name the pools (--pool)");
            return Optional.empty();
        } catch (IOException e) {
            err.println("hearth volumes: cannot read " + ServeRecord.file(state) + ": " + Directories.describe(e));
            return Optional.empty();
        }
        List<PoolConfig> configs = new ArrayList<>();
        for (String pool : record.pools()) {
            try {
                configs.add(PoolSpec.parse(pool, record.stateDir()).config());
            } catch (IllegalArgumentException e) {
                err.println("hearth volumes: " + ServeRecord.file(state) + " names a pool this hearth cannot read: "
                        + e.getMessage());
                return Optional.empty();
            }
        }
        return Optional.of(new Settings(record.stateDir(), named(Optional.of(record.driverName())), configs,
                chosen(configs, record.defaultPool().orElse(null))));
    }

    private String named(Optional<String> recorded) {
        return driverName != null ? driverName : recorded.orElse("csi.hearth.dev");
    }

    private static String chosen(List<PoolConfig> configs, String name) {
        return name != null ? name : configs.getFirst().name();
    }

    /** Each kind's read-only way in: nothing made, locked, recovered or changed. */
    static Pool openReadOnly(PoolConfig config) throws IOException {
        return switch (config) {
            case FilePoolConfig file -> FilePool.openReadOnly(file);
            case LvmPoolConfig lvm -> LvmPool.openReadOnly(lvm);
            case DevicePoolConfig device -> DevicePool.openReadOnly(device);
            default -> throw new IllegalArgumentException("no read-only opening for pool kind " + config.kind());
        };
    }
}
