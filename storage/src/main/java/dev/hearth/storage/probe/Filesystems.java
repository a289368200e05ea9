package dev.hearth.storage.probe;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.util.List;

/** Filesystem superblocks, at the offsets libblkid uses. */
final class Filesystems {

    private static final long EXT_SUPERBLOCK = 1024;
    private static final int EXT_MAGIC = 0xEF53;
    private static final long EXT_COMPAT_HAS_JOURNAL = 0x0004;
    private static final long EXT_INCOMPAT_JOURNAL_DEV = 0x0008;
    // Features ext3 understands (filetype, recover, meta_bg / sparse_super, large_file,
    // btree_dir); any other feature means only the ext4 driver can mount it.
    private static final long EXT3_INCOMPAT = 0x0002 | 0x0004 | 0x0010;
    private static final long EXT3_RO_COMPAT = 0x0001 | 0x0002 | 0x0004;

    // 1K, 2K, 4K and 64K blocks (log2 of size / 1024): what mke2fs makes on 4K- and 64K-page machines.
    private static final int[] EXT_BACKUP_BLOCK_SIZE_LOGS = {0, 1, 2, 6};

    private static final long BTRFS_PRIMARY = 0x10000;
    // Mirror copies at 64 MiB and 256 GiB survive a wipe of the head.
    private static final long[] BTRFS_MIRRORS = {64L << 20, 256L << 30};

    private static final long VOLUME_RECOGNITION = 0x8000;
    private static final int[] UDF_BLOCK_SIZES = {512, 1024, 2048, 4096};
    private static final List<String> VOLUME_DESCRIPTORS = List.of("BEA01", "BOOT2", "CD001", "CDW02", "TEA01");
    private static final long CRAMFS_MAGIC = 0x28CD3D45L;
    private static final long BFS_MAGIC = 0x1BADFACEL;

    private Filesystems() {}

    static void detect(DeviceBytes d, List<Signature> found) throws IOException {
        ext(d, found);
        if (d.has(0, "XFSB")) {
            found.add(fs("xfs", 0));
        }
        btrfs(d, found);
        String bootSector = bootSectorFilesystem(d);
        if (bootSector != null) {
            found.add(fs(bootSector, bootSectorMagicOffset(d, bootSector)));
        }
        String optical = opticalFilesystem(d);
        if (optical != null) {
            found.add(fs(optical, VOLUME_RECOGNITION + 1));
        }
        if (d.has(0, "hsqs")) {
            found.add(fs("squashfs", 0));
        } else if (d.has(0, "sqsh")) {
            found.add(fs("squashfs3", 0));
        }
        if (d.u32(1024) == 0xF2F52010L) {
            found.add(fs("f2fs", 1024));
        }
        if (d.u32(1024) == 0xE0F5E1E2L) {
            found.add(fs("erofs", 1024));
        }
        // util-linux's own mkfs.cramfs, mkfs.bfs and mkfs.minix make these; libblkid knows them.
        if (d.u32(0) == CRAMFS_MAGIC || d.u32(0) == Integer.toUnsignedLong(Integer.reverseBytes((int) CRAMFS_MAGIC))) {
            found.add(fs("cramfs", 0));
        }
        if (d.u32(0) == BFS_MAGIC) {
            found.add(fs("bfs", 0));
        }
        long minix = Minix.superblockMagic(d);
        if (minix >= 0) {
            found.add(fs("minix", minix));
        }
    }

    /**
     * "udf", "iso9660" or null. UDF, as libblkid's udf.c finds it: an NSR02 or NSR03 descriptor in
     * the volume recognition sequence at 32 KiB (descriptors of 2 KiB, or of the block size above
     * that, each with a five-letter id), and an anchor descriptor at block 256 or 512 that knows its
     * place, for one of the block sizes UDF allows. An ISO 9660/UDF bridge (genisoimage -udf) is udf
     * there and here; ISO 9660 alone is its first descriptor, CD001.
     */
    private static String opticalFilesystem(DeviceBytes d) throws IOException {
        for (int blockSize : UDF_BLOCK_SIZES) {
            if (hasNsrDescriptor(d, Math.max(2048, blockSize)) && hasUdfAnchor(d, blockSize)) {
                return "udf";
            }
        }
        return d.has(VOLUME_RECOGNITION + 1, "CD001") ? "iso9660" : null;
    }

    private static boolean hasNsrDescriptor(DeviceBytes d, int descriptorSize) throws IOException {
        for (int i = 0; i < 64; i++) {
            long id = VOLUME_RECOGNITION + (long) i * descriptorSize + 1;
            if (d.has(id, "NSR02") || d.has(id, "NSR03")) {
                return true;
            }
            if (!isVolumeDescriptor(d, id)) {
                return false; // the sequence ends at the first sector that is no descriptor
            }
        }
        return false;
    }

