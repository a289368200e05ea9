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
import java.util.List;
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

    @BeforeEach
    void pool() throws IOException {
        state = Files.createDirectories(dir.resolve("state"));
        FilePool pool = FilePool.open(new FilePoolConfig("default", dir.resolve("pool"), 64L << 20));
        cleanup.add(pool::close);
        pools = new Pools(List.of(pool), "default");
        ToolRunner tools = new ToolRunner();
        mounter = new Mounter(new Formatter(tools), new FormatJournal(state.resolve("formatting")), new Grower(tools));
        gate = new HostGate(new HostCheck(HostCheck.localHost(), FilesystemType.EXT4));
    }

    @Test
    void leavesTheStateDirectoryThePoolTheLoopDevicesAndTheMountsAsTheyWere() throws Exception {
        List<String> stateFiles = names(state);
        Files.writeString(state.resolve(".warm-up-blank"), "left by a driver killed in its warm-up");
        List<String> pool = names(dir.resolve("pool"));
        List<LoopAttachment> loops = Loop.list();

        assertThat(WarmUp.run(pools, mounter, gate, state)).as("ran to the end").isTrue();

        assertThat(names(state)).isEqualTo(stateFiles);
        assertThat(names(dir.resolve("pool"))).isEqualTo(pool);
        assertThat(Loop.list()).isEqualTo(loops);
        assertThat(MountInfo.read()).noneMatch(m -> m.mountPoint().startsWith(dir));
    }

    @Test
    void runsOnItsOwnThreadOnceTheDriverServes() throws Exception {
        Thread warmUp = WarmUp.start(pools, mounter, gate, state);
        warmUp.join(60_000);

        assertThat(warmUp.isAlive()).isFalse();
        assertThat(warmUp.isDaemon()).isTrue();
        assertThat(names(state)).noneMatch(name -> name.startsWith(".warm-up"));
    }

    @Test
    void aStateDirectoryItCannotWriteEndsItQuietly() {
        Path gone = dir.resolve("no-such-state");

        assertThat(WarmUp.run(pools, mounter, gate, gone)).isFalse();

        assertThat(gone).doesNotExist();
    }

    private static List<String> names(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
