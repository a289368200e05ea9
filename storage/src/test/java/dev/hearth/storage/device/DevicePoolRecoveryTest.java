package dev.hearth.storage.device;

import static dev.hearth.storage.device.LoopDisks.MIB;
import static dev.hearth.storage.device.LoopDisks.create;
import static dev.hearth.storage.device.LoopDisks.identity;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The order a device pool writes its two records in (the node-wide claim on a disk, then the
 * pool's volume record; on delete: releasing, wipe, claim given back, record removed), and what
 * each crash between two steps leaves, made by writing exactly that state.
 */
@RequiresRoot
class DevicePoolRecoveryTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private LoopDisks loops;
    private LoopDevice small;
    private LoopDevice large;
    private DiskClaims claims;
    private VolumeRecords records;

    @BeforeEach
    void disks() throws Exception {
        loops = new LoopDisks(cleanup, dir);
        small = loops.disk("small", 32 * MIB);
        large = loops.disk("large", 48 * MIB);
        claims = new DiskClaims(loops.state().resolve("disks"));
        records = new VolumeRecords(loops.state().resolve("pools/disks/volumes"));
    }

    private DiskClaims.Claim claim(LoopDevice disk, String volume) throws Exception {
        DiskClaims.Claim claim = new DiskClaims.Claim(identity(disk), "disks",
                VolumeId.mint("disks", volume).toString(), Instant.now());
        assertThat(claims.claim(claim)).isEqualTo(claim);
        return claim;
    }

    @Test
    void aClaimWithoutRecordIsGivenBackByTheRetriedCreateWhichChoosesAgain() throws Exception {
        DevicePool pool = loops.pool(List.of(small, large));
        claim(large, "pvc-a"); // the create of pvc-a claimed the large disk, then crashed before its record

        Volume volume = create(pool, "pvc-a", 0);

        assertThat(volume.sizeBytes()).as("the smallest disk, now that the stale claim is gone").isEqualTo(32 * MIB);
        assertThat(claims.of(identity(large))).isEmpty();
        assertThat(claims.of(identity(small))).hasValueSatisfying(c -> assertThat(c.holder())
                .isEqualTo(volume.id().toString()));
        assertThat(pool.capacity().availableBytes()).isEqualTo(48 * MIB);
    }

    @Test
    void aClaimWithoutRecordIsGivenBackWhenThePoolOpensAndByADeleteOfItsId() throws Exception {
        claim(large, "pvc-a");
        DiskClaims.Claim other = claim(small, "pvc-b");

        DevicePool pool = loops.pool(List.of(small, large));
        assertThat(claims.of(identity(large))).isEmpty();
        assertThat(pool.capacity().availableBytes()).isEqualTo(80 * MIB);

        assertThat(claims.claim(other)).isEqualTo(other); // another create cut short, while the pool runs
        pool.delete(VolumeId.parse(other.holder()).orElseThrow());
        assertThat(claims.of(identity(small))).isEmpty();
    }

    @Test
    void aDeleteCutShortMidWipeIsFinishedWhenThePoolOpensBeforeTheDiskIsFree() throws Exception {
        DevicePool pool = loops.pool(List.of(small));
        Volume volume = create(pool, "pvc-a", 0);
        LoopDisks.fill(small.path(), 32 * MIB, 1);
        records.write(records.read(volume.id()).orElseThrow().releasingNow()); // marked, then the crash
        pool.close();

        assertThat(pool.find(volume.id())).as("a volume being deleted is gone for every other purpose").isEmpty();
        DevicePool reopened = loops.pool(List.of(small));
        awaitGone(volume.id());

        assertThat(LoopDisks.firstNonZero(small.path())).isEqualTo(-1);
        assertThat(claims.of(identity(small))).isEmpty();
        assertThat(reopened.capacity().availableBytes()).isEqualTo(32 * MIB);
    }

    @Test
    void aReleasingRecordWhoseClaimWentBackIsRemovedAndTheDiskNeverWipedAgain() throws Exception {
        DevicePool pool = loops.pool(List.of(small));
        Volume first = create(pool, "pvc-a", 0);
        VolumeRecord releasing = records.read(first.id()).orElseThrow().releasingNow();
        claims.release(claims.of(identity(small)).orElseThrow()); // wiped and given back, then the crash
        records.write(releasing);
        Volume second = create(pool, "pvc-b", 0); // the next tenant, on the same disk
        LoopDisks.fill(small.path(), 32 * MIB, 2);
        String data = LoopDisks.sha256(loops.file("small"));

        pool.delete(first.id());

        assertThat(records.read(first.id())).isEmpty();
        assertThat(LoopDisks.sha256(loops.file("small"))).isEqualTo(data);
        assertThat(claims.of(identity(small))).hasValueSatisfying(c -> assertThat(c.holder())
                .isEqualTo(second.id().toString()));
        assertThat(pool.condition(second.id()).abnormal()).isFalse();
    }

    /**
     * A record changed or damaged on the node: the pool opens (one bad file stopped the whole driver's
     * start), lists the others, refuses every call on that volume as the node's state, and never takes
     * the volume's disk for free, neither when it opens nor for the next create: what the record said
     * is never guessed, and the disk may hold a tenant's data.
     */
    @Test
    void aMalformedRecordLeavesItsDiskClaimedAndThePoolOpenForTheOthers() throws Exception {
        DevicePool pool = loops.pool(List.of(small, large));
        Volume damaged = create(pool, "pvc-a", 0);
        Path record = loops.state().resolve("pools/disks/volumes").resolve(damaged.id().toString());
        Files.writeString(record, "format=1\nid=" + damaged.id() + "\n"); // no disk, no size
        pool.close();

        DevicePool reopened = loops.pool(List.of(small, large));

        assertThat(claims.of(identity(small))).as("the damaged volume's disk").hasValueSatisfying(c ->
                assertThat(c.holder()).isEqualTo(damaged.id().toString()));
        assertThat(reopened.list()).isEmpty();
        assertThatThrownBy(() -> reopened.find(damaged.id())).isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining(record.toString()).hasMessageContaining("is malformed");
        assertThatThrownBy(() -> reopened.delete(damaged.id())).isInstanceOf(StorageException.Precondition.class);
        Volume next = create(reopened, "pvc-b", 0);
        assertThat(next.sizeBytes()).as("the other disk").isEqualTo(48 * MIB);
        assertThat(reopened.list()).containsExactly(next);
        assertThat(reopened.orphans()).anySatisfy(o -> assertThat(o.detail()).contains("a malformed record"));
        assertThat(claims.of(identity(small))).hasValueSatisfying(c ->
                assertThat(c.holder()).isEqualTo(damaged.id().toString()));
    }

    @Test
    void aRecordWhoseClaimWentMissingClaimsItsDiskAgainWhenThePoolOpens() throws Exception {
        DevicePool pool = loops.pool(List.of(small, large));
        Volume volume = create(pool, "pvc-a", 0);
        claims.release(claims.of(identity(small)).orElseThrow()); // removed by hand, say
        assertThat(pool.condition(volume.id()).message()).contains("no claim on the volume's disk");
        pool.close();

        DevicePool reopened = loops.pool(List.of(small, large));

        assertThat(claims.of(identity(small))).hasValueSatisfying(c -> assertThat(c.holder())
                .isEqualTo(volume.id().toString()));
        assertThat(reopened.condition(volume.id()).abnormal()).isFalse();
        assertThat(reopened.capacity().availableBytes()).isEqualTo(48 * MIB);
    }

    @Test
    void eachStateACrashLeavesIsAnOrphanUntilThePoolRepairsIt() throws Exception {
        LoopDevice third = loops.disk("third", 64 * MIB);
        DevicePool pool = loops.pool(List.of(small, large, third));
        Volume unclaimed = create(pool, "pvc-a", 0);
        Volume deleting = create(pool, "pvc-b", 0);
        claims.release(claims.of(identity(small)).orElseThrow());
        records.write(records.read(deleting.id()).orElseThrow().releasingNow());
        DiskClaims.Claim stray = claim(third, "pvc-c");
        Files.writeString(records.directory().resolve(unclaimed.id() + ".tmp"), "half");

        List<Orphan> orphans = pool.orphans();

        assertThat(orphans).extracting(Orphan::kind, o -> o.volume().orElseThrow()).containsExactlyInAnyOrder(
                tuple(Orphan.Kind.RECORD_WITHOUT_BACKING, unclaimed.id()),
                tuple(Orphan.Kind.UNFINISHED, deleting.id()),
                tuple(Orphan.Kind.BACKING_WITHOUT_RECORD, VolumeId.parse(stray.holder()).orElseThrow()),
                tuple(Orphan.Kind.UNFINISHED, unclaimed.id()));
        assertThat(orphans).allSatisfy(o -> assertThat(o.pool()).isEqualTo("disks"));
        pool.close();
        Files.delete(records.directory().resolve(unclaimed.id() + ".tmp"));
        DevicePool reopened = loops.pool(List.of(small, large, third));
        awaitGone(deleting.id());
        assertThat(reopened.orphans()).isEmpty();
    }

    @Test
    void aPoolOpenedReadOnlySeesTheVolumesAndChangesNothing() throws Exception {
        DevicePoolConfig config = DevicePoolConfig.under(loops.state(), "disks",
                DiskSelector.parse(small.path() + "|" + large.path(), null, null, null),
                DevicePoolConfig.Wipe.ZERO, ZeroCheck.SAMPLED);
        assertThatThrownBy(() -> DevicePool.openReadOnly(config)).isInstanceOf(NoSuchFileException.class);
        DevicePool pool = loops.pool(List.of(small, large));
        Volume volume = create(pool, "pvc-a", 0);

        try (DevicePool looking = DevicePool.openReadOnly(config)) {
            assertThat(looking.list()).containsExactly(volume);
            assertThat(looking.capacity().availableBytes()).isEqualTo(48 * MIB);
            assertThat(looking.attachedDevice(volume.id())).contains(small.path());
            assertThat(looking.backing(volume.id())).contains(small.path());
            assertThat(looking.condition(volume.id()).abnormal()).isFalse();
            assertThatThrownBy(() -> create(looking, "pvc-b", 0)).isInstanceOf(StorageException.Precondition.class);
            assertThatThrownBy(() -> looking.delete(volume.id())).isInstanceOf(StorageException.Precondition.class);
            assertThatThrownBy(() -> looking.attach(volume.id())).isInstanceOf(StorageException.Precondition.class);
            assertThatThrownBy(() -> looking.handedOut(volume.id())).isInstanceOf(StorageException.Precondition.class);
        }
        assertThat(pool.find(volume.id())).contains(volume);
    }

    private void awaitGone(VolumeId id) throws InterruptedException {
        Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
        while (records.read(id).isPresent()) {
            assertThat(Instant.now()).as("the delete resumed at open is done").isBefore(deadline);
            Thread.sleep(20);
        }
    }
}
