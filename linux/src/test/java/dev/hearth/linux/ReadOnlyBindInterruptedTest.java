package dev.hearth.linux;

import static dev.hearth.linux.MountFlags.MS_NODEV;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.Scratch;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A read-only bind is never writable at its target, not even for a moment: a process stopped or
 * killed anywhere inside {@link Mounts#bind} leaves the target empty or read-only. A writable
 * moment there is what a driver killed inside a read-only publish leaves behind, and the kubelet's
 * retry must then refuse it as a read-write publish of the volume. A child process binds and
 * unmounts in a loop; the test stops it at random moments and looks at the target, then kills it.
 */
@RequiresRoot
class ReadOnlyBindInterruptedTest {

    private static final int SIGKILL = 9;
    private static final int SIGSTOP = 19;
    private static final int SIGCONT = 18;

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    void aBindStoppedOrKilledAtAnyMomentIsNeverWritable() throws Exception {
        Path source = Files.createDirectory(dir.resolve("source"));
        Path target = Files.createDirectory(dir.resolve("target"));
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", MS_NODEV, "size=1m");
        cleanup.add(() -> {
            while (MountInfo.at(target).isPresent()) {
                Mounts.unmount(target);
            }
        });

        List<String> seen = new ArrayList<>();
        int stops = 0;
        for (int child = 0; child < 3; child++) {
            Process loop = start(source, target);
            try {
                for (int i = 0; i < 300; i++, stops++) {
                    pause(ThreadLocalRandom.current().nextInt(0, 200));
                    signal(loop, SIGSTOP);
                    awaitStopped(loop);
                    state(target).ifPresent(seen::add);
                    signal(loop, SIGCONT);
                }
                pause(ThreadLocalRandom.current().nextInt(0, 200));
            } finally {
                signal(loop, SIGKILL);
                assertThat(loop.waitFor(10, TimeUnit.SECONDS)).as("the killed loop exits").isTrue();
            }
            state(target).ifPresent(seen::add); // what the kill left
            if (MountInfo.at(target).isPresent()) {
                Mounts.unmount(target);
            }
        }

        assertThat(stops).isEqualTo(900);
        assertThat(seen).as("the target while the loop was stopped, and after each kill").isNotEmpty()
                .containsOnly("read-only");
    }

    /** The target's mount, if any: "read-only" or "writable". */
    private static Optional<String> state(Path target) throws IOException {
        return MountInfo.at(target).map(entry -> entry.readOnly() ? "read-only" : "writable");
    }

    private static Process start(Path source, Path target) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process loop = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xshare:auto",
                "-cp", System.getProperty("java.class.path"), BindLoop.class.getName(),
                source.toString(), target.toString(), System.getProperty("hearth.test.bindloop", "api"))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(loop.getInputStream(), StandardCharsets.UTF_8));
        String first = out.readLine();
        assertThat(first).as("the loop's first bind and unmount").isEqualTo("looping");
        return loop;
    }

    private static void signal(Process process, int signal) {
        try (Arena arena = Arena.ofConfined()) {
            assertThat(Libc.kill(arena, (int) process.pid(), signal)).as("kill(%d, %d)", process.pid(), signal)
                    .isZero();
        }
    }

    /** kill(SIGSTOP) returns before the process stops; its state in /proc says when it has. */
    private static void awaitStopped(Process process) throws IOException, InterruptedException {
        Path stat = Path.of("/proc", Long.toString(process.pid()), "stat");
        for (int attempt = 0; attempt < 10_000; attempt++) {
            String line = Files.readString(stat);
            char state = line.charAt(line.lastIndexOf(')') + 2);
            if (state == 'T') {
                return;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("process " + process.pid() + " did not stop");
    }

    private static void pause(int micros) throws InterruptedException {
        TimeUnit.MICROSECONDS.sleep(micros);
    }
}
