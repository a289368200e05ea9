package dev.hearth.storage.file;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.FileOps;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.storage.Emptiness;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An image is proven empty from its extent map and, where it has written extents, from reading
 * every byte of them: a real file on the test's filesystem, written as a user of the raw device
 * would write it.
 */
class ImageEmptinessTest {

    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    @Test
    void aFallocatedImageIsProvenWithoutARead() throws IOException {
        Path image = Files.createFile(dir.resolve("image"));
        FileOps.fallocate(image, 0, 8 * MIB);

        assertThat(ImageEmptiness.of(image)).isEqualTo(Emptiness.PROVEN);
    }

    /** Zeros written over several chunks (1 MiB each) and their 64 KiB slices, ending mid-slice. */
    @Test
    void writtenZerosAreProvenEmpty() throws IOException {
        Path image = sparse(8 * MIB);
        Scratch.writeAt(image, MIB / 2, new byte[(int) (3 * MIB + 12_345)]);

        assertThat(FileOps.dataExtents(image)).isNotEmpty();
        assertThat(ImageEmptiness.of(image)).isEqualTo(Emptiness.PROVEN);
    }

    /**
     * One byte anywhere in a written range that spans chunks is found, and at its exact offset: in
     * the first slice, past the first slice of a later chunk, and as the range's very last byte.
     */
    @ParameterizedTest
    @ValueSource(longs = {0, 65_535, 65_536, MIB + 100_007, 3 * MIB + 12_344})
    void oneByteOfDataInAWrittenRangeIsFoundAtItsOffset(long at) throws IOException {
        Path image = sparse(8 * MIB);
        long start = MIB / 2;
        byte[] range = new byte[(int) (3 * MIB + 12_345)];
        range[(int) at] = 1;
        Scratch.writeAt(image, start, range);

        assertThat(ImageEmptiness.of(image)).isInstanceOfSatisfying(Emptiness.Written.class,
                written -> assertThat(written.evidence()).contains("at offset " + (start + at) + " "));
    }

    @Test
    void moreWrittenThanTheLimitIsUnknownNotProven() throws IOException {
        Path image = sparse(ImageEmptiness.SCAN_LIMIT + 4 * MIB);
        Scratch.writeAt(image, 0, new byte[(int) ImageEmptiness.SCAN_LIMIT + 4096]);

        assertThat(ImageEmptiness.of(image)).isInstanceOf(Emptiness.Unknown.class);
    }

    @Test
    void firstNonZeroLooksAtTheGivenLengthOnly() {
        byte[] bytes = new byte[200_000];
        bytes[150_000] = 7;

        assertThat(ImageEmptiness.firstNonZero(bytes, 150_000)).isEqualTo(-1);
        assertThat(ImageEmptiness.firstNonZero(bytes, 150_001)).isEqualTo(150_000);
        assertThat(ImageEmptiness.firstNonZero(bytes, 0)).isEqualTo(-1);
    }

    private Path sparse(long size) throws IOException {
        Path image = Files.createFile(dir.resolve("image"));
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(size); // a hole throughout: no extent written
        }
        return image;
    }
}
