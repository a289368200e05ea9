package dev.hearth.linux.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** test/uml/run and its Java side: what a guest's command gets, and what comes back. */
class UserModeLinuxTest {

    private static final int CAP_SYS_RESOURCE = 24;

    @TempDir
    Path dir;

    @BeforeEach
    void needsAGuest() {
        UserModeLinux.assumeAvailable("these tests boot a guest");
    }

    @Test
    void theCommandRunsAsRootWithEveryCapabilityInItsDirectoryWithItsEnvironmentAndReturnsItsExitCode()
            throws Exception {
        UserModeLinux.Result result = UserModeLinux.run(dir, Duration.ofMinutes(1), List.of("sh", "-c", """
                pwd; echo "$FOO"; echo "in=$HEARTH_IN_UML"; id -u
                grep CapEff /proc/self/status
                test -c /dev/loop-control && echo loop-control
                echo to-stderr >&2
                exit 7"""), Map.of("FOO", "a b 'c' $x"));

        assertThat(result.exitCode()).as(result.describe()).isEqualTo(7);
        List<String> lines = result.output().lines().toList();
        assertThat(lines).as(result.describe())
                .startsWith(dir.toString(), "a b 'c' $x", "in=1", "0")
                .contains("loop-control", "to-stderr");
        long capEff = Long.parseLong(lines.get(4).replaceFirst("CapEff:\\s*", ""), 16);
        assertThat(capEff & (1L << CAP_SYS_RESOURCE)).as("CAP_SYS_RESOURCE in " + lines.get(4)).isNotZero();
        assertThat(result.diagnostics()).contains("uml: guest up after");
    }

    @Test
    void aGuestPastItsTimeoutIsStoppedAndReportedAs124() throws Exception {
        UserModeLinux.Result result = UserModeLinux.run(dir, Duration.ofSeconds(3), List.of("sleep", "600"), Map.of());

        assertThat(result.exitCode()).as(result.describe()).isEqualTo(124);
        assertThat(result.diagnostics()).contains("timed out after 3 s");
        assertThat(result.elapsed()).isLessThan(Duration.ofSeconds(20));
    }

    @Test
    void aFailingGuestMethodFailsTheTestWithItsStackTrace() {
        try {
            UserModeLinux.runInGuest(UserModeLinuxTest.class, "fails", dir, Duration.ofMinutes(1));
        } catch (AssertionError e) {
            assertThat(e.getMessage()).contains("exit 1", "IllegalStateException: failing on purpose in " + dir,
                    "HEARTH-UML-FAIL");
            return;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        throw new AssertionError("runInGuest passed a method that throws");
    }

    static void fails(Path dir) {
        if (UserModeLinux.insideGuest()) {
            throw new IllegalStateException("failing on purpose in " + dir);
        }
    }
}
