package dev.hearth.storage.probe;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;

/**
 * The bytes of a device as the detectors see them: the first and last MiB are read once (they
 * hold nearly every signature and are what the emptiness rule looks at); anything else, like a
 * backup superblock deep in the device, is read on demand.
 */
final class DeviceBytes {

    static final int REGION = 1 << 20;

    private final FileChannel channel;
    private final long size;
    private final ByteBuffer head;
    private final long tailStart;
    private final ByteBuffer tail;

    private DeviceBytes(FileChannel channel, long size, ByteBuffer head, long tailStart, ByteBuffer tail) {
        this.channel = channel;
        this.size = size;
        this.head = head;
        this.tailStart = tailStart;
        this.tail = tail;
    }

    static DeviceBytes read(FileChannel channel, long size) throws IOException {
        int headLength = (int) Math.min(size, REGION);
        // The tail starts where the head ends on small devices so the two never overlap.
        long tailStart = Math.max(headLength, size - REGION);
        ByteBuffer head = readFully(channel, 0, headLength);
        ByteBuffer tail = readFully(channel, tailStart, (int) (size - tailStart));
        return new DeviceBytes(channel, size, head, tailStart, tail);
    }

    long size() {
        return size;
    }

    /** The {@code length} bytes at {@code offset}, little-endian, or null past the device's end. */
    ByteBuffer at(long offset, int length) throws IOException {
        if (offset < 0 || offset > size - length) {
            return null;
        }
        if (offset + length <= head.capacity()) {
            return head.slice((int) offset, length).order(ByteOrder.LITTLE_ENDIAN);
        }
        if (offset >= tailStart) {
            return tail.slice((int) (offset - tailStart), length).order(ByteOrder.LITTLE_ENDIAN);
        }
        return readFully(channel, offset, length);
    }

    boolean has(long offset, byte[] magic) throws IOException {
        ByteBuffer bytes = at(offset, magic.length);
        return bytes != null && bytes.equals(ByteBuffer.wrap(magic));
    }

    boolean has(long offset, String asciiMagic) throws IOException {
        return has(offset, asciiMagic.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** Unsigned little-endian 16-bit value, or -1 past the end. */
    int u16(long offset) throws IOException {
        ByteBuffer bytes = at(offset, 2);
        return bytes == null ? -1 : Short.toUnsignedInt(bytes.getShort(0));
    }

    /** Unsigned little-endian 32-bit value, or -1 past the end. */
    long u32(long offset) throws IOException {
        ByteBuffer bytes = at(offset, 4);
        return bytes == null ? -1 : Integer.toUnsignedLong(bytes.getInt(0));
    }

    /** Little-endian 64-bit value, or -1 past the end (no on-disk field we check is that large). */
    long u64(long offset) throws IOException {
        ByteBuffer bytes = at(offset, 8);
        return bytes == null ? -1 : bytes.getLong(0);
    }

    int u8(long offset) throws IOException {
        ByteBuffer bytes = at(offset, 1);
        return bytes == null ? -1 : Byte.toUnsignedInt(bytes.get(0));
    }

    /** Offset of the first non-zero byte in the head or tail region, if any. */
    OptionalLong firstNonZero() {
        OptionalLong inHead = firstNonZero(head, 0);
        return inHead.isPresent() ? inHead : firstNonZero(tail, tailStart);
    }

    private static OptionalLong firstNonZero(ByteBuffer buffer, long base) {
        int length = buffer.capacity();
        int i = 0;
        // Eight bytes at a time: these regions are 2 MiB per probe and mostly zeros.
        for (; i + Long.BYTES <= length; i += Long.BYTES) {
            if (buffer.getLong(i) != 0) {
                break;
            }
        }
        for (; i < length; i++) {
            if (buffer.get(i) != 0) {
                return OptionalLong.of(base + i);
            }
        }
        return OptionalLong.empty();
    }

    private static ByteBuffer readFully(FileChannel channel, long offset, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(length).order(ByteOrder.LITTLE_ENDIAN);
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, offset + buffer.position());
            if (n < 0) {
                throw new EOFException("device ends at " + (offset + buffer.position())
                        + " bytes, before the " + (offset + length) + " bytes expected");
            }
        }
        return buffer.clear();
    }
}
