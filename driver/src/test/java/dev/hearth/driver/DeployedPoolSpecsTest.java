package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The pool specs that ship in deploy/ (the ConfigMap env files) and in the README parse as
 * {@code hearth serve} will parse them, and none lets hearth make a directory outside its state
 * directory: that is where an unmounted disk would quietly become the root filesystem.
 */
class DeployedPoolSpecsTest {

    /** Where the DaemonSet keeps hearth's state (--state-dir in deploy/base/daemonset.yaml). */
    private static final Path STATE_DIR = Path.of("/var/lib/hearth");
    private static final Path REPOSITORY = Path.of("..").toAbsolutePath().normalize();

    private static List<String> shippedSpecs() throws IOException {
        List<String> specs = new ArrayList<>();
        try (Stream<Path> files = Files.walk(REPOSITORY.resolve("deploy"))) {
            for (Path env : files.filter(f -> f.toString().endsWith(".env")).toList()) {
                Files.readAllLines(env).stream().filter(l -> l.startsWith("HEARTH_POOL_"))
                        .map(l -> l.substring(l.indexOf('=') + 1)).forEach(specs::add);
            }
        }
        String readme = Files.readString(REPOSITORY.resolve("README.md"));
        Matcher example = Pattern.compile("--pool (name=\\S+)").matcher(readme);
        while (example.find()) {
            specs.add(example.group(1));
        }
        return specs;
    }

    @Test
    void everyShippedPoolSpecParsesAndMakesNoDirectoryOutsideTheStateDirectory() throws IOException {
        List<String> specs = shippedSpecs();

        assertThat(specs).as("the env files of deploy/base and deploy/overlays/custom-pools, and the README")
                .hasSizeGreaterThanOrEqualTo(4);
        for (String text : specs) {
            PoolSpec spec = PoolSpec.parse(text, STATE_DIR);
            if (spec.file().isPresent() && !spec.file().get().directory().startsWith(STATE_DIR)) {
                assertThat(spec.create()).as("create=true in %s", text).isFalse();
            }
        }
    }
}
