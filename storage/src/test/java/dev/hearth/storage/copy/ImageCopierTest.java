package dev.hearth.storage.copy;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.FileOps;
import dev.hearth.linux.FileSystems;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.copy.CopyResult.Method;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Copies on the test's temp directory (ext4 here: no reflinks) and on real xfs and btrfs mounts. */
class ImageCopierTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private final ImageCopier copier = new ImageCopier();

    @Test
    void onExt4AFullImageIsCopiedByteForByte() throws IOException {
        Path source = dir.resolve("source.img");
        write(source, 0, 8 * MIB, 1);

        CopyResult result = copier.copy(source, dir.resolve("target.img"), 8 * MIB);

        assertThat(result.method()).isEqualTo(Method.SPARSE_COPY);
        assertThat(result.bytesCopied()).isEqualTo(8 * MIB);
        assertThat(sha256(dir.resolve("target.img"))).isEqualTo(sha256(source));
    }

    @Test
    void aSparseImageStaysSparseAndReadsTheSame() throws IOException {
        Path source = sparseImageWithThreeDataRuns(64 * MIB);

        CopyResult result = copier.copy(source, dir.resolve("target.img"), 64 * MIB);

        Path target = dir.resolve("target.img");
        assertThat(result.method()).isEqualTo(Method.SPARSE_COPY);
        assertThat(result.bytesCopied()).isEqualTo(3 * MIB);
        assertThat(Files.size(target)).isEqualTo(64 * MIB);
        assertThat(sha256(target)).isEqualTo(sha256(source));
        assertThat(FileOps.allocatedBytes(target)).isLessThanOrEqualTo(3 * MIB + 64 * 1024);
        assertThat(FileOps.dataExtents(target)).isEqualTo(FileOps.dataExtents(source));
    }

    @Test
    void aLargerTargetSizeKeepsTheContentAndAddsAZeroSparseTail() throws IOException {
        Path source = sparseImageWithThreeDataRuns(32 * MIB);
        Path target = dir.resolve("target.img");

        copier.copy(source, target, 96 * MIB);

        assertThat(Files.size(target)).isEqualTo(96 * MIB);
        assertThat(sha256(target, 32 * MIB)).isEqualTo(sha256(source));
        assertThat(FileOps.allocatedBytes(target)).isLessThanOrEqualTo(3 * MIB + 64 * 1024);
        assertThat(firstNonZeroFrom(target, 32 * MIB)).as("first non-zero byte of the tail").isEqualTo(-1);
    }

    @Test
    void anEmptySourceGivesAnAllHoleTarget() throws IOException {
        Path source = Files.createFile(dir.resolve("source.img"));

        CopyResult result = copier.copy(source, dir.resolve("target.img"), 16 * MIB);

        assertThat(result.bytesCopied()).isZero();
        assertThat(Files.size(dir.resolve("target.img"))).isEqualTo(16 * MIB);
        assertThat(FileOps.allocatedBytes(dir.resolve("target.img"))).isZero();
    }

    @Test
    void anExistingTargetIsRefusedAndLeftAlone() throws IOException {
        Path source = dir.resolve("source.img");
        write(source, 0, MIB, 2);
        Path target = Files.writeString(dir.resolve("target.img"), "someone else's");

        assertThatThrownBy(() -> copier.copy(source, target, MIB)).isInstanceOf(FileAlreadyExistsException.class);
        assertThat(target).hasContent("someone else's");
    }

    @Test
    void aTargetSizeBelowTheSourceSizeIsRefusedBeforeCreatingAnything() throws IOException {
        Path source = dir.resolve("source.img");
        write(source, 0, 2 * MIB, 3);

        assertThatThrownBy(() -> copier.copy(source, dir.resolve("target.img"), MIB))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("target size " + MIB);
        assertThat(dir.resolve("target.img")).doesNotExist();
    }

    @Test
    void aSourceThatIsNotARegularFileIsRefused() {
        assertThatThrownBy(() -> copier.copy(Path.of("/dev/zero"), dir.resolve("target.img"), MIB))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not a regular file");
        assertThat(dir.resolve("target.img")).doesNotExist();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"xfs, 320, -m reflink=1", "btrfs, 128, -K"})
    @RequiresRoot
    @RequiresTools({"mkfs.xfs", "mkfs.btrfs"})
    void aReflinkFilesystemClonesAndTheCloneKeepsItsContentWhenTheSourceChanges(
            String type, long sizeMib, String mkfsOptions) throws IOException {
        Path mnt = ScratchFilesystem.mount(cleanup, dir, type, sizeMib * MIB, mkfsOptions.split(" ")).mountPoint();
        Path source = mnt.resolve("source.img");
        write(source, 0, 16 * MIB, 4);
        String original = sha256(source);
        long freeBefore = FileSystems.statvfs(mnt).freeBytes();

        CopyResult result = copier.copy(source, mnt.resolve("clone.img"), 32 * MIB);

        assertThat(result.method()).isEqualTo(Method.REFLINK);
        assertThat(result.bytesCopied()).isZero();
        assertThat(FileSystems.statvfs(mnt).freeBytes()).as("shared, not copied")
                .isGreaterThan(freeBefore - 2 * MIB);
        write(source, 0, 16 * MIB, 5);
        assertThat(sha256(source)).isNotEqualTo(original);
        assertThat(Files.size(mnt.resolve("clone.img"))).isEqualTo(32 * MIB);
        assertThat(sha256(mnt.resolve("clone.img"), 16 * MIB)).isEqualTo(original);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.xfs")
    void aSourceOnAnotherFilesystemIsCopiedInsteadOfReflinked() throws IOException {
        Path mnt = ScratchFilesystem.mount(cleanup, dir, "xfs", 320 * MIB, "-m", "reflink=1").mountPoint();
        Path source = sparseImageWithThreeDataRuns(64 * MIB);

        CopyResult result = copier.copy(source, mnt.resolve("copy.img"), 64 * MIB);

        assertThat(result.method()).isEqualTo(Method.SPARSE_COPY);
        assertThat(sha256(mnt.resolve("copy.img"))).isEqualTo(sha256(source));
        assertThat(FileOps.allocatedBytes(mnt.resolve("copy.img"))).isLessThanOrEqualTo(4 * MIB);
    }

    /** Random MiBs at 0, 10 MiB and the last MiB; holes elsewhere. */
    private Path sparseImageWithThreeDataRuns(long size) throws IOException {
        Path source = Scratch.sparseFile(dir.resolve("source.img"), size);
        write(source, 0, MIB, 10);
        write(source, 10 * MIB, MIB, 11);
        write(source, size - MIB, MIB, 12);
        assertThat(FileOps.allocatedBytes(source)).isLessThanOrEqualTo(3 * MIB + 64 * 1024);
        return source;
    }

    /** Offset of the first non-zero byte at or after {@code from}, or -1. */
    private static long firstNonZeroFrom(Path file, long from) throws IOException {
        try (FileChannel channel = FileChannel.open(file)) {
            ByteBuffer chunk = ByteBuffer.allocate(1 << 20);
            for (long at = from; channel.read(chunk.clear(), at) > 0; at += chunk.position()) {
                for (int i = 0; i < chunk.position(); i++) {
                    if (chunk.get(i) != 0) {
                        return at + i;
                    }
                }
            }
            return -1;
        }
    }

    private static void write(Path file, long offset, long length, long seed) throws IOException {
        byte[] bytes = new byte[Math.toIntExact(length)];
        new Random(seed).nextBytes(bytes);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining()) {
                channel.write(buffer, offset + buffer.position());
            }
            channel.force(true); // allocated now, so free-space figures taken next are settled (btrfs)
        }
    }

    private static String sha256(Path file) throws IOException {
        return sha256(file, Long.MAX_VALUE);
    }

    /** Of the first {@code limit} bytes. */
    private static String sha256(Path file, long limit) throws IOException {
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), sha256())) {
            byte[] chunk = new byte[1 << 16];
            long left = limit;
            MessageDigest digest = ((DigestInputStream) in).getMessageDigest();
            int n;
            while (left > 0 && (n = in.read(chunk, 0, (int) Math.min(chunk.length, left))) > 0) {
                left -= n;
            }
            return HexFormat.of().formatHex(digest.digest());
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
