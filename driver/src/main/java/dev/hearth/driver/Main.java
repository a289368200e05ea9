package dev.hearth.driver;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * {@code hearth serve} runs the CSI driver; {@code hearth demo} shows it working; {@code hearth volumes}
 * shows what the node's pools hold, {@code hearth disks} the node's disks and whether a pool may take them.
 * The top command and {@code serve}, which every start of the daemon builds, are picocli models made in
 * code rather than read from annotations (see {@link ServeCommand}); the other commands are annotated.
 */
public final class Main {

    private Main() {}

    /** The subcommands, in the order the help lists them. */
    private static final Map<String, Supplier<Object>> SUBCOMMANDS = subcommands();

    /** picocli's system property: the built-in converters it does not register (regular expressions). */
    static final String CONVERTER_EXCLUDES = "picocli.converters.excludes";

    /** picocli's system property: true skips its look for Groovy's closure class. */
    static final String NO_CLOSURES = "picocli.disable.closures";

    static {
        // Each CommandLine registers a converter for every java.time and java.sql type, loading
        // and initialising each class (java.time.MonthDay builds a formatter): 10-20 ms of every
        // start (issue 11). No option here takes one: the durations have a converter of their own.
        if (System.getProperty(CONVERTER_EXCLUDES) == null) {
            System.setProperty(CONVERTER_EXCLUDES, "java\\.(time|sql)\\..*");
        }
        // picocli's object factory looks for groovy.lang.Closure once; the miss builds a
        // ClassNotFoundException through every class loader: 5 ms of every start. hearth has no Groovy.
        if (System.getProperty(NO_CLOSURES) == null) {
            System.setProperty(NO_CLOSURES, "true");
        }
    }

    public static void main(String[] args) {
        System.exit(commandLine(args).execute(args));
    }

    /** The whole command line, with every subcommand. */
    static CommandLine commandLine() {
        CommandLine commandLine = new CommandLine(top());
        SUBCOMMANDS.forEach((name, command) -> commandLine.addSubcommand(name, command.get()));
        return commandLine.setHelpFactory(WholeWordHelp.FACTORY);
    }

    /**
     * The command line that runs {@code args}, as {@link #main} does (tests run it in-process): when
     * they begin with a subcommand's name, with that subcommand alone. picocli reads the annotations
     * of every subcommand it is given, which took a start of the daemon 30-40 ms of its ~500, and
     * such a run parses the same either way; {@code hearth help}, the top command's own options and
     * a name that is no subcommand's get the whole command line.
     */
    static CommandLine commandLine(String... args) {
        Supplier<Object> alone = args.length == 0 || args[0].equals("help") ? null : SUBCOMMANDS.get(args[0]);
        if (alone == null) {
            return commandLine();
        }
        return new CommandLine(top()).addSubcommand(args[0], alone.get()).setHelpFactory(WholeWordHelp.FACTORY);
    }

    /** The top command, {@code hearth}: no options but help and version; a subcommand is required. */
    private static CommandSpec top() {
        CommandSpec top = CommandSpec.wrapWithoutInspection(new Main()).name("hearth").versionProvider(new Version());
        top.usageMessage().description("A Kubernetes CSI driver that turns a node's local disks into persistent "
                + "volumes.");
        return addStandardHelpOptions(top);
    }

    /**
     * Adds {@code -h, --help} and {@code -V, --version} as picocli's {@code mixinStandardHelpOptions}
     * would, with its words; that mixin is itself read from annotations.
     */
    static CommandSpec addStandardHelpOptions(CommandSpec spec) {
        spec.addOption(OptionSpec.builder("-h", "--help").type(boolean.class).usageHelp(true)
                .description("Show this help message and exit.").build());
        spec.addOption(OptionSpec.builder("-V", "--version").type(boolean.class).versionHelp(true)
                .description("Print version information and exit.").build());
        return spec;
    }

    private static Map<String, Supplier<Object>> subcommands() {
        Map<String, Supplier<Object>> commands = new LinkedHashMap<>();
        commands.put("serve", () -> new ServeCommand().spec());
        commands.put("demo", DemoCommand::new);
        commands.put("volumes", VolumesCommand::new);
        commands.put("disks", DisksCommand::new);
        commands.put("probe", ProbeCommand::new);
        commands.put("version", VersionCommand::new);
        commands.put("help", CommandLine.HelpCommand::new);
        return commands;
    }

    /** {@code --version} of every command: the same lines as {@code hearth version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return BuildInfo.read().lines().toArray(String[]::new);
        }
    }
}
