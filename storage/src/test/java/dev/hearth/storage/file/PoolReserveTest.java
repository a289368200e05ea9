package dev.hearth.storage.file;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.FileSystems;
import dev.hearth.linux.FsStats;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.file.FilePoolConfig.Reserve;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pool on a filesystem of its own size (256 MiB of ext4 on a loop device), so that what the
 * reserve keeps free can be measured on the filesystem itself.
 */
@RequiresRoot
@RequiresTools("mkfs.ext4")
class PoolReserveTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private Path mountPoint;

    @BeforeEach
    void filesystem() throws IOException {
        mountPoint = ScratchFilesystem.mount(cleanup, dir, "ext4", 256 * MIB, "-m", "0").mountPoint();
    }

    private FilePool open(long capacity, Reserve reserve, Provisioning provisioning) throws IOException {
        FilePool pool = FilePool.open(new FilePoolConfig("default", mountPoint.resolve("pool"), capacity, reserve,
                provisioning, true, 8 * MIB));
        cleanup.add(pool::close); // its lock file is open on the mount until then
        return pool;
    }

    private FsStats fs() throws IOException {
        return FileSystems.statvfs(mountPoint);
    }

    private static VolumeRequest request(String name, long bytes) {
        return new VolumeRequest(name, new CapacityRange(bytes, bytes), Map.of());
    }

    @Test
    void withoutCapacityThePoolOffersTheFilesystemLessTheReserveAndLeavesTheReserveFree() throws IOException {
        FilePool pool = open(0, Reserve.parse("64Mi"), Provisioning.THICK);
        FsStats before = fs();
        Capacity capacity = pool.capacity();

        assertThat(capacity.totalBytes()).isEqualTo(before.totalBytes() - 64 * MIB);
        assertThat(capacity.availableBytes()).isEqualTo((before.availableBytes() - 64 * MIB) / MIB * MIB);

        pool.create(request("all-it-offers", capacity.availableBytes()));

        assertThat(fs().availableBytes()).as("free space left on the filesystem")
                .isGreaterThanOrEqualTo(64 * MIB).isLessThan(64 * MIB + 8 * MIB);
        assertThat(pool.capacity().availableBytes()).isZero();
        assertThatThrownBy(() -> pool.create(request("one-more", MIB)))
                .isInstanceOf(StorageException.Exhausted.class);
    }

    @Test
    void aPercentageIsOfTheFilesystemsSize() throws IOException {
        FilePool pool = open(0, Reserve.parse("50%"), Provisioning.THIN);
        FsStats fs = fs();

        assertThat(pool.capacity().totalBytes()).isEqualTo(fs.totalBytes() - (fs.totalBytes() + 1) / 2);
        assertThat(pool.capacity().availableBytes())
                .isEqualTo((fs.availableBytes() - (fs.totalBytes() + 1) / 2) / MIB * MIB);
    }

    /** A capacity is the pool's budget; the reserve still holds where the filesystem is smaller. */
    @Test
    void aCapacityBeyondTheFilesystemDoesNotBreakIntoTheReserve() throws IOException {
        FilePool pool = open(1024 * MIB, Reserve.parse("100Mi"), Provisioning.THICK);

        assertThat(pool.capacity().totalBytes()).isEqualTo(1024 * MIB);
        assertThat(pool.capacity().availableBytes()).isEqualTo((fs().availableBytes() - 100 * MIB) / MIB * MIB);
        long oneMore = pool.capacity().availableBytes() + MIB;
        assertThatThrownBy(() -> pool.create(request("too-big", oneMore)))
                .isInstanceOf(StorageException.Exhausted.class);
        assertThat(fs().availableBytes()).isGreaterThan(200 * MIB);
    }

    /**
     * Two creates in flight: the first has claimed nearly all there is but written nothing yet. The
     * filesystem still shows the space free; the second must be refused all the same.
     */
    @Test
    void aClaimInFlightCountsAgainstTheFreeSpaceBeforeItsBlocksAreWritten() throws IOException {
        FilePoolConfig config = new FilePoolConfig("default", mountPoint.resolve("pool"), 0, Reserve.parse("64Mi"),
                Provisioning.THICK, true, 8 * MIB);
        open(0, config.reserve(), Provisioning.THICK).close();
        Allocation allocation = new Allocation(config, List.of(config.directory()));
        long available = allocation.capacity().availableBytes();

        allocation.claim(config.directory().resolve("first.img.part"), available - 4 * MIB, "the first");

        assertThat(allocation.capacity().availableBytes()).isEqualTo(4 * MIB);
        assertThatThrownBy(() -> allocation.claim(config.directory().resolve("second.img.part"), 8 * MIB,
                "the second")).isInstanceOf(StorageException.Exhausted.class);
        allocation.release(config.directory().resolve("first.img.part"));
        assertThat(allocation.capacity().availableBytes()).isEqualTo(available);
    }
}
