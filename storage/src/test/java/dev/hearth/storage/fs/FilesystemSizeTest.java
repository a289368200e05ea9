package dev.hearth.storage.fs;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Each figure is checked against what the filesystem's own tools say of the image mkfs made. */
class FilesystemSizeTest {

    private static final Duration TIMEOUT = Duration.ofMinutes(1);
    private static final long EXT_SUPERBLOCK = 1024;
    private static final String BLOCK_COUNT = "(?m)^Block count:\\s+(\\d+)";
    private static final String BLOCK_SIZE = "(?m)^Block size:\\s+(\\d+)";

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private final ToolRunner tools = new ToolRunner();

    @ParameterizedTest(name = "{0} {1} MiB {2}")
    @CsvSource({
            "mkfs.ext2, 64, ''",
            "mkfs.ext3, 64, ''",
            "mkfs.ext4, 64, ''",          // mke2fs's "small" type: 1 KiB blocks
            "mkfs.ext4, 300, -b 4096",
            "mkfs.ext4, 300, -O ^64bit",
            "mkfs.ext4, 301, -b 2048"})   // a device size that is not a whole number of 4 KiB blocks
    @RequiresTools({"mkfs.ext2", "mkfs.ext3", "mkfs.ext4", "dumpe2fs"})
    void extReportsTheBlockCountTimesBlockSizeDumpe2fsShows(String mkfs, long sizeMib, String options)
            throws IOException {
        Path image = sparse(sizeMib * MIB);
        List<String> command = new ArrayList<>(List.of(mkfs, "-q", "-F"));
        if (!options.isEmpty()) {
            command.addAll(List.of(options.split(" ")));
        }
        command.add(image.toString());
        tools.run(command, TIMEOUT);

        assertThat(FilesystemSize.of(image)).hasValue(dumpe2fsBytes(image));
        assertThat(dumpe2fsBytes(image)).isLessThanOrEqualTo(sizeMib * MIB);
    }

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "mkfs.xfs", "dumpe2fs"})
    void ext4WithMoreThan2To32BlocksAddsTheHighWordOfTheBlockCount() throws IOException {
        // 2^32 + 2^19 blocks of 64 KiB: a 257 TiB image. Sparse, and without journal or eager inode
        // tables mkfs writes a few hundred MiB, on xfs because ext4 files end at 16 TiB.
        Path xfs = ScratchFilesystem.mount(cleanup, dir, "xfs", 1024 * MIB).mountPoint();
        long blocks = (1L << 32) + (1L << 19);
        Path image = Scratch.sparseFile(xfs.resolve("huge.img"), blocks * 65536);
        tools.run(List.of("mkfs.ext4", "-q", "-F", "-b", "65536", "-O", "64bit,^has_journal,^resize_inode",
                "-E", "lazy_itable_init=1,nodiscard", "-N", "65536", image.toString()), TIMEOUT);

        assertThat(dumpe2fsBytes(image)).isEqualTo(blocks * 65536);
        assertThat(FilesystemSize.of(image)).hasValue(blocks * 65536);
    }

    @Test
    @RequiresTools({"mkfs.ext4", "dumpe2fs"})
    void withoutThe64BitFeatureTheHighWordIsIgnored() throws IOException {
        Path image = sparse(64 * MIB);
        tools.run(List.of("mkfs.ext4", "-q", "-F", "-O", "^64bit,^metadata_csum", image.toString()), TIMEOUT);
        long made = dumpe2fsBytes(image);
        writeLe32(image, EXT_SUPERBLOCK + 0x150, 1);

        assertThat(dumpe2fsBytes(image)).isEqualTo(made);
        assertThat(FilesystemSize.of(image)).hasValue(made);
    }

    @ParameterizedTest(name = "{0} MiB {1}")
    @CsvSource({"320, ''", "512, -b size=1024", "333, ''"})
    @RequiresTools({"mkfs.xfs", "xfs_db"})
    void xfsReportsDataBlocksTimesBlockSizeAsXfsDbShows(long sizeMib, String options) throws IOException {
        Path image = sparse(sizeMib * MIB);
        List<String> command = new ArrayList<>(List.of("mkfs.xfs", "-q"));
        if (!options.isEmpty()) {
            command.addAll(List.of(options.split(" ")));
        }
        command.add(image.toString());
        tools.run(command, TIMEOUT);

        String sb = tools.run(List.of("xfs_db", "-r", "-c", "sb 0", "-c", "p blocksize dblocks", image.toString()),
                TIMEOUT).stdout();
        long expected = number(sb, "blocksize = (\\d+)") * number(sb, "dblocks = (\\d+)");
        assertThat(FilesystemSize.of(image)).hasValue(expected);
        assertThat(expected).isBetween(sizeMib * MIB - MIB, sizeMib * MIB);
    }

    @ParameterizedTest(name = "{0} MiB")
    @CsvSource({"128", "300"})
    @RequiresTools({"mkfs.btrfs", "btrfs"})
    void btrfsReportsTotalBytesAsDumpSuperShows(long sizeMib) throws IOException {
        Path image = sparse(sizeMib * MIB);
        tools.run(List.of("mkfs.btrfs", "-q", image.toString()), TIMEOUT);

        String sb = tools.run(List.of("btrfs", "inspect-internal", "dump-super", image.toString()), TIMEOUT).stdout();
        long expected = number(sb, "(?m)^total_bytes\\s+(\\d+)");
        assertThat(FilesystemSize.of(image)).hasValue(expected);
        assertThat(expected).isEqualTo(sizeMib * MIB);
    }

    @Test
    void zerosAreNoFilesystem() throws IOException {
        assertThat(FilesystemSize.of(sparse(64 * MIB))).isEmpty();
    }

    @Test
    void randomBytesAreNoFilesystem() throws IOException {
        Path image = dir.resolve("noise.img");
        byte[] noise = new byte[Math.toIntExact(MIB)];
        new Random(7).nextBytes(noise);
        Files.write(image, noise);

        assertThat(FilesystemSize.of(image)).isEmpty();
    }

    @Test
    void aFileShorterThanAnySuperblockIsNoFilesystem() throws IOException {
        assertThat(FilesystemSize.of(Files.write(dir.resolve("tiny"), new byte[] {'X', 'F', 'S', 'B'}))).isEmpty();
    }

    @Test
    @RequiresTools({"mkfs.ext4", "mkfs.xfs"})
    void twoSuperblocksClaimingOneDeviceAreNotGuessedBetween() throws IOException {
        Path image = sparse(320 * MIB);
        tools.run(List.of("mkfs.ext4", "-q", "-F", image.toString()), TIMEOUT);
        // an xfs superblock over sector 0 leaves ext4's at 1024 in place: two claims
        ByteBuffer xfs = ByteBuffer.allocate(16).order(ByteOrder.BIG_ENDIAN).put("XFSB".getBytes())
                .putInt(4096).putLong(81920).flip();
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.WRITE)) {
            channel.write(xfs, 0);
        }

        assertThat(FilesystemSize.of(image)).isEqualTo(OptionalLong.empty());
    }

    private Path sparse(long size) throws IOException {
        return Scratch.sparseFile(Files.createTempFile(dir, "fs-", ".img"), size);
    }

    private long dumpe2fsBytes(Path image) {
        String header = tools.run(List.of("dumpe2fs", "-h", image.toString()), TIMEOUT).stdout();
        return number(header, BLOCK_COUNT) * number(header, BLOCK_SIZE);
    }

    private static long number(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertThat(m.find()).as("%s in:%n%s", regex, text).isTrue();
        return Long.parseLong(m.group(1));
    }

    private static void writeLe32(Path file, long offset, int value) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(value).flip(), offset);
        }
    }
}
