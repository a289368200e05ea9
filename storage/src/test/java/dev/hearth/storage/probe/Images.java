package dev.hearth.storage.probe;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Sparse image files for probe tests, and byte-level writes into them. */
final class Images {

    static final long MIB = 1 << 20;

    private Images() {}

    /** A sparse file of the given size: all zeros, costing no disk space. */
    static Path sparse(Path dir, String name, long size) {
        Path file = dir.resolve(name);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            if (size > 0) {
                channel.position(size - 1);
                channel.write(ByteBuffer.allocate(1));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    static void write(Path file, long offset, byte[] bytes) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining()) {
                channel.write(buffer, offset + buffer.position());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void write(Path file, long offset, String ascii) {
        write(file, offset, ascii.getBytes(StandardCharsets.ISO_8859_1));
    }

    static void writeLe32(Path file, long offset, long value) {
        write(file, offset, ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) value).array());
    }

    static void writeBe32(Path file, long offset, long value) {
        write(file, offset, ByteBuffer.allocate(4).order(ByteOrder.BIG_ENDIAN).putInt((int) value).array());
    }

    /** Overwrites a range with zeros, as a partial wipe would. */
    static void zero(Path file, long offset, long length) {
        write(file, offset, new byte[Math.toIntExact(length)]);
    }

    static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static ProbeResult probe(Path file) {
        try {
            return SignatureProbe.probe(file, size(file));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
