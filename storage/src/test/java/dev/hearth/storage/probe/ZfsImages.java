package dev.hearth.storage.probe;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * ZFS pool members written from OpenZFS's documented on-disk layout, as no zfs tool is installed
 * here: in each label chosen, a name/value list at 16 KiB (XDR, as {@code zpool create} writes it:
 * version, name, state, txg, pool_guid, guid) and one uberblock in the ring at 128 KiB, in the slot
 * of its txg for 4 KiB slots (ashift 12).
 */
final class ZfsImages {

    static final long TXG = 4;
    private static final long NVLIST = 16 << 10;
    private static final int SLOT_ASHIFT_12 = 4096;
    private static final int SLOTS_ASHIFT_12 = (int) (ZfsLabels.LABEL_SIZE - ZfsLabels.UBERBLOCK_RING) / SLOT_ASHIFT_12;

    private ZfsImages() {}

    /** Where label {@code label}'s uberblock goes on a device {@code size} bytes long. */
    static long uberblockOffset(long size, int label) {
        return ZfsLabels.labelOffsets(size)[label] + ZfsLabels.UBERBLOCK_RING + (TXG % SLOTS_ASHIFT_12) * SLOT_ASHIFT_12;
    }

    /**
     * Writes the labels numbered in {@code labels} (0 and 1 at the start, 2 and 3 at the end) into
     * {@code file}, {@code size} bytes long; the uberblock's magic in {@code order}, the byte order
     * of the host that wrote it; the name/value list only if {@code withNvlist}.
     */
    static void writeLabels(Path file, long size, ByteOrder order, boolean withNvlist, int... labels) {
        for (int label : labels) {
            long start = ZfsLabels.labelOffsets(size)[label];
            if (withNvlist) {
                Images.write(file, start + NVLIST, nvlist(order));
            }
            Images.write(file, uberblockOffset(size, label), uberblock(order));
        }
    }

    private static byte[] uberblock(ByteOrder order) {
        return ByteBuffer.allocate(40).order(order)
                .putLong(ZfsLabels.MAGIC)
                .putLong(5000) // ub_version: SPA_VERSION_FEATURES
                .putLong(TXG)
                .putLong(0x1234_5678_9abc_def0L) // ub_guid_sum
                .putLong(1_764_000_000L) // ub_timestamp
                .array();
    }

    /** An XDR-encoded nvlist: its 4-byte header (encoding 1 = XDR, then the writer's endianness), then big-endian data. */
    private static byte[] nvlist(ByteOrder order) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(new byte[] {1, (byte) (order == ByteOrder.LITTLE_ENDIAN ? 1 : 0), 0, 0});
        out.writeBytes(ints(0, 1)); // nvl_version, nvl_nvflag (NV_UNIQUE_NAME)
        out.writeBytes(uint64Pair("version", 5000));
        out.writeBytes(stringPair("name", "tank"));
        out.writeBytes(uint64Pair("state", 0)); // POOL_STATE_ACTIVE
        out.writeBytes(uint64Pair("txg", TXG));
        out.writeBytes(uint64Pair("pool_guid", 0x0badc0ffee0ddf00L));
        out.writeBytes(uint64Pair("guid", 0x1234_5678_9abc_def0L));
        out.writeBytes(ints(0, 0)); // end of the list
        return out.toByteArray();
    }

    private static byte[] uint64Pair(String name, long value) {
        return pair(name, 8, ByteBuffer.allocate(8).putLong(value).array());
    }

    private static byte[] stringPair(String name, String value) {
        return pair(name, 9, xdrString(value));
    }

    // encoded size, decoded size, name, type, element count, value
    private static byte[] pair(String name, int type, byte[] value) {
        byte[] encodedName = xdrString(name);
        int size = 8 + encodedName.length + 8 + value.length;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(ints(size, size));
        out.writeBytes(encodedName);
        out.writeBytes(ints(type, 1));
        out.writeBytes(value);
        return out.toByteArray();
    }

    private static byte[] xdrString(String s) {
        byte[] bytes = s.getBytes(StandardCharsets.US_ASCII);
        return ByteBuffer.allocate(4 + (bytes.length + 3) / 4 * 4).putInt(bytes.length).put(bytes).array();
    }

    private static byte[] ints(int... values) {
        ByteBuffer buffer = ByteBuffer.allocate(4 * values.length);
        for (int v : values) {
            buffer.putInt(v);
        }
        return buffer.array();
    }
}
