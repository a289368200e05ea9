package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Host;
import dev.hearth.storage.fs.FilesystemType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code hearth probe} against a real driver on a unix socket: ready, not ready, no answer, bad input. */
class ProbeCommandTest {

    @TempDir
    Path dir;

    private static CommandRun run(String... args) {
        return CommandRun.of(args);
    }

    @Test
    void aReadyDriverAnswersReadyWithItsNameAndVersion() throws IOException {
        try (TestDriver driver = TestDriver.start(dir)) {
            CommandRun run = run("probe", "--endpoint", "unix://" + driver.socket());

            assertThat(run.exit()).as(run.err()).isZero();
            assertThat(run.out()).startsWith("ready: csi.hearth.dev " + Driver.version() + " at unix://" + driver.socket());
        }
    }

    /** A node the driver cannot serve on (here a machine with nothing: no /proc, no /dev, no tools). */
    @Test
    void aDriverThatCannotServeIsNotReadyAndTheReasonIsPrinted() throws IOException {
        Path nothing = Files.createDirectories(dir.resolve("machine"));
        Path tools = Files.createDirectories(nothing.resolve("sbin"));
        try (TestDriver driver = TestDriver.start(dir, FilesystemType.EXT4, new Host(nothing, List.of(tools)))) {
            CommandRun run = run("probe", "--endpoint", "unix://" + driver.socket());

            assertThat(run.exit()).isEqualTo(ProbeCommand.NOT_READY);
            assertThat(run.out()).startsWith("not ready: unix://" + driver.socket() + " answered FAILED_PRECONDITION: ")
                    .contains("modprobe loop").contains("install util-linux");
        }
    }

    @Test
    void aSocketNobodyServesIsNoAnswer() {
        CommandRun run = run("probe", "--endpoint", "unix://" + dir.resolve("nobody.sock"), "--timeout", "2s");

        assertThat(run.exit()).isEqualTo(ProbeCommand.UNREACHABLE);
        assertThat(run.err()).startsWith("cannot reach unix://" + dir.resolve("nobody.sock")).contains("UNAVAILABLE");
        assertThat(run.out()).isEmpty();
    }

    @Test
    void aBadEndpointOrTimeoutIsAUsageError() {
        assertThat(run("probe", "--endpoint", "http://x").exit()).isEqualTo(2);
        assertThat(run("probe", "--endpoint", "unix://relative/csi.sock").exit()).isEqualTo(2);
        assertThat(run("probe", "--timeout", "0s").exit()).isEqualTo(2);
    }
}
