package dev.hearth.driver.inspect;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.hearth.driver.inspect.Inspection.MountRow;
import dev.hearth.driver.inspect.Inspection.PoolRow;
import dev.hearth.driver.inspect.Inspection.VolumeRow;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.Claim;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeSource;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What {@code hearth volumes} prints for a node, as a table and as JSON, from an inspection made by hand. */
class VolumesRenderTest {

    private static final long MIB = 1L << 20;
    private static final long GIB = 1L << 30;
    private static final Instant CREATED = Instant.parse("2026-11-24T10:00:00Z");
    private static final Path KUBELET = Path.of("/var/lib/kubelet");

    private static final VolumeId DATA = VolumeId.mint("default", "pvc-1111");
    private static final VolumeId RAW = VolumeId.mint("default", "pvc-2222");
    private static final VolumeId RESTORED = VolumeId.mint("fast", "pvc-3333");
    private static final Path STAGING = KUBELET.resolve("plugins/kubernetes.io/csi/csi.hearth.dev/"
            + "0f".repeat(32) + "/globalmount");
    private static final Path PUBLISH = KUBELET.resolve("pods/7c1e/volumes/kubernetes.io~csi/pvc-1111/mount");
    private static final Path BLOCK_PUBLISH = KUBELET.resolve(
            "plugins/kubernetes.io/csi/volumeDevices/publish/pvc-2222/9a0b");

    private static Inspection node() {
        Volume data = new Volume(DATA, "pvc-1111", 256 * MIB, Map.of("hearth.dev/provisioning", "thick"),
                Optional.empty(), CREATED, Optional.of(new Claim("shop", "data-db-0", "pvc-1111")));
        Volume raw = new Volume(RAW, "pvc-2222", 1536 * MIB, Map.of(), Optional.empty(), CREATED,
                Optional.of(new Claim("shop", "raw-0", "")));
        Volume restored = new Volume(RESTORED, "pvc-3333", 2 * GIB, Map.of(),
                Optional.of(new VolumeSource.FromSnapshot(SnapshotId.mint("fast", "snap-1"))), CREATED);
        PoolRow pool = new PoolRow("default", "file", true, Optional.of(new Capacity(4 * GIB, 1792 * MIB,
                2 * GIB, 2 * GIB, MIB)), Optional.empty(), List.of(
                new VolumeRow(data, Optional.of(Path.of("/var/lib/hearth/pools/default/" + DATA + ".img")),
                        Optional.of(Path.of("/dev/loop3")), List.of(new MountRow(STAGING, MountRole.STAGING, false),
                                new MountRow(PUBLISH, MountRole.PUBLISH, true)), Optional.of(VolumeCondition.NORMAL)),
                new VolumeRow(raw, Optional.of(Path.of("/var/lib/hearth/pools/default/" + RAW + ".img")),
                        Optional.of(Path.of("/dev/loop4")), List.of(new MountRow(BLOCK_PUBLISH, MountRole.PUBLISH,
                                false)), Optional.of(VolumeCondition.NORMAL))));
        PoolRow fast = new PoolRow("fast", "lvm", false, Optional.empty(), Optional.of("pool 'fast': volume group "
                + "'vg0' is missing one of its physical volumes"), List.of(
                new VolumeRow(restored, Optional.of(Path.of("/dev/vg0/hearth.fast." + RESTORED.key())),
                        Optional.empty(), List.of(), Optional.of(VolumeCondition.abnormal("logical volume "
                                + "vg0/hearth.fast." + RESTORED.key() + " is not active")))));
        List<Orphan> orphans = List.of(
                new Orphan("default", Orphan.Kind.LOOP_DEVICE, "/dev/loop9", Optional.of(VolumeId.mint("default",
                        "gone")), "serves a deleted image"),
                new Orphan("", Orphan.Kind.MOUNT, "/mnt/x", Optional.empty(), "a mount of nothing of ours"));
        return new Inspection(Path.of("/var/lib/hearth"), "csi.hearth.dev", List.of(pool, fast), orphans,
                List.of("pool 'fast': volume group 'vg0' is missing one of its physical volumes"));
    }

