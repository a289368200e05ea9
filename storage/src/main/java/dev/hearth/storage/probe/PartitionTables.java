package dev.hearth.storage.probe;

import dev.hearth.storage.probe.Signature.Kind;
import java.io.IOException;
import java.util.List;

/** GPT headers (512- and 4096-byte sectors, primary and backup) and MBR partition tables. */
final class PartitionTables {

    private static final int[] SECTOR_SIZES = {512, 4096};
    private static final long MBR_ENTRIES = 0x1BE;
    private static final int MBR_PROTECTIVE = 0xEE;

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

    private static Signature pt(String type, long offset, boolean backup) {
        return new Signature(Kind.PARTITION_TABLE, type, offset, backup);
    }
}
