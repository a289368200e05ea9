package dev.hearth.driver.server;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.WireFormat;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Bounds the heap that large requests take once parsed, all of them together. A message's parsed
 * form can be many times its wire size: a map entry of a few bytes becomes a node and two strings,
 * an empty sub-message of two bytes an object of its own. 32 CreateVolume requests of 2 MB each
 * (150,000 parameters) took a 256 MiB heap to OutOfMemoryError in the parse, before any handler
 * saw them; under the image's flags ({@code -XX:+ExitOnOutOfMemoryError}) that is the driver gone.
 *
 * <p>A request of at least {@link #SMALL} bytes is counted before it is parsed: its fields are
 * walked on the wire (no object is made), and the estimate of its parsed size is reserved until
 * the call ends. A request whose estimate does not fit in what is left is refused with
 * RESOURCE_EXHAUSTED, and one that could never fit says so. The sidecars' requests are a few
 * hundred bytes; the largest real one, a CreateVolume whose topology lists every node of a
 * 5,000-node cluster twice, is under 1 MB and about 10 MB parsed.
 */
final class RequestMemory {

    /** Below this many bytes a request is parsed without being counted: every request of a normal cluster. */
    static final int SMALL = 16 * 1024;
    /** About what each parsed field costs beyond its bytes: its object, or its node in a map or list. */
    static final int PER_FIELD = 64;
    /** Never less than this for all large requests together, whatever the heap. */
    static final long MINIMUM = 16L << 20;
    /** Sub-messages nested deeper than protobuf parses (its default recursion limit) are not walked further. */
    private static final int MAX_DEPTH = 100;

    private final long limit;
    private final AtomicLong reserved = new AtomicLong();

    RequestMemory(long limit) {
        this.limit = limit;
    }

    /** A quarter of the heap the JVM may grow to, and at least {@link #MINIMUM}. */
    static RequestMemory forThisHeap() {
        return new RequestMemory(Math.max(MINIMUM, Runtime.getRuntime().maxMemory() / 4));
    }

    long limit() {
        return limit;
    }

    /** Bytes reserved by the large requests in flight. */
    long reserved() {
        return reserved.get();
    }

    /** Reserves {@code bytes} if they fit beside what is reserved; false, and nothing reserved, if not. */
    boolean tryReserve(long bytes) {
        while (true) {
            long now = reserved.get();
            if (now + bytes > limit) {
                return false;
            }
            if (reserved.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    void release(long bytes) {
        reserved.addAndGet(-bytes);
    }

    /**
     * About how many bytes the message of {@code type} in {@code wire} takes once parsed: its bytes
     * twice (the strings made of them, and the copy they are parsed from) and {@link #PER_FIELD} per
     * field, sub-messages' fields included. Bytes that are no valid message are counted as far as
     * they go: the parse that follows refuses them.
     */
    static long estimate(byte[] wire, Descriptor type) {
        return 2L * wire.length + PER_FIELD * fields(wire, type);
    }

    /** The fields in {@code wire}, those of every sub-message (a map entry is one) counted too. */
    static long fields(byte[] wire, Descriptor type) {
        CodedInputStream in = CodedInputStream.newInstance(wire);
        long[] count = {0};
        try {
            walk(in, type, 0, count);
        } catch (IOException | RuntimeException e) {
            // Not a valid message: counted up to where it stops being one.
        }
        return count[0];
    }

    private static void walk(CodedInputStream in, Descriptor type, int depth, long[] count) throws IOException {
        while (true) {
            int tag = in.readTag();
            if (tag == 0) {
                return;
            }
            count[0]++;
            int wireType = WireFormat.getTagWireType(tag);
            if (wireType == WireFormat.WIRETYPE_START_GROUP || wireType == WireFormat.WIRETYPE_END_GROUP) {
                // No CSI message has groups, and skipping one recurses once per level with no limit:
                // counted no further; the parse takes them as unknown fields, within its recursion limit.
                return;
            }
            FieldDescriptor field = type == null ? null : type.findFieldByNumber(WireFormat.getTagFieldNumber(tag));
            if (wireType == WireFormat.WIRETYPE_LENGTH_DELIMITED && field != null
                    && field.getJavaType() == FieldDescriptor.JavaType.MESSAGE && depth < MAX_DEPTH) {
                int length = in.readRawVarint32();
                int outer = in.pushLimit(length);
                walk(in, field.getMessageType(), depth + 1, count);
                in.popLimit(outer);
            } else {
                in.skipField(tag);
            }
        }
    }
}
