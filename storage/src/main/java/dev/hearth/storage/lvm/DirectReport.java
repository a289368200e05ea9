package dev.hearth.storage.lvm;

import dev.hearth.storage.lvm.GroupMetadata.Lv;
import dev.hearth.storage.lvm.GroupMetadata.Segment;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.Set;

/**
 * What {@code lvs} and {@code vgs} would print for a group, made without an lvm process: the
 * group's committed metadata (read from its PVs) for names, tags, sizes and layout, and
 * device-mapper for what only the kernel knows (active, open, a thin pool's fill and health).
 * The rows are the same {@link LogicalVolume} values the report parser makes, so the pool reads
 * one shape whichever way they came; an old-style snapshot's fill (its exception store's use),
 * which the pool never reads, is left empty.
 */
final class DirectReport {

    /** What device-mapper says about one device, by its name under /dev/mapper. */
    interface DeviceMapperView {

        /** The device's open count; empty if there is no such device (the LV is not active). */
        OptionalInt openCount(String device) throws IOException;

        /** The device's {@code major:minor} if it exists with a live table; empty otherwise. */
        Optional<String> liveDeviceNumber(String device) throws IOException;

        /** Whether the device is suspended (its I/O waits); false if there is no such device. */
        boolean suspended(String device) throws IOException;

        /** The thin-pool target's status of the device; empty if it has none. */
        Optional<PoolStatus> thinPool(String device) throws IOException;

        /** The thin target's status of the device; empty if it has none. */
        Optional<ThinStatus> thin(String device) throws IOException;
    }

    /**
     * A thin pool's state as its target reports it ({@code Fail}: failed; mode {@code ro} or
     * {@code out_of_data_space}; {@code needs_check}), and the transaction id of the last change
     * LVM sent it, which LVM's metadata also records for the pool.
     */
    record PoolStatus(long transactionId, long usedMetadata, long totalMetadata, long usedData, long totalData,
            boolean failed, String mode, boolean needsCheck) {}

    /** A thin volume's state: sectors mapped, or failed. */
    record ThinStatus(long mappedSectors, boolean failed) {}

    private DirectReport() {}

    static Lvm.VolumeGroup volumeGroup(GroupMetadata group) {
        // vgs's attributes: writeable, resizeable, then 'p' at [3] if a PV is missing, normal allocation.
        return new Lvm.VolumeGroup(group.name(), group.sizeBytes(), group.freeBytes(), group.extentBytes(),
                "wz-" + (group.partial() ? "p" : "-") + "n-");
    }

    static List<LogicalVolume> logicalVolumes(GroupMetadata group, DeviceMapperView dm) throws IOException {
        Map<String, String> cowStores = group.cowStores();
        List<LogicalVolume> rows = new ArrayList<>();
        for (Lv lv : group.shown()) {
            rows.add(row(group, cowStores, lv, dm));
        }
        return rows;
    }

    /** The row of the one LV {@code lvs} would show by that name; device-mapper is asked about it alone. */
    static Optional<LogicalVolume> logicalVolume(GroupMetadata group, String name, DeviceMapperView dm)
            throws IOException {
        Optional<Lv> lv = group.shown().stream().filter(l -> l.name().equals(name)).findFirst();
        return lv.isEmpty() ? Optional.empty() : Optional.of(row(group, group.cowStores(), lv.get(), dm));
    }

    private static LogicalVolume row(GroupMetadata group, Map<String, String> cowStores, Lv lv, DeviceMapperView dm)
            throws IOException {
        String device = Names.mapperName(group.name(), lv.name());
        OptionalInt open = dm.openCount(device);
        Optional<Segment> segment = lv.only();
        String type = segment.map(Segment::type).orElse("");
        char kind = switch (type) {
            case "thin-pool" -> 't';
            case "thin" -> 'V';
            default -> cowStores.containsKey(lv.name()) ? 's' : cowStores.containsValue(lv.name()) ? 'o' : '-';
        };
        char target = kind == 't' || kind == 'V' ? 't' : kind == 's' || kind == 'o' ? 's' : '-';
        long size = lv.extents() * group.extentBytes();
        String pool = "";
        String origin = "";
        OptionalDouble data = OptionalDouble.empty();
        OptionalDouble metadata = OptionalDouble.empty();
        long metadataBytes = 0;
        String health = "";
        boolean zeroes = false;
        if (kind == 't') {
            Segment s = segment.orElseThrow();
            zeroes = s.settings().number("zero_new_blocks").orElse(0L) == 1;
            metadataBytes = s.string("metadata").map(group.lvs()::get).map(m -> m.extents() * group.extentBytes())
                    .orElse(0L);
            Optional<PoolStatus> status = dm.thinPool(device + "-tpool");
            if (status.isEmpty()) {
                status = dm.thinPool(device);
            }
            if (status.isPresent()) {
                PoolStatus p = status.get();
                if (p.failed()) {
                    health = "failed";
                } else {
                    data = OptionalDouble.of(percent(p.usedData(), p.totalData()));
                    metadata = OptionalDouble.of(percent(p.usedMetadata(), p.totalMetadata()));
                    health = switch (p.mode()) {
                        case "out_of_data_space" -> "out_of_data";
                        case "ro" -> "metadata_read_only";
                        default -> p.needsCheck() ? "needs_check" : "";
                    };
                }
            }
        } else if (kind == 'V') {
            Segment s = segment.orElseThrow();
            pool = s.string("thin_pool").orElse("");
            origin = s.string("origin").orElse("");
            Lv poolLv = group.lvs().get(pool);
            zeroes = poolLv != null && poolLv.only().flatMap(p -> p.settings().number("zero_new_blocks"))
                    .orElse(0L) == 1;
            if (open.isPresent()) {
                Optional<ThinStatus> status = dm.thin(device);
                if (status.isPresent() && status.get().failed()) {
                    health = "failed";
                } else if (status.isPresent()) {
                    data = OptionalDouble.of(percent(status.get().mappedSectors() * PhysicalVolumeLabel.SECTOR, size));
                }
            }
        } else if (kind == 's') {
            origin = cowStores.get(lv.name());
        }
        String attr = new String(new char[] {kind, lv.status().contains("WRITE") ? 'w' : 'r', 'i', '-',
                open.isPresent() ? 'a' : '-', open.orElse(0) > 0 ? 'o' : '-', target, zeroes ? 'z' : '-', '-',
                lv.flags().contains("ACTIVATION_SKIP") ? 'k' : '-'});
        return new LogicalVolume(lv.name(), size, Set.copyOf(lv.tags()), attr, pool, origin, data,
                metadata, metadataBytes, health);
    }

    private static double percent(long used, long total) {
        return total <= 0 ? 0 : used * 100.0 / total;
    }
}
