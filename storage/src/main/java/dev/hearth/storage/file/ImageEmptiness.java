package dev.hearth.storage.file;

import dev.hearth.linux.Extent;
import dev.hearth.linux.FileOps;
import dev.hearth.storage.Emptiness;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;

/**
 * Proves an image file empty from its extent map: every byte ever written to it lies in a data
 * extent (SEEK_DATA), while holes and preallocated-but-unwritten ranges read as zeros. A fresh
 * image, thin or thick, has no data extent at all, so the proof costs a single lseek. Written
 * extents are read and must be zeros; past {@link #SCAN_LIMIT} of them the answer is "unknown".
 */
public final class ImageEmptiness {

    /** How many written bytes are read to check they are zeros before giving up. */
    static final long SCAN_LIMIT = 64L << 20;

    private static final int CHUNK = 1 << 20;
    private static final byte[] ZEROS = new byte[CHUNK];

    private ImageEmptiness() {}

    public static Emptiness of(Path image) throws IOException {
        List<Extent> written = FileOps.dataExtents(image);
        if (written.isEmpty()) {
            return Emptiness.PROVEN;
        }
        long total = written.stream().mapToLong(Extent::length).sum();
        if (total > SCAN_LIMIT) {
            return new Emptiness.Unknown("its image has " + total + " bytes written (from offset "
                    + written.getFirst().offset() + "), more than the " + SCAN_LIMIT + " hearth reads to prove zeros");
        }
        ByteBuffer buffer = ByteBuffer.allocate(CHUNK);
        try (FileChannel channel = FileChannel.open(image, StandardOpenOption.READ)) {
            for (Extent extent : written) {
                for (long offset = extent.offset(); offset < extent.end(); offset += CHUNK) {
                    buffer.clear().limit((int) Math.min(CHUNK, extent.end() - offset));
                    int read = Math.max(channel.read(buffer, offset), 0);
                    int at = Arrays.mismatch(buffer.array(), 0, read, ZEROS, 0, read);
                    if (at >= 0) {
                        return new Emptiness.Written("its image holds data written at offset " + (offset + at)
                                + " (no signature, but written by a user of the raw device)");
                    }
                }
            }
        }
        return Emptiness.PROVEN;
    }
}
