package dev.hearth.storage.probe;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.OptionalLong;

/**
 * The bytes of a device as the detectors see them: each field is read from a 4 KiB window around
 * it, and the few windows last read are kept, since detectors look at several fields in one place.
 * The zero checks ({@link ZeroScan}) stream what they read through one buffer.
 *
 * <p>So a probe reads what it looks at and holds ~100 KiB while it runs (a full zero scan, 1 MiB
 * more), in an arena of its own that closing gives back. Holding the two MiB, as this once did in direct buffers, cost a page
 * fault per page of fresh memory each probe (~20 ms under user-mode Linux, where faults are dear),
 * and the buffers went back only after a GC (~100 MB held after a burst of stages).
 */
final class DeviceBytes implements AutoCloseable {

    static final int REGION = 1 << 20;
    private static final int WINDOW = 4096;
    private static final int WINDOWS = 8;
    private static final int SCAN = 64 << 10;
    /** What the zero checks compare with: never written, so it stays zeros. */
    private static final MemorySegment ZEROS = Arena.global().allocate(SCAN).asReadOnly();

    private final FileChannel channel;
    private final long size;
    private final Arena arena;
    private final MemorySegment windows;
    private final long[] windowStart = new long[WINDOWS];
    private final long[] windowLength = new long[WINDOWS];
    private int nextWindow;

    private DeviceBytes(FileChannel channel, long size, Arena arena) {
        this.channel = channel;
        this.size = size;
        this.arena = arena;
        this.windows = arena.allocate((long) WINDOWS * WINDOW, WINDOW);
        Arrays.fill(windowStart, -1);
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
     * The {@code length} bytes at {@code offset}, little-endian, or null past the device's end.
     * The buffer is good until the next call: the detectors read a field or two and let it go.
     */
    ByteBuffer at(long offset, int length) throws IOException {
        if (length > WINDOW) {
            throw new IllegalArgumentException("a field of " + length + " bytes is larger than a window");
        }
        if (offset < 0 || offset > size - length) {
            return null;
        }
        return window(offset, length).asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
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

    @Override
    public void close() {
        arena.close();
    }

    /** A buffer of {@code bytes} from the probe's arena, aligned to a page: given back when the probe closes. */
    MemorySegment buffer(long bytes) {
        return arena.allocate(bytes, WINDOW);
    }

    /** Offset of the first non-zero byte in {@code [from, to)}, read into {@code buffer} one buffer at a time. */
    OptionalLong firstNonZero(MemorySegment buffer, long from, long to) throws IOException {
        for (long position = from; position < to; position += buffer.byteSize()) {
            long length = Math.min(buffer.byteSize(), to - position);
            readFully(buffer.asSlice(0, length), position);
            for (long at = 0; at < length; at += SCAN) {
                long part = Math.min(SCAN, length - at);
                long mismatch = MemorySegment.mismatch(buffer, at, at + part, ZEROS, 0, part);
                if (mismatch >= 0) {
                    return OptionalLong.of(position + at + mismatch);
                }
            }
        }
        return OptionalLong.empty();
    }

    /** The field from a window that holds it, reading one (over the window read longest ago) if none does. */
    private MemorySegment window(long offset, int length) throws IOException {
        for (int i = 0; i < WINDOWS; i++) {
            if (windowStart[i] >= 0 && offset >= windowStart[i]
                    && offset + length <= windowStart[i] + windowLength[i]) {
                return windows.asSlice((long) i * WINDOW + (offset - windowStart[i]), length);
            }
        }
        int i = nextWindow;
        nextWindow = (nextWindow + 1) % WINDOWS;
        long start = offset - offset % WINDOW; // one page of the device's cache
        if (offset + length > start + WINDOW) {
            start = offset; // a field across a page's end gets a window of its own
        }
        long windowSize = Math.min(WINDOW, size - start);
        windowStart[i] = -1; // until the read below has succeeded
        readFully(windows.asSlice((long) i * WINDOW, windowSize), start);
        windowStart[i] = start;
        windowLength[i] = windowSize;
        return windows.asSlice((long) i * WINDOW + (offset - start), length);
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
}
