package dev.hearth.driver;

import dev.hearth.driver.inspect.DiskInspection;
import dev.hearth.driver.inspect.DisksJson;
import dev.hearth.driver.inspect.DisksTable;
import dev.hearth.driver.server.LogFormat;
import dev.hearth.linux.DiskScan;
import dev.hearth.storage.PoolConfig;
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
 * {@code hearth disks}: every disk of the node as hearth sees it, and whether a pool may take it
 * or exactly why not. It reads and never writes, so it may run beside a serving driver (in the
 * DaemonSet's pod, through {@code kubectl exec}).
 */
@Command(name = "disks", mixinStandardHelpOptions = true, versionProvider = Main.Version.class, sortOptions = false,
        description = "List the node's disks (size, sectors, rotational, model, serial, WWN, partitions) with a "
                + "verdict each: eligible for a pool that takes whole disks, or exactly why not (claimed, in use, "
                + "a signature, data, too small, read-only, no stable identity, not selected). Writes nothing.")
final class DisksCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--state-dir", defaultValue = "/var/lib/hearth", paramLabel = "DIR",
            description = "The state directory hearth serve runs with: the disks' claims are under DIR/disks, and "
                    + "loop devices of images under it are volumes, not disks. Default: ${DEFAULT-VALUE}.")
    Path stateDir;

    @Option(names = "--pool", paramLabel = "SPEC",
            description = "A pool as hearth serve takes it (see hearth serve --help); repeat for several. The "
                    + "pools that take whole disks (an lvm pool with disks=, a device pool) give the verdicts; file "
                    + "pools say which loop devices are volumes. Default: the pools hearth serve recorded in the "
                    + "state directory (serve.properties), else those of hearth serve without --pool.")
    List<String> pools = new ArrayList<>();

    @Option(names = {"-o", "--output"}, defaultValue = "table", paramLabel = "FORMAT",
            description = "table (for people) or json (for scripts; field names in the README). "
                    + "Default: ${DEFAULT-VALUE}.")
    String output;

    @Option(names = "--probe",
            description = "Also read the disks no pool selects, as a pool would (signature, zeros at the edges and "
                    + "at samples across the disk), and say what a pool selecting them would find. Without it, "
                    + "hearth disks opens only the disks some pool selects.")
    boolean probe;

    @Override
    public Integer call() {
        if (!output.equals("table") && !output.equals("json")) {
            throw new ParameterException(spec.commandLine(), "--output must be table or json, not '" + output + "'");
        }
        LogFormat.install(Level.WARNING);
        PrintWriter err = spec.commandLine().getErr();
        Optional<Pools> given = pools(stateDir.toAbsolutePath().normalize(), err);
        if (given.isEmpty()) {
            err.flush();
            return 1;
        }
        if (!root()) {
            err.println("hearth disks: not running as root: disks cannot be opened, so what their bytes say is "
                    + "unknown (unreadable) and the kernel cannot be asked whether something holds them");
        }
        DiskInspection inspection;
        try {
            inspection = DiskInspection.of(new DiskScan().disks(), given.get().configs(), given.get().stateDir(),
                    probe);
        } catch (IOException e) {
            err.println("hearth disks: " + Directories.describe(e));
            err.flush();
            return 1;
        }
        PrintWriter out = spec.commandLine().getOut();
        out.print(output.equals("json") ? DisksJson.render(inspection) : DisksTable.render(inspection));
        out.flush();
        err.flush();
        return 0;
    }

    /** The pools to judge the disks by, and the state directory they live under. */
    private record Pools(List<PoolConfig> configs, Path stateDir) {}

    /**
     * The --pool flags; else those serve recorded; else, where no serve has run, the one it runs
     * without --pool. Empty, having said why, when the record cannot be read.
     */
    private Optional<Pools> pools(Path state, PrintWriter err) {
        if (!pools.isEmpty()) {
            try {
                return Optional.of(new Pools(parse(pools, state), state));
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        try {
            ServeRecord record = ServeRecord.read(state);
            return Optional.of(new Pools(parse(record.pools(), record.stateDir()), record.stateDir()));
        } catch (NoSuchFileException e) {
            return Optional.of(new Pools(parse(List.of("name=default"), state), state));
        } catch (IOException | IllegalArgumentException e) {
            err.println("hearth disks: cannot read the pools of " + ServeRecord.file(state) + ": "
                    + (e instanceof IOException io ? Directories.describe(io) : e.getMessage())
                    + "; name them with --pool");
            return Optional.empty();
        }
    }

    private static List<PoolConfig> parse(List<String> specs, Path state) {
        return specs.stream().map(spec -> PoolSpec.parse(spec, state).config()).toList();
    }

    private static boolean root() {
        try {
            return ((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid")) == 0;
        } catch (IOException | UnsupportedOperationException e) {
            return true; // cannot tell: say nothing rather than something wrong
        }
    }
}
