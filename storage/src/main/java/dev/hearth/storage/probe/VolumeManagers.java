package dev.hearth.storage.probe;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.util.List;

/**
 * Headers of things that hold other volumes: LVM physical volumes, md and DDF RAID members, LUKS,
 * bcache, and device-mapper targets' metadata.
 */
final class VolumeManagers {

    // pvcreate puts its label in sector 1 by default, but any of the first four is valid.
    private static final int LVM_LABEL_SECTORS = 4;
    private static final long MD_MAGIC = 0xA92B4EFCL;
    private static final long MD_RESERVED = 0x10000;
    private static final long DDF_MAGIC = 0xDE11DE11L;
    private static final long DDF_MINIMUM = 0x30000;
    private static final byte[] LUKS_MAGIC = {'L', 'U', 'K', 'S', (byte) 0xBA, (byte) 0xBE};
    private static final byte[] LUKS2_SECONDARY_MAGIC = {'S', 'K', 'U', 'L', (byte) 0xBA, (byte) 0xBE};
    // Where cryptsetup may put the LUKS2 second header, depending on the metadata size chosen.
    private static final long[] LUKS2_SECONDARY_OFFSETS =
            {0x4000, 0x8000, 0x10000, 0x20000, 0x40000, 0x80000, 0x100000, 0x200000, 0x400000};
    private static final byte[] BCACHE_MAGIC = {
        (byte) 0xC6, (byte) 0x85, 0x73, (byte) 0xF6, 0x4E, 0x1A, 0x45, (byte) 0xCA,
        (byte) 0x82, 0x65, (byte) 0xF5, 0x7F, 0x48, (byte) 0xBA, 0x6D, (byte) 0x81
    };

    private VolumeManagers() {}

    static void detect(DeviceBytes d, List<Signature> found) throws IOException {
        for (long sector = 0; sector < LVM_LABEL_SECTORS; sector++) {
            if (isLvmLabel(d, sector)) {
                found.add(vm("LVM2_member", sector * 512 + 0x18, false));
            }
        }
        md(d, found);
        ddf(d, found);
        if (d.has(0, LUKS_MAGIC)) {
            found.add(vm("crypto_LUKS", 0, false));
        }
        for (long offset : LUKS2_SECONDARY_OFFSETS) {
            if (d.has(offset, LUKS2_SECONDARY_MAGIC)) {
                found.add(vm("crypto_LUKS", offset, true));
            }
        }
        if (d.has(0x1018, BCACHE_MAGIC)) {
            found.add(vm("bcache", 0x1018, false));
        }
        // device-mapper targets' own metadata at the start of a device: veritysetup's hash device,
        // integritysetup's device, a thick LVM snapshot's copy-on-write store.
        if (d.has(0, "verity\0\0") && d.u32(8) == 1) {
            found.add(vm("DM_verity_hash", 0, false));
        }
        if (d.has(0, "integrt\0") && d.u8(8) > 0) {
            found.add(vm("DM_integrity", 0, false));
        }
        if (d.has(0, "SnAp")) {
            found.add(vm("DM_snapshot_cow", 0, false));
        }
    }

    static boolean hasLvmLabel(DeviceBytes d) throws IOException {
        for (long sector = 0; sector < LVM_LABEL_SECTORS; sector++) {
            if (isLvmLabel(d, sector)) {
                return true;
            }
        }
        return false;
    }

    private static boolean isLvmLabel(DeviceBytes d, long sector) throws IOException {
        return d.has(sector * 512, "LABELONE") && d.has(sector * 512 + 0x18, "LVM2 001");
    }

    private static void md(DeviceBytes d, List<Signature> found) throws IOException {
        long size = d.size();
        if (size > MD_RESERVED) {
            // 0.90 lives in the last 64 KiB-aligned 64 KiB, in the byte order of the host that
            // wrote it.
            long v090 = (size & ~(MD_RESERVED - 1)) - MD_RESERVED;
            long magic = d.u32(v090);
            if (magic == MD_MAGIC || Integer.reverseBytes((int) magic) == (int) MD_MAGIC) {
                found.add(vm("linux_raid_member", v090, false));
            }
            long v10 = (size & ~0xFFFL) - 0x2000;
            if (isMd1(d, v10)) {
                found.add(vm("linux_raid_member", v10, false));
            }
        }
        for (long offset : new long[] {0, 0x1000}) { // 1.1 and 1.2
            if (isMd1(d, offset)) {
                found.add(vm("linux_raid_member", offset, false));
            }
        }
    }

    /**
     * A SNIA DDF RAID member (what mdadm --metadata=ddf and many hardware RAID controllers write): its
     * anchor header in the last sector or 257 sectors before the end, its magic in either byte order.
     * libblkid also wants the primary header the anchor points to to carry the magic; an anchor alone
     * is enough here.
     */
    private static void ddf(DeviceBytes d, List<Signature> found) throws IOException {
        if (d.size() < DDF_MINIMUM) {
            return;
        }
        for (long before : new long[] {1, 257}) {
            long anchor = (d.size() / 512 - before) * 512;
            long magic = d.u32(anchor);
            if (magic == DDF_MAGIC || Integer.reverseBytes((int) magic) == (int) DDF_MAGIC) {
                found.add(vm("ddf_raid_member", anchor, false));
                return;
            }
        }
    }

    private static boolean isMd1(DeviceBytes d, long offset) throws IOException {
        return d.u32(offset) == MD_MAGIC && d.u32(offset + 4) == 1;
    }

    private static Signature vm(String type, long offset, boolean backup) {
        return new Signature(Kind.VOLUME_MANAGER, type, offset, backup);
    }
}
