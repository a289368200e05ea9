package dev.hearth.linux;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A whole block device as sysfs describes it ({@code /sys/block/NAME}), with what uses it or its
 * partitions right now: mounts, swap, holders (device-mapper, md, bcache stacked on it).
 *
 * @param name the kernel's name ({@code nvme0n1}, {@code sda}, {@code loop3})
 * @param path {@code /dev/NAME}
 * @param links the stable names udev made for it ({@code /dev/disk/by-id/...}, {@code by-path}),
 *     sorted; empty where there is no udev (or no /dev/disk)
 * @param wwn the world-wide name the device reports ({@code wwid}: {@code naa.}, {@code eui.},
 *     {@code t10.}), empty if none
 * @param serial the serial number the device reports, empty if none
 * @param backingFile for a loop device, the file behind it
 * @param holders devices stacked on the whole disk ({@code dm-0}, {@code md127}, {@code bcache0})
 * @param mountPoints where the whole disk is mounted (a filesystem without a partition table)
 * @param swap whether the whole disk is in use as swap
 */
public record Disk(String name, Path path, int major, int minor, long sizeBytes, int logicalSectorSize,
        int physicalSectorSize, boolean rotational, boolean removable, boolean readOnly, String vendor,
        String model, String serial, String wwn, List<Path> links, Optional<Path> backingFile,
        List<Partition> partitions, List<String> holders, List<Path> mountPoints, boolean swap) {

    public Disk {
        Objects.requireNonNull(name, "name");
        vendor = Objects.requireNonNullElse(vendor, "");
        model = Objects.requireNonNullElse(model, "");
        serial = Objects.requireNonNullElse(serial, "");
        wwn = Objects.requireNonNullElse(wwn, "");
        links = List.copyOf(links);
        partitions = List.copyOf(partitions);
        holders = List.copyOf(holders);
        mountPoints = List.copyOf(mountPoints);
    }

    /** One partition of a disk, and what uses it. */
    public record Partition(String name, Path path, int major, int minor, long startBytes, long sizeBytes,
            List<String> holders, List<Path> mountPoints, boolean swap) {

        public Partition {
            holders = List.copyOf(holders);
            mountPoints = List.copyOf(mountPoints);
        }
    }

    public boolean isLoop() {
        return backingFile.isPresent() || name.startsWith("loop");
    }

    /** Every path that names this disk: /dev/NAME and its udev links. */
    public List<Path> paths() {
        List<Path> all = new ArrayList<>(links.size() + 1);
        all.add(path);
        all.addAll(links);
        return all;
    }

    /**
     * Why the disk is in use right now (mounted, swap, held), one phrase per use, disk first and then
     * each partition; empty when nothing uses it.
     */
    public List<String> uses() {
        List<String> uses = new ArrayList<>();
        describe(name, mountPoints, swap, holders, uses);
        for (Partition p : partitions) {
            describe(p.name(), p.mountPoints(), p.swap(), p.holders(), uses);
        }
        return uses;
    }

    private static void describe(String device, List<Path> mountPoints, boolean swap, List<String> holders,
            List<String> uses) {
        for (Path mountPoint : mountPoints) {
            uses.add(device + " mounted at " + mountPoint);
        }
        if (swap) {
            uses.add(device + " used as swap");
        }
        for (String holder : holders) {
            uses.add(device + " held by " + holder);
        }
    }
}