    @Test
    void theTableAlignsItsColumnsWritesSizesInBinaryUnitsAndDashesForWhatIsAbsent() {
        String table = VolumesTable.render(node());

        List<String> lines = table.lines().toList();
        assertThat(lines.getFirst()).isEqualTo("POOL               KIND  CAPACITY  USED   FREE  VOLUMES  PROBLEM");
        assertThat(lines.get(1)).isEqualTo("default (default)  file  4Gi       1.8Gi  2Gi   2        -");
        assertThat(lines.get(2)).startsWith("fast               lvm   -         -      -     1        pool 'fast'");
        String header = line(lines, "VOLUME ");
        String data = line(lines, DATA + " ");
        String raw = line(lines, RAW + " ");
        for (String column : List.of("NAME", "PVC", "SIZE", "SOURCE", "DEVICE", "STAGED", "PUBLISHED", "CONDITION")) {
            int at = header.indexOf(column);
            for (String row : List.of(data, raw)) {
                assertThat(row.substring(at - 2, at + 1)).as("%s starts under %s", row, column).matches("  \\S");
            }
        }
        assertThat(data).containsSubsequence("pvc-1111", "shop/data-db-0", "256Mi", " - ", "/dev/loop3", "1", "1",
                "ok");
        assertThat(raw).containsSubsequence("shop/raw-0", "1.5Gi", "/dev/loop4", " - ", "1", "ok");
        assertThat(line(lines, RESTORED + " ")).containsSubsequence("pvc-3333", " - ", "2Gi",
                "snapshot:fast_", " - ", " - ", " - ", "is not active");
        assertThat(table).contains(DATA + "  backing       /var/lib/hearth/pools/default/" + DATA + ".img\n")
                .contains(DATA + "  staging       " + STAGING + "\n")
                .contains(DATA + "  publish (ro)  " + PUBLISH + "\n")
                .contains(RAW + "  publish       " + BLOCK_PUBLISH + "\n");
        assertThat(line(lines, "ORPHAN ")).isEqualTo("ORPHAN       POOL     SUBJECT     DETAIL");
        assertThat(line(lines, "loop-device ")).isEqualTo("loop-device  default  /dev/loop9  serves a deleted image");
        assertThat(line(lines, "mount ")).isEqualTo("mount        -        /mnt/x      a mount of nothing of ours");
        assertThat(lines).allMatch(l -> l.equals(l.stripTrailing()));
    }

    @Test
    void aNodeWithoutVolumesOrOrphansSaysSo() {
        Inspection empty = new Inspection(Path.of("/var/lib/hearth"), "csi.hearth.dev", List.of(new PoolRow("default",
                "file", true, Optional.of(new Capacity(0, 0, 0, 0, MIB)), Optional.empty(), List.of())), List.of(),
                List.of());

        assertThat(VolumesTable.render(empty)).isEqualTo("""
                POOL               KIND  CAPACITY  USED  FREE  VOLUMES  PROBLEM
                default (default)  file  0         0     0     0        -

                No volumes.

                No orphans.
                """);
    }

    @Test
    void sizesAreKubernetesBinaryUnitsWithAtMostOneDecimal() {
        assertThat(VolumesTable.size(0)).isEqualTo("0");
        assertThat(VolumesTable.size(512)).isEqualTo("512");
        assertThat(VolumesTable.size(4096)).isEqualTo("4Ki");
        assertThat(VolumesTable.size(64 * MIB)).isEqualTo("64Mi");
        assertThat(VolumesTable.size(1536 * MIB)).isEqualTo("1.5Gi");
        assertThat(VolumesTable.size(3 * GIB + 100 * MIB)).isEqualTo("3.1Gi");
        assertThat(VolumesTable.size(5L << 40)).isEqualTo("5Ti");
    }

