package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * The command line as {@code Main} runs it, in-process, with what it prints captured: a user's
 * mistakes are answered with one message that names the mistake, and exit code 2; the help and
 * the version say what they should. Every case here stops before anything is made on the host.
 */
class CommandLineTest {

    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {}

    private static Run run(int width, String... args) {
        return run(Main.commandLine(args), width, args);
    }

    private static Run run(CommandLine built, int width, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine commandLine = built.setOut(new PrintWriter(out)).setErr(new PrintWriter(err));
        if (width > 0) {
            commandLine.setUsageHelpWidth(width);
        }
        int exit = commandLine.execute(args);
        return new Run(exit, out.toString(), err.toString());
    }

    private static Run run(String... args) {
        return run(0, args);
    }

    private Run serve(String... poolFlags) {
        List<String> args = new ArrayList<>(List.of("serve", "--node-id", "n", "--endpoint",
                "unix://" + dir.resolve("csi.sock"), "--state-dir", dir.resolve("state").toString()));
        for (String pool : poolFlags) {
            args.add("--pool");
            args.add(pool);
        }
        return run(args.toArray(String[]::new));
    }

    private void assertUsageError(Run run, String... said) {
        assertThat(run.exit()).as("exit code; stderr:%n%s", run.err()).isEqualTo(2);
        assertThat(run.err()).contains(said).contains("Usage: hearth serve")
                .doesNotContain("Exception").doesNotContain("\tat ");
        assertThat(dir.resolve("state")).as("nothing is made for a usage error").doesNotExist();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "name=x,provisioning=thn|provisioning=thn: provisioning must be 'thick' or 'thin', not 'thn'",
            "name=x,direct-io=yes|direct-io=yes: must be true or false",
            "name=x,direct-io=1|direct-io=1: must be true or false",
            "name=x,create=yes|create=yes: must be true or false",
            "name=x,capacity=lots|capacity=lots: 'lots' is not a size",
            "name=x,capacity=99999999999Pi|capacity=99999999999Pi: too large",
            "name=x,reserve=lots|reserve=lots: 'lots' is neither a size nor a percentage",
            "name=x,reserve=100%|reserve=100%: a reserve of '100%' is not from 0% to below 100%",
            "name=x,default-size=0|sizes must be positive",
            "name=X|pool name 'X' must be 1-32 characters",
            "name=x,dir=relative/dir|directory must be absolute: relative/dir",
            "name=x,kind=zfs|unknown kind 'zfs'; kinds: file, lvm, device",
            "name=x,kind=device|a device pool needs disks=<path globs separated by |>",
            "name=x,kind=device,disks=sd*|disk path glob 'sd*' must start with /dev/",
            "name=x,kind=device,disks=/dev/sd*,wipe=none|wipe=none: must be zero, discard or signatures",
            "name=x,kind=device,disks=/dev/sd*,check=edges|check=edges: must be sampled or full",
            "name=x,kind=device,disks=/dev/sd*,min-size=big|'big' is not a size",
            "name=x,kind=device,disks=/dev/sd*,rotational=no|rotational=no must be true or false",
            "name=x,kind=device,disks=/dev/sd*,model=[|model=[ is not a regular expression",
            "name=x,kind=device,disks=/dev/sd*,dir=/srv|unknown key 'dir' for kind device; keys: check, disks, kind, "
                    + "min-size, model, name, rotational, wipe",
            "name=x,kind=lvm|an lvm pool needs vg=<volume group>",
            "name=x,kind=lvm,vg=-bad|volume group name '-bad' is not a valid LVM name",
            "name=x,kind=lvm,vg=vg0,overprovision=3|overprovision applies to a thin pool only",
            "name=x,kind=lvm,vg=vg0,thinpool=tp,overprovision=0.5|overprovision must be a ratio from 1 to 1000",
            "name=x,kind=lvm,vg=vg0,thinpool=tp,overprovision=lots|overprovision=lots: must be a number",
            "name=x,kind=lvm,vg=vg0,wipe=shred|wipe=shred: must be zero, discard or none",
            "name=x,kind=lvm,vg=vg0,dir=/srv|unknown key 'dir' for kind lvm; keys: check, default-size, disks, kind, "
                    + "min-size, model, name, overprovision, rotational, thinpool, vg, wipe",
            "name=x,kind=lvm,vg=vg0,min-size=10Gi|min-size refines disks=, which is not given",
            "name=x,kind=lvm,vg=vg0,check=full|check refines disks=, which is not given",
            "name=x,kind=lvm,vg=vg0,disks=sd*|disk path glob 'sd*' must start with /dev/",
            "name=x,kind=lvm,vg=vg0,disks=/dev/sd*,check=edges|check=edges: must be sampled or full",
            "name=x,kind=lvm,vg=vg0,disks=/dev/sd*,rotational=no|rotational=no must be true or false",
            "name=x,kind=lvm,vg=vg0,disks=/dev/sd*,min-size=big|min-size",
            "name=x,capacity|'capacity' is not key=value",
            "name=x,name=y|'name' is given twice"})
    void aBadPoolSpecIsAUsageErrorNamingTheSpecAndWhatIsWrong(String pool, String said) {
        assertUsageError(serve(pool), "pool spec '" + pool + "': ", said);
    }

    @Test
    void anUnknownPoolKeyListsTheKeysInOrder() {
        assertUsageError(serve("name=x,sise=1Gi"), "unknown key 'sise' for kind file; keys: capacity, create, default-size, dir, "
                + "direct-io, kind, name, provisioning, reserve\n");
    }

    @Test
    void aPoolNameGivenTwiceIsSaidSo() {
        Run run = serve("name=x,dir=/a", "name=x,dir=/b");

        assertUsageError(run, "pool name 'x' is given twice (--pool)");
        assertThat(run.err()).doesNotContain("in use");
    }

    @Test
    void twoPoolsInOneDirectoryAreSaidSo() {
        assertUsageError(serve("name=a,dir=/srv/pool", "name=b,dir=/srv/pool/"),
                "pools 'a' and 'b' have the same directory /srv/pool");
    }

    @Test
    void aDefaultPoolThatNamesNoPoolListsThePools() {
        List<String> args = List.of("serve", "--node-id", "n", "--state-dir", dir.resolve("state").toString(),
                "--pool", "name=a", "--pool", "name=b", "--default-pool", "c");

        assertUsageError(run(args.toArray(String[]::new)), "--default-pool 'c' names no pool; pools: a, b");
    }

    // version

    @ParameterizedTest
    @ValueSource(strings = {"version", "--version", "serve --version", "demo --version", "version --version"})
    void everyWayToAskForTheVersionPrintsVersionCommitAndJava(String args) throws Exception {
        Run run = run(args.split(" "));

        assertThat(run.exit()).isZero();
        List<String> lines = run.out().lines().toList();
        assertThat(lines).hasSize(3);
        assertThat(lines.get(0)).isEqualTo("hearth " + Driver.version()).doesNotContain("${");
        assertThat(lines.get(1)).isEqualTo("commit " + expectedCommit());
        assertThat(lines.get(2)).startsWith("java " + Runtime.version() + " (").contains(System.getProperty("os.arch"));
    }

    /** What the build saw: the checkout's commit, when this test runs in one. */
    private static String expectedCommit() throws IOException, InterruptedException {
        Process git = new ProcessBuilder("git", "rev-parse", "--short=7", "HEAD").redirectErrorStream(true).start();
        String head = new String(git.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (!git.waitFor(30, TimeUnit.SECONDS) || git.exitValue() != 0) {
            return "unknown (built without a git repository)";
        }
        return BuildInfo.read().commit().filter(c -> c.startsWith(head)).orElse("built from " + head);
    }

    // serve's options, a model made in code (ServeCommand): each takes its type and its default

    @Test
    void serveParsesEachOptionToItsTypeAndFallsBackToItsDefault() {
        String[] given = {"serve", "--node-id", "n", "--pool", "name=a", "--pool", "name=b,kind=file"};
        CommandLine.Model.CommandSpec serve = parsedServe(given);

        assertThat(value(serve, "--node-id")).isEqualTo("n");
        assertThat(value(serve, "--pool")).isEqualTo(List.of("name=a", "name=b,kind=file"));
        assertThat(value(serve, "--endpoint")).isEqualTo("unix:///csi/csi.sock");
        assertThat(value(serve, "--driver-name")).isEqualTo("csi.hearth.dev");
        assertThat(value(serve, "--state-dir")).isEqualTo(Path.of("/var/lib/hearth"));
        assertThat(value(serve, "--default-pool")).isNull();
        assertThat(value(serve, "--max-volumes")).isEqualTo(1000L);
        assertThat(value(serve, "--shutdown-grace")).isEqualTo(Duration.ofSeconds(30));
        assertThat(value(serve, "--default-fs-type")).isEqualTo("ext4");
        assertThat(value(serve, "--metrics-address")).isEqualTo(":9818");
        assertThat(value(serve, "--log-level")).isEqualTo("info");

        CommandLine.Model.CommandSpec set = parsedServe("serve", "--endpoint=tcp://127.0.0.1:1", "--driver-name", "d",
                "--state-dir", "/s", "--default-pool", "a", "--max-volumes", "7", "--shutdown-grace", "2m",
                "--default-fs-type", "xfs", "--metrics-address=", "--log-level", "debug");
        assertThat(value(set, "--endpoint")).isEqualTo("tcp://127.0.0.1:1");
        assertThat(value(set, "--driver-name")).isEqualTo("d");
        assertThat(value(set, "--state-dir")).isEqualTo(Path.of("/s"));
        assertThat(value(set, "--default-pool")).isEqualTo("a");
        assertThat(value(set, "--max-volumes")).isEqualTo(7L);
        assertThat(value(set, "--shutdown-grace")).isEqualTo(Duration.ofMinutes(2));
        assertThat(value(set, "--default-fs-type")).isEqualTo("xfs");
        assertThat(value(set, "--metrics-address")).isEqualTo("");
        assertThat(value(set, "--log-level")).isEqualTo("debug");
        assertThat(value(set, "--pool")).isNull(); // the default pool, in ServeCommand
    }

    private static CommandLine.Model.CommandSpec parsedServe(String... args) {
        CommandLine line = Main.commandLine(args);
        line.parseArgs(args);
        return line.getSubcommands().get("serve").getCommandSpec();
    }

    private static Object value(CommandLine.Model.CommandSpec spec, String option) {
        return spec.findOption(option).getValue();
    }

    // help

    /** Names an operator copies from the help; picocli's own wrapping split them at dots, slashes, dashes. */
    private static final List<String> NAMES = List.of("topology.hearth.dev/node", "csi.storage.k8s.io/fstype",
            "csi.hearth.dev", "hearth.dev/pool", "unix:///path/to/csi.sock", "tcp://host:port", "DIR/pools/NAME",
            "create=true", "direct-io", "default-size", "[IPv6]:PORT", "(thick|thin,", "(true|false,");

    @ParameterizedTest
    @ValueSource(ints = {60, 80, 100, 132})
    void helpWrapsOnlyBetweenWordsAtAnyWidth(int width) {
        Run run = run(width, "serve", "--help");

        assertThat(run.exit()).isZero();
        String joined = run.out().replaceAll("\\s*\\n\\s*", " ");
        for (String name : NAMES) {
            assertThat(joined).as("'%s' whole in the help at width %d:%n%s", name, width, run.out()).contains(name);
        }
        assertThat(run.out().lines()).allMatch(line -> line.length() <= width);
        assertThat(run.out()).doesNotContain("\uE000").contains("15%").doesNotContain("picocli WARN");
    }

    @Test
    void topLevelHelpListsTheVersionCommand() {
        Run run = run("--help");

        assertThat(run.exit()).isZero();
        assertThat(run.out()).containsPattern("(?m)^\\s+version\\s+Print hearth's version");
    }

    @Test
    void topLevelHelpListsEverySubcommand() {
        Run run = run("--help");

        for (String name : List.of("serve", "demo", "volumes", "disks", "probe", "version", "help")) {
            assertThat(run.out()).containsPattern("(?m)^\\s+" + name + "\\s");
        }
        assertThat(run("help").out()).isEqualTo(run.out());
    }

    /**
     * main builds a command line with the named subcommand alone (a faster start); whatever a run of
     * one prints and returns is what the whole command line gives.
     */
    @ParameterizedTest
    @ValueSource(strings = {"serve --help", "serve --bogus", "serve --max-volumes x", "serve --node-id",
            "volumes --help", "disks --help", "probe --help", "demo --help", "version", "serve --version",
            "help serve", "serv"})
    void aSubcommandAloneRunsAsTheWholeCommandLineDoes(String line) {
        String[] args = line.split(" ");

        Run alone = run(Main.commandLine(args), 100, args);
        Run whole = run(Main.commandLine(), 100, args);

        assertThat(alone).isEqualTo(whole);
    }
}
