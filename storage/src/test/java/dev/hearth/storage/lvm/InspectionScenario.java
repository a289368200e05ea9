package dev.hearth.storage.lvm;

import static dev.hearth.storage.lvm.LvmPoolUmlTest.LvmHost.lvm;
import static dev.hearth.storage.lvm.LvmPoolUmlTest.LvmHost.tags;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Claim;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * What {@code hearth volumes} asks of an LVM pool, run in LvmPoolUmlTest's guest: the claim a
 * volume was made for lands in its LV's tags through the real lvcreate and reads back; a pool
 * opened read-only beside the serving one sees it, makes no state directory and changes nothing;
 * an LV named as the pool's volume but without hearth's record is an orphan.
 */
final class InspectionScenario {

    private InspectionScenario() {}

    static void run(Path state) throws Exception {
        String vg = LvmPoolUmlTest.VG;
        LvmPoolConfig config = new LvmPoolConfig("inspected", vg, Optional.of("tp"), 2.0, LvmPoolConfig.Wipe.NONE,
                8 << 20, state.resolve("inspected"));
        Claim claim = new Claim("shop", "data-db-0", "pvc-3f1c2a9e-0b7d-4c1e-9a51-2d6f0e8b7c44");
        try (LvmPool pool = LvmPool.open(config)) {
            Volume made = pool.create(new VolumeRequest("pvc-3f1c2a9e", new CapacityRange(8 << 20, 0), Map.of(),
                    Optional.empty(), Optional.of(claim)));
            String lv = Names.volume(made.id());
            assertThat(tags(lv)).contains("hearth.pvc=shop/data-db-0", "hearth.pv=" + claim.pvName());
            Volume plain = pool.create(new VolumeRequest("pvc-plain", new CapacityRange(8 << 20, 0), Map.of()));
            VolumeId stray = VolumeId.mint("inspected", "pvc-stray");
            lvm("lvcreate", "-V", "8m", "-T", vg + "/tp", "-n", Names.volume(stray), "--addtag", "hearth.kind=volume");
            Path elsewhere = state.resolve("never-made");

            try (LvmPool look = LvmPool.openReadOnly(new LvmPoolConfig("inspected", vg, Optional.of("tp"), 2.0,
                    LvmPoolConfig.Wipe.NONE, 8 << 20, elsewhere))) {
                assertThat(look.list()).containsExactlyInAnyOrder(made, plain);
                assertThat(look.find(made.id()).orElseThrow().claim()).contains(claim);
                assertThat(look.find(plain.id()).orElseThrow().claim()).isEmpty();
                assertThat(look.backing(made.id())).contains(Path.of("/dev", vg, lv));
                assertThat(look.capacity()).isEqualTo(pool.capacity());
                assertThat(look.problem()).isNull();
                assertThat(look.orphans()).singleElement().satisfies(orphan -> {
                    assertThat(orphan.kind()).isEqualTo(Orphan.Kind.BACKING_WITHOUT_RECORD);
                    assertThat(orphan.subject()).isEqualTo(vg + "/" + Names.volume(stray));
                    assertThat(orphan.volume()).contains(stray);
                });
                assertThatThrownBy(() -> look.delete(made.id())).isInstanceOf(StorageException.Precondition.class);
                assertThatThrownBy(() -> look.create(new VolumeRequest("pvc-new", new CapacityRange(8 << 20, 0),
                        Map.of()))).isInstanceOf(StorageException.Precondition.class);
                assertThatThrownBy(() -> look.attach(made.id())).isInstanceOf(StorageException.Precondition.class);
            }
            assertThat(elsewhere).as("a read-only open makes no state directory").doesNotExist();
            assertThat(pool.find(made.id())).as("and changes nothing").contains(made);
            assertThat(LvmPoolUmlTest.LvmHost.lvNames()).contains(lv, Names.volume(plain.id()), Names.volume(stray));
            assertThat(Files.exists(state.resolve("inspected"))).isTrue();
        }
    }
}
