package dev.hearth.storage.copy;

import dev.hearth.linux.Extent;
import dev.hearth.linux.FileOps;
import dev.hearth.linux.LinuxException;
import dev.hearth.storage.copy.CopyResult.Method;
import java.io.EOFException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * Copies a volume image (for a snapshot or a clone) as cheaply as the filesystem allows: a reflink
 * where it has them (xfs with reflink=1, btrfs), else a copy of only the source's data extents, so
 * a sparse image stays sparse. The source must not change during the copy: the caller detaches it
 * or freezes the filesystem on it.
 */
public final class ImageCopier {

    /**
     * Makes {@code target}, which must not exist, a copy of the image {@code source}, {@code targetSize}
     * bytes long: larger than the source means a sparse tail of zeros. The target is written in place
     * and fsynced; the caller renames it into its final name and fsyncs the directory. A failed copy
     * removes the target.
     *
     * <p>The reflink is tried once per call; when the filesystem refuses it (EOPNOTSUPP, EXDEV, EINVAL,
     * ENOTTY) the copy falls back to copying data. Any other error fails the copy.
     *
     * @throws java.nio.file.FileAlreadyExistsException if {@code target} exists (it is left alone)
     * @throws IllegalArgumentException if {@code source} is not a regular file or is larger than
     *     {@code targetSize}
     */
    public CopyResult copy(Path source, Path target, long targetSize) throws IOException {
        long start = System.nanoTime();
        // A block device's Files.size is 0: copying "all" of it would silently copy nothing.
        if (!Files.isRegularFile(source)) {
            throw new IllegalArgumentException("copy source " + source + " is not a regular file");
        }
        long sourceSize = Files.size(source);
        if (targetSize < sourceSize) {
            throw new IllegalArgumentException("target size " + targetSize + " is smaller than " + source
                    + " (" + sourceSize + " bytes)");
        }
        Files.createFile(target);
        try {
            Method method;
            long copied;
            if (reflinked(source, target)) {
                method = Method.REFLINK;
                copied = 0;
                long cloned = Files.size(target);
                if (cloned > targetSize) {
                    throw new IllegalStateException(source + " grew to " + cloned + " bytes during the copy, beyond"
                            + " the target size " + targetSize + "; it must not be written while being copied");
                }
            } else {
                method = Method.SPARSE_COPY;
                copied = copyDataExtents(source, target, sourceSize, targetSize);
            }
            setLengthAndSync(target, targetSize);
            return new CopyResult(method, copied, Duration.ofNanos(System.nanoTime() - start));
        } catch (IOException | RuntimeException | Error e) {
            try {
                Files.deleteIfExists(target);
            } catch (IOException undo) {
                e.addSuppressed(undo);
            }
            throw e;
        }
    }

    /** True if the target is now a reflink of the source; false if this filesystem cannot do that. */
    private static boolean reflinked(Path source, Path target) throws IOException {
        try {
            FileOps.reflink(source, target);
            return true;
        } catch (LinuxException e) {
            if (FileOps.isReflinkRefusal(e)) {
                return false;
            }
            throw e;
        }
    }

    /**
     * Copies each data extent in the kernel (transferTo: copy_file_range, else sendfile), leaving the
     * holes between them unwritten. Stops at the size the source had when the copy began.
     */
    private static long copyDataExtents(Path source, Path target, long sourceSize, long targetSize)
            throws IOException {
        long copied = 0;
        try (FileChannel in = FileChannel.open(source, StandardOpenOption.READ);
             RandomAccessFile file = new RandomAccessFile(target.toFile(), "rw")) {
            // Full length first: writes that append at EOF make xfs preallocate speculatively past it,
            // blocks that the final length would then keep, as unwritten extents, in the holes.
            file.setLength(targetSize);
            FileChannel out = file.getChannel();
            for (Extent extent : FileOps.dataExtents(source)) {
                long end = Math.min(extent.end(), sourceSize);
                long at = extent.offset();
                while (at < end) {
                    long n = in.transferTo(at, end - at, out.position(at));
                    if (n <= 0) {
                        throw new EOFException(source + " ended at byte " + at + " while being copied; it had "
                                + sourceSize + " bytes when the copy began");
                    }
                    at += n;
                    copied += n;
                }
            }
        }
        return copied;
    }

    /** ftruncate to the final size (a sparse tail, or the source's own trailing hole), then fsync. */
    private static void setLengthAndSync(Path target, long size) throws IOException {
        try (RandomAccessFile file = new RandomAccessFile(target.toFile(), "rw")) {
            file.setLength(size);
            file.getFD().sync();
        }
    }
}
