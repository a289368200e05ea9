package dev.hearth.storage.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.Freeze;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real ext4 on a loop device, frozen for real: what a pod's writer sees while hearth copies its
 * volume, and after hearth is gone in the middle of it.
 */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "fsfreeze", "mountpoint"})
class FreezerTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private Path mnt;
    private Path records;
    /** Its own threads: the common pool may have one worker on a small machine, and a frozen task holds it. */
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @BeforeEach
    void ext4OnALoopDevice() throws IOException {
        mnt = ScratchFilesystem.mount(cleanup, dir, "ext4", 64L << 20).mountPoint();
        cleanup.add(() -> {
            try {
                Freeze.thaw(mnt); // whatever a failed test left frozen, so the unmount can go on
            } catch (IllegalArgumentException | IOException e) {
                // not mounted any more
            }
        });
        records = dir.resolve("records");
        cleanup.add(threads::shutdownNow);
    }

    @Test
    void writersWaitDuringTheWorkAndResumeAfterItLeavingNoRecord() throws Exception {
        Freezer freezer = new Freezer(records, Duration.ofSeconds(30));
        CompletableFuture<Path> write = new CompletableFuture<>();

        String result = freezer.whileFrozen(mnt, () -> {
            write.completeAsync(() -> writeFile("during-the-copy"), threads);
            assertThatThrownBy(() -> write.get(300, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
            return "copied";
        });

        assertThat(result).isEqualTo("copied");
        assertThat(write.get(10, TimeUnit.SECONDS)).hasContent("during-the-copy");
        assertThat(records).doesNotExist();
    }

    @Test
    void freezesOfTwoFilesystemsAtOnceNeverLoseTheirRecordsDirectory() throws Exception {
        Path other = ScratchFilesystem.mount(cleanup, dir, "ext4", 64L << 20).mountPoint();
        Freezer freezer = new Freezer(records, Duration.ofSeconds(30));
        // One freeze ending removes the directory when it holds no other record: never between the
        // other's making it and writing its record there (a busy node's concurrent clones saw that).
        CompletableFuture<Void> second = CompletableFuture.runAsync(() -> freezeRepeatedly(freezer, other), threads);
        freezeRepeatedly(freezer, mnt);
        second.get(60, TimeUnit.SECONDS);

        assertThat(records).doesNotExist();
    }

    private static void freezeRepeatedly(Freezer freezer, Path mountPoint) {
        for (int i = 0; i < 150; i++) {
            try {
                freezer.whileFrozen(mountPoint, () -> "copied");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    @Test
    void aRestartedDriverThawsWhatTheOneBeforeItLeftFrozen() throws Exception {
        CountDownLatch frozen = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        cleanup.add(never::countDown);
        // The first driver freezes and then never comes back: as good as killed, for the filesystem.
        CompletableFuture<Object> first = CompletableFuture.supplyAsync(() -> {
            try {
                return new Freezer(records, Duration.ofSeconds(60)).whileFrozen(mnt, () -> {
                    frozen.countDown();
                    await(never);
                    return "copied";
                });
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, threads);
        assertThat(frozen.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Path> write = CompletableFuture.supplyAsync(() -> writeFile("by-the-pod"), threads);
        assertThatThrownBy(() -> write.get(300, TimeUnit.MILLISECONDS)).as("the pod's write waits: frozen")
                .isInstanceOf(TimeoutException.class);

        assertThat(new Freezer(records, Duration.ofSeconds(60)).thawLeftovers()).containsExactly(mnt);

        assertThat(write.get(10, TimeUnit.SECONDS)).hasContent("by-the-pod");
        assertThat(records).doesNotExist();
        never.countDown();
        assertThatThrownBy(first::join).as("the first driver's copy no longer counts as consistent")
                .hasCauseInstanceOf(StorageException.Precondition.class);
    }

    /** Found by FuzzCrashIT: a kill inside the record's atomic write left its temporary file for good. */
    @Test
    void aStartRemovesARecordWhoseWriteWasCutShortAndThawsNothing() throws Exception {
        Files.createDirectories(records);
        Files.writeString(records.resolve("bbacc6c2d95244336fd58d72942acb44.frozen.tmp"), "mount=" + mnt + "\ntok");

        assertThat(new Freezer(records, Duration.ofSeconds(60)).thawLeftovers()).isEmpty();

        assertThat(records).doesNotExist();
        assertThat(writeFile("not frozen")).hasContent("not frozen");
    }

    @Test
    void aFreezeThatMeetsAStaleRecordThawsItAndGoesAhead() throws Exception {
        CountDownLatch frozen = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        cleanup.add(never::countDown);
        CompletableFuture<Void> first = CompletableFuture.runAsync(() -> {
            try {
                new Freezer(records, Duration.ofSeconds(60)).whileFrozen(mnt, () -> {
                    frozen.countDown();
                    await(never);
                    return null;
                });
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, threads);
        assertThat(frozen.await(10, TimeUnit.SECONDS)).isTrue();

        String result = new Freezer(records, Duration.ofSeconds(60)).whileFrozen(mnt, () -> "second copy");

        assertThat(result).isEqualTo("second copy");
        assertThat(writeFile("after")).hasContent("after");
        never.countDown();
        assertThatThrownBy(first::join).as("the stale freeze's copy no longer counts")
                .hasCauseInstanceOf(StorageException.Precondition.class);
    }

    @Test
    void theWatchdogThawsAFreezeThatOutlivesTheLimitAndTheCopyFails() throws Exception {
        Freezer freezer = new Freezer(records, Duration.ofSeconds(1));
        long[] writeDoneAfterMillis = {-1};

        assertThatThrownBy(() -> freezer.whileFrozen(mnt, () -> {
            long start = System.nanoTime();
            CompletableFuture<Path> write = CompletableFuture.supplyAsync(() -> writeFile("held"), threads);
            await(write); // the copy "runs" until the pod's write goes through
            writeDoneAfterMillis[0] = (System.nanoTime() - start) / 1_000_000;
            return null;
        })).isInstanceOf(StorageException.Precondition.class).hasMessageContaining("past the limit of 1s");

        assertThat(writeDoneAfterMillis[0]).as("the write waited for the watchdog, then went through")
                .isBetween(500L, 15_000L);
        assertThat(records).doesNotExist();
    }

    @Test
    void aFilesystemFrozenByAnotherToolIsBusyAndStaysFrozen() throws Exception {
        ScratchFilesystem.run(List.of("fsfreeze", "--freeze", mnt.toString()));

        assertThatThrownBy(() -> new Freezer(records, Duration.ofSeconds(30)).whileFrozen(mnt, () -> "copy"))
                .isInstanceOf(StorageException.Busy.class)
                .hasMessageContaining("frozen by something other than hearth");

        assertThat(Freeze.thaw(mnt)).as("still frozen: not ours to thaw").isTrue();
    }

    @Test
    void aSecondCopyOfTheSameFilesystemMeanwhileIsBusy() throws Exception {
        Freezer freezer = new Freezer(records, Duration.ofSeconds(30));

        freezer.whileFrozen(mnt, () -> {
            assertThatThrownBy(() -> freezer.whileFrozen(mnt, () -> "nested"))
                    .isInstanceOf(StorageException.Busy.class);
            return null;
        });
    }

    private static void await(CountDownLatch latch) throws IOException {
        try {
            latch.await();
        } catch (InterruptedException e) {
            throw new IOException(e);
        }
    }

    private static void await(CompletableFuture<?> future) throws IOException {
        try {
            future.get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IOException(e);
        }
    }

    private Path writeFile(String name) {
        try {
            return Files.writeString(mnt.resolve(name), name);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
