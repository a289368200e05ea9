package dev.hearth.linux;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiPredicate;
import java.util.function.LongPredicate;

/**
 * The node's disks, read from {@code /sys/block}, {@code /dev/disk/by-id} and {@code by-path},
 * {@code /proc/self/mountinfo} and {@code /proc/swaps}: no lsblk, no blkid, no udev database, so it
 * works the same in a container that mounts the host's /sys and /dev. Reading is cheap (a few small
 * sysfs files per disk) and takes no lock; the answer is a snapshot.
 *
 * <p>Not disks: devices stacked on others (device-mapper, md, bcache: they appear as holders of
 * the disks under them), RAM disks and zram (memory), and devices of size 0 (an unattached loop
 * device, an empty card reader).
 */
public final class DiskScan {

    private static final String[] STACKED = {"dm-", "md", "bcache", "ram", "zram"};
    private static final String[] LINK_DIRECTORIES = {"by-id", "by-path"};
    private static final long SECTOR = 512;
    /** What the kernel's printf makes of a NULL string. */
    private static final String NULL_STRING = "(null)";

    private final Path sysBlock;
    private final Path devDisk;
    private final Path procSwaps;

    /** Reads the node itself. */
    public DiskScan() {
        this(Path.of("/sys/block"), Path.of("/dev/disk"), Path.of("/proc/swaps"));
    }

    /** Reads a copy of those trees (tests). */
    public DiskScan(Path sysBlock, Path devDisk, Path procSwaps) {
        this.sysBlock = sysBlock;
        this.devDisk = devDisk;
        this.procSwaps = procSwaps;
    }

    /** Every disk of the node, by name, with what uses it now. */
    public List<Disk> disks() throws IOException {
        return disks(MountInfo.read());
    }

    /** Every disk, with mounts taken from {@code mountTable} (one read of mountinfo serves a whole request). */
    public List<Disk> disks(List<MountEntry> mountTable) throws IOException {
        return disks(mountTable, (path, links) -> true);
    }

    /**
     * The disks {@code wanted} takes by their names alone: {@code /dev/NAME} and the udev links to it.
     * The node's other block devices are not read beyond their names, so a pool whose selector names
     * a few disks pays for those few, not for every loop device of the node (some 15 sysfs reads a
     * device, a size read even for an unattached loop device).
     */
    public List<Disk> disks(BiPredicate<String, List<Path>> wanted) throws IOException {
        return disks(MountInfo.read(), wanted, size -> true);
    }

    /**
     * Every disk of the node of exactly {@code sizeBytes}: where a disk known by its identity (whose
     * size is part of it) is looked for on the whole node, the other devices are read no further
     * than their size (one sysfs read each, where a disk takes some 15).
     */
    public List<Disk> disksOfSize(long sizeBytes) throws IOException {
        return disks(MountInfo.read(), (path, links) -> true, size -> size == sizeBytes);
    }

    private List<Disk> disks(List<MountEntry> mountTable, BiPredicate<String, List<Path>> wanted) throws IOException {
        return disks(mountTable, wanted, size -> true);
    }

    private List<Disk> disks(List<MountEntry> mountTable, BiPredicate<String, List<Path>> wanted,
            LongPredicate wantedSize) throws IOException {
        Map<String, List<Path>> mounts = new HashMap<>();
        for (MountEntry m : mountTable) {
            mounts.computeIfAbsent(m.major() + ":" + m.minor(), k -> new ArrayList<>()).add(m.mountPoint());
        }
        Set<String> swaps = swapDevices();
        Map<String, List<Path>> links = links();
        List<Disk> disks = new ArrayList<>();
        for (String name : names(wanted, links)) {
            Path dir = sysBlock.resolve(name);
            long size = number(dir.resolve("size")) * SECTOR;
            if (size <= 0 || !wantedSize.test(size)) {
                continue;
            }
            disks.add(disk(name, dir, size, mounts, swaps, links));
        }
        return disks;
    }

