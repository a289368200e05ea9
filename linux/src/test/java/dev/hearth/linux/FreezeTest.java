package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

@RequiresRoot
@RequiresTools("mkfs.ext4")
class FreezeTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private Path mnt;

    @BeforeEach
    void ext4OnALoopDevice() throws IOException {
        mnt = ScratchFilesystem.mount(cleanup, dir, "ext4", 64L << 20).mountPoint();
    }

    @Test
    void writersWaitWhileFrozenAndFinishOnceThawed() throws Exception {
        Freeze.Frozen frozen = Freeze.freeze(mnt);
        cleanup.add(frozen::close);

        CompletableFuture<Path> write = CompletableFuture.supplyAsync(() -> {
            try {
                return Files.writeString(mnt.resolve("during-freeze"), "written");
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        assertThatThrownBy(() -> write.get(500, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
        frozen.close();

        assertThat(write.get(10, TimeUnit.SECONDS)).hasContent("written");
    }

    @Test
    void aFrozenFilesystemCannotBeFrozenAgain() throws IOException {
        Freeze.Frozen frozen = Freeze.freeze(mnt);
        cleanup.add(frozen::close);

        assertThatThrownBy(() -> Freeze.freeze(mnt))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EBUSY)).isTrue())
                .hasMessage("ioctl(" + mnt + ", FIFREEZE): EBUSY (Device or resource busy)");
    }

    @Test
    void closingTwiceThawsOnceAndLeavesALaterFreezeAlone() throws IOException {
        Freeze.Frozen first = Freeze.freeze(mnt);
        first.close();
        Freeze.Frozen second = Freeze.freeze(mnt);
        cleanup.add(second::close);

        first.close();

        assertThatThrownBy(() -> Freeze.freeze(mnt)).as("still frozen by the second handle")
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EBUSY)).isTrue());
        second.close();
        Files.writeString(mnt.resolve("after-thaw"), "ok");
    }

    @Test
    void aFilesystemWithoutFreezeSupportIsEopnotsupp() throws IOException {
        Path tmpfs = Files.createDirectory(dir.resolve("tmpfs"));
        Scratch.mount(cleanup, "tmpfs", tmpfs, "tmpfs", 0, "size=1m");

        assertThatThrownBy(() -> Freeze.freeze(tmpfs))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EOPNOTSUPP)).isTrue());
    }

    @Test
    void aDirectoryThatIsNotAMountPointIsRefusedAndNothingIsFrozen() throws IOException {
        // Inside the scratch filesystem: if the guard ever failed, only that would freeze.
        Path inside = Files.createDirectory(mnt.resolve("not-a-mount"));

        assertThatThrownBy(() -> Freeze.freeze(inside))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a mount point");
        Files.writeString(mnt.resolve("still-writable"), "ok");
    }

    /** The descriptor's own answer (statx) is the mount table's, for a mount, a bind of a directory in it, and neither. */
    @Test
    void whetherADirectoryIsAMountRootIsWhatTheMountTableSays() throws IOException {
        Path inside = Files.createDirectory(mnt.resolve("inside"));
        Path bind = Files.createDirectory(dir.resolve("bind"));
        Mounts.bind(inside, bind, false);
        cleanup.add(() -> Mounts.unmount(bind));
        for (Path path : java.util.List.of(mnt, inside, bind, dir, Path.of("/"))) {
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined();
                 Fd fd = Fd.open(arena, path, Libc.O_RDONLY | Libc.O_DIRECTORY)) {
                assertThat(Freeze.isMountRoot(arena, fd, path)).as(path.toString())
                        .isEqualTo(MountInfo.at(path).isPresent()).isEqualTo(!path.equals(inside) && !path.equals(dir));
            }
        }
    }

    @Test
    void aMissingMountPointIsEnoent() {
        assertThatThrownBy(() -> Freeze.freeze(dir.resolve("missing")))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue());
    }
}
