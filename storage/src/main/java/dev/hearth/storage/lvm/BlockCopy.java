package dev.hearth.storage.lvm;

import dev.hearth.linux.BlockDevices;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.BooleanSupplier;

/**
 * Copies one block device onto another, {@value #CHUNK} bytes at a time. A chunk of zeros is
 * not written but zeroed out (BLKZEROOUT), which the kernel offloads where the device can: the
 * target's extents may hold a deleted volume's bytes, so every byte of it is set. The copy
 * asks whether to stop (and checks for interruption) between chunks, and flushes the target
 * before it returns.
 */
final class BlockCopy {

    static final int CHUNK = 4 << 20;

    private BlockCopy() {}

    static void copy(Path source, Path target, long length) throws IOException {
        copy(source, target, length, () -> false);
    }

    /** The copy, given up with an {@link InterruptedIOException} between chunks once {@code stop} says so. */
    static void copy(Path source, Path target, long length, BooleanSupplier stop) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(CHUNK);
        try (FileChannel in = FileChannel.open(source, StandardOpenOption.READ);
             FileChannel out = FileChannel.open(target, StandardOpenOption.WRITE)) {
            long offset = 0;
            while (offset < length) {
                if (stop.getAsBoolean() || Thread.currentThread().isInterrupted()) {
                    throw new InterruptedIOException("copy of " + source + " to " + target + " stopped at "
                            + offset + " of " + length + " bytes");
                }
                int want = (int) Math.min(CHUNK, length - offset);
                buffer.clear().limit(want);
                while (buffer.hasRemaining()) {
                    if (in.read(buffer, offset + buffer.position()) < 0) {
                        throw new IOException(source + " ended at " + (offset + buffer.position()) + " of "
                                + length + " bytes");
                    }
                }
                buffer.flip();
                if (zeros(buffer)) {
                    BlockDevices.zeroOut(target, offset, want);
                } else {
                    while (buffer.hasRemaining()) {
                        out.write(buffer, offset + buffer.position());
                    }
                }
                offset += want;
            }
            out.force(true);
        }
    }

    private static boolean zeros(ByteBuffer buffer) {
        int i = buffer.position();
        int end = buffer.limit();
        for (; i + 8 <= end; i += 8) {
            if (buffer.getLong(i) != 0) {
                return false;
            }
        }
        for (; i < end; i++) {
            if (buffer.get(i) != 0) {
                return false;
            }
        }
        return true;
    }
}