    /** The names in /sys/block that are not stacked devices and that {@code wanted} takes by their names, sorted. */
    private List<String> names(BiPredicate<String, List<Path>> wanted, Map<String, List<Path>> links) {
        String[] all = sysBlock.toFile().list(); // names only: no Path made for a device not wanted
        if (all == null) {
            return List.of();
        }
        List<String> names = new ArrayList<>();
        for (String name : all) {
            if (!stacked(name) && wanted.test("/dev/" + name, links.getOrDefault(name, List.of()))) {
                names.add(name);
            }
        }
        names.sort(null);
        return names;
    }

    /** The disk named {@code name} ({@code sda}), if the node has it. */
    public Optional<Disk> disk(String name) throws IOException {
        return disks().stream().filter(d -> d.name().equals(name)).findFirst();
    }

    private Disk disk(String name, Path dir, long size, Map<String, List<Path>> mounts, Set<String> swaps,
            Map<String, List<Path>> links) throws IOException {
        int[] dev = majorMinor(dir);
        List<Disk.Partition> partitions = new ArrayList<>();
        for (Path child : sorted(dir)) {
            // A partition's directory is named after its disk (sda1, nvme0n1p1, loop0p1): the disk's
            // other entries (queue, holders, size...) need no look for a "partition" file.
            if (child.getFileName().toString().startsWith(name) && Files.isRegularFile(child.resolve("partition"))) {
                String part = child.getFileName().toString();
                int[] partDev = majorMinor(child);
                partitions.add(new Disk.Partition(part, Path.of("/dev", part), partDev[0], partDev[1],
                        number(child.resolve("start")) * SECTOR, number(child.resolve("size")) * SECTOR,
                        holders(child), mounts.getOrDefault(partDev[0] + ":" + partDev[1], List.of()),
                        swaps.contains(part)));
            }
        }
        Path device = dir.resolve("device");
        String backing = text(dir.resolve("loop/backing_file"));
        return new Disk(name, Path.of("/dev", name), dev[0], dev[1], size,
                (int) number(dir.resolve("queue/logical_block_size")),
                (int) number(dir.resolve("queue/physical_block_size")),
                number(dir.resolve("queue/rotational")) == 1,
                number(dir.resolve("removable")) == 1,
                number(dir.resolve("ro")) == 1,
                text(device.resolve("vendor")),
                text(device.resolve("model")),
                serial(dir),
                wwn(dir),
                links.getOrDefault(name, List.of()),
                backing.isEmpty() ? Optional.empty() : Optional.of(Path.of(backing)),
                partitions, holders(dir), mounts.getOrDefault(dev[0] + ":" + dev[1], List.of()),
                swaps.contains(name));
    }

