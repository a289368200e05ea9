package dev.hearth.driver.inspect;

import dev.hearth.driver.inspect.Inspection.MountRow;
import dev.hearth.driver.inspect.Inspection.PoolRow;
import dev.hearth.driver.inspect.Inspection.VolumeRow;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.Claim;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * {@code hearth volumes --output json}. The field names are an interface for scripts, documented
 * in the README ("Inspecting a node"): add fields, never rename or remove one. Sizes are bytes;
 * what is unknown or absent is null, a list without entries is empty.
 */
public final class VolumesJson {

    private VolumesJson() {}

    public static String render(Inspection inspection) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("stateDir", inspection.stateDir().toString());
        root.put("driverName", inspection.driverName());
        root.put("pools", inspection.pools().stream().map(VolumesJson::pool).toList());
        root.put("orphans", inspection.orphans().stream().map(VolumesJson::orphan).toList());
        root.put("errors", inspection.errors());
        return Json.write(root);
    }

    private static Map<String, Object> pool(PoolRow pool) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", pool.name());
        out.put("kind", pool.kind());
        out.put("default", pool.isDefault());
        out.put("capacityBytes", pool.capacity().map(Capacity::totalBytes).orElse(null));
        out.put("usedBytes", pool.capacity().map(Capacity::allocatedBytes).orElse(null));
        out.put("freeBytes", pool.capacity().map(Capacity::availableBytes).orElse(null));
        out.put("problem", pool.problem().orElse(null));
        out.put("volumes", pool.volumes().stream().map(VolumesJson::volume).toList());
        return out;
    }

    private static Map<String, Object> volume(VolumeRow row) {
        Volume volume = row.volume();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("id", volume.id().toString());
        out.put("name", volume.name());
        out.put("pvc", volume.claim().map(VolumesJson::pvc).orElse(null));
        out.put("pv", volume.claim().map(Claim::pvName).filter(pv -> !pv.isEmpty()).orElse(null));
        out.put("sizeBytes", volume.sizeBytes());
        out.put("source", volume.source().map(Object::toString).orElse(null));
        out.put("backing", text(row.backing()));
        out.put("device", text(row.device()));
        out.put("mounts", row.mounts().stream().map(VolumesJson::mount).toList());
        out.put("condition", row.condition().map(VolumesJson::condition).orElse(null));
        return out;
    }

    private static Map<String, Object> pvc(Claim claim) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("namespace", claim.namespace());
        out.put("name", claim.name());
        return out;
    }

    private static Map<String, Object> mount(MountRow mount) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("path", mount.path().toString());
        out.put("role", mount.role().label());
        out.put("readOnly", mount.readOnly());
        return out;
    }

    private static Map<String, Object> condition(VolumeCondition condition) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("abnormal", condition.abnormal());
        out.put("message", condition.message());
        return out;
    }

    private static Map<String, Object> orphan(Orphan orphan) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("pool", orphan.pool().isEmpty() ? null : orphan.pool());
        out.put("kind", orphan.kind().label());
        out.put("subject", orphan.subject());
        out.put("volumeId", orphan.volume().map(Object::toString).orElse(null));
        out.put("detail", orphan.detail());
        return out;
    }

    private static String text(Optional<Path> path) {
        return path.map(Path::toString).orElse(null);
    }
}
