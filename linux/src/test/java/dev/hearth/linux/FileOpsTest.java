package dev.hearth.linux;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.Scratch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

class FileOpsTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    void fallocateAllocatesBlocksAndExtendsTheFile() throws IOException {
        Path file = Files.createFile(dir.resolve("volume.img"));
        assertThat(FileOps.allocatedBytes(file)).isZero();

        FileOps.fallocate(file, 0, 8 * MIB);

        assertThat(Files.size(file)).isEqualTo(8 * MIB);
        assertThat(FileOps.allocatedBytes(file)).isGreaterThanOrEqualTo(8 * MIB);
    }

    @Test
    void sparseFileHasNoAllocatedBlocks() throws IOException {
        Path file = Scratch.sparseFile(Files.createFile(dir.resolve("sparse.img")), 64 * MIB);

        assertThat(FileOps.allocatedBytes(file)).isLessThan(MIB);
    }

    @Test
    void fallocateOfAMissingFileNamesFileAndRange() {
        Path missing = dir.resolve("missing.img");

        assertThatThrownBy(() -> FileOps.fallocate(missing, 0, MIB))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue())
                .hasMessageContaining(missing.toString())
                .hasMessageContaining("ENOENT");
    }

    @Test
    void allocatedBytesOfAMissingFileIsEnoent() {
        assertThatThrownBy(() -> FileOps.allocatedBytes(dir.resolve("missing")))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue());
    }

    @Test
    @RequiresRoot
    void fallocateBeyondFreeSpaceIsEnospc() throws IOException {
        Path mnt = Files.createDirectory(dir.resolve("small"));
        Scratch.mount(cleanup, "tmpfs", mnt, "tmpfs", 0, "size=4m");
        Path file = Files.createFile(mnt.resolve("volume.img"));

        assertThatThrownBy(() -> FileOps.fallocate(file, 0, 64 * MIB))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOSPC)).isTrue())
                .hasMessage("fallocate(" + file + ", offset=0, length=" + 64 * MIB + "): ENOSPC (No space left on device)");
    }

    @Test
    void removeTakesAFileOrAnEmptyDirectoryAndSaysTheErrnoOfARefusal() throws IOException {
        Path file = Files.writeString(dir.resolve("file"), "x");
        Path empty = Files.createDirectory(dir.resolve("empty"));
        Path full = Files.createDirectory(dir.resolve("full"));
        Files.writeString(full.resolve("data"), "kept");

        FileOps.remove(file, false);
        FileOps.remove(empty, true);

        assertThat(file).doesNotExist();
        assertThat(empty).doesNotExist();
        assertThatThrownBy(() -> FileOps.remove(full, true))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOTEMPTY)).isTrue())
                .hasMessageStartingWith("rmdir(" + full + "): ENOTEMPTY");
        assertThatThrownBy(() -> FileOps.remove(full, false)) // unlink of a directory
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.EISDIR)).isTrue());
        assertThatThrownBy(() -> FileOps.remove(file, false))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue());
        assertThat(full.resolve("data")).hasContent("kept");
    }
}
