package dev.hearth.storage.lvm;

import java.util.Map;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.TreeSet;

/**
 * One row of {@code lvs}: what LVM says about a logical volume at the moment it was asked.
 *
 * @param attr LVM's ten attribute characters ({@code Vwi-aotz--}: type, permissions, allocation,
 *     fixed minor, state, open, target, zeroing, health, skip activation)
 * @param pool the thin pool a thin volume lives in, else empty
 * @param origin the volume a snapshot was taken of, else empty
 */
record LogicalVolume(String name, long sizeBytes, Set<String> tags, String attr, String pool, String origin,
        OptionalDouble dataPercent, OptionalDouble metadataPercent, long metadataBytes, String health) {

    /** The {@code -o} fields {@link #of} reads. */
    static final String FIELDS = "lv_name,lv_size,lv_tags,lv_attr,pool_lv,origin,data_percent,metadata_percent,"
            + "lv_metadata_size,lv_health_status";

    static LogicalVolume of(Map<String, String> row) {
        String tags = row.getOrDefault("lv_tags", "");
        Set<String> tagSet = new TreeSet<>();
        for (String tag : tags.split(",")) {
            if (!tag.isEmpty()) {
                tagSet.add(tag);
            }
        }
        return new LogicalVolume(row.getOrDefault("lv_name", ""), bytes(row.get("lv_size")), Set.copyOf(tagSet),
                row.getOrDefault("lv_attr", ""), row.getOrDefault("pool_lv", ""), row.getOrDefault("origin", ""),
                percent(row.get("data_percent")), percent(row.get("metadata_percent")),
                bytes(row.get("lv_metadata_size")), row.getOrDefault("lv_health_status", ""));
    }

    boolean isThinPool() {
        return attr.startsWith("t");
    }

    boolean isThin() {
        return attr.startsWith("V");
    }

    /** Active: its device-mapper device exists on this node. */
    boolean active() {
        return attr.length() > 4 && attr.charAt(4) == 'a';
    }

    /** Open: mounted, or held open by a process (a block user, a mount, a copy). */
    boolean open() {
        return attr.length() > 5 && attr.charAt(5) == 'o';
    }

    /** A thin pool that zeroes blocks before handing them to a volume (the 'z' in its attributes). */
    boolean zeroesNewBlocks() {
        return attr.length() > 7 && attr.charAt(7) == 'z';
    }

    static long bytes(String text) {
        if (text == null || text.isEmpty()) {
            return 0;
        }
        return Long.parseLong(text.endsWith("B") ? text.substring(0, text.length() - 1) : text);
    }

    private static OptionalDouble percent(String text) {
        if (text == null || text.isEmpty()) {
            return OptionalDouble.empty();
        }
        return OptionalDouble.of(Double.parseDouble(text));
    }
}
