package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code hearth demo}, run as a user would, leaves the host as it found it. */
@RequiresRoot
@RequiresTools("mkfs.ext4")
class DemoIT {

    private static final Pattern STEP = Pattern.compile("(?m)^\\s+(\\d+)\\. (.+?)\\s+(\\d+\\.\\d) ms$");
    private static final Pattern WORK_DIR = Pattern.compile("file pool in (\\S+)/pool");

    /** The demo's java.io.tmpdir: its hearth-demo-* directory lands here, apart from anyone else's. */
    @TempDir
    Path tmp;

    @Test
    void demoWalksBothVolumesThroughTheirLifeAndLeavesNothingBehind() throws Exception {
        String out;
        try (HearthProcess demo = HearthProcess.start(tmp.resolve("logs"), List.of("-Djava.io.tmpdir=" + tmp),
                "demo")) {
            int exit = demo.waitFor(Duration.ofMinutes(3));
            out = demo.stdout();
            assertThat(exit).as("exit code; stdout:%n%s%nstderr:%n%s", out, demo.stderr()).isZero();
        }

        List<String> steps = new ArrayList<>();
        Matcher step = STEP.matcher(out);
        while (step.find()) {
            assertThat(Integer.parseInt(step.group(1))).as("step numbering in:%n%s", out).isEqualTo(steps.size() + 1);
            assertThat(Double.parseDouble(step.group(3))).isGreaterThan(0);
            steps.add(step.group(2));
        }
        assertThat(steps).as("steps in:%n%s", out).hasSize(36);
        assertThat(steps).filteredOn(s -> s.startsWith("CreateVolume")).hasSize(5)
                .anyMatch(s -> s.contains("demo-filesystem")).anyMatch(s -> s.contains("demo-block"))
                .anyMatch(s -> s.contains("demo-restored") && s.contains("from the snapshot"))
                .anyMatch(s -> s.contains("demo-clone") && s.contains("clone"));
        for (String call : List.of("NodeStageVolume", "NodePublishVolume")) {
            assertThat(steps).as(call).filteredOn(s -> s.startsWith(call)).hasSize(2);
        }
        assertThat(steps).filteredOn(s -> s.startsWith("NodeStage+NodePublish")).hasSize(3);
        for (String call : List.of("NodeUnpublishVolume", "NodeUnstageVolume", "DeleteVolume")) {
            assertThat(steps).as(call).filteredOn(s -> s.startsWith(call)).hasSize(5);
        }
        for (String call : List.of("CreateSnapshot", "DeleteSnapshot", "NodeExpandVolume")) {
            assertThat(steps).as(call).filteredOn(s -> s.startsWith(call)).hasSize(1);
        }
        assertThat(out).contains("read back: hello from hearth").contains("1048576 bytes read back identical");
        assertThat(out).contains("restored volume: hello.txt present, after-snapshot.txt absent")
                .contains("clone holds after-snapshot.txt: yes")
                .containsPattern("the mounted filesystem grew from \\S+ MiB to \\S+ MiB without unmounting");
        assertThat(out).contains("Left behind: nothing");

        Matcher workDir = WORK_DIR.matcher(out);
        assertThat(workDir.find()).as("the demo names its directory in:%n%s", out).isTrue();
        Path work = Path.of(workDir.group(1));
        assertThat(work.getParent()).isEqualTo(tmp);
        assertThat(work.getFileName().toString()).startsWith("hearth-demo-");
        assertThat(work).doesNotExist();
        try (Stream<Path> left = Files.list(tmp)) {
            assertThat(left.filter(p -> p.getFileName().toString().startsWith("hearth-demo-"))).isEmpty();
        }
        assertNothingLeftIn(tmp);
    }

    private static void assertNothingLeftIn(Path tmp) throws IOException {
        try (Stream<Path> left = Files.list(tmp)) {
            assertThat(left.filter(p -> p.getFileName().toString().startsWith("hearth-demo-"))).isEmpty();
        }
        assertThat(Loop.list()).extracting(LoopAttachment::backingFile).noneMatch(f -> f.startsWith(tmp));
        assertThat(MountInfo.read()).noneMatch(m -> m.mountPoint().startsWith(tmp) && !m.mountPoint().equals(tmp));
    }

