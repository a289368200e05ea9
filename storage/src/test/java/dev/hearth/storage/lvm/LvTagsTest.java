package dev.hearth.storage.lvm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.storage.Claim;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeSource;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class LvTagsTest {

    /** The characters LVM accepts in a tag (lvm(8)), and its length limit. */
    private static final Pattern LVM_TAG = Pattern.compile("[A-Za-z0-9_+.\\-/=!:&#]{1,1024}");
    private static final Instant CREATED = Instant.ofEpochMilli(1_790_000_000_123L);

    static LogicalVolume lv(String name, long size, List<String> tags) {
        return new LogicalVolume(name, size, Set.copyOf(tags), "-wi-a-----", "", "", OptionalDouble.empty(),
                OptionalDouble.empty(), 0, "");
    }

    @Test
    void aVolumeRecordSurvivesTheTagsWhateverItsNameAndParameters() {
        VolumeId id = VolumeId.mint("fast", "pvc-1");
        String name = "pvc with spaces, commas, = signs and ünïcödé: " + "x".repeat(60);
        Map<String, String> parameters = Map.of("hearth.dev/a", "1,2=3", "b", "line\\nbreak");
        VolumeSource source = new VolumeSource.FromSnapshot(SnapshotId.mint("fast", "snap"));

        List<String> tags = LvTags.volume(name, 5_000_000, parameters, Optional.of(source), Optional.empty(), CREATED,
                true);

        assertThat(tags).allMatch(t -> LVM_TAG.matcher(t).matches(), "valid LVM tags");
        assertThat(tags).contains(LvTags.COPYING, "hearth.requested=5000000");
        Volume volume = LvTags.toVolume(id, lv("hearth.fast." + id.key(), 8 << 20, tags)).orElseThrow();
        assertThat(volume).isEqualTo(new Volume(id, name, 8 << 20, parameters, Optional.of(source), CREATED));
    }

    @Test
    void theClaimSurvivesTheTagsReadablyAndWithinLvmsLimits() {
        VolumeId id = VolumeId.mint("fast", "pvc-1");
        // The longest names Kubernetes allows: a 63-character namespace, 253-character PVC and PV names.
        String namespace = "n".repeat(63);
        String pvc = ("a".repeat(62) + ".").repeat(4) + "b";
        String pv = "pvc-" + "c".repeat(249);
        Claim claim = new Claim(namespace, pvc, pv);

        List<String> tags = LvTags.volume("pvc-1", 0, Map.of(), Optional.empty(), Optional.of(claim), CREATED, false);

        assertThat(pvc).hasSize(253);
        assertThat(tags).allMatch(t -> LVM_TAG.matcher(t).matches(), "valid LVM tags");
        assertThat(tags).contains("hearth.pvc=" + namespace + "/" + pvc, "hearth.pv=" + pv);
        Volume volume = LvTags.toVolume(id, lv("hearth.fast." + id.key(), 8 << 20, tags)).orElseThrow();
        assertThat(volume.claim()).contains(claim);
    }

    @Test
    void aClaimWithoutAPvNameHasNoPvTag() {
        Claim claim = new Claim("default", "data", "");

        List<String> tags = LvTags.volume("v", 0, Map.of(), Optional.empty(), Optional.of(claim), CREATED, false);

        assertThat(tags).contains("hearth.pvc=default/data").noneMatch(t -> t.startsWith("hearth.pv="));
        assertThat(LvTags.claim(Set.copyOf(tags))).contains(claim);
    }

    @Test
    void aVolumeWithoutOrWithABrokenClaimTagIsStillAVolume() {
        VolumeId id = VolumeId.mint("fast", "pvc-1");
        List<String> none = LvTags.volume("pvc-1", 0, Map.of(), Optional.empty(), Optional.empty(), CREATED, false);
        List<String> broken = new java.util.ArrayList<>(none);
        broken.add("hearth.pvc=Not_A_Namespace/x");

        assertThat(none).noneMatch(t -> t.startsWith("hearth.pvc=") || t.startsWith("hearth.pv="));
        assertThat(LvTags.toVolume(id, lv("l", 4 << 20, none)).orElseThrow().claim()).isEmpty();
        assertThat(LvTags.toVolume(id, lv("l", 4 << 20, broken)).orElseThrow().claim()).isEmpty();
        assertThat(LvTags.claim(Set.of("hearth.pvc=no-slash"))).isEmpty();
    }

    @Test
    void aSnapshotRecordIsReadyOnlyWithoutTheCopyingTag() {
        SnapshotId id = SnapshotId.mint("fast", "snap-1");
        VolumeId of = VolumeId.mint("fast", "pvc-1");

        Snapshot copying = LvTags.toSnapshot(id, lv("s", 4 << 20, LvTags.snapshot("snap-1", of, CREATED, true)))
                .orElseThrow();
        Snapshot done = LvTags.toSnapshot(id, lv("s", 4 << 20, LvTags.snapshot("snap-1", of, CREATED, false)))
                .orElseThrow();

        assertThat(copying).isEqualTo(new Snapshot(id, "snap-1", of, 4 << 20, CREATED, false));
        assertThat(done.readyToUse()).isTrue();
    }

    @Test
    void anLvWithoutACompleteRecordIsNoVolumeOrSnapshot() {
        VolumeId id = VolumeId.mint("fast", "pvc-1");
        SnapshotId snapshot = SnapshotId.mint("fast", "s");
        assertThat(LvTags.toVolume(id, lv("x", 1, List.of()))).isEmpty();
        assertThat(LvTags.toVolume(id, lv("x", 1, List.of(LvTags.VOLUME, "hearth.name=!!!")))).isEmpty();
        assertThat(LvTags.toVolume(id, lv("x", 1, List.of(LvTags.VOLUME, "hearth.name=YQ")))).isEmpty();
        assertThat(LvTags.toSnapshot(snapshot, lv("x", 1, LvTags.volume("a", 0, Map.of(), Optional.empty(),
                Optional.empty(), CREATED, false)))).isEmpty();
        assertThat(LvTags.toVolume(id, lv("x", 1, LvTags.snapshot("a", id, CREATED, false)))).isEmpty();
    }

    @Test
    void namesMapBothWaysAndNeverCollide() {
        VolumeId volume = VolumeId.mint("my-pool", "pvc-1");
        SnapshotId snapshot = SnapshotId.mint("my-pool", "pvc-1");

        assertThat(Names.volume(volume)).isEqualTo("hearth.my-pool." + volume.key());
        assertThat(Names.volumeId("my-pool", Names.volume(volume))).contains(volume);
        assertThat(Names.snapshotId("my-pool", Names.snapshot(snapshot))).contains(snapshot);
        assertThat(Names.volumeId("my-pool", Names.snapshot(snapshot))).isEmpty();
        assertThat(Names.snapshotId("my-pool", Names.volume(volume))).isEmpty();
        assertThat(Names.volumeId("other", Names.volume(volume))).isEmpty();
        assertThat(Names.transferKey("my-pool", Names.transfer("my-pool", "k"))).contains("k");
        assertThat(Names.device("vg-a", Names.volume(volume)).toString())
                .isEqualTo("/dev/mapper/vg--a-hearth.my--pool." + volume.key());
        assertThat(Names.realDevice("vg", "lv").toString()).isEqualTo("/dev/mapper/vg-lv-real");
    }
}
