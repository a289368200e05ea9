package dev.hearth.driver;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code hearth version}: the same lines as {@code --version}, for those who type it as a command. */
@Command(name = "version", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Print hearth's version, the git commit it was built from, and the Java runtime.")
final class VersionCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        BuildInfo.read().lines().forEach(spec.commandLine().getOut()::println);
        spec.commandLine().getOut().flush();
        return 0;
    }
}
