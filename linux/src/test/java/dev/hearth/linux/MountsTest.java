package dev.hearth.linux;

import static dev.hearth.linux.MountFlags.MS_NODEV;
import static dev.hearth.linux.MountFlags.MS_NOSUID;
import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.Scratch;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@RequiresRoot
class MountsTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private Path source;
    private Path target;

    @BeforeEach
    void createMountPoints() throws IOException {
        source = Files.createDirectory(dir.resolve("source"));
        target = Files.createDirectory(dir.resolve("target"));
    }

    @Test
    void tmpfsMountIsSizedAndListed() throws IOException {
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", MS_NODEV | MS_NOSUID, "size=16m,mode=0700");

        FsStats stats = FileSystems.statvfs(source);
        assertThat(stats.totalBytes()).isEqualTo(16 * MIB);
        assertThat(stats.availableBytes()).isLessThanOrEqualTo(stats.freeBytes()).isPositive();
        assertThat(stats.readOnly()).isFalse();
        MountEntry entry = MountInfo.at(source).orElseThrow();
        assertThat(entry.fsType()).isEqualTo("tmpfs");
        assertThat(entry.source()).isEqualTo("tmpfs");
        assertThat(entry.hasMountOption("nodev")).isTrue();
        assertThat(entry.hasMountOption("nosuid")).isTrue();
        assertThat(entry.hasSuperOption("size=16384k")).isTrue();
        assertThat(MountInfo.containing(source.resolve("not/yet/created"))).contains(entry);
        assertThat(MountInfo.containing(dir).map(MountEntry::mountId)).isNotEqualTo(entry.mountId());
    }

    /**
     * The watched table is the one read last while nothing changes, and every mount, remount of a
     * bind's flags and unmount shows in the very next answer: a stale table would say a volume path
     * holds what is gone, or nothing where a volume is.
     */
    @Test
    void theWatchedTableIsReadAgainAfterEveryMountRemountAndUnmount() throws IOException {
        List<MountEntry> before = MountInfo.readWatched();
        assertThat(before).map(MountEntry::mountPoint).doesNotContain(source, target);
        assertThat(sameTwice()).as("two answers in a row with no mount between them, the one table").isTrue();

        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", MS_NODEV, "size=1m");
        assertThat(MountInfo.at(MountInfo.readWatched(), source)).hasValueSatisfying(
                e -> assertThat(e.fsType()).isEqualTo("tmpfs"));
        Mounts.bind(source, target, false);
        cleanup.add(() -> {
            if (MountInfo.at(target).isPresent()) { // unmounted by the test unless it failed first
                Mounts.unmount(target);
            }
        });
        assertThat(MountInfo.at(MountInfo.readWatched(), target).map(MountEntry::readOnly)).contains(false);
        Mounts.mount("", target, "", MountFlags.MS_REMOUNT | MountFlags.MS_BIND | MountFlags.MS_RDONLY
                | MountFlags.MS_NODEV, null);
        assertThat(MountInfo.at(MountInfo.readWatched(), target).map(MountEntry::readOnly)).contains(true);
        Mounts.unmount(target);
        assertThat(MountInfo.at(MountInfo.readWatched(), target)).isEmpty();
        assertThat(MountInfo.readWatched()).isEqualTo(MountInfo.read());
    }

    /** Whether two answers in a row are the one table; tried a few times, as the host may mount something meanwhile. */
    private static boolean sameTwice() throws IOException {
        for (int attempt = 0; attempt < 5; attempt++) {
            if (MountInfo.readWatched() == MountInfo.readWatched()) {
                return true;
            }
        }
        return false;
    }

    /** Both ways to a read-only bind: the mount API's detached clone, and the bind and remount of kernels before 5.12. */
    @ParameterizedTest(name = "mount API {0}")
    @ValueSource(booleans = {true, false})
    void readOnlyBindRefusesWritesWithErofsAndKeepsNodevNosuid(boolean mountApi) throws IOException {
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", MS_NODEV | MS_NOSUID, "size=16m");
        Files.writeString(source.resolve("file"), "data");

        boolean was = Mounts.useMountApi(mountApi);
        cleanup.add(() -> Mounts.useMountApi(was));
        Mounts.bind(source, target, true);
        cleanup.add(() -> Mounts.unmount(target));

        MountEntry bind = MountInfo.at(target).orElseThrow();
        assertThat(bind.readOnly()).isTrue();
        assertThat(bind.hasMountOption("nodev")).isTrue();
        assertThat(bind.hasMountOption("nosuid")).isTrue();
        assertThat(FileSystems.statvfs(target).readOnly()).isTrue();
        assertThat(Files.readString(target.resolve("file"))).isEqualTo("data");
        assertThatThrownBy(() -> FileOps.fallocate(target.resolve("file"), 0, 4096))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EROFS)).isTrue());
        assertThatThrownBy(() -> Files.writeString(target.resolve("new"), "x"))
                .isInstanceOf(FileSystemException.class)
                .hasMessageContaining("Read-only file system");
        Files.writeString(source.resolve("still-writable"), "yes");
    }

    /**
     * The kubelet's directory is shared with the host's, and a bind onto it propagates there. The
     * mount API's bind is read-only before it is attached, so every copy the kernel propagates is
     * read-only too; a remount would change only the mount it names, leaving the copies writable.
     */
    @Test
    void aReadOnlyBindIsReadOnlyWhereverItPropagates() throws IOException {
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", 0, "size=1m");
        Path shared = Files.createDirectory(dir.resolve("shared"));
        Path peer = Files.createDirectory(dir.resolve("peer"));
        Scratch.mount(cleanup, "tmpfs", shared, "tmpfs", 0, "size=1m");
        Mounts.mount(null, shared, null, MountFlags.MS_SHARED, null);
        Mounts.bind(shared, peer, false);
        cleanup.add(() -> Mounts.unmount(peer));
        Path pod = Files.createDirectory(shared.resolve("pod"));

        Mounts.bind(source, pod, true);
        cleanup.add(() -> Mounts.unmount(pod)); // the copy at the peer goes with it, as an unmount propagates too

        assertThat(MountInfo.at(pod).map(MountEntry::readOnly)).contains(true);
        assertThat(MountInfo.at(peer.resolve("pod")).map(MountEntry::readOnly)).as("the propagated copy").contains(true);
        assertThatThrownBy(() -> Files.writeString(peer.resolve("pod/new"), "x"))
                .hasMessageContaining("Read-only file system");
    }

    @Test
    void writableBindSharesTheFiles() throws IOException {
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", 0, "size=16m");

        Mounts.bind(source, target, false);
        cleanup.add(() -> Mounts.unmount(target));
        Files.writeString(target.resolve("file"), "via bind");

        assertThat(MountInfo.at(target).orElseThrow().readOnly()).isFalse();
        assertThat(Files.readString(source.resolve("file"))).isEqualTo("via bind");
    }

    @Test
    void atReturnsTheTopMostOfStackedMounts() throws IOException {
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", 0, "size=8m");
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", 0, "size=4m");

        assertThat(MountInfo.at(source).orElseThrow().hasSuperOption("size=4096k")).isTrue();
        assertThat(FileSystems.statvfs(source).totalBytes()).isEqualTo(4 * MIB);
    }

    /** A read-only bind's failures name the call that failed, its source and its target. */
    @Test
    void readOnlyBindOntoAMissingTargetNamesTheMoveAndLeavesNothing() throws IOException {
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", 0, "size=1m");
        Path missing = dir.resolve("missing");
        int before = MountInfo.read().size();

        assertThatThrownBy(() -> Mounts.bind(source, missing, true))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue())
                .hasMessage("move_mount(" + source + " -> " + missing + ", read-only): ENOENT (No such file or directory)");
        assertThatThrownBy(() -> Mounts.bind(dir.resolve("no-source"), target, true))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue())
                .hasMessageStartingWith("open_tree(" + dir.resolve("no-source") + ", clone)");
        assertThat(MountInfo.read()).hasSize(before);
    }

    @Test
    void unmountOfANonMountIsEinval() {
        assertThatThrownBy(() -> Mounts.unmount(target))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EINVAL)).isTrue())
                .hasMessage("umount2(" + target + "): EINVAL (Invalid argument)");
    }

    @Test
    void unmountWithFlagsNamesThem() {
        assertThatThrownBy(() -> Mounts.unmount(target, MountFlags.UMOUNT_NOFOLLOW))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EINVAL)).isTrue())
                .hasMessage("umount2(" + target + ", 0x8): EINVAL (Invalid argument)");
    }

    @Test
    void unmountOfABusyMountIsEbusy() throws IOException {
        Scratch.mount(cleanup, "tmpfs", source, "tmpfs", 0, "size=1m");
        Path inner = Files.createDirectory(source.resolve("inner"));
        Scratch.mount(cleanup, "tmpfs", inner, "tmpfs", 0, "size=1m");

        assertThatThrownBy(() -> Mounts.unmount(source))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EBUSY)).isTrue());
    }

    @Test
    void mountFailureNamesSourceTargetTypeFlagsAndData() {
        Path missing = dir.resolve("missing");

        assertThatThrownBy(() -> Mounts.mount("tmpfs", missing, "tmpfs", MS_NODEV, "size=1m"))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue())
                .hasMessage("mount(tmpfs -> " + missing + ", tmpfs, nodev, size=1m): ENOENT (No such file or directory)");
    }
}
