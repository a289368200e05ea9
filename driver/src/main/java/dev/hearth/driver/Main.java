package dev.hearth.driver;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code hearth serve} runs the CSI driver; {@code hearth demo} shows it working. */
@Command(name = "hearth", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "A Kubernetes CSI driver that turns a node's local disks into persistent volumes.",
        subcommands = {ServeCommand.class, DemoCommand.class, CommandLine.HelpCommand.class})
public final class Main {

    public static void main(String[] args) {
        System.exit(new CommandLine(new Main()).execute(args));
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"hearth " + Driver.version()};
        }
    }
}
