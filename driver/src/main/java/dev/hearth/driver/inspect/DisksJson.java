package dev.hearth.driver.inspect;

import dev.hearth.driver.inspect.DiskInspection.Row;
import dev.hearth.linux.Disk;
import dev.hearth.storage.device.DiskClaims;
import dev.hearth.storage.device.DiskIdentity;
import dev.hearth.storage.device.DiskVerdict;
import dev.hearth.storage.lvm.ClaimedPv;
import dev.hearth.storage.probe.Signature;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code hearth disks --output json} for scripts. The field names are stable and listed in the
 * README; a field is added, never renamed. Sizes and offsets are in bytes, absent values are null.
 */
public final class DisksJson {

    /** Where the probe's "non-zero data at offset N" names the first byte it found. */
    private static final Pattern OFFSET = Pattern.compile("offset (\\d+)");

    private DisksJson() {}

    public static String render(DiskInspection inspection) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("claimsDirectory", inspection.claimsDirectory().toString());
        top.put("pools", inspection.pools().stream().map(DisksJson::pool).toList());
        top.put("probed", inspection.probed());
        top.put("disks", inspection.disks().stream().map(row -> disk(row, inspection)).toList());
        top.put("hiddenLoopDevices", inspection.hiddenLoops().stream().map(Path::toString).toList());
        top.put("missingClaims", inspection.missingClaims().stream().map(DisksJson::claim).toList());
        return Json.write(top);
    }

    private static Map<String, Object> pool(DiskInspection.Pool pool) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", pool.name());
        out.put("kind", pool.kind());
        out.put("selector", pool.rule().selector().describe());
        out.put("check", pool.rule().check().name().toLowerCase(Locale.ROOT));
        return out;
    }

    private static Map<String, Object> disk(Row row, DiskInspection inspection) {
        Disk disk = row.disk();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", disk.name());
        out.put("path", disk.path().toString());
        out.put("links", disk.links().stream().map(Path::toString).toList());
        out.put("major", disk.major());
        out.put("minor", disk.minor());
        out.put("sizeBytes", disk.sizeBytes());
        out.put("logicalSectorBytes", disk.logicalSectorSize());
        out.put("physicalSectorBytes", disk.physicalSectorSize());
        out.put("rotational", disk.rotational());
        out.put("removable", disk.removable());
        out.put("readOnly", disk.readOnly());
        out.put("vendor", disk.vendor());
        out.put("model", disk.model());
        out.put("serial", disk.serial());
        out.put("wwn", disk.wwn());
        out.put("backingFile", disk.backingFile().map(Path::toString).orElse(null));
        out.put("identity", row.identity().map(DisksJson::identity).orElse(null));
        out.put("partitions", disk.partitions().stream().map(DisksJson::partition).toList());
        out.put("holders", disk.holders());
        out.put("mountPoints", disk.mountPoints().stream().map(Path::toString).toList());
        out.put("swap", disk.swap());
        out.put("pool", row.pool().orElse(null));
        Map<String, Object> verdict = verdict(row.verdict());
        verdict.put("text", DisksTable.verdict(row, inspection));
        row.pv().ifPresent(pv -> verdict.put("physicalVolume", physicalVolume(pv)));
        out.put("verdict", verdict);
        out.put("ifSelected", row.ifSelected().map(DisksJson::verdict).orElse(null));
        return out;
    }

    /** {@code code} and {@code reason} always; what else the kind of verdict knows, by name. */
    static Map<String, Object> verdict(DiskVerdict verdict) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("code", verdict.code());
        out.put("reason", verdict.reason());
        switch (verdict) {
            case DiskVerdict.Claimed claimed -> out.put("claim", claim(claimed.claim()));
            case DiskVerdict.NotSelected notSelected -> out.put("why", notSelected.why());
            case DiskVerdict.InUse inUse -> out.put("uses", inUse.uses());
            case DiskVerdict.TooSmall small -> out.put("minSizeBytes", small.minSizeBytes());
            case DiskVerdict.Signed signed -> out.put("signatures", signed.signatures().stream()
                    .map(DisksJson::signature).toList());
            case DiskVerdict.NotEmpty notEmpty -> out.put("nonZeroOffsetBytes",
                    nonZeroOffset(notEmpty.where()).orElse(null));
            case DiskVerdict.Unreadable unreadable -> out.put("error", unreadable.error());
            default -> { }
        }
        return out;
    }

    private static Map<String, Object> signature(Signature signature) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("type", signature.type());
        out.put("kind", signature.kind().name().toLowerCase(Locale.ROOT).replace('_', '-'));
        out.put("offsetBytes", signature.offset());
        out.put("backup", signature.backup());
        return out;
    }

    private static Map<String, Object> claim(DiskClaims.Claim claim) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("disk", identity(claim.disk()));
        out.put("pool", claim.pool());
        out.put("holder", claim.holder());
        out.put("volumeGroup", ClaimedPv.groupOf(claim).orElse(null));
        out.put("since", claim.since().toString());
        return out;
    }

    private static Map<String, Object> physicalVolume(ClaimedPv pv) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("state", pv.state().name().toLowerCase(Locale.ROOT));
        out.put("detail", pv.detail());
        return out;
    }

    private static Map<String, Object> identity(DiskIdentity identity) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("source", identity.source());
        out.put("value", identity.value());
        out.put("sizeBytes", identity.sizeBytes());
        out.put("key", identity.key());
        return out;
    }

    private static Map<String, Object> partition(Disk.Partition partition) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", partition.name());
        out.put("path", partition.path().toString());
        out.put("startBytes", partition.startBytes());
        out.put("sizeBytes", partition.sizeBytes());
        out.put("holders", partition.holders());
        out.put("mountPoints", partition.mountPoints().stream().map(Path::toString).toList());
        out.put("swap", partition.swap());
        return out;
    }

    /** The first non-zero byte the probe names; a test holds the probe's wording to this. */
    static Optional<Long> nonZeroOffset(String where) {
        Matcher m = OFFSET.matcher(where);
        return m.find() ? Optional.of(Long.parseLong(m.group(1))) : Optional.empty();
    }
}
