package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.storage.Pools;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Formatter;
import dev.hearth.storage.fs.Grower;
import dev.hearth.storage.mount.FormatJournal;
import dev.hearth.storage.mount.Mounter;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The warm-up a started driver runs: it must leave the node, the pool and the state directory as they were. */
@RequiresRoot
class WarmUpTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private Path state;
    private Pools pools;
    private Mounter mounter;
    private HostGate gate;
    private Rehearsal.Setup setup;

    @BeforeEach
    void pool() throws IOException {
        state = Files.createDirectories(dir.resolve("state"));
        FilePool pool = FilePool.open(new FilePoolConfig("default", dir.resolve("pool"), 64L << 20));
        cleanup.add(pool::close);
        pools = new Pools(List.of(pool), "default");
        ToolRunner tools = new ToolRunner();
        mounter = new Mounter(new Formatter(tools), new FormatJournal(state.resolve("formatting")), new Grower(tools));
        gate = new HostGate(new HostCheck(HostCheck.localHost(), FilesystemType.EXT4));
        setup = new Rehearsal.Setup("node-warm", FilesystemType.EXT4, new Formatter(tools), new Grower(tools));
    }

    @Test
    void leavesTheStateDirectoryThePoolTheLoopDevicesAndTheMountsAsTheyWere() throws Exception {
        List<String> stateFiles = names(state);
        Files.writeString(state.resolve(".warm-up-blank"), "left by a driver killed in its warm-up");
        List<String> pool = names(dir.resolve("pool"));
        List<LoopAttachment> loops = Loop.list();

        assertThat(WarmUp.run(pools, mounter, gate, state, setup)).as("ran to the end").isTrue();

        assertThat(names(state)).isEqualTo(stateFiles);
        assertThat(names(dir.resolve("pool"))).isEqualTo(pool);
        assertThat(Loop.list()).isEqualTo(loops);
        assertThat(MountInfo.read()).noneMatch(m -> m.mountPoint().startsWith(dir));
    }

    /**
     * The rehearsal's scratch pool, as a driver killed in its warm-up leaves it (a volume half made,
     * the pool's lock, a link to a file outside), is removed before the warm-up begins: the link, never
     * what it points to.
     */
    @Test
    void removesTheScratchPoolAKilledWarmUpLeftAndNeverFollowsALinkOutOfIt() throws Exception {
        Path outside = Files.writeString(dir.resolve("outside.txt"), "not the warm-up's");
        Path leftover = Files.createDirectories(state.resolve(Rehearsal.DIRECTORY).resolve("snapshots"));
        Files.writeString(leftover.resolveSibling("warm-up-aaaaaaaaaaaaaaaaaaaaaaaaaa.img.part"), "half made");
        Files.writeString(leftover.resolveSibling(".lock"), "");
        Files.createSymbolicLink(leftover.resolveSibling("link"), outside);

        assertThat(WarmUp.run(pools, mounter, gate, state, setup)).as("ran to the end").isTrue();

        assertThat(state.resolve(Rehearsal.DIRECTORY)).doesNotExist();
        assertThat(outside).hasContent("not the warm-up's");
    }

    /**
     * A round stages, publishes and reads the stats of its volume for real (the calls fail unless
     * the filesystem is made and mounted), in a namespace of its own: the node's table is the same
     * after, and no loop device stays.
     */
    @Test
    void aRoundStagesAndPublishesItsVolumeWhereTheNodeNeverSeesIt() throws Exception {
        List<LoopAttachment> loops = Loop.list();
        int mounts = MountInfo.read().size();
        String was = System.setProperty(Rehearsal.NAMESPACE_PROPERTY, "true");
        cleanup.add(() -> {
            if (was == null) {
                System.clearProperty(Rehearsal.NAMESPACE_PROPERTY);
            } else {
                System.setProperty(Rehearsal.NAMESPACE_PROPERTY, was);
            }
        });

        try (Rehearsal rehearsal = Rehearsal.open(state, setup)) {
            assertThat(rehearsal.round()).as("staged and published in its namespace").isTrue();
            assertThat(rehearsal.round()).as("and again").isTrue();
            assertThat(MountInfo.read()).hasSize(mounts).noneMatch(m -> m.mountPoint().startsWith(dir));
        }

        assertThat(Loop.list()).isEqualTo(loops);
        assertThat(state.resolve(Rehearsal.DIRECTORY)).doesNotExist();
        assertThat(state.resolve("formatting")).as("its format journal is its own").satisfiesAnyOf(
                journal -> assertThat(journal).doesNotExist(), journal -> assertThat(journal).isEmptyDirectory());
    }

    /**
     * A driver killed in a round's node steps leaves the loop device over the scratch image (the
     * mounts go with its namespace); the next start detaches it before it serves.
     */
    @Test
    void aLoopDeviceAKilledRoundLeftIsDetachedAtTheNextStart() throws Exception {
        Path image = Files.createDirectories(state.resolve(Rehearsal.DIRECTORY)).resolve("warm-up-left.img");
        Files.write(image, new byte[1 << 20]);
        var left = Loop.attach(image, false, false);
        cleanup.add(() -> {
            if (Loop.list().stream().anyMatch(a -> a.device().equals(left))) {
                Loop.detach(left);
            }
        });

        Rehearsal.releaseLeftovers(state);

        assertThat(Loop.list()).noneMatch(a -> a.device().equals(left) && a.backingFile().startsWith(state));
        Rehearsal.releaseLeftovers(state.resolve("no-such-state")); // nothing there: nothing read, nothing done
    }

    @Test
    void runsOnItsOwnThreadOnceTheDriverServes() throws Exception {
        Thread warmUp = WarmUp.start(pools, mounter, gate, state, setup, () -> {});
        warmUp.join(60_000);

        assertThat(warmUp.isAlive()).isFalse();
        assertThat(warmUp.isDaemon()).isTrue();
        assertThat(names(state)).noneMatch(name -> name.startsWith(".warm-up"));
    }

    /**
     * A driver that stops while its warm-up runs (the demo, failing at once) leaves nothing of it,
     * wherever the warm-up is: before it begins, and at moments through its rounds.
     */
    @Test
    void stoppedWhileItRunsItLeavesNothingBehind() throws Exception {
        for (long after : new long[] {0, 10, 30, 50, 70, 100, 150, 200, 250}) {
            long delay = after == 0 ? 0 : WarmUp.DELAY.toMillis() + after;
            Thread warmUp = WarmUp.start(pools, mounter, gate, state, setup, () -> {});
            Thread.sleep(delay);

            WarmUp.stop(warmUp);

            assertThat(warmUp.isAlive()).isFalse();
            assertThat(names(state)).as("after %d ms", delay).noneMatch(name -> name.startsWith(".warm-up"));
            assertThat(Loop.list()).as("after %d ms", delay).noneMatch(a -> a.backingFile().startsWith(dir));
            assertThat(MountInfo.read()).noneMatch(m -> m.mountPoint().startsWith(dir));
        }
    }

    /**
     * While calls are at work the warm-up waits (they warm their own paths, and its CPU would fall
     * on them), and goes on once none are; stopped while it waits, it leaves nothing behind.
     */
    @Test
    void waitsWhileCallsAreAtWorkAndGoesOnAfter() throws Exception {
        AtomicBoolean busy = new AtomicBoolean(true);
        AtomicInteger asked = new AtomicInteger();
        CompletableFuture<Boolean> run = CompletableFuture.supplyAsync(() -> WarmUp.run(pools, mounter, gate, state,
                setup, () -> {
                    asked.incrementAndGet();
                    return busy.get();
                }), Thread.ofPlatform()::start);
        Thread.sleep(2_000); // a warm-up alone takes a few hundred ms

        assertThat(run).as("waiting while calls are at work").isNotDone();
        assertThat(asked.get()).isGreaterThan(1);
        busy.set(false);
        assertThat(run).succeedsWithin(Duration.ofSeconds(60)).isEqualTo(true);
        assertThat(names(state)).noneMatch(name -> name.startsWith(".warm-up"));

        Thread waiting = WarmUp.start(pools, mounter, gate, state, setup, () -> {}, () -> true);
        Thread.sleep(WarmUp.DELAY.toMillis() + 200);
        WarmUp.stop(waiting);
        assertThat(waiting.isAlive()).isFalse();
        assertThat(names(state)).noneMatch(name -> name.startsWith(".warm-up"));
    }

    /**
     * Calls that come a few ms apart (a burst, a volume's lifecycle) keep the warm-up waiting though
     * none is at work at most of its looks; it goes on once they have stopped for its quiet span.
     */
    @Test
    void callsAFewMillisecondsApartKeepItWaiting() throws Exception {
        AtomicBoolean calls = new AtomicBoolean(true);
        AtomicInteger asked = new AtomicInteger();
        CompletableFuture<Boolean> run = CompletableFuture.supplyAsync(() -> WarmUp.run(pools, mounter, gate, state,
                setup, () -> calls.get() && asked.incrementAndGet() % 4 == 0), Thread.ofPlatform()::start);
        Thread.sleep(2_000);

        assertThat(run).as("waiting while calls keep coming").isNotDone();
        assertThat(asked.get()).as("looks at the calls").isGreaterThan(20);
        calls.set(false);
        assertThat(run).succeedsWithin(Duration.ofSeconds(60)).isEqualTo(true);
        assertThat(names(state)).noneMatch(name -> name.startsWith(".warm-up"));
    }

    @Test
    void aStateDirectoryItCannotWriteEndsItQuietly() {
        Path gone = dir.resolve("no-such-state");

        assertThat(WarmUp.run(pools, mounter, gate, gone, setup)).isFalse();

        assertThat(gone).doesNotExist();
    }

    private static List<String> names(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
