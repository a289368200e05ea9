package dev.hearth.driver.inspect;

import dev.hearth.driver.inspect.DiskInspection.Row;
import dev.hearth.linux.Disk;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.device.DiskClaims;
import dev.hearth.storage.device.DiskVerdict;
import dev.hearth.storage.lvm.ClaimedPv;
import java.nio.file.Path;
import java.util.Locale;

/** {@code hearth disks} for people: one line per disk, then the pools, claims and what was left out. */
public final class DisksTable {

    static final int WWN_WIDTH = 20;
    static final int MODEL_WIDTH = 24;
    static final int SERIAL_WIDTH = 20;

    private DisksTable() {}

    public static String render(DiskInspection inspection) {
        Table table = new Table("DEVICE", "SIZE", "SECTORS", "ROT", "MODEL", "SERIAL", "WWN", "PARTS", "VERDICT");
        for (Row row : inspection.disks()) {
            Disk disk = row.disk();
            table.row(disk.path().toString(), Quantity.format(disk.sizeBytes()),
                    disk.logicalSectorSize() + "/" + disk.physicalSectorSize(), disk.rotational() ? "yes" : "no",
                    shorten(disk.model(), MODEL_WIDTH), shorten(disk.serial(), SERIAL_WIDTH),
                    shorten(disk.wwn(), WWN_WIDTH),
                    disk.partitions().isEmpty() ? "" : Integer.toString(disk.partitions().size()),
                    verdict(row, inspection));
        }
        StringBuilder out = new StringBuilder(table.render()).append('\n');
        if (inspection.pools().isEmpty()) {
            out.append("No pool takes whole disks (a device pool, or an lvm pool with disks=): every disk is "
                    + "not selected.").append(inspection.probed() ? "" : " --probe reads them anyway.").append('\n');
        } else {
            out.append("Pools taking whole disks, first match wins: ").append(String.join("; ",
                    inspection.pools().stream().map(p -> p.name() + " (" + p.kind() + ", " + p.rule().selector()
                            .describe() + ",check=" + p.rule().check().name().toLowerCase(Locale.ROOT) + ")")
                            .toList())).append('\n');
        }
        out.append("Claims: ").append(inspection.claimsDirectory()).append('\n');
        for (DiskClaims.Claim claim : inspection.missingClaims()) {
            out.append("Claimed but not on this node: ").append(claim.disk()).append(", ").append(claim.describe())
                    .append(" since ").append(claim.since()).append('\n');
        }
        if (!inspection.hiddenLoops().isEmpty()) {
            out.append("Not shown: ").append(String.join(", ", inspection.hiddenLoops().stream().map(Path::toString)
                    .toList())).append(" (loop devices of hearth's file pool images: volumes, not disks)\n");
        }
        return out.toString();
    }

    /** The verdict in words: eligible for which pool, or exactly why not. */
    static String verdict(Row row, DiskInspection inspection) {
        DiskVerdict verdict = row.verdict();
        String by = row.pool().map(p -> " (selected by pool " + p + ")").orElse("");
        return switch (verdict) {
            case DiskVerdict.Eligible _ -> "eligible for pool " + row.pool().orElse("?");
            case DiskVerdict.Claimed claimed -> row.pv().map(pv -> pv(claimed.claim(), pv, inspection))
                    .orElse(verdict.reason());
            case DiskVerdict.NotSelected _ -> (inspection.pools().isEmpty() ? "not selected" : verdict.reason())
                    + row.ifSelected().map(v -> "; if selected: " + (v.eligible() ? "eligible (empty and unused)"
                            : v.reason())).orElse("");
            default -> verdict.reason() + by;
        };
    }

    private static String pv(DiskClaims.Claim claim, ClaimedPv pv, DiskInspection inspection) {
        String group = ClaimedPv.groupOf(claim).orElseThrow();
        String pool = " (pool " + claim.pool() + ")";
        return switch (pv.state()) {
            case MEMBER -> "claimed: a physical volume of " + group + pool;
            case PREPARED -> "claimed for " + group + pool + ": a physical volume not yet in it; the pool's next "
                    + "pass adds it";
            case UNWRITTEN -> "claimed for " + group + pool + ": not yet a physical volume; the pool's next pass "
                    + "makes it one";
            case TORN -> "claimed for " + group + pool + ": its LVM label is being written";
            case REMOVED, FOREIGN -> "claimed for " + group + pool + " but " + pv.detail() + ": left alone (remove "
                    + inspection.claimsDirectory().resolve(claim.disk().key() + ".claim") + " to release it)";
        };
    }

    /**
     * One word-spaced cell of at most {@code width} characters: the start and the end, which tell
     * WWNs and serials apart, around "..".
     */
    static String shorten(String raw, int width) {
        String text = raw.strip().replaceAll("\\s+", " ");
        if (text.length() <= width) {
            return text;
        }
        int head = (width - 2) / 2;
        return text.substring(0, head) + ".." + text.substring(text.length() - (width - 2 - head));
    }
}
