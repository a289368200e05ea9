package dev.hearth.storage.probe;

import java.io.IOException;

/**
 * A Minix filesystem's superblock, at 1 KiB, as libblkid's minix.c and fsck.minix read it. Its
 * magic is two bytes, which other data matches easily (ext3 metadata among it), so the superblock
 * must also make sense: the checks are libblkid's, and so is the refusal of a device whose ext
 * magic is in place.
 */
final class Minix {

    private static final long SUPERBLOCK = 1024;
    private static final int BLOCK = 1024;
    private static final int V1 = 0x137F;
    private static final int V1_LONG_NAMES = 0x138F;
    private static final int V2 = 0x2468;
    private static final int V2_LONG_NAMES = 0x2478;
    private static final int V3 = 0x4D5A;
    private static final int VALID_FS = 0x0001;
    private static final int ERROR_FS = 0x0002;
    private static final long EXT_MAGIC = 0x438;

    private Minix() {}

    /** The offset of the superblock's magic (0x410, or 0x418 for version 3), or -1 if there is no Minix filesystem. */
    static long superblockMagic(DeviceBytes d) throws IOException {
        if (d.u16(EXT_MAGIC) == 0xEF53) {
            return -1;
        }
        // Read as libblkid does: the magic in host (little-endian) order, then swapped; version 3's in
        // host order only.
        boolean swapped = false;
        int version = version(d.u16(SUPERBLOCK + 0x10), d);
        if (version == 0) {
            swapped = true;
            version = version(u16(d, 0x10, true), d);
        }
        if (version == 0 || !plausible(d, version, swapped)) {
            return -1;
        }
        return SUPERBLOCK + (version == 3 ? 0x18 : 0x10);
    }

    private static int version(int magic, DeviceBytes d) throws IOException {
        if (magic == V1 || magic == V1_LONG_NAMES) {
            return 1;
        }
        if (magic == V2 || magic == V2_LONG_NAMES) {
            return 2;
        }
        return d.u16(SUPERBLOCK + 0x18) == V3 ? 3 : 0;
    }

    private static boolean plausible(DeviceBytes d, int version, boolean swapped) throws IOException {
        long zones;
        long inodes;
        long inodeMaps;
        long zoneMaps;
        long firstDataZone;
        long logZoneSize;
        if (version == 3) {
            inodes = u32(d, 0, swapped);
            inodeMaps = u16(d, 6, swapped);
            zoneMaps = u16(d, 8, swapped);
            firstDataZone = u16(d, 10, swapped);
            logZoneSize = d.u16(SUPERBLOCK + 12);
            zones = u32(d, 20, swapped);
        } else {
            int state = u16(d, 0x12, swapped);
            if ((state & (VALID_FS | ERROR_FS)) != state) {
                return false;
            }
            inodes = u16(d, 0, swapped);
            inodeMaps = u16(d, 4, swapped);
            zoneMaps = u16(d, 6, swapped);
            firstDataZone = u16(d, 8, swapped);
            logZoneSize = d.u16(SUPERBLOCK + 10);
            zones = version == 2 ? u32(d, 20, swapped) : u16(d, 2, swapped);
        }
        return logZoneSize == 0 && inodes != 0 && inodes != 0xFFFF_FFFFL
                && inodeMaps * BLOCK * 8 >= inodes + 1
                && firstDataZone <= zones
                && zoneMaps * BLOCK * 8 >= zones - firstDataZone + 1;
    }

    private static int u16(DeviceBytes d, long field, boolean swapped) throws IOException {
        int value = d.u16(SUPERBLOCK + field);
        return swapped ? Short.toUnsignedInt(Short.reverseBytes((short) value)) : value;
    }

    private static long u32(DeviceBytes d, long field, boolean swapped) throws IOException {
        long value = d.u32(SUPERBLOCK + field);
        return swapped ? Integer.toUnsignedLong(Integer.reverseBytes((int) value)) : value;
    }
}
