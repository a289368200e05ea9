package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code hearth volumes} in-process, on pools without volumes: which pools it reads (serve's record,
 * or --pool), and what it says and exits with when it cannot read them. The real volumes, devices
 * and mounts are VolumesIT's.
 */
class VolumesCommandTest {

    @TempDir
    Path dir;

    private static CommandRun run(String... args) {
        return CommandRun.of(args);
    }

    private Path state() {
        return dir.resolve("state");
    }

    private void record(String... pools) throws IOException {
        Files.createDirectories(state());
        new ServeRecord(List.of(pools), Optional.empty(), state(), "csi.hearth.dev", Instant.now()).write();
    }

    @Test
    void itReadsThePoolsServeRecorded() throws IOException {
        Files.createDirectories(dir.resolve("a"));
        Files.createDirectories(state().resolve("pools/b"));
        record("name=a,dir=" + dir.resolve("a") + ",capacity=2Gi", "name=b,capacity=1Gi");

        CommandRun run = run("volumes", "--state-dir", state().toString());

        assertThat(run.exit()).as("stderr: %s", run.err()).isZero();
        assertThat(run.out().lines()).anyMatch(l -> l.matches("a \\(default\\)\\s+file\\s+2Gi\\s+0\\s+\\S+\\s+0\\s+-"))
                .anyMatch(l -> l.matches("b\\s+file\\s+1Gi\\s+0\\s+\\S+\\s+0\\s+-"));
        assertThat(run.out()).contains("No volumes.", "No orphans.");
        assertThat(run.err()).isEmpty();
    }

    @Test
    void poolFlagsAreReadInsteadOfTheRecord() throws IOException {
        record("name=recorded,dir=" + Files.createDirectories(dir.resolve("recorded")));
        Files.createDirectories(dir.resolve("given"));

        CommandRun run = run("volumes", "--state-dir", state().toString(), "--pool", "name=given,dir=" + dir.resolve("given"),
                "-o", "json");

        assertThat(run.exit()).as("stderr: %s", run.err()).isZero();
        assertThat(run.out()).contains("\"name\": \"given\"").doesNotContain("recorded");
    }

    @Test
    void withoutAStateDirectoryOrRecordItSaysWhatIsMissingAndExitsOne() throws IOException {
        CommandRun missing = run("volumes", "--state-dir", state().toString());
        assertThat(missing.exit()).isEqualTo(1);
        assertThat(missing.err()).contains("state directory " + state() + " does not exist");
        assertThat(state()).doesNotExist();

        Files.createDirectories(state());
        CommandRun noRecord = run("volumes", "--state-dir", state().toString());
        assertThat(noRecord.exit()).isEqualTo(1);
        assertThat(noRecord.err()).contains(state().resolve("serve.properties") + " does not exist", "--pool");

        Files.writeString(state().resolve("serve.properties"), "format=1\npool.1=name=x,kind=zfs\nstate-dir="
                + state() + "\ndriver-name=csi.hearth.dev\nwritten=2026-11-24T10:00:00Z\n");
        CommandRun unknownKind = run("volumes", "--state-dir", state().toString());
        assertThat(unknownKind.exit()).isEqualTo(1);
        assertThat(unknownKind.err()).contains("names a pool this hearth cannot read", "unknown kind 'zfs'");
    }

    @Test
    void aPoolThatCannotBeOpenedIsShownWithWhyAndTheExitIsOne() throws IOException {
        Files.createDirectories(dir.resolve("there"));

        CommandRun run = run("volumes", "--pool", "name=there,dir=" + dir.resolve("there"), "--pool",
                "name=gone,dir=" + dir.resolve("gone"));

        assertThat(run.exit()).isEqualTo(1);
        assertThat(run.out().lines()).anyMatch(l -> l.startsWith("there (default)  file"))
                .anyMatch(l -> l.matches("gone\\s+file\\s+-\\s+-\\s+-\\s+0\\s+pool 'gone': cannot open it: .*"));
        assertThat(run.err()).contains("hearth volumes: pool 'gone': cannot open it: " + dir.resolve("gone"));
        assertThat(dir.resolve("gone")).doesNotExist();
    }

    @Test
    void usageMistakesExitTwo() {
        CommandRun output = run("volumes", "--pool", "name=x,dir=/nowhere", "--output", "yaml");
        assertThat(output.exit()).isEqualTo(2);
        assertThat(output.err()).contains("--output must be table or json, not 'yaml'");

        CommandRun spec = run("volumes", "--pool", "name=x,bogus=1");
        assertThat(spec.exit()).isEqualTo(2);
        assertThat(spec.err()).contains("unknown key 'bogus'");
    }
}
