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

    /** How much of a written extent one read takes. */
    private static final int CHUNK = 1 << 20;
    /**
     * What a chunk is compared with, slice by slice: one of a chunk's size would sit in the heap for
     * the driver's life, for a check most volumes never need (a fresh image has no written extent).
     */
    private static final byte[] ZEROS = new byte[64 << 10];

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
                // Each byte of the extent is read and checked: a read may return less than asked
                // for, and the offset moves on by what it returned, never by a whole chunk.
                for (long offset = extent.offset(); offset < extent.end(); ) {
                    buffer.clear().limit((int) Math.min(CHUNK, extent.end() - offset));
                    int read = channel.read(buffer, offset);
                    if (read <= 0) {
                        // The file ends before its extent map said: it changed while read.
                        return new Emptiness.Unknown("its image ended at offset " + offset + " while hearth read "
                                + "a written range to " + extent.end() + " (it changed meanwhile)");
                    }
                    int at = firstNonZero(buffer.array(), read);
                    if (at >= 0) {
                        return new Emptiness.Written("its image holds data written at offset " + (offset + at)
                                + " (no signature, but written by a user of the raw device)");
                    }
                    offset += read;
                }
            }
        }
        return Emptiness.PROVEN;
    }

    /** The index of the first byte of {@code bytes[0, length)} that is not zero, or -1. */
    static int firstNonZero(byte[] bytes, int length) {
        for (int from = 0; from < length; from += ZEROS.length) {
            int slice = Math.min(ZEROS.length, length - from);
            int at = Arrays.mismatch(bytes, from, from + slice, ZEROS, 0, slice);
            if (at >= 0) {
                return from + at;
            }
        }
        return -1;
    }
}
