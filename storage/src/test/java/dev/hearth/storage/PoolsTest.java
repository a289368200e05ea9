package dev.hearth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.file.FilePoolConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PoolsTest {

    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    @Test
    void firstPoolIsTheDefaultWhenNoneIsNamed() throws IOException {
        Pool a = pool("a");
        Pool b = pool("b");

        assertThat(new Pools(List.of(a, b), null).defaultPool()).isSameAs(a);
        assertThat(new Pools(List.of(a, b), "b").defaultPool()).isSameAs(b);
    }

    @Test
    void poolsAreFoundByName() throws IOException {
        Pool a = pool("a");
        Pool b = pool("b");
        Pools pools = new Pools(List.of(a, b), "a");

        assertThat(pools.byName("b")).containsSame(b);
        assertThat(pools.byName("c")).isEmpty();
        assertThat(pools.all()).containsExactly(a, b);
    }

    @Test
    void unknownDefaultIsRefusedNamingThePools() throws IOException {
        Pool a = pool("a");

        assertThatThrownBy(() -> new Pools(List.of(a), "fast"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fast")
                .hasMessageContaining("[a]");
    }

    @Test
    void twoPoolsWithOneNameAreRefused() throws IOException {
        Pool first = pool("a");
        Pool second = FilePool.open(new FilePoolConfig("a", dir.resolve("a2"), 64 * MIB));

        assertThatThrownBy(() -> new Pools(List.of(first, second), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'a'");
    }

    @Test
    void noPoolsAreRefused() {
        assertThatThrownBy(() -> new Pools(List.of(), null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void volumeIsFoundThroughThePoolItsIdNames() throws IOException {
        Pool a = pool("a");
        Pool b = pool("b");
        Pools pools = new Pools(List.of(a, b), "a");
        Volume made = b.create(new VolumeRequest("pvc-1", new CapacityRange(MIB, 0), Map.of()));

        assertThat(pools.of(made.id())).containsSame(b);
        assertThat(pools.find(made.id())).contains(made);
        assertThat(pools.find(VolumeId.mint("a", "pvc-1"))).isEmpty();
        assertThat(pools.find(VolumeId.mint("elsewhere", "pvc-1"))).isEmpty();
        assertThat(pools.of(VolumeId.mint("elsewhere", "pvc-1"))).isEmpty();
    }

    @Test
    void findByNameLooksInEveryPool() throws IOException {
        Pool a = pool("a");
        Pool b = pool("b");
        Pools pools = new Pools(List.of(a, b), "a");
        Volume made = b.create(new VolumeRequest("pvc-1", new CapacityRange(MIB, 0), Map.of()));

        assertThat(pools.findByName("pvc-1")).contains(made);
        assertThat(pools.findByName("pvc-2")).isEmpty();
    }

    @Test
    void aFeatureIsOfferedWhenAnyPoolHasItAndRefusedForAPoolWithout() throws IOException {
        Pool full = pool("full");
        Pool limited = FilePool.open(new FilePoolConfig("limited", dir.resolve("limited"), 64 * MIB)
                .without(PoolFeature.SNAPSHOTS));
        Pools pools = new Pools(List.of(full, limited), null);

        assertThat(pools.anyHas(PoolFeature.SNAPSHOTS)).isTrue();
        assertThat(new Pools(List.of(limited), null).anyHas(PoolFeature.SNAPSHOTS)).isFalse();
        Pools.requireFeature(full, PoolFeature.SNAPSHOTS, "take snapshots");
        assertThatThrownBy(() -> Pools.requireFeature(limited, PoolFeature.SNAPSHOTS, "take snapshots"))
                .isInstanceOf(StorageException.InvalidArgument.class)
                .hasMessage("pool 'limited' (kind file) cannot take snapshots");
        Pools.requireFeature(limited, PoolFeature.CLONES, "clone volumes");
    }

    private Pool pool(String name) throws IOException {
        return FilePool.open(new FilePoolConfig(name, dir.resolve(name), 64 * MIB, Provisioning.THIN, true, MIB));
    }
}
