package dev.hearth.linux;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

class ReflinkTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.xfs")
    void reflinkSharesBlocksAndLaterWritesToTheSourceLeaveTheCloneAlone() throws IOException {
        Path mnt = xfs(true);
        byte[] original = random(16 * MIB, 1);
        Path source = Files.write(mnt.resolve("source"), original);
        long freeBefore = FileSystems.statvfs(mnt).freeBytes();

        FileOps.reflink(source, mnt.resolve("clone"));

        assertThat(FileSystems.statvfs(mnt).freeBytes()).as("a clone takes no data blocks")
                .isGreaterThan(freeBefore - MIB);
        assertThat(Files.readAllBytes(mnt.resolve("clone"))).isEqualTo(original);
        Files.write(source, random(16 * MIB, 2));
        assertThat(Files.readAllBytes(mnt.resolve("clone"))).isEqualTo(original);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.xfs")
    void reflinkReplacesALongerExistingTarget() throws IOException {
        Path mnt = xfs(true);
        Path source = Files.write(mnt.resolve("source"), random(MIB, 3));
        Path target = Files.write(mnt.resolve("target"), random(4 * MIB, 4));

        FileOps.reflink(source, target);

        assertThat(Files.readAllBytes(target)).isEqualTo(Files.readAllBytes(source));
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void ext4RefusesWithEopnotsuppAndLeavesAnEmptyTarget() throws IOException {
        Path mnt = ScratchFilesystem.mount(cleanup, dir, "ext4", 64 * MIB).mountPoint();
        Path source = Files.write(mnt.resolve("source"), random(MIB, 5));
        Path target = mnt.resolve("target");

        assertThatThrownBy(() -> FileOps.reflink(source, target))
                .isInstanceOfSatisfying(LinuxException.class, e -> {
                    assertThat(e.is(Errno.EOPNOTSUPP)).isTrue();
                    assertThat(FileOps.isReflinkRefusal(e)).isTrue();
                })
                .hasMessage("ioctl(" + target + ", FICLONE from " + source + "): EOPNOTSUPP (Operation not supported)");
        assertThat(target).isEmptyFile();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.xfs")
    void filesOnDifferentFilesystemsRefuseWithExdev() throws IOException {
        Path mnt = xfs(true);
        Path source = Files.write(dir.resolve("source-on-tmp"), random(MIB, 6));

        assertThatThrownBy(() -> FileOps.reflink(source, mnt.resolve("target")))
                .isInstanceOfSatisfying(LinuxException.class, e -> {
                    assertThat(e.is(Errno.EXDEV)).isTrue();
                    assertThat(FileOps.isReflinkRefusal(e)).isTrue();
                });
    }

    @Test
    void aMissingSourceIsEnoentAndCreatesNoTarget() {
        Path target = dir.resolve("target");

        assertThatThrownBy(() -> FileOps.reflink(dir.resolve("missing"), target))
                .isInstanceOfSatisfying(LinuxException.class, e -> {
                    assertThat(e.is(Errno.ENOENT)).isTrue();
                    assertThat(FileOps.isReflinkRefusal(e)).isFalse();
                })
                .hasMessageContaining(dir.resolve("missing").toString());
        assertThat(target).doesNotExist();
    }

    @Test
    void reflinkOntoItselfIsRefusedWithoutTruncating() throws IOException {
        byte[] content = random(MIB, 7);
        Path file = Files.write(dir.resolve("file"), content);

        assertThatThrownBy(() -> FileOps.reflink(file, file)).isInstanceOf(IllegalArgumentException.class);
        assertThat(Files.readAllBytes(file)).isEqualTo(content);
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.xfs", "mkfs.ext4", "mkfs.btrfs"})
    void reflinkSupportedTellsReflinkFilesystemsApartAndLeavesNothingBehind() throws IOException {
        Path xfsReflink = xfs(true);
        Path xfsPlain = xfs(false);
        Path btrfs = ScratchFilesystem.mount(cleanup, dir, "btrfs", 128 * MIB).mountPoint();
        Path ext4 = ScratchFilesystem.mount(cleanup, dir, "ext4", 64 * MIB).mountPoint();

        assertThat(FileOps.reflinkSupported(xfsReflink)).isTrue();
        assertThat(FileOps.reflinkSupported(btrfs)).isTrue();
        assertThat(FileOps.reflinkSupported(xfsPlain)).isFalse();
        assertThat(FileOps.reflinkSupported(ext4)).isFalse();
        for (Path mnt : new Path[] {xfsReflink, xfsPlain, btrfs, ext4}) {
            try (Stream<Path> left = Files.list(mnt)) {
                assertThat(left).noneMatch(p -> p.getFileName().toString().startsWith(".hearth-reflink-"));
            }
        }
    }

    private Path xfs(boolean reflink) throws IOException {
        return ScratchFilesystem.mount(cleanup, dir, "xfs", 320 * MIB, "-m", "reflink=" + (reflink ? 1 : 0))
                .mountPoint();
    }

    static byte[] random(long size, long seed) {
        byte[] bytes = new byte[Math.toIntExact(size)];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }
}
