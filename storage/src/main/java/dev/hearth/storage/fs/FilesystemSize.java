package dev.hearth.storage.fs;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.OptionalLong;

/**
 * The size a filesystem gives itself in its primary superblock, read in pure Java: the figure a
 * grow is judged by. The superblock on the device is what a buffered read sees: for a mounted ext4
 * or btrfs that is current, but a mounted xfs updates its on-disk superblock only when its log is
 * written back, so ask the kernel there ({@link dev.hearth.linux.XfsGeometry}).
 */
public final class FilesystemSize {

    private static final long EXT_SUPERBLOCK = 1024;
    private static final int EXT_MAGIC = 0xEF53;
    private static final long EXT_INCOMPAT_64BIT = 0x80;
    private static final long BTRFS_SUPERBLOCK = 0x10000;
    private static final byte[] BTRFS_MAGIC = "_BHRfS_M".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] XFS_MAGIC = "XFSB".getBytes(StandardCharsets.US_ASCII);
    // Covers every field read below: the btrfs superblock's total_bytes ends at 0x10078.
    private static final int HEAD = (int) BTRFS_SUPERBLOCK + 0x100;

    private FilesystemSize() {}

    /**
     * The size in bytes of the ext2/3/4, xfs (data section) or btrfs filesystem on a device or image
     * file; empty if it holds none of them, or more than one superblock claims it. For btrfs this is
     * the filesystem's total over all its devices; hearth makes single-device ones.
     */
    public static OptionalLong of(Path deviceOrImage) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(HEAD);
        try (FileChannel channel = FileChannel.open(deviceOrImage, StandardOpenOption.READ)) {
            while (head.hasRemaining() && channel.read(head, head.position()) > 0) {
                // a short device just leaves the rest zero, which no magic matches
            }
        }
        return of(head.clear());
    }

    /** The same, from the device's first {@code 0x10100} bytes. */
    static OptionalLong of(ByteBuffer head) {
        OptionalLong ext = ext(head.duplicate().order(ByteOrder.LITTLE_ENDIAN));
        OptionalLong xfs = xfs(head.duplicate().order(ByteOrder.BIG_ENDIAN));
        OptionalLong btrfs = btrfs(head.duplicate().order(ByteOrder.LITTLE_ENDIAN));
        int found = (ext.isPresent() ? 1 : 0) + (xfs.isPresent() ? 1 : 0) + (btrfs.isPresent() ? 1 : 0);
        if (found != 1) {
            return OptionalLong.empty();
        }
        return ext.isPresent() ? ext : xfs.isPresent() ? xfs : btrfs;
    }

    // struct ext4_super_block (fs/ext4/ext4.h), 1024 bytes into the device.
    private static OptionalLong ext(ByteBuffer b) {
        int sb = (int) EXT_SUPERBLOCK;
        if (Short.toUnsignedInt(b.getShort(sb + 0x38)) != EXT_MAGIC) {
            return OptionalLong.empty();
        }
        long logBlockSize = Integer.toUnsignedLong(b.getInt(sb + 0x18));
        if (logBlockSize > 6) { // 1 KiB .. 64 KiB
            return OptionalLong.empty();
        }
        long blocks = Integer.toUnsignedLong(b.getInt(sb + 0x04));
        long incompat = Integer.toUnsignedLong(b.getInt(sb + 0x60));
        if ((incompat & EXT_INCOMPAT_64BIT) != 0) {
            blocks |= Integer.toUnsignedLong(b.getInt(sb + 0x150)) << 32;
        }
        return OptionalLong.of(blocks * (1024L << logBlockSize));
    }

    // struct xfs_dsb (fs/xfs/libxfs/xfs_format.h), big-endian, at sector 0.
    private static OptionalLong xfs(ByteBuffer b) {
        if (!b.slice(0, XFS_MAGIC.length).equals(ByteBuffer.wrap(XFS_MAGIC))) {
            return OptionalLong.empty();
        }
        long blockSize = Integer.toUnsignedLong(b.getInt(4));
        if (blockSize < 512 || blockSize > 65536 || Long.bitCount(blockSize) != 1) {
            return OptionalLong.empty();
        }
        return OptionalLong.of(b.getLong(8) * blockSize);
    }

    // struct btrfs_super_block (include/uapi/linux/btrfs_tree.h), 64 KiB into the device.
    private static OptionalLong btrfs(ByteBuffer b) {
        int sb = (int) BTRFS_SUPERBLOCK;
        if (!b.slice(sb + 0x40, BTRFS_MAGIC.length).equals(ByteBuffer.wrap(BTRFS_MAGIC))) {
            return OptionalLong.empty();
        }
        return OptionalLong.of(b.getLong(sb + 0x70));
    }
}