    /** The documented field names (README, "hearth volumes"): scripts depend on them. */
    @Test
    void theJsonHasTheDocumentedFieldsAndValues() {
        JsonObject root = JsonParser.parseString(VolumesJson.render(node())).getAsJsonObject();

        assertThat(root.keySet()).containsExactly("stateDir", "driverName", "pools", "orphans", "errors");
        JsonObject pool = root.getAsJsonArray("pools").get(0).getAsJsonObject();
        assertThat(pool.keySet()).containsExactly("name", "kind", "default", "capacityBytes", "usedBytes", "freeBytes",
                "problem", "volumes");
        assertThat(pool.get("capacityBytes").getAsLong()).isEqualTo(4 * GIB);
        assertThat(pool.get("usedBytes").getAsLong()).isEqualTo(1792 * MIB);
        assertThat(pool.get("freeBytes").getAsLong()).isEqualTo(2 * GIB);
        assertThat(pool.get("problem").isJsonNull()).isTrue();
        JsonObject volume = pool.getAsJsonArray("volumes").get(0).getAsJsonObject();
        assertThat(volume.keySet()).containsExactly("id", "name", "pvc", "pv", "sizeBytes", "source", "backing",
                "device", "mounts", "condition");
        assertThat(volume.get("id").getAsString()).isEqualTo(DATA.toString());
        assertThat(volume.getAsJsonObject("pvc").keySet()).containsExactly("namespace", "name");
        assertThat(volume.getAsJsonObject("pvc").get("namespace").getAsString()).isEqualTo("shop");
        assertThat(volume.get("pv").getAsString()).isEqualTo("pvc-1111");
        assertThat(volume.get("sizeBytes").getAsLong()).isEqualTo(256 * MIB);
        assertThat(volume.get("device").getAsString()).isEqualTo("/dev/loop3");
        JsonObject mount = volume.getAsJsonArray("mounts").get(1).getAsJsonObject();
        assertThat(mount.keySet()).containsExactly("path", "role", "readOnly");
        assertThat(mount.get("role").getAsString()).isEqualTo("publish");
        assertThat(mount.get("readOnly").getAsBoolean()).isTrue();
        assertThat(volume.getAsJsonObject("condition").keySet()).containsExactly("abnormal", "message");
        JsonObject raw = pool.getAsJsonArray("volumes").get(1).getAsJsonObject();
        assertThat(raw.get("pv").isJsonNull()).as("a claim without a PV name").isTrue();
        JsonObject fast = root.getAsJsonArray("pools").get(1).getAsJsonObject();
        assertThat(fast.get("capacityBytes").isJsonNull()).isTrue();
        JsonObject restored = fast.getAsJsonArray("volumes").get(0).getAsJsonObject();
        assertThat(restored.get("pvc").isJsonNull()).isTrue();
        assertThat(restored.get("source").getAsString()).startsWith("snapshot:fast_");
        assertThat(restored.get("device").isJsonNull()).isTrue();
        assertThat(restored.getAsJsonArray("mounts")).isEmpty();
        assertThat(restored.getAsJsonObject("condition").get("abnormal").getAsBoolean()).isTrue();
        JsonObject orphan = root.getAsJsonArray("orphans").get(0).getAsJsonObject();
        assertThat(orphan.keySet()).containsExactly("pool", "kind", "subject", "volumeId", "detail");
        assertThat(orphan.get("kind").getAsString()).isEqualTo("loop-device");
        assertThat(root.getAsJsonArray("orphans").get(1).getAsJsonObject().get("pool").isJsonNull()).isTrue();
        assertThat(root.getAsJsonArray("errors")).extracting(JsonElement::getAsString)
                .containsExactly("pool 'fast': volume group 'vg0' is missing one of its physical volumes");
    }

    @Test
    void jsonEscapesWhatAStringMayHold() {
        String value = "quote \" backslash \\ newline \n tab \t bell \u0007 é 名 \ud83d\ude00";
        String text = Json.write(Map.of("k", value));

        assertThat(JsonParser.parseString(text).getAsJsonObject().get("k").getAsString()).isEqualTo(value);
        assertThat(text).contains("\\u0007").doesNotContain("\u0007");
    }

    private static String line(List<String> lines, String start) {
        return lines.stream().filter(l -> l.startsWith(start)).findFirst()
                .orElseThrow(() -> new AssertionError("no line starting '" + start + "' in " + lines));
    }
}
