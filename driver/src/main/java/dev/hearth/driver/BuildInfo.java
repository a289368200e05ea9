package dev.hearth.driver;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;

/**
 * What this jar is: its version and the commit it was built from, as Maven wrote them into
 * {@code hearth-version.properties}, and the Java runtime it runs on.
 *
 * @param commit {@code git describe} of the build's checkout (e.g. {@code 0e369cd-dirty}); empty
 *     when the build had no git repository
 */
record BuildInfo(String version, Optional<String> commit) {

    static BuildInfo read() {
        try (InputStream in = BuildInfo.class.getResourceAsStream("/hearth-version.properties")) {
            Properties props = new Properties();
            props.load(Objects.requireNonNull(in, "hearth-version.properties is missing from the jar"));
            String commit = props.getProperty("commit", "").strip();
            // Maven leaves ${hearth.commit} as it is when git did not run at all.
            boolean known = !commit.isEmpty() && !commit.startsWith("${");
            return new BuildInfo(props.getProperty("version"), known ? Optional.of(commit) : Optional.empty());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What {@code hearth version} prints: one fact a line. */
    List<String> lines() {
        Runtime.Version java = Runtime.version();
        return List.of(
                "hearth " + version,
                "commit " + commit.orElse("unknown (built without a git repository)"),
                "java " + java + " (" + System.getProperty("java.vendor") + ", " + System.getProperty("java.vm.name")
                        + ", " + System.getProperty("os.arch") + ")");
    }
}
