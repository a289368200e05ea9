package dev.hearth.storage.lvm;

import com.sun.nio.file.ExtendedOpenOption;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What an LVM2 physical volume says about itself on disk, read the way LVM reads it: the label
 * ({@code LABELONE}, in one of the first four 512-byte sectors) and its PV header (UUID, data
 * areas, metadata areas), then each metadata area's header ({@code " LVM2 x[5A%r0N*>"}) and the
 * committed metadata text it points to, every part checked against its CRC. Reads use O_DIRECT,
 * as LVM's own do, so nothing a page cache kept from before LVM's last write is seen.
 *
 * <p>Layout (LVM2 lib/format_text/layout.h, lib/label/label.h; little-endian): label header =
 * id[8], sector u64, crc u32 (over the rest of the sector from the offset field), offset u32 (of
 * the PV header from the label's sector), type[8] "LVM2 001"; PV header = uuid[32], device size
 * u64, then two zero-terminated lists of (offset u64, size u64): data areas, then metadata areas.
 * Metadata area header = crc u32 (over the rest of its 512 bytes), magic[16], version u32 (1),
 * start u64, size u64, then (offset u64, size u64, crc u32, flags u32) locations, the first being
 * the committed text; the text wraps from the area's end to just after its header.
 */
final class PhysicalVolumeLabel {

    static final int SECTOR = 512;
    /** O_DIRECT needs buffers, offsets and lengths aligned to the device's logical block; 4 KiB covers every device. */
    static final int ALIGN = 4096;
    private static final int LABEL_SCAN_SECTORS = 4;
    private static final byte[] LABEL_ID = "LABELONE".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] LVM2_TYPE = "LVM2 001".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MDA_MAGIC = " LVM2 x[5A%r0N*>".getBytes(StandardCharsets.ISO_8859_1);
    private static final int MDA_HEADER_SIZE = 512;
    private static final int RAW_LOCN_IGNORED = 1;
    /** Larger metadata text than this is refused (LVM's default area holds about 1 MiB). */
    private static final long MAX_TEXT = 64L << 20;
    static final int INITIAL_CRC = 0xf597a6cf;
    private static final int[] CRC_TABLE = new int[256];

    static {
        for (int i = 0; i < 256; i++) {
            int c = i;
            for (int k = 0; k < 8; k++) {
                c = (c & 1) != 0 ? (c >>> 1) ^ 0xEDB88320 : c >>> 1;
            }
            CRC_TABLE[i] = c;
        }
    }

    /**
     * What one PV holds: its UUID, and the committed metadata text of each of its metadata areas
     * (none when it has none, or all are marked ignored).
     *
     * @param pvUuid without dashes, as the label holds it
     */
    record Contents(String pvUuid, List<String> texts) {}

    private PhysicalVolumeLabel() {}

    /**
     * The PV's UUID and the committed metadata of every metadata area on {@code device}. Throws {@link Unreadable} when the device is not an LVM2 PV or a checksum
     * does not match (a write in progress: the caller may try again).
     */
    static Contents read(Path device) throws IOException {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ, ExtendedOpenOption.DIRECT)) {
            return read(channel, device);
        }
    }

    /** {@link #read(Path)} from a channel already open; {@code device} names it in messages. */
    static Contents read(FileChannel channel, Path device) throws IOException {
        ByteBuffer head = read(channel, 0, ALIGN);
        int labelAt = -1;
        for (int sector = 0; sector < LABEL_SCAN_SECTORS; sector++) {
            if (head.slice(sector * SECTOR, LABEL_ID.length).equals(ByteBuffer.wrap(LABEL_ID))) {
                labelAt = sector * SECTOR;
                break;
            }
        }
        if (labelAt < 0) {
            throw new NoLabel(device + " has no LVM label");
        }
        ByteBuffer label = head.slice(labelAt, SECTOR).order(ByteOrder.LITTLE_ENDIAN);
        if (label.getLong(8) != labelAt / SECTOR) {
            throw new Unreadable(device + ": LVM label in sector " + labelAt / SECTOR + " names sector "
                    + label.getLong(8));
        }
        if (crc(INITIAL_CRC, label, 20, SECTOR - 20) != label.getInt(16)) {
            throw new Torn(device + ": LVM label checksum does not match");
        }
        if (!label.slice(24, 8).equals(ByteBuffer.wrap(LVM2_TYPE))) {
            throw new Unreadable(device + ": label type is not LVM2 001");
        }
        int pvHeader = label.getInt(20);
        if (pvHeader < 32 || pvHeader > SECTOR - 72) {
            throw new Unreadable(device + ": PV header offset out of range");
        }
        String uuid = StandardCharsets.US_ASCII.decode(label.slice(pvHeader, 32)).toString();
        int at = pvHeader + 40;
        at = skipList(label, at, device); // data areas
        List<long[]> mdas = new ArrayList<>();
        while (true) {
            if (at + 16 > SECTOR) {
                throw new Unreadable(device + ": PV header runs past its sector");
            }
            long offset = label.getLong(at);
            long size = label.getLong(at + 8);
            at += 16;
            if (offset == 0) {
                break;
            }
            mdas.add(new long[] {offset, size});
        }
        List<String> texts = new ArrayList<>();
        for (long[] mda : mdas) {
            readArea(channel, device, mda[0], mda[1]).ifPresent(texts::add);
        }
        return new Contents(uuid, List.copyOf(texts));
    }

    private static int skipList(ByteBuffer label, int at, Path device) throws Unreadable {
        while (true) {
            if (at + 16 > SECTOR) {
                throw new Unreadable(device + ": PV header runs past its sector");
            }
            long offset = label.getLong(at);
            at += 16;
            if (offset == 0) {
                return at;
            }
        }
    }

    /** The committed text of one metadata area, empty if the area is marked ignored. */
    private static Optional<String> readArea(FileChannel channel, Path device, long start, long size)
            throws IOException {
        ByteBuffer header = read(channel, start, MDA_HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        if (!header.slice(4, 16).equals(ByteBuffer.wrap(MDA_MAGIC))) {
            throw new Unreadable(device + ": no metadata area header at " + start);
        }
        if (crc(INITIAL_CRC, header, 4, MDA_HEADER_SIZE - 4) != header.getInt(0)) {
            throw new Torn(device + ": metadata area header checksum does not match (being written?)");
        }
        if (header.getInt(20) != 1 || header.getLong(24) != start || header.getLong(32) != size) {
            throw new Unreadable(device + ": metadata area header at " + start + " is not version 1 of this area");
        }
        long offset = header.getLong(40);
        long length = header.getLong(48);
        int checksum = header.getInt(56);
        int flags = header.getInt(60);
        if ((flags & RAW_LOCN_IGNORED) != 0 || offset == 0) {
            return Optional.empty();
        }
        if (length <= 0 || length > MAX_TEXT || offset < MDA_HEADER_SIZE || offset >= size
                || length > size - MDA_HEADER_SIZE) {
            throw new Unreadable(device + ": metadata location out of its area");
        }
        ByteBuffer text = ByteBuffer.allocate((int) length);
        long first = Math.min(length, size - offset);
        text.put(read(channel, start + offset, (int) first));
        if (first < length) {
            text.put(read(channel, start + MDA_HEADER_SIZE, (int) (length - first)));
        }
        text.flip();
        if (crc(INITIAL_CRC, text, 0, (int) length) != checksum) {
            throw new Torn(device + ": metadata text checksum does not match (being written?)");
        }
        int end = (int) length;
        while (end > 0 && text.get(end - 1) == 0) {
            end--;
        }
        return Optional.of(StandardCharsets.UTF_8.decode(text.slice(0, end)).toString());
    }

    /** {@code length} bytes at {@code offset}, through an aligned direct buffer. */
    private static ByteBuffer read(FileChannel channel, long offset, int length) throws IOException {
        long from = offset / ALIGN * ALIGN;
        long to = Math.ceilDiv(offset + length, ALIGN) * ALIGN;
        try (Arena arena = Arena.ofConfined()) { // freed here, not at some later GC
            ByteBuffer direct = arena.allocate(to - from, ALIGN).asByteBuffer();
            while (direct.hasRemaining()) {
                if (channel.read(direct, from + direct.position()) < 0) {
                    throw new EOFException("end of device at " + (from + direct.position()));
                }
            }
            ByteBuffer out = ByteBuffer.allocate(length);
            out.put(direct.slice((int) (offset - from), length));
            return out.flip();
        }
    }

    /** LVM's CRC-32: the usual reflected polynomial, no final inversion, seeded with {@link #INITIAL_CRC}. */
    static int crc(int initial, ByteBuffer bytes, int from, int length) {
        int c = initial;
        for (int i = from; i < from + length; i++) {
            c = (c >>> 8) ^ CRC_TABLE[(c ^ bytes.get(i)) & 0xff];
        }
        return c;
    }

    /** The device does not hold what an LVM2 PV must, or a part of it failed its checksum. */
    static class Unreadable extends IOException {
        Unreadable(String message) {
            super(message);
        }
    }

    /** No LVM label at all: the device is no PV (and was never made one, or its label was wiped). */
    static final class NoLabel extends Unreadable {
        NoLabel(String message) {
            super(message);
        }
    }

    /**
     * The label, or a metadata area's header or text, failed its checksum: LVM was writing it, and
     * a later read sees its commit.
     */
    static final class Torn extends Unreadable {
        Torn(String message) {
            super(message);
        }
    }
}
