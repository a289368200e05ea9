package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The scan on a copy of sysfs laid out as the kernel lays it out for an NVMe disk, a SATA disk
 * with partitions (one mounted, one swap, one an LVM PV held by device-mapper), a virtio disk
 * with a serial only, a loop device, and the devices that are not disks.
 */
class DiskScanTest {

    @TempDir
    Path root;

    private Path sys() {
        return root.resolve("sys/block");
    }

    @Test
    void readsEveryFactOfANvmeDisk() throws IOException {
        Path nvme = device("nvme0n1", "259:0", 3907029168L, 512, 4096, 0);
        write(nvme.resolve("wwid"), "eui.0025388b91b2c3d4\n");
        write(nvme.resolve("device/serial"), "S4EWNX0R123456      \n");
        write(nvme.resolve("device/model"), "Samsung SSD 980 PRO 2TB                 \n");
        link("by-id", "nvme-Samsung_SSD_980_PRO_2TB_S4EWNX0R123456", "nvme0n1");
        link("by-path", "pci-0000:01:00.0-nvme-1", "nvme0n1");

        Disk disk = only(scan(List.of(), ""));

        assertThat(disk.name()).isEqualTo("nvme0n1");
        assertThat(disk.path()).isEqualTo(Path.of("/dev/nvme0n1"));
        assertThat(disk.major()).isEqualTo(259);
        assertThat(disk.sizeBytes()).isEqualTo(3907029168L * 512);
        assertThat(disk.logicalSectorSize()).isEqualTo(512);
        assertThat(disk.physicalSectorSize()).isEqualTo(4096);
        assertThat(disk.rotational()).isFalse();
        assertThat(disk.removable()).isFalse();
        assertThat(disk.readOnly()).isFalse();
        assertThat(disk.serial()).isEqualTo("S4EWNX0R123456");
        assertThat(disk.model()).isEqualTo("Samsung SSD 980 PRO 2TB");
        assertThat(disk.wwn()).isEqualTo("eui.0025388b91b2c3d4");
        assertThat(disk.links()).containsExactly(
                Path.of("/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_2TB_S4EWNX0R123456"),
                Path.of("/dev/disk/by-path/pci-0000:01:00.0-nvme-1"));
        assertThat(disk.paths()).first().isEqualTo(Path.of("/dev/nvme0n1"));
        assertThat(disk.uses()).isEmpty();
        assertThat(disk.isLoop()).isFalse();
    }

    @Test
    void partitionsAndWhatUsesThemAreSeen() throws IOException {
        Path sda = device("sda", "8:0", 1953525168L, 512, 512, 1);
        write(sda.resolve("device/vendor"), "ATA     \n");
        write(sda.resolve("device/model"), "ST1000DM010-2EP1\n");
        write(sda.resolve("device/wwid"), "naa.5000c500a1b2c3d4\n");
        // VPD page 0x80: 4-byte header (length 0x0014), then the serial, space-padded.
        byte[] page = new byte[4 + 20];
        page[1] = (byte) 0x80;
        page[3] = 20;
        System.arraycopy("        Z9A1B2C3    ".getBytes(StandardCharsets.US_ASCII), 0, page, 4, 20);
        Files.write(sda.resolve("device/vpd_pg80"), page);
        partition(sda, "sda1", "8:1", 2048, 1048576);
        partition(sda, "sda2", "8:2", 1050624, 8388608);
        Path sda3 = partition(sda, "sda3", "8:3", 9439232, 100000000);
        Files.createDirectories(sda3.resolve("holders/dm-0"));
        Path dm = Files.createDirectories(sys().resolve("dm-0/dm"));
        write(dm.resolve("name"), "vg0-data\n");
        write(sys().resolve("dm-0/size"), "100000000\n");
        write(sys().resolve("dm-0/dev"), "254:0\n");
        MountEntry boot = mount(8, 1, "/boot");

        Disk disk = only(scan(List.of(boot), "Filename Type Size Used Priority\n/dev/sda2 partition 4194300 0 -2\n"));

        assertThat(disk.rotational()).isTrue();
        assertThat(disk.vendor()).isEqualTo("ATA");
        assertThat(disk.serial()).isEqualTo("Z9A1B2C3");
        assertThat(disk.wwn()).isEqualTo("naa.5000c500a1b2c3d4");
        assertThat(disk.partitions()).extracting(Disk.Partition::name).containsExactly("sda1", "sda2", "sda3");
        assertThat(disk.partitions().get(1).startBytes()).isEqualTo(1050624L * 512);
        assertThat(disk.partitions().get(1).sizeBytes()).isEqualTo(8388608L * 512);
        assertThat(disk.uses()).containsExactly(
                "sda1 mounted at /boot", "sda2 used as swap", "sda3 held by dm-0 (vg0-data)");
    }