    // A descriptor tag: its id (2 for an anchor) first, the block it says it is in at 12.
    private static boolean hasUdfAnchor(DeviceBytes d, int blockSize) throws IOException {
        for (long block : new long[] {256, 512}) {
            if (d.u16(block * blockSize) == 2 && d.u32(block * blockSize + 12) == block) {
                return true;
            }
        }
        return false;
    }

    private static boolean isVolumeDescriptor(DeviceBytes d, long id) throws IOException {
        for (String known : VOLUME_DESCRIPTORS) {
            if (d.has(id, known)) {
                return true;
            }
        }
        return false;
    }

    private static void ext(DeviceBytes d, List<Signature> found) throws IOException {
        if (d.u16(EXT_SUPERBLOCK + 0x38) == EXT_MAGIC) {
            found.add(fs(extType(d, EXT_SUPERBLOCK), EXT_SUPERBLOCK + 0x38));
        }
        // Block group 1 always carries a backup superblock (sparse_super and sparse_super2
        // alike); with the default 8 * blocksize blocks per group it sits at a fixed place for
        // each block size. The primary's block size is unknown here (it may be wiped), so try all.
        for (int log : EXT_BACKUP_BLOCK_SIZE_LOGS) {
            long blockSize = 1024L << log;
            long firstDataBlock = blockSize == 1024 ? 1 : 0;
            long copy = (firstDataBlock + 8 * blockSize) * blockSize;
            if (d.u16(copy + 0x38) == EXT_MAGIC && d.u16(copy + 0x5A) == 1 && d.u32(copy + 0x18) == log) {
                found.add(new Signature(Kind.FILESYSTEM, extType(d, copy), copy + 0x38, true));
            }
        }
    }

    private static String extType(DeviceBytes d, long superblock) throws IOException {
        long compat = d.u32(superblock + 0x5C);
        long incompat = d.u32(superblock + 0x60);
        long roCompat = d.u32(superblock + 0x64);
        if ((incompat & EXT_INCOMPAT_JOURNAL_DEV) != 0) {
            return "jbd";
        }
        if ((incompat & ~EXT3_INCOMPAT) != 0 || (roCompat & ~EXT3_RO_COMPAT) != 0) {
            return "ext4";
        }
        return (compat & EXT_COMPAT_HAS_JOURNAL) != 0 ? "ext3" : "ext2";
    }

    private static void btrfs(DeviceBytes d, List<Signature> found) throws IOException {
        if (d.has(BTRFS_PRIMARY + 0x40, "_BHRfS_M")) {
            found.add(fs("btrfs", BTRFS_PRIMARY + 0x40));
        }
        for (long mirror : BTRFS_MIRRORS) {
            // A mirror records its own location; a stray copy of the primary elsewhere does not count.
            if (d.has(mirror + 0x40, "_BHRfS_M") && d.u64(mirror + 0x30) == mirror) {
                found.add(new Signature(Kind.FILESYSTEM, "btrfs", mirror + 0x40, true));
            }
        }
    }

    /**
     * The filesystem whose boot sector occupies sector 0, or null. Shared with the MBR check:
     * a FAT or NTFS boot sector also ends in 0x55AA and must not be taken for a partition table.
     */
    static String bootSectorFilesystem(DeviceBytes d) throws IOException {
        if (d.has(3, "NTFS    ")) {
            return "ntfs";
        }
        if (d.has(3, "EXFAT   ")) {
            return "exfat";
        }
        boolean fatMagic = d.has(0x52, "FAT32   ") || d.has(0x52, "MSWIN")
                || d.has(0x36, "FAT12   ") || d.has(0x36, "FAT16   ")
                || d.has(0x36, "FAT     ") || d.has(0x36, "MSDOS");
        return fatMagic && plausibleFatBpb(d) ? "vfat" : null;
    }

    private static long bootSectorMagicOffset(DeviceBytes d, String type) throws IOException {
        if (!type.equals("vfat")) {
            return 3;
        }
        return d.has(0x52, "FAT32   ") || d.has(0x52, "MSWIN") ? 0x52 : 0x36;
    }

    // The BIOS parameter block must make sense, or the "FAT" text is just text.
    private static boolean plausibleFatBpb(DeviceBytes d) throws IOException {
        int jump = d.u8(0);
        int sectorSize = d.u16(0x0B);
        int sectorsPerCluster = d.u8(0x0D);
        int fats = d.u8(0x10);
        return (jump == 0xEB || jump == 0xE9)
                && (sectorSize == 512 || sectorSize == 1024 || sectorSize == 2048 || sectorSize == 4096)
                && sectorsPerCluster > 0 && Integer.bitCount(sectorsPerCluster) == 1
                && d.u16(0x0E) > 0
                && fats >= 1 && fats <= 4;
    }

    private static Signature fs(String type, long offset) {
        return new Signature(Kind.FILESYSTEM, type, offset);
    }
}
