package dev.hearth.linux;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.testing.Scratch;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** On the test's temp directory: ext4 here, which tracks holes at block granularity. */
class DataExtentsTest {

    @TempDir
    Path dir;

    @Test
    void anEmptyFileHasNoExtents() throws IOException {
        assertThat(FileOps.dataExtents(Files.createFile(dir.resolve("empty")))).isEmpty();
    }

    @Test
    void aFileWithoutHolesIsOneExtent() throws IOException {
        Path file = Files.write(dir.resolve("full"), ReflinkTest.random(3 * MIB, 1));

        assertThat(FileOps.dataExtents(file)).containsExactly(new Extent(0, 3 * MIB));
    }

    @Test
    void aSparseFileListsEachWrittenRunBetweenHoles() throws IOException {
        Path file = sparse(32 * MIB);
        write(file, 0, MIB);
        write(file, 10 * MIB, MIB);
        write(file, 31 * MIB, MIB);

        assertThat(FileOps.dataExtents(file)).containsExactly(
                new Extent(0, MIB), new Extent(10 * MIB, MIB), new Extent(31 * MIB, MIB));
    }

    @Test
    void aTrailingHoleIsNotData() throws IOException {
        Path file = sparse(64 * MIB);
        write(file, 4 * MIB, 2 * MIB);

        assertThat(FileOps.dataExtents(file)).containsExactly(new Extent(4 * MIB, 2 * MIB));
    }

    @Test
    void anAllHoleFileHasNoExtents() throws IOException {
        assertThat(FileOps.dataExtents(sparse(1L << 40))).isEmpty();
    }

    @Test
    void aMissingFileIsEnoent() {
        assertThatThrownBy(() -> FileOps.dataExtents(dir.resolve("missing")))
                .isInstanceOfSatisfying(LinuxException.class, e -> assertThat(e.is(Errno.ENOENT)).isTrue());
    }

    private Path sparse(long size) throws IOException {
        return Scratch.sparseFile(dir.resolve("sparse"), size);
    }

    private static void write(Path file, long offset, long length) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer data = ByteBuffer.wrap(ReflinkTest.random(length, offset + 1));
            while (data.hasRemaining()) {
                channel.write(data, offset + data.position());
            }
        }
    }
}
