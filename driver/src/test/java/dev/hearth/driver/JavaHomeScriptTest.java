package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code .ci/java25.sh}, which {@code ./hearth} and every test script source: the JDK's major
 * version is read from its {@code release} file, without starting a JVM, and from
 * {@code java -version} where there is no such file; a JAVA_HOME that is not a JDK 25 is not kept.
 */
class JavaHomeScriptTest {

    private static final Path SCRIPT =
            Path.of("..").toAbsolutePath().normalize().resolve(".ci/java25.sh");

    @TempDir
    Path dir;

    @Test
    void theMajorVersionComesFromTheReleaseFile() throws Exception {
        Path jdk = jdk("jdk-25", "JAVA_VERSION=\"25.0.3\"", null);
        assertThat(major(jdk)).isEqualTo("25");
        assertThat(major(jdk("jdk-17", "JAVA_VERSION=\"17.0.12\"", null))).isEqualTo("17");
        assertThat(major(jdk("jdk-25-ea", "JAVA_VERSION=\"25-ea\"", null))).isEqualTo("25");
        assertThat(major(jdk("jdk-8", "JAVA_VERSION=\"1.8.0_412\"", null))).isEqualTo("8");
    }

    @Test
    void theReleaseFileIsReadWithoutRunningJava() throws Exception {
        // Its java would say 17 (and leave a mark): the release file's 25 must win, unrun.
        Path marker = dir.resolve("ran");
        Path jdk = jdk("jdk", "IMPLEMENTOR=\"x\"\nJAVA_VERSION=\"25.0.1\"",
                "touch " + marker + "; echo 'openjdk version \"17.0.1\" 2021-10-19' >&2");
        assertThat(major(jdk)).isEqualTo("25");
        assertThat(marker).doesNotExist();
    }

    @Test
    void withoutAReleaseFileJavaIsAsked() throws Exception {
        Path jdk = jdk("jdk", null, "echo 'openjdk version \"25.0.2\" 2026-01-20' >&2");
        assertThat(major(jdk)).isEqualTo("25");
        Path old = jdk("old", null, "echo 'java version \"1.8.0_292\"' >&2");
        assertThat(major(old)).isEqualTo("8");
    }

    @Test
    void aDirectoryWithoutJavaHasNoVersion() throws Exception {
        Path notJdk = Files.createDirectories(dir.resolve("empty"));
        Files.writeString(notJdk.resolve("release"), "JAVA_VERSION=\"25.0.3\"\n");
        assertThat(major(notJdk)).isEmpty();
    }

    @Test
    void aJavaHomeOfAnotherVersionIsReplacedOrRefused() throws Exception {
        Path jdk17 = jdk("jdk-17", "JAVA_VERSION=\"17.0.12\"", null);
        Result result = bash("JAVA_HOME=" + jdk17 + "; source " + SCRIPT + "; echo \"home=$JAVA_HOME\"");
        // Either a JDK 25 from /usr/lib/jvm, or a clear refusal: never the 17 it was given.
        assertThat(result.out()).doesNotContain("home=" + jdk17);
        if (result.code() == 0) {
            assertThat(result.out()).contains("home=/");
        } else {
            assertThat(result.err()).contains("hearth needs JDK 25");
        }
    }

    private Path jdk(String name, String release, String javaBody) throws IOException {
        Path home = Files.createDirectories(dir.resolve(name));
        Path bin = Files.createDirectories(home.resolve("bin"));
        Path java = bin.resolve("java");
        Files.writeString(java, "#!/bin/sh\n" + (javaBody == null ? "exit 0" : javaBody) + "\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        if (release != null) {
            Files.writeString(home.resolve("release"), release + "\n");
        }
        return home;
    }

    private String major(Path jdk) throws Exception {
        // JAVA_HOME set to this machine's own JDK 25 first, so sourcing keeps it and goes on.
        Result result = bash("source " + SCRIPT + " && java_major " + jdk);
        assertThat(result.code()).as(result.err()).isZero();
        return result.out().strip();
    }

    private Result bash(String script) throws Exception {
        ProcessBuilder builder = new ProcessBuilder(List.of("bash", "-c", script));
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process process = builder.start();
        process.getOutputStream().close();
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return new Result(process.exitValue(),
                new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8),
                new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));
    }

    private record Result(int code, String out, String err) {}
}
