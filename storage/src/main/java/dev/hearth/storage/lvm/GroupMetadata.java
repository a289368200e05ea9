package dev.hearth.storage.lvm;

import dev.hearth.storage.lvm.MetadataText.Section;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A volume group as its committed metadata describes it: what {@code vgs} and {@code lvs} print
 * about it, minus what only the kernel knows (whether an LV is active or open, how full a thin
 * pool is), which {@link DirectReport} adds from device-mapper.
 *
 * @param extentBytes the group's extent size
 * @param pvs its physical volumes, by the key the metadata gives them ({@code pv0}, ...)
 * @param lvs every logical volume, hidden ones included, in the metadata's order
 */
record GroupMetadata(String name, String id, long seqno, long extentBytes, List<Pv> pvs, Map<String, Lv> lvs) {

    /** @param uuid without dashes, as a PV's label holds it */
    record Pv(String key, String uuid, long peCount, boolean missing) {}

    record Lv(String name, Set<String> status, Set<String> flags, List<String> tags, List<Segment> segments) {

        long extents() {
            return segments.stream().mapToLong(Segment::extentCount).sum();
        }

        /** The segment type when there is one segment (all that hearth makes), else empty. */
        Optional<Segment> only() {
            return segments.size() == 1 ? Optional.of(segments.getFirst()) : Optional.empty();
        }

        boolean is(String type) {
            return only().map(s -> s.type().equals(type)).orElse(false);
        }
    }

    /** One segment: its type ("striped", "thin", "thin-pool", "snapshot", ...) and its other settings. */
    record Segment(String type, long extentCount, Section settings) {

        Optional<String> string(String key) {
            return settings.string(key);
        }
    }

    /** Reads the one volume group section of a metadata text; refuses text that is not one. */
    static GroupMetadata of(Section top) {
        List<Section> groups = top.sections();
        if (groups.size() != 1) {
            throw new IllegalArgumentException("LVM metadata text holds " + groups.size() + " sections, not one group");
        }
        Section vg = groups.getFirst();
        if (!"lvm2".equals(vg.string("format").orElse("lvm2"))) {
            throw new IllegalArgumentException("volume group " + vg.name() + " is not in lvm2 format");
        }
        long extentSectors = vg.requireNumber("extent_size");
        if (extentSectors <= 0) {
            throw new IllegalArgumentException("volume group " + vg.name() + " has extent size " + extentSectors);
        }
        List<Pv> pvs = new ArrayList<>();
        for (Section pv : vg.section("physical_volumes").map(Section::sections).orElse(List.of())) {
            pvs.add(new Pv(pv.name(), pv.string("id").orElse("").replace("-", ""), pv.requireNumber("pe_count"),
                    pv.strings("flags").contains("MISSING")));
        }
        Map<String, Lv> lvs = new LinkedHashMap<>();
        for (Section lv : vg.section("logical_volumes").map(Section::sections).orElse(List.of())) {
            List<Segment> segments = new ArrayList<>();
            long count = lv.requireNumber("segment_count");
            for (long i = 1; i <= count; i++) {
                String key = "segment" + i;
                Section segment = lv.section(key).orElseThrow(() -> new IllegalArgumentException(
                        "logical volume " + lv.name() + " has no " + key));
                segments.add(new Segment(segment.string("type").orElseThrow(() -> new IllegalArgumentException(
                        "segment " + key + " of " + lv.name() + " has no type")), segment.requireNumber("extent_count"),
                        segment));
            }
            lvs.put(lv.name(), new Lv(lv.name(), Set.copyOf(lv.strings("status")), Set.copyOf(lv.strings("flags")),
                    lv.strings("tags"), List.copyOf(segments)));
        }
        return new GroupMetadata(vg.name(), vg.string("id").orElse(""), vg.requireNumber("seqno"),
                extentSectors * PhysicalVolumeLabel.SECTOR, List.copyOf(pvs), lvs);
    }

    long sizeBytes() {
        return pvs.stream().mapToLong(Pv::peCount).sum() * extentBytes;
    }

    /**
     * Extents no LV holds. Only "striped" segments (LVM's linear and striped data) own extents:
     * a thin pool's, a mirror's, a RAID's or a cache's own extents live in hidden striped sub-LVs,
     * and thin volumes and snapshots' exception tables own none.
     */
    long freeBytes() {
        long used = lvs.values().stream().flatMap(lv -> lv.segments().stream())
                .filter(s -> s.type().equals("striped")).mapToLong(Segment::extentCount).sum();
        return Math.max(0, sizeBytes() - used * extentBytes);
    }

    /** Whether a PV is recorded as missing. */
    boolean partial() {
        return pvs.stream().anyMatch(Pv::missing);
    }

    /**
     * The LVs {@code lvs} shows without {@code -a}: the visible ones, where an old-style snapshot
     * appears as its copy-on-write store's LV (the hidden {@code snapshotN} LV joining the two is
     * not shown, and the store itself is not marked visible).
     */
    List<Lv> shown() {
        Map<String, String> cowStores = cowStores();
        return lvs.values().stream().filter(lv -> cowStores.containsKey(lv.name())
                || (lv.status().contains("VISIBLE") && !lv.is("snapshot"))).toList();
    }

    /** Each old-style snapshot's copy-on-write store, to the origin it is a snapshot of. */
    Map<String, String> cowStores() {
        Map<String, String> stores = new java.util.HashMap<>();
        for (Lv lv : lvs.values()) {
            if (lv.is("snapshot")) {
                Segment s = lv.only().orElseThrow();
                s.string("cow_store").ifPresent(cow -> stores.put(cow, s.string("origin").orElse("")));
            }
        }
        return stores;
    }
}