    /**
     * SIGTERM or Ctrl-C at different points of the demo: right after the driver started, with an
     * ext4 volume staged, with a raw block device bound, and with four xfs volumes and a snapshot
     * about. Each time the demo stops, cleans up as it does at its end, and exits 128 + the signal.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "started in|TERM|143",
            "NodeStageVolume: attach as a loop device, mkfs.ext4|INT|130",
            "NodePublishVolume: bind the device node|TERM|143",
            "NodeStage+NodePublish the clone|INT|130"})
    @RequiresTools("mkfs.xfs")
    void aSignalAnywhereStopsTheDemoWhichCleansUpAndExitsAsSignalled(String after, String signal, int exit)
            throws Exception {
        // SIGINT at its default disposition, whatever this JVM inherited: a background job of a shell
        // without job control ignores SIGINT, its children too, and the JVM keeps an ignored SIGINT ignored.
        try (HearthProcess demo = HearthProcess.start(List.of("env", "--default-signal=INT"), tmp.resolve("logs"),
                List.of("-Djava.io.tmpdir=" + tmp), "demo")) {
            waitFor(demo, after);
            if (signal.equals("INT")) {
                demo.interrupt();
            } else {
                demo.process().destroy();
            }

            assertThat(demo.waitFor(Duration.ofMinutes(1))).as("exit code; stdout:%n%s%nstderr:%n%s", demo.stdout(),
                    demo.stderr()).isEqualTo(exit);
            assertThat(demo.stderr()).contains("hearth demo: stopped by SIG" + signal + "; cleaned up")
                    .doesNotContain("Exception").doesNotContain("\tat ");
            assertThat(demo.stdout()).as("stopped before its end").doesNotContainPattern("(?m)^\\s+36\\. ")
                    .containsPattern("(Left behind: nothing|Cleaned up after the interruption: .*removed\\.)");
        }
        assertNothingLeftIn(tmp);
    }

    private static void waitFor(HearthProcess demo, String output) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (!demo.stdout().contains(output)) {
            assertThat(demo.process().isAlive()).as("the demo runs until '%s'; stdout:%n%s%nstderr:%n%s", output,
                    demo.stdout(), demo.stderr()).isTrue();
            assertThat(System.nanoTime()).as("'%s' within 2 minutes", output).isLessThan(deadline);
            Thread.sleep(10);
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "lots|Invalid value for option '--capacity': 'lots' is not a size",
            "99999999Pi|Invalid value for option '--capacity': '99999999Pi' is too large",
            "1Gi|--capacity 1Gi is too small: the demo's volumes and snapshot take up to 1.9 GiB at once; give at "
                    + "least 1920Mi"})
    void aCapacityThatIsNoSizeOrTooSmallIsAUsageErrorAndMakesNothing(String capacity, String said) throws Exception {
        try (HearthProcess demo = HearthProcess.start(tmp.resolve("logs"), List.of("-Djava.io.tmpdir=" + tmp),
                "demo", "--capacity", capacity)) {
            assertThat(demo.waitFor(Duration.ofMinutes(1))).isEqualTo(2);
            assertThat(demo.stderr()).contains(said).contains("Usage: hearth demo").doesNotContain("Exception");
            assertThat(demo.stdout()).isEmpty();
        }
        assertNothingLeftIn(tmp);
    }

    /** Room the pool cannot get from its filesystem (a 1.5 GiB tmpfs) is one line and exit 1, after cleaning up. */
    @Test
    void aFilesystemWithoutRoomForTheDemoIsOneLineAndExit1() throws Exception {
        Path small = Files.createDirectories(tmp.resolve("small"));
        Mounts.mount("tmpfs", small, "tmpfs", 0, "size=1536m");
        try (HearthProcess demo = HearthProcess.start(tmp.resolve("logs"), List.of("-Djava.io.tmpdir=" + small),
                "demo")) {
            assertThat(demo.waitFor(Duration.ofMinutes(1))).as("stderr:%n%s", demo.stderr()).isEqualTo(1);
            assertThat(demo.stderr().lines().toList()).singleElement().asString()
                    .startsWith("hearth demo failed: step 2, GetCapacity: the pool has only ")
                    .endsWith("the demo's volumes need 1.9 GiB");
            assertThat(demo.stdout()).contains("Left behind: nothing");
            assertNothingLeftIn(small);
        } finally {
            Mounts.unmount(small);
        }
    }
}
