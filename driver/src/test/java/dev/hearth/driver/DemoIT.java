package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
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
        assertThat(Loop.list()).extracting(LoopAttachment::backingFile).noneMatch(f -> f.startsWith(tmp));
        assertThat(MountInfo.read()).noneMatch(m -> m.mountPoint().startsWith(tmp));
    }
}
