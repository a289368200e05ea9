package dev.hearth.storage.lvm;

import static org.assertj.core.api.Assertions.assertThat;

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

        List<String> tags = LvTags.volume(name, 5_000_000, parameters, Optional.of(source), CREATED, true);

        assertThat(tags).allMatch(t -> LVM_TAG.matcher(t).matches(), "valid LVM tags");
        assertThat(tags).contains(LvTags.COPYING, "hearth.requested=5000000");
        Volume volume = LvTags.toVolume(id, lv("hearth.fast." + id.key(), 8 << 20, tags)).orElseThrow();
        assertThat(volume).isEqualTo(new Volume(id, name, 8 << 20, parameters, Optional.of(source), CREATED));
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
        assertThat(LvTags.toSnapshot(snapshot, lv("x", 1, LvTags.volume("a", 0, Map.of(), Optional.empty(), CREATED,
                false)))).isEmpty();
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
