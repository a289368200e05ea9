package dev.hearth.storage.probe;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;

/**
 * The bytes of a device as the detectors see them. The first and last MiB hold nearly every
 * signature and are what the emptiness rule looks at: they are read in 64 KiB chunks where a
 * detector looks, and whole only when the rule needs them, so a device that shows a signature costs
 * a few chunks, not 2 MiB. Anything else, like a backup superblock deep in the device, is read on
 * demand, a 4 KiB window at a time.
 *
 * <p>All of it lives in memory of its own arena, given back when it is closed: a probe holds
 * nothing after it returns. (Direct buffers, as this once used, are freed only after a GC, which
 * left ~100 MB held after a burst of stages; and fresh memory costs a page fault per page, a
 * 2 MiB probe ~20 ms under user-mode Linux, where freed and reused memory costs nothing.)
 */
final class DeviceBytes implements AutoCloseable {

    static final int REGION = 1 << 20;
    private static final int CHUNK = 64 << 10;
    private static final int WINDOW = 4096;
    private static final int SECTOR = 512;
    /** What a chunk is compared with: never written, so it stays zeros. */
    private static final MemorySegment ZEROS = Arena.global().allocate(CHUNK).asReadOnly();

    private final FileChannel channel;
    private final long size;
    private final Arena arena;
    private final Region head;
    private final Region tail;
    private final MemorySegment window;
    private long windowStart = -1;
    private long windowLength;

    private DeviceBytes(FileChannel channel, long size, Arena arena) {
        this.channel = channel;
        this.size = size;
        this.arena = arena;
        int headLength = (int) Math.min(size, REGION);
        // The tail starts where the head ends on small devices so the two never overlap.
        long tailStart = Math.max(headLength, size - REGION);
        this.head = new Region(0, arena.allocate(headLength, WINDOW));
        this.tail = new Region(tailStart, arena.allocate(size - tailStart, WINDOW));
        this.window = arena.allocate(WINDOW, WINDOW);
    }

    /** The device behind {@code channel}, {@code size} bytes long; nothing is read yet. Close it after use. */
    static DeviceBytes of(FileChannel channel, long size) {
        Arena arena = Arena.ofConfined();
        try {
            return new DeviceBytes(channel, size, arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    long size() {
        return size;
    }

    /**
     * The {@code length} bytes at {@code offset}, little-endian, or null past the device's end. The
     * buffer is valid until the next call: the detectors read a field or two and let it go.
     */
    ByteBuffer at(long offset, int length) throws IOException {
        if (offset < 0 || offset > size - length) {
            return null;
        }
        MemorySegment bytes;
        if (head.holds(offset, length)) {
            bytes = head.slice(offset, length);
        } else if (tail.holds(offset, length)) {
            bytes = tail.slice(offset, length);
        } else {
            bytes = fromWindow(offset, length);
        }
        return bytes.asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
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

    /** Offset of the first non-zero byte in the head or tail region, if any; reads both whole. */
    OptionalLong firstNonZero() throws IOException {
        OptionalLong inHead = head.firstNonZero();
        return inHead.isPresent() ? inHead : tail.firstNonZero();
    }

    @Override
    public void close() {
        arena.close();
    }

    private MemorySegment fromWindow(long offset, int length) throws IOException {
        if (offset < windowStart || offset + length > windowStart + windowLength) {
            long start = offset - offset % SECTOR;
            if (offset + length > start + WINDOW) {
                start = offset; // a field across a window's end: a window of its own
            }
            windowLength = Math.min(WINDOW, size - start);
            windowStart = -1; // until the read below has succeeded
            readFully(window.asSlice(0, windowLength), start);
            windowStart = start;
        }
        return window.asSlice(offset - windowStart, length);
    }

    private void readFully(MemorySegment into, long offset) throws IOException {
        ByteBuffer buffer = into.asByteBuffer();
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, offset + buffer.position());
            if (n < 0) {
                throw new EOFException("device ends at " + (offset + buffer.position())
                        + " bytes, before the " + (offset + buffer.limit()) + " bytes expected");
            }
        }
    }

    /** The first or last MiB, read chunk by chunk as it is asked for. */
    private final class Region {

        private final long start;
        private final MemorySegment bytes;
        private long loaded; // bit i: chunk i has been read (a MiB has 16)

        Region(long start, MemorySegment bytes) {
            this.start = start;
            this.bytes = bytes;
        }

        boolean holds(long offset, int length) {
            return offset >= start && offset + length <= start + bytes.byteSize();
        }

        MemorySegment slice(long offset, int length) throws IOException {
            long relative = offset - start;
            load(relative, relative + length);
            return bytes.asSlice(relative, length);
        }

        OptionalLong firstNonZero() throws IOException {
            long length = bytes.byteSize();
            load(0, length);
            for (long chunk = 0; chunk < length; chunk += CHUNK) {
                long end = Math.min(chunk + CHUNK, length);
                long mismatch = MemorySegment.mismatch(bytes, chunk, end, ZEROS, 0, end - chunk);
                if (mismatch >= 0) {
                    return OptionalLong.of(start + chunk + mismatch);
                }
            }
            return OptionalLong.empty();
        }

        /** Reads the chunks of {@code [from, to)} not read yet: from the first to the last of them, in one read. */
        private void load(long from, long to) throws IOException {
            if (to <= from) {
                return;
            }
            int first = (int) (from / CHUNK);
            int last = (int) ((to - 1) / CHUNK);
            while (first <= last && isLoaded(first)) {
                first++;
            }
            while (last >= first && isLoaded(last)) {
                last--;
            }
            if (first > last) {
                return;
            }
            long begin = (long) first * CHUNK;
            long end = Math.min((long) (last + 1) * CHUNK, bytes.byteSize());
            readFully(bytes.asSlice(begin, end - begin), start + begin);
            for (int i = first; i <= last; i++) {
                loaded |= 1L << i;
            }
        }

        private boolean isLoaded(int chunk) {
            return (loaded & (1L << chunk)) != 0;
        }
    }
}
