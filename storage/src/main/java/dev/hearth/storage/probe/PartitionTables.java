package dev.hearth.storage.probe;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/** GPT headers (512- and 4096-byte sectors, primary and backup), MBR, Sun and SGI partition tables. */
final class PartitionTables {

    private static final int[] SECTOR_SIZES = {512, 4096};
    private static final long MBR_ENTRIES = 0x1BE;
    private static final int MBR_PROTECTIVE = 0xEE;
    private static final long SUN_MAGIC_OFFSET = 0x1FC;
    private static final int SUN_MAGIC = 0xDABE;
    private static final int SGI_MAGIC = 0x0BE5A941;

    private PartitionTables() {}

    static void detect(DeviceBytes d, List<Signature> found) throws IOException {
        for (int sector : SECTOR_SIZES) {
            if (d.has(sector, "EFI PART")) {
                found.add(pt("gpt", sector, false));
            }
            // The backup header sits in the device's last logical block.
            long backup = d.size() - sector;
            if (backup > 4096 && d.has(backup, "EFI PART")) {
                found.add(pt("gpt", backup, true));
            }
        }
        if (sun(d)) {
            found.add(pt("sun", SUN_MAGIC_OFFSET, false));
        }
        if (sgi(d)) {
            found.add(pt("sgi", 0, false));
        }
        String mbr = mbr(d);
        if (mbr != null) {
            found.add(pt(mbr, 0x1FE, false));
        }
    }

    /**
     * "dos", "PMBR" (the protective MBR in front of a GPT) or null, by libblkid's rules (dos.c): a
     * table without partitions is still a table (what {@code sfdisk} writes for "label: dos"), but
     * one in front of an LVM label is how a PV is made bootable, and libblkid calls that disk a PV.
     */
    private static String mbr(DeviceBytes d) throws IOException {
        if (d.u16(0x1FE) != 0xAA55 || Filesystems.bootSectorFilesystem(d) != null) {
            return null;
        }
        boolean noPartition = true;
        boolean protective = false;
        for (int i = 0; i < 4; i++) {
            long entry = MBR_ENTRIES + 16L * i;
            int bootFlag = d.u8(entry);
            if (bootFlag != 0 && bootFlag != 0x80) {
                return null; // not a partition table, just a sector that happens to end in 0x55AA
            }
            noPartition &= d.u32(entry + 12) == 0;
            protective |= d.u8(entry + 4) == MBR_PROTECTIVE;
        }
        if (noPartition && VolumeManagers.hasLvmLabel(d)) {
            return null;
        }
        return protective ? "PMBR" : "dos";
    }

    /** A Sun disk label (what sfdisk writes for "label: sun"): its magic, and its 16-bit words XOR to zero. */
    private static boolean sun(DeviceBytes d) throws IOException {
        ByteBuffer label = sector0(d);
        if (label == null || Short.toUnsignedInt(label.getShort((int) SUN_MAGIC_OFFSET)) != SUN_MAGIC) {
            return false;
        }
        int xor = 0;
        for (int i = 0; i < 512; i += 2) {
            xor ^= label.getShort(i);
        }
        return xor == 0;
    }

    /** An SGI disk label (sfdisk's "label: sgi"): its magic, and its 32-bit words sum to zero. */
    private static boolean sgi(DeviceBytes d) throws IOException {
        ByteBuffer label = sector0(d);
        if (label == null || label.getInt(0) != SGI_MAGIC) {
            return false;
        }
        int sum = 0;
        for (int i = 0; i < 512; i += 4) {
            sum += label.getInt(i);
        }
        return sum == 0;
    }

    private static ByteBuffer sector0(DeviceBytes d) throws IOException {
        ByteBuffer sector = d.at(0, 512);
        return sector == null ? null : sector.order(ByteOrder.BIG_ENDIAN);
    }

    private static Signature pt(String type, long offset, boolean backup) {
        return new Signature(Kind.PARTITION_TABLE, type, offset, backup);
    }
}
