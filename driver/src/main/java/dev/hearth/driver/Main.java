package dev.hearth.driver;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code hearth serve} runs the CSI driver; {@code hearth demo} shows it working; {@code hearth volumes}
 * shows what the node's pools hold, {@code hearth disks} the node's disks and whether a pool may take them.
 */
@Command(name = "hearth", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "A Kubernetes CSI driver that turns a node's local disks into persistent volumes.",
        subcommands = {ServeCommand.class, DemoCommand.class, VolumesCommand.class, DisksCommand.class, ProbeCommand.class,
                VersionCommand.class, CommandLine.HelpCommand.class})
public final class Main {

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The whole command line, as {@link #main} runs it; tests run it in-process. */
    static CommandLine commandLine() {
        return new CommandLine(new Main()).setHelpFactory(WholeWordHelp.FACTORY);
    }

    /** {@code --version} of every command: the same lines as {@code hearth version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return BuildInfo.read().lines().toArray(String[]::new);
        }
    }
}