    @Test
    void aVirtioDiskGivesItsSerialAndAWholeDiskMountIsSeen() throws IOException {
        Path vda = device("vda", "254:16", 1048576, 512, 512, 1);
        write(vda.resolve("serial"), "data-disk-1\n");

        Disk disk = only(scan(List.of(mount(254, 16, "/var/lib/data")), ""));

        assertThat(disk.serial()).isEqualTo("data-disk-1");
        assertThat(disk.wwn()).isEmpty();
        assertThat(disk.uses()).containsExactly("vda mounted at /var/lib/data");
    }

    @Test
    void aSerialTheDriverPrintsAsNullIsNoSerial() throws IOException {
        // A ubd disk of user-mode Linux without a serial given: its driver prints the NULL pointer.
        Path ubda = device("ubda", "98:0", 131072, 512, 512, 0);
        write(ubda.resolve("serial"), "(null)");
        Path ubdb = device("ubdb", "98:16", 131072, 512, 512, 0);
        write(ubdb.resolve("serial"), "HEARTH-SN-0001");

        List<Disk> disks = scan(List.of(), "");

        assertThat(disks).extracting(Disk::serial).containsExactly("", "HEARTH-SN-0001");
    }

    @Test
    void aLoopDeviceKnowsItsFileAndStackedMemoryAndEmptyDevicesAreNoDisks() throws IOException {
        Path loop = device("loop3", "7:3", 2048, 512, 512, 0);
        write(loop.resolve("loop/backing_file"), "/var/lib/images/disk 1.img\n");
        device("loop4", "7:4", 0, 512, 512, 0);
        device("dm-1", "254:1", 2048, 512, 512, 0);
        device("md127", "9:127", 2048, 512, 512, 0);
        device("zram0", "252:0", 2048, 4096, 4096, 0);
        device("bcache0", "250:0", 2048, 512, 512, 0);

        Disk disk = only(scan(List.of(), ""));

        assertThat(disk.name()).isEqualTo("loop3");
        assertThat(disk.backingFile()).contains(Path.of("/var/lib/images/disk 1.img"));
        assertThat(disk.isLoop()).isTrue();
    }

    @Test
    void aDiskAsAWholeInSwapOrHeldByMdIsInUse() throws IOException {
        device("sdb", "8:16", 2048, 512, 512, 0);
        Path sdc = device("sdc", "8:32", 2048, 512, 512, 0);
        Files.createDirectories(sdc.resolve("holders/md127"));

        List<Disk> disks = scan(List.of(), "Filename Type Size Used Priority\n/dev/sdb partition 1020 0 -2\n"
                + "/swapfile file 1024 0 -3\n");

        assertThat(DiskScan.named(disks, "sdb").orElseThrow().uses()).containsExactly("sdb used as swap");
        assertThat(DiskScan.named(disks, "sdc").orElseThrow().uses()).containsExactly("sdc held by md127");
    }

    @Test
    void aMissingDevDiskOrProcSwapsIsNoError() throws IOException {
        device("sdb", "8:16", 2048, 512, 512, 0);

        List<Disk> disks = new DiskScan(sys(), root.resolve("missing"), root.resolve("missing-swaps"))
                .disks(List.of());

        assertThat(disks).extracting(Disk::name).containsExactly("sdb");
        assertThat(disks.getFirst().links()).isEmpty();
    }

    @Test
    void aScanOfTheNamesAPoolWantsReadsNoOtherDevice() throws IOException {
        device("sdb", "8:16", 2048, 512, 512, 0);
        device("nvme0n1", "259:0", 4096, 512, 512, 0);
        link("by-id", "nvme-Fast_Disk_SN1", "nvme0n1");
        // A device whose attributes cannot be read as a disk's: the whole scan fails on it.
        write(device("loop9", "7:9", 2048, 512, 512, 0).resolve("dev"), "garbage\n");
        DiskScan scan = new DiskScan(sys(), root.resolve("dev/disk"), root.resolve("no-swaps"));
        assertThatThrownBy(scan::disks).hasMessageContaining("not MAJOR:MINOR");
        List<String> asked = new ArrayList<>();

        List<Disk> wanted = scan.disks((device, links) -> {
            asked.add(device);
            return device.equals("/dev/sdb") || links.contains(Path.of("/dev/disk/by-id/nvme-Fast_Disk_SN1"));
        });

        assertThat(wanted).extracting(Disk::name).containsExactly("nvme0n1", "sdb");
        assertThat(wanted.getFirst().links()).containsExactly(Path.of("/dev/disk/by-id/nvme-Fast_Disk_SN1"));
        assertThat(asked).containsExactlyInAnyOrder("/dev/sdb", "/dev/nvme0n1", "/dev/loop9");
    }

