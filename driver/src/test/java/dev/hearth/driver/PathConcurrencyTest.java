package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Two volumes sent to one path at once, which the kubelet never does (its paths name the volume)
 * but a client may: the path is taken by one call at a time, so one volume ends up there and the
 * other call is refused, never two mounts stacked on the path.
 */
@RequiresRoot
@RequiresTools("mkfs.ext4")
class PathConcurrencyTest extends DriverFixture {

    private static final int ROUNDS = 40;

    @Test
    void twoVolumesPublishedToOneTargetAtOnceNeverStack() throws Exception {
        String first = driver.create("race-a", 16 * MIB, mount("ext4")).getVolumeId();
        String second = driver.create("race-b", 16 * MIB, mount("ext4")).getVolumeId();
        Path firstStaging = kubelet.stagingFor(first);
        Path secondStaging = kubelet.stagingFor(second);
        kubelet.stage(first, firstStaging, mount("ext4"));
        kubelet.stage(second, secondStaging, mount("ext4"));
        Path target = kubelet.targetFor("pod");

        race(ROUNDS, () -> kubelet.publish(first, firstStaging, target, mount("ext4")),
                () -> kubelet.publish(second, secondStaging, target, mount("ext4")),
                () -> {
                    assertThat(mountsAt(target)).as("mounts at the target").hasSize(1);
                    for (String id : List.of(first, second)) {
                        unpublishIfThere(id, target);
                    }
                    assertThat(mountsAt(target)).isEmpty();
                });
    }

    @Test
    void twoVolumesStagedAtOnePathAtOnceNeverStack() throws Exception {
        String first = driver.create("race-a", 16 * MIB, mount("ext4")).getVolumeId();
        String second = driver.create("race-b", 16 * MIB, mount("ext4")).getVolumeId();
        Path staging = kubelet.stagingFor("shared");

        race(ROUNDS, () -> kubelet.stage(first, staging, mount("ext4")),
                () -> kubelet.stage(second, staging, mount("ext4")),
                () -> {
                    assertThat(mountsAt(staging)).as("mounts at the staging path").hasSize(1);
                    for (String id : List.of(first, second)) {
                        unstageIfThere(id, staging);
                    }
                    assertThat(mountsAt(staging)).isEmpty();
                });
    }

    /** Runs both calls at once, {@code rounds} times; each may fail only as a refusal, and one succeeds. */
    private static void race(int rounds, Runnable one, Runnable other, Runnable check) throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < rounds; round++) {
                CyclicBarrier start = new CyclicBarrier(2);
                List<Future<Status.Code>> calls = new ArrayList<>();
                for (Runnable call : List.of(one, other)) {
                    calls.add(threads.submit(() -> {
                        start.await();
                        try {
                            call.run();
                            return Status.Code.OK;
                        } catch (StatusRuntimeException e) {
                            return e.getStatus().getCode();
                        }
                    }));
                }
                List<Status.Code> codes = new ArrayList<>();
                for (Future<Status.Code> call : calls) {
                    codes.add(call.get());
                }
                assertThat(codes).as("round %d", round).contains(Status.Code.OK)
                        .allMatch(c -> c == Status.Code.OK || c == Status.Code.ABORTED
                                || c == Status.Code.ALREADY_EXISTS || c == Status.Code.FAILED_PRECONDITION);
                check.run();
            }
        } finally {
            threads.shutdownNow();
        }
    }

    private void unpublishIfThere(String id, Path target) {
        try {
            kubelet.unpublish(id, target);
        } catch (StatusRuntimeException e) {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        }
    }

    private void unstageIfThere(String id, Path staging) {
        try {
            kubelet.unstage(id, staging);
        } catch (StatusRuntimeException e) {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        }
    }

    private static List<MountEntry> mountsAt(Path path) {
        try {
            return MountInfo.read().stream().filter(m -> m.mountPoint().equals(path)).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
