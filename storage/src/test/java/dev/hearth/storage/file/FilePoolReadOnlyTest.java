package dev.hearth.storage.file;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file pool opened only to be looked at ({@code hearth volumes}), beside the driver that serves
 * it: it sees what that driver wrote, changes nothing, and names what belongs to no volume.
 */
class FilePoolReadOnlyTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private FilePoolConfig config() {
        return new FilePoolConfig("default", dir.resolve("pool"), 64 * MIB, Provisioning.THIN, true, 8 * MIB);
    }

    private FilePool serving() throws IOException {
        FilePool pool = FilePool.open(config());
        cleanup.add(pool::close);
        return pool;
    }

    private static VolumeRequest request(String name) {
        return new VolumeRequest(name, new CapacityRange(2 * MIB, 0), Map.of());
    }

    private Path poolFile(String name) {
        return dir.resolve("pool").resolve(name);
    }

    @Test
    void itOpensBesideTheServingDriverAndSeesWhatItWrote() throws IOException {
        FilePool pool = serving();
        Volume volume = pool.create(request("pvc-1"));

        FilePool look = FilePool.openReadOnly(config());

        assertThat(look.list()).containsExactly(volume);
        assertThat(look.capacity()).isEqualTo(pool.capacity());
        assertThat(look.backing(volume.id())).contains(poolFile(volume.id() + ".img"));
        assertThat(look.problem()).isNull();
        assertThat(look.orphans()).isEmpty();
        look.close();
        assertThat(pool.create(request("pvc-2")).id()).as("the serving pool still owns its directory")
                .isEqualTo(VolumeId.mint("default", "pvc-2"));
    }

    @Test
    void itRefusesEveryChange() throws IOException {
        Volume volume = serving().create(request("pvc-1"));
        FilePool look = FilePool.openReadOnly(config());
        List<String> before = files();

        for (Runnable change : List.<Runnable>of(() -> look.create(request("pvc-new")), () -> look.delete(volume.id()),
                () -> look.attach(volume.id()), () -> look.detach(volume.id()),
                () -> look.expansion().orElseThrow().expand(volume.id(), new CapacityRange(4 * MIB, 0)),
                () -> look.snapshots().orElseThrow().create("snap", volume.id()),
                () -> look.snapshots().orElseThrow().delete(SnapshotId.mint("default", "s")))) {
            assertThatThrownBy(change::run).isInstanceOf(StorageException.Precondition.class)
                    .hasMessageContaining("pool 'default' is open read-only");
        }
        assertThat(files()).isEqualTo(before);
    }

    @Test
    void itMakesNothingWhereThereIsNoPool() {
        assertThatThrownBy(() -> FilePool.openReadOnly(config())).isInstanceOf(NoSuchFileException.class)
                .hasMessageContaining(dir.resolve("pool").toString());

        assertThat(dir.resolve("pool")).doesNotExist();
    }

    /** What a crash (or a hand) leaves is named as an orphan, and left for the driver's own start-up to clear. */
    @Test
    void leftoversAreOrphansAndStayWhereTheyAre() throws IOException {
        FilePool pool = serving();
        Volume lost = pool.create(request("pvc-lost"));
        Files.delete(poolFile(lost.id() + ".img"));
        VolumeId stray = VolumeId.mint("default", "pvc-stray");
        Files.writeString(poolFile(stray + ".img"), "an image nobody recorded");
        VolumeId half = VolumeId.mint("default", "pvc-half");
        Files.writeString(poolFile(half + ".img.part"), "a create in flight");
        Files.writeString(poolFile(half + ".meta.tmp"), "format=1");
        Files.writeString(poolFile("notes.txt"), "not the pool's business");
        List<String> before = files();

        List<Orphan> orphans = FilePool.openReadOnly(config()).orphans();

        assertThat(orphans).extracting(Orphan::kind, Orphan::subject, o -> o.volume().orElseThrow())
                .containsExactlyInAnyOrder(
                        tuple(Orphan.Kind.RECORD_WITHOUT_BACKING,
                                poolFile(lost.id() + ".meta").toString(), lost.id()),
                        tuple(Orphan.Kind.BACKING_WITHOUT_RECORD,
                                poolFile(stray + ".img").toString(), stray),
                        tuple(Orphan.Kind.UNFINISHED,
                                poolFile(half + ".img.part").toString(), half),
                        tuple(Orphan.Kind.UNFINISHED,
                                poolFile(half + ".meta.tmp").toString(), half));
        assertThat(orphans).allMatch(o -> o.pool().equals("default") && !o.detail().isBlank());
        assertThat(files()).isEqualTo(before);
    }

    @Test
    @RequiresRoot
    void aLoopDeviceServingADeletedVolumesImageIsAnOrphan() throws IOException {
        FilePool pool = serving();
        Volume gone = pool.create(request("pvc-gone"));
        Volume kept = pool.create(request("pvc-kept"));
        Path device = pool.attach(gone.id()).device();
        cleanup.add(() -> Loop.detach(LoopDevice.fromPath(device).orElseThrow()));
        Path keptDevice = pool.attach(kept.id()).device();
        cleanup.add(() -> pool.detach(kept.id()));
        Files.delete(poolFile(gone.id() + ".img"));
        Files.delete(poolFile(gone.id() + ".meta"));

        List<Orphan> orphans = FilePool.openReadOnly(config()).orphans();

        assertThat(orphans).singleElement().satisfies(orphan -> {
            assertThat(orphan.kind()).isEqualTo(Orphan.Kind.LOOP_DEVICE);
            assertThat(orphan.subject()).isEqualTo(device.toString());
            assertThat(orphan.volume()).contains(gone.id());
            assertThat(orphan.detail()).contains(gone.id() + ".img", "deleted");
        });
        assertThat(Loop.list()).extracting(loop -> loop.device().path())
                .contains(device, keptDevice);
    }

    private List<String> files() throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.map(Path::toString).sorted().toList();
        }
    }
}