    @Test
    void aScanForADiskOfOneSizeReadsNoOtherDeviceBeyondItsSize() throws IOException {
        device("sdb", "8:16", 2048, 512, 512, 0);
        device("sdc", "8:32", 4096, 512, 512, 0);
        link("by-id", "scsi-Same_Size", "sdc");
        // Devices of other sizes whose attributes cannot be read as a disk's: the whole scan fails on them.
        write(device("loop9", "7:9", 8192, 512, 512, 0).resolve("dev"), "garbage\n");
        write(device("loop10", "7:10", 2048 + 1, 512, 512, 0).resolve("dev"), "garbage\n");
        DiskScan scan = new DiskScan(sys(), root.resolve("dev/disk"), root.resolve("no-swaps"));
        assertThatThrownBy(scan::disks).hasMessageContaining("not MAJOR:MINOR");

        assertThat(scan.disksOfSize(4096 * 512L)).singleElement().satisfies(disk -> {
            assertThat(disk.name()).isEqualTo("sdc");
            assertThat(disk.links()).containsExactly(Path.of("/dev/disk/by-id/scsi-Same_Size"));
        });
        assertThat(scan.disksOfSize(2048 * 512L)).extracting(Disk::name).containsExactly("sdb");
        assertThat(scan.disksOfSize(1024 * 512L)).isEmpty();
    }

    @Test
    void scansTheRealNode() throws IOException {
        // Whatever this machine has: the scan must read it without error, and every disk it names
        // exists in /sys/block with the size it reports.
        for (Disk disk : new DiskScan().disks()) {
            long sectors = Long.parseLong(Files.readString(Path.of("/sys/block", disk.name(), "size")).strip());
            assertThat(disk.sizeBytes()).isEqualTo(sectors * 512);
            assertThat(disk.logicalSectorSize()).isPositive();
        }
    }

    private List<Disk> scan(List<MountEntry> mounts, String swaps) throws IOException {
        Path procSwaps = root.resolve("swaps");
        write(procSwaps, swaps);
        return new DiskScan(sys(), root.resolve("dev/disk"), procSwaps).disks(mounts);
    }

    private static Disk only(List<Disk> disks) {
        assertThat(disks).hasSize(1);
        return disks.getFirst();
    }

    private Path device(String name, String dev, long sectors, int logical, int physical, int rotational)
            throws IOException {
        Path dir = Files.createDirectories(sys().resolve(name));
        write(dir.resolve("dev"), dev + "\n");
        write(dir.resolve("size"), sectors + "\n");
        write(dir.resolve("queue/logical_block_size"), logical + "\n");
        write(dir.resolve("queue/physical_block_size"), physical + "\n");
        write(dir.resolve("queue/rotational"), rotational + "\n");
        write(dir.resolve("removable"), "0\n");
        write(dir.resolve("ro"), "0\n");
        Files.createDirectories(dir.resolve("holders"));
        return dir;
    }

    private static Path partition(Path disk, String name, String dev, long start, long sectors) throws IOException {
        Path dir = Files.createDirectories(disk.resolve(name));
        write(dir.resolve("partition"), name.substring(name.length() - 1) + "\n");
        write(dir.resolve("dev"), dev + "\n");
        write(dir.resolve("start"), start + "\n");
        write(dir.resolve("size"), sectors + "\n");
        Files.createDirectories(dir.resolve("holders"));
        return dir;
    }

    private void link(String directory, String name, String device) throws IOException {
        Path dir = Files.createDirectories(root.resolve("dev/disk").resolve(directory));
        Files.createSymbolicLink(dir.resolve(name), Path.of("../../" + device));
    }

    private static MountEntry mount(int major, int minor, String mountPoint) {
        return new MountEntry(1, 0, major, minor, "/", Path.of(mountPoint), "rw", List.of(), "ext4",
                "/dev/x", "rw");
    }

    private static void write(Path file, String text) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, text);
    }
}