    private static boolean stacked(String name) {
        for (String prefix : STACKED) {
            if (name.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The serial number: NVMe and virtio give it as text ({@code device/serial}, {@code serial}); SCSI
     * and SATA (through libata's SCSI layer) in VPD page 0x80, whose 4-byte header precedes the text.
     * A driver that prints a serial it does not have as a C string shows {@code (null)} (user-mode
     * Linux's ubd disks): that is no serial, or every such disk of one size would share an identity.
     */
    private static String serial(Path dir) throws IOException {
        String serial = text(dir.resolve("device/serial"));
        if (serial.isEmpty()) {
            serial = text(dir.resolve("serial"));
        }
        if (serial.equals(NULL_STRING)) {
            serial = "";
        }
        if (serial.isEmpty()) {
            byte[] page = bytes(dir.resolve("device/vpd_pg80"));
            if (page.length > 4) {
                int length = Math.min(page.length - 4, ((page[2] & 0xff) << 8) | (page[3] & 0xff));
                serial = clean(new String(page, 4, length, StandardCharsets.US_ASCII));
            }
        }
        return serial;
    }

    /** The world-wide name: NVMe namespaces have {@code wwid}, SCSI disks {@code device/wwid}. */
    private static String wwn(Path dir) throws IOException {
        String wwn = text(dir.resolve("wwid"));
        return wwn.isEmpty() ? text(dir.resolve("device/wwid")) : wwn;
    }

    /** The devices stacked on {@code dir}'s device, device-mapper ones with their names: {@code dm-0 (vg0-data)}. */
    private List<String> holders(Path dir) throws IOException {
        List<String> holders = new ArrayList<>();
        for (Path holder : sorted(dir.resolve("holders"))) {
            String name = holder.getFileName().toString();
            String dmName = text(sysBlock.resolve(name).resolve("dm/name"));
            holders.add(dmName.isEmpty() ? name : name + " (" + dmName + ")");
        }
        return holders;
    }

    /** Device names in use as swap; /proc/swaps names them by path (spaces as \040), files too. */
    private Set<String> swapDevices() throws IOException {
        Set<String> names = new HashSet<>();
        List<String> lines;
        try {
            lines = Files.readAllLines(procSwaps);
        } catch (NoSuchFileException e) {
            return names;
        }
        for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
            String[] fields = line.trim().split("\\s+");
            if (fields.length >= 2 && fields[1].equals("partition") && fields[0].startsWith("/dev/")) {
                names.add(Path.of(fields[0]).getFileName().toString());
            }
        }
        return names;
    }

    /** udev's stable links, by the device name they point to. */
    private Map<String, List<Path>> links() throws IOException {
        Map<String, List<Path>> byDevice = new TreeMap<>();
        for (String directory : LINK_DIRECTORIES) {
            for (Path link : sorted(devDisk.resolve(directory))) {
                if (!Files.isSymbolicLink(link)) {
                    continue;
                }
                Path target = Files.readSymbolicLink(link).getFileName();
                if (target != null) {
                    byDevice.computeIfAbsent(target.toString(), k -> new ArrayList<>())
                            .add(Path.of("/dev/disk", directory, link.getFileName().toString()));
                }
            }
        }
        return byDevice;
    }

    private static int[] majorMinor(Path dir) throws IOException {
        String dev = text(dir.resolve("dev"));
        int colon = dev.indexOf(':');
        if (colon <= 0) {
            throw new IOException(dir.resolve("dev") + ": not MAJOR:MINOR: '" + dev + "'");
        }
        try {
            return new int[] {Integer.parseInt(dev.substring(0, colon)), Integer.parseInt(dev.substring(colon + 1))};
        } catch (NumberFormatException e) {
            throw new IOException(dir.resolve("dev") + ": not MAJOR:MINOR: '" + dev + "'", e);
        }
    }

    private static List<Path> sorted(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<Path> entries = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir)) {
            stream.forEach(entries::add);
        } catch (NoSuchFileException e) {
            return List.of(); // the device went away while we looked
        }
        entries.sort(Comparator.comparing(Path::toString));
        return entries;
    }

    private static long number(Path file) throws IOException {
        String text = text(file);
        if (text.isEmpty()) {
            return 0;
        }
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IOException(file + ": not a number: '" + text + "'", e);
        }
    }

    /** A sysfs attribute's text, trimmed; empty for a missing attribute or one the device cannot give. */
    private static String text(Path file) throws IOException {
        byte[] bytes = bytes(file);
        return clean(new String(bytes, StandardCharsets.UTF_8));
    }

    /** Through {@link Sysfs}: a loop device lacks half of a disk's attributes, and the JDK throws for each. */
    private static byte[] bytes(Path file) {
        try {
            byte[] bytes = Sysfs.readIfPresent(file);
            return bytes == null ? new byte[0] : bytes;
        } catch (LinuxException e) {
            // Some attributes fail to read on some devices (EIO on a VPD page the disk lacks): no value.
            return new byte[0];
        }
    }

    private static String clean(String text) {
        StringBuilder out = new StringBuilder();
        text.chars().filter(c -> c >= 0x20 && c < 0x7f).forEach(c -> out.append((char) c));
        return out.toString().strip();
    }

    /** For tests and callers that hold a disk list: the one named {@code name}. */
    public static Optional<Disk> named(List<Disk> disks, String name) {
        return disks.stream().filter(d -> d.name().equals(name)).findFirst();
    }
}
