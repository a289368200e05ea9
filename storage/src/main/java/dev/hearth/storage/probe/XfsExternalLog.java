package dev.hearth.storage.probe;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.util.List;

/**
 * An XFS log kept on a device of its own ({@code mkfs.xfs -l logdev=}): no superblock, but log
 * records, each starting with a header in a 512-byte sector. As libblkid's xfs.c does, the first
 * 256 KiB are searched for a header that makes sense (magic, a known version and format, a
 * length), and a sector holding an XFS superblock before it means an XFS filesystem, not a log.
 *
 * <p>Up to 64 reads: {@link SignatureProbe} searches only a device with data in its first or last MiB.
 */
final class XfsExternalLog {

    private static final int SECTOR = 512;
    private static final int SEARCHED = 512;
    private static final long MINIMUM_DEVICE = 10L << 20; // XFS_MIN_LOG_BYTES
    private static final long MAGIC = 0xFEEDBABEL;
    private static final long VERSIONS = 0x1 | 0x2;

    private XfsExternalLog() {}

    static void detect(DeviceBytes d, List<Signature> found) throws IOException {
        if (d.size() < MINIMUM_DEVICE) {
            return;
        }
        for (long sector = 0; sector < SEARCHED; sector++) {
            long at = sector * SECTOR;
            if (d.has(at, "XFSB")) {
                return;
            }
            if (isRecordHeader(d, at)) {
                found.add(new Signature(Kind.FILESYSTEM, "xfs_external_log", at));
                return;
            }
        }
    }

    // The header's fields are big-endian: magic, cycle, version, length, ..., format at 300.
    private static boolean isRecordHeader(DeviceBytes d, long at) throws IOException {
        if (be32(d, at) != MAGIC) {
            return false;
        }
        long version = be32(d, at + 8);
        long length = be32(d, at + 12);
        long format = be32(d, at + 300);
        return version != 0 && (version & ~VERSIONS) == 0
                && length > 0 && length <= Integer.MAX_VALUE
                && format >= 1 && format <= 3; // Linux little-endian, Linux big-endian, IRIX
    }

    private static long be32(DeviceBytes d, long offset) throws IOException {
        long value = d.u32(offset);
        return value < 0 ? -1 : Integer.toUnsignedLong(Integer.reverseBytes((int) value));
    }
}
