package dev.hearth.storage.device;

import static dev.hearth.storage.device.LoopDisks.MIB;
import static dev.hearth.storage.device.LoopDisks.create;
import static dev.hearth.storage.device.LoopDisks.firstNonZero;
import static dev.hearth.storage.device.LoopDisks.scanned;
import static dev.hearth.storage.device.LoopDisks.sha256;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.ExclusiveDevice;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Claim;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.device.DevicePoolConfig.Wipe;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The device pool on real disks of the kernel's (loop devices over files in the test's directory,
 * whose identity is their file): which disks it refuses and that it never writes them, what a
 * deleted volume's disk reads back, mounts, concurrent creates, a restart under other device
 * names, disks that vanish or change, and what "empty" means under each check.
 */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "sfdisk", "blockdev"})
class DevicePoolIT {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    private LoopDisks loops;

    @BeforeEach
    void disks() throws IOException {
        loops = new LoopDisks(cleanup, dir);
    }

    @Test
    void disksWithDataAreRefusedAndNeverWrittenWhateverThePoolDoes() throws Exception {
        // The foreign disks are the smallest: smallest-fit would take them first if anything let it.
        Map<String, LoopDevice> foreign = new LinkedHashMap<>();
        foreign.put("filesystem", withFile("filesystem", 40 * MIB, f -> run("mkfs.ext4", "-q", f.toString())));
        foreign.put("partition-table", withFile("partition-table", 40 * MIB, f -> run("sh", "-c",
                "echo 'label: gpt' | sfdisk -q " + f)));
        foreign.put("md-at-end", withFile("md-at-end", 40 * MIB, DevicePoolIT::writeMd10Superblock));
        foreign.put("random", withFile("random", 40 * MIB, f -> LoopDisks.fill(f, 40 * MIB, 42)));
        LoopDevice a = loops.disk("a", 48 * MIB);
        LoopDevice b = loops.disk("b", 64 * MIB);
        Map<String, String> before = checksums(foreign.keySet());
        List<LoopDevice> all = new ArrayList<>(foreign.values());
        all.addAll(List.of(a, b));
        DevicePool pool = loops.pool(all);

        assertThat(verdict(foreign.get("filesystem"))).startsWith("signature: holds ext4 at offset 0x438");
        assertThat(verdict(foreign.get("partition-table"))).contains("gpt at offset 0x200");
        assertThat(verdict(foreign.get("md-at-end"))).isEqualTo("signature: holds linux_raid_member at offset 0x"
                + Long.toHexString(40 * MIB - 0x2000));
        assertThat(verdict(foreign.get("random"))).startsWith("not-empty: no known signature, but non-zero data");
        assertThat(pool.capacity().availableBytes()).isEqualTo(112 * MIB);
        long read = 0;
        for (LoopDevice disk : all) {
            dropCache(disk);
            read += sectorsRead(disk);
        }
        assertThat(pool.capacity().availableBytes()).isEqualTo(112 * MIB);
        for (LoopDevice disk : all) {
            read -= sectorsRead(disk);
        }
        assertThat(read).as("a second GetCapacity reads no disk, offered or refused").isZero();
        Volume first = create(pool, "pvc-1", 0);
        assertThat(pool.attach(first.id()).device()).isEqualTo(a.path());
        Volume second = create(pool, "pvc-2", 0);
        assertThatThrownBy(() -> create(pool, "pvc-3", 0)).isInstanceOf(StorageException.Exhausted.class);
        assertThat(checksums(foreign.keySet())).isEqualTo(before);
        LoopDisks.fill(a.path(), 48 * MIB, 7);
        pool.delete(first.id());
        assertThat(checksums(foreign.keySet())).isEqualTo(before);
        assertThat(pool.capacity().availableBytes()).isEqualTo(48 * MIB);
        pool.delete(second.id());
        assertThatThrownBy(() -> create(pool, "pvc-4", 100 * MIB)).isInstanceOf(StorageException.Exhausted.class);

        assertThat(checksums(foreign.keySet())).isEqualTo(before);
        assertThat(pool.capacity().availableBytes()).isEqualTo(112 * MIB);
    }

    @ParameterizedTest
    @EnumSource(value = Wipe.class, names = {"ZERO", "DISCARD"})
    void aDeletedVolumesDiskReadsBackAllZerosBeforeItIsOfferedAgainAsProvenEmpty(Wipe wipe) throws Exception {
        LoopDevice disk = loops.disk("disk", 64 * MIB);
        DevicePool pool = loops.pool(wipe, ZeroCheck.SAMPLED, List.of(disk));
        Volume volume = create(pool, "pvc-1", 0);
        pool.handedOut(volume.id());
        LoopDisks.fill(disk.path(), 64 * MIB, 3);
        assertThat(pool.capacity().availableBytes()).isZero();

        pool.delete(volume.id());

        assertThat(firstNonZero(disk.path())).as("every byte of the device").isEqualTo(-1);
        assertThat(pool.capacity().availableBytes()).isEqualTo(64 * MIB);
        Volume next = create(pool, "pvc-2", 0);
        dropCache(disk);
        long readBefore = sectorsRead(disk);
        assertThat(pool.emptiness(next.id())).as("zeroed by the pool, not written since").isEqualTo(Emptiness.PROVEN);
        assertThat(sectorsRead(disk)).as("the proof costs no read").isEqualTo(readBefore);
    }

    @Test
    void wipingSignaturesOnlyLeavesTheMiddleAndTheDiskIsThenNotOfferedAgain() throws Exception {
        LoopDevice disk = loops.disk("disk", 64 * MIB);
        DevicePool pool = loops.pool(Wipe.SIGNATURES, ZeroCheck.SAMPLED, List.of(disk));
        Volume volume = create(pool, "pvc-1", 0);
        LoopDisks.fill(disk.path(), 64 * MIB, 5);
        run("mkfs.ext4", "-q", "-E", "nodiscard", disk.path().toString());

        pool.delete(volume.id());

        // No signature is left (the first and last MiB and every backup superblock cleared), but the data is.
        assertThat(verdict(disk)).startsWith("not-empty: no known signature, but non-zero data at offset ");
        assertThat(pool.capacity().availableBytes()).isZero();
        assertThat(new DiskClaims(loops.state().resolve("disks")).all()).isEmpty();
    }

    @Test
    void aMountedOrHeldDiskStopsCountingAtOnceAndIsNeverTaken() throws Exception {
        LoopDevice held = loops.disk("held", 48 * MIB);
        LoopDevice mounted = loops.disk("mounted", 64 * MIB);
        DevicePool pool = loops.pool(List.of(held, mounted));
        assertThat(pool.capacity().availableBytes()).isEqualTo(112 * MIB);

        run("mkfs.ext4", "-q", mounted.path().toString());
        Path target = Files.createDirectory(dir.resolve("mnt"));
        Scratch.mount(cleanup, mounted.path().toString(), target, "ext4", 0, null);
        Files.writeString(target.resolve("data"), "someone's");
        try (ExclusiveDevice exclusive = ExclusiveDevice.open(held.path(), scanned(held).major(),
                scanned(held).minor())) {
            assertThat(pool.capacity().availableBytes()).isZero();
            assertThatThrownBy(() -> create(pool, "pvc-1", 0)).isInstanceOf(StorageException.Exhausted.class);
        }
        assertThat(pool.capacity().availableBytes()).as("the held disk, free again").isEqualTo(48 * MIB);
        assertThat(verdict(mounted)).startsWith("in-use: in use: " + mounted.path().getFileName() + " mounted at " + target);
        Volume volume = create(pool, "pvc-1", 0);

        assertThat(pool.attach(volume.id()).device()).isEqualTo(held.path());
        assertThat(Files.readString(target.resolve("data"))).isEqualTo("someone's");
        assertThatThrownBy(() -> create(pool, "pvc-2", 0)).isInstanceOf(StorageException.Exhausted.class);
    }

    @Test
    void aVolumeStillBoundAsARawBlockDeviceIsNotWipedUnderItsUser() throws Exception {
        LoopDevice disk = loops.disk("disk", 48 * MIB);
        DevicePool pool = loops.pool(List.of(disk));
        Volume volume = create(pool, "pvc-1", 0);
        Path target = Files.createFile(dir.resolve("block-target"));
        Mounts.bind(pool.attach(volume.id()).device(), target, false); // what a block publish does
        cleanup.add(() -> ScratchFilesystem.unmountIfMounted(target));
        Scratch.writeAt(target, 0, "in use".getBytes(StandardCharsets.UTF_8));

        assertThatThrownBy(() -> pool.delete(volume.id())).isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("bound at " + target);
        assertThat(Scratch.readAt(disk.path(), 0, 6)).isEqualTo("in use".getBytes(StandardCharsets.UTF_8));
        assertThat(pool.find(volume.id())).isPresent();

        Mounts.unmount(target);
        pool.delete(volume.id());
        assertThat(firstNonZero(disk.path())).isEqualTo(-1);
    }

    @Test
    void concurrentCreatesEachTakeADiskOfTheirOwn() throws Exception {
        List<LoopDevice> disks = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            disks.add(loops.disk("d" + i, 32 * MIB));
        }
        DevicePool pool = loops.pool(disks);
        int creates = 6;
        CyclicBarrier start = new CyclicBarrier(creates);
        List<Future<Volume>> results = new ArrayList<>();
        try (ExecutorService threads = Executors.newFixedThreadPool(creates)) {
            for (int i = 0; i < creates; i++) {
                String name = "pvc-" + i;
                results.add(threads.submit(() -> {
                    start.await();
                    return create(pool, name, 0);
                }));
            }
        }
        Set<Path> taken = new HashSet<>();
        int exhausted = 0;
        for (Future<Volume> result : results) {
            try {
                taken.add(pool.attach(result.get().id()).device());
            } catch (java.util.concurrent.ExecutionException e) {
                assertThat(e.getCause()).isInstanceOf(StorageException.Exhausted.class);
                exhausted++;
            }
        }

        assertThat(taken).containsExactlyInAnyOrderElementsOf(disks.stream().map(LoopDevice::path).toList());
        assertThat(exhausted).isEqualTo(creates - disks.size());
        assertThat(pool.list()).hasSize(disks.size());
        assertThat(new DiskClaims(loops.state().resolve("disks")).all()).hasSize(disks.size());
    }

    @Test
    void aRestartedPoolFindsItsVolumesByIdentityUnderOtherDeviceNames() throws Exception {
        Moved m = volumeWhoseDiskMoves();
        Volume volume = m.volume();
        LoopDevice moved = m.moved();
        byte[] data = m.data();
        assertThat(moved).isNotEqualTo(m.disk());
        assertThat(m.filler()).isNotEqualTo(moved);
        // The selector names devices, so the restarted pool is configured with the new name, as an admin's
        // by-id glob would follow the disk; the volume is found by its identity whatever its name.
        DevicePool restarted = loops.pool(List.of(moved, m.other()));

        assertThat(restarted.find(volume.id())).contains(volume);
        assertThat(volume.claim()).contains(new Claim("db", "data-db-0", "pvc-0f3a"));
        assertThat(restarted.attach(volume.id()).device()).isEqualTo(moved.path());
        assertThat(restarted.attachedDevice(volume.id())).contains(moved.path());
        assertThat(restarted.condition(volume.id()).abnormal()).isFalse();
        assertThat(Scratch.readAt(moved.path(), 5 * MIB, data.length)).isEqualTo(data);
        assertThat(restarted.capacity().availableBytes()).isEqualTo(64 * MIB);
        restarted.delete(volume.id());
        assertThat(firstNonZero(moved.path())).isEqualTo(-1);
    }

    /** A volume's disk after a restart of the node: {@code disk}'s old number now {@code filler}'s, its file {@code moved}. */
    private record Moved(Volume volume, byte[] data, LoopDevice disk, LoopDevice other, LoopDevice filler,
            LoopDevice moved) {}

    /**
     * A pool of a 48 MiB and a 64 MiB disk gives a volume the first, data is written to it and the
     * pool closed; then the disk is detached, a filler takes its device number and the disk's file
     * comes back under another.
     */
    private Moved volumeWhoseDiskMoves() throws Exception {
        LoopDevice disk = loops.disk("disk", 48 * MIB);
        LoopDevice other = loops.disk("other", 64 * MIB);
        DevicePool pool = loops.pool(List.of(disk, other));
        Volume volume = pool.create(new VolumeRequest("pvc-1", CapacityRange.ANY, Map.of(), Optional.empty(),
                Optional.of(new Claim("db", "data-db-0", "pvc-0f3a"))));
        byte[] data = "the tenant's bytes".getBytes(StandardCharsets.UTF_8);
        Scratch.writeAt(disk.path(), 5 * MIB, data);
        pool.close();

        Loop.detach(disk);
        LoopDevice filler = loops.attach(Scratch.sparseFile(dir.resolve("filler.img"), MIB)); // takes the old number
        LoopDevice moved = loops.attach(loops.file("disk"));
        return new Moved(volume, data, disk, other, filler, moved);
    }

    /**
     * A pool reads only the devices its selector names; a volume's disk found under a name the
     * selector does not give (an admin's {@code /dev/sdb}, after a reboot {@code sdc}) is looked for
     * among all of the node's, and used and wiped there as before.
     */
    @Test
    void aVolumesDiskMovedOutsideTheSelectorsNamesIsStillFoundAndWiped() throws Exception {
        Moved m = volumeWhoseDiskMoves();
        Volume volume = m.volume();
        LoopDevice moved = m.moved();
        assertThat(m.filler()).isEqualTo(m.disk());
        DevicePool restarted = loops.pool(List.of(m.disk(), m.other())); // the old names: moved is not among them

        assertThat(restarted.attach(volume.id()).device()).isEqualTo(moved.path());
        assertThat(restarted.attachedDevice(volume.id())).contains(moved.path());
        assertThat(restarted.condition(volume.id()).abnormal()).isFalse();
        assertThat(restarted.listing().condition().apply(volume).abnormal()).isFalse();
        restarted.delete(volume.id());
        assertThat(firstNonZero(moved.path())).isEqualTo(-1);
        assertThat(new DiskClaims(loops.state().resolve("disks")).all()).isEmpty();
    }

    @Test
    void aDiskThatGoesOrChangesMakesItsVolumeAbnormalAndIsNeverWiped() throws Exception {
        LoopDevice disk = loops.disk("disk", 48 * MIB);
        DevicePool pool = loops.pool(List.of(disk));
        Volume volume = create(pool, "pvc-1", 0);
        Scratch.writeAt(disk.path(), 0, "data".getBytes(StandardCharsets.UTF_8));

        Loop.detach(disk);
        assertThat(pool.condition(volume.id()).message()).contains("is not on this node any more");
        assertThatThrownBy(() -> pool.attach(volume.id())).isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("is not on this node any more");
        assertThat(pool.attachedDevice(volume.id())).isEmpty();

        LoopDevice back = loops.attach(loops.file("disk"));
        assertThat(pool.condition(volume.id()).abnormal()).isFalse();
        Scratch.resize(loops.file("disk"), 56 * MIB);
        Loop.setCapacity(back);
        String grown = sha256(loops.file("disk"));
        assertThat(pool.condition(volume.id()).message()).contains("is now " + back.path() + " of " + 56 * MIB
                + " bytes").contains("not the " + 48 * MIB);
        assertThatThrownBy(() -> pool.attach(volume.id())).isInstanceOf(StorageException.Precondition.class);
        assertThatThrownBy(() -> pool.delete(volume.id())).isInstanceOf(StorageException.Precondition.class)
                .hasMessageContaining("not deleting volume " + volume.id());
        assertThat(sha256(loops.file("disk"))).isEqualTo(grown);

        Scratch.resize(loops.file("disk"), 48 * MIB);
        Loop.setCapacity(back);
        assertThat(pool.condition(volume.id()).abnormal()).isFalse();
        pool.delete(volume.id());
        assertThat(firstNonZero(back.path())).isEqualTo(-1);
    }

    @Test
    void aVolumeDeletedWhileItsDiskIsGoneHasItsDiskWipedWhenItComesBack() throws Exception {
        LoopDevice disk = loops.disk("disk", 48 * MIB);
        DevicePool pool = loops.pool(List.of(disk));
        Volume volume = create(pool, "pvc-1", 0);
        LoopDisks.fill(disk.path(), 48 * MIB, 9);
        Loop.detach(disk);

        pool.delete(volume.id());
        assertThat(pool.find(volume.id())).isEmpty();
        pool.delete(volume.id()); // the provisioner's retry: still done
        DiskClaims claims = new DiskClaims(loops.state().resolve("disks"));
        assertThat(claims.all()).as("the disk owes a wipe").hasSize(1);
        assertThat(pool.orphans()).singleElement().satisfies(o -> assertThat(o.detail())
                .contains("the disk is gone; it is wiped when it comes back"));

        LoopDevice back = loops.attach(loops.file("disk"));
        Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
        while (pool.capacity().availableBytes() == 0) { // the first look at the disks starts its wipe
            assertThat(Instant.now()).isBefore(deadline);
            Thread.sleep(20);
        }
        assertThat(firstNonZero(back.path())).isEqualTo(-1);
        assertThat(claims.all()).isEmpty();
        assertThat(pool.orphans()).isEmpty();
    }

    /**
     * The disk comes back under another name, outside the selector's names (its old one taken by a
     * device of its size): GetCapacity, which looks for it among the node's disks of its size, finds
     * it and wipes it, and leaves the device of its old name alone.
     */
    @Test
    void aDeletedVolumesDiskThatComesBackUnderAnotherNameIsWipedThere() throws Exception {
        LoopDevice disk = loops.disk("disk", 48 * MIB);
        DevicePool pool = loops.pool(List.of(disk));
        Volume volume = create(pool, "pvc-1", 0);
        LoopDisks.fill(disk.path(), 48 * MIB, 9);
        Loop.detach(disk);
        pool.delete(volume.id());
        DiskClaims claims = new DiskClaims(loops.state().resolve("disks"));
        assertThat(claims.all()).as("the disk owes a wipe").hasSize(1);

        LoopDevice other = loops.disk("other", 48 * MIB);
        LoopDisks.fill(other.path(), 48 * MIB, 5);
        LoopDevice back = loops.attach(loops.file("disk"));
        assertThat(back.path()).isNotEqualTo(disk.path());
        Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
        while (!claims.all().isEmpty()) { // the first look at the disks starts its wipe
            pool.capacity();
            assertThat(Instant.now()).isBefore(deadline);
            Thread.sleep(20);
        }
        assertThat(firstNonZero(back.path())).isEqualTo(-1);
        assertThat(pool.orphans()).isEmpty();
        assertThat(firstNonZero(other.path())).as("the device of its old name, of its size too").isNotEqualTo(-1);
    }

    @Test
    void aSampledDiskIsOfferedButProvenEmptyOnlyByReadingAllOfIt() throws Exception {
        LoopDevice hidden = loops.disk("hidden", 64 * MIB);
        // One byte between the first two samples: the sampled check cannot see it, a full read does.
        Scratch.writeAt(hidden.path(), MIB + 128 * 1024, new byte[] {1});
        LoopDevice clean = loops.disk("clean", 64 * MIB);
        DevicePool pool = loops.pool(Wipe.ZERO, ZeroCheck.SAMPLED, List.of(hidden, clean));
        Volume onHidden = create(pool, "pvc-1", 0);
        assertThat(pool.attach(onHidden.id()).device()).isEqualTo(hidden.path());
        Volume onClean = create(pool, "pvc-2", 0);

        assertThat(pool.emptiness(onHidden.id())).isInstanceOfSatisfying(Emptiness.Written.class, w -> assertThat(
                w.evidence()).contains("non-zero data at offset " + (MIB + 128 * 1024)));
        assertThat(pool.emptiness(onClean.id())).isEqualTo(Emptiness.PROVEN);
        dropCache(clean);
        long read = sectorsRead(clean);
        assertThat(pool.emptiness(onClean.id())).as("proven once, not read again").isEqualTo(Emptiness.PROVEN);
        assertThat(sectorsRead(clean)).isEqualTo(read);
        pool.handedOut(onClean.id());
        assertThat(pool.emptiness(onClean.id())).isInstanceOf(Emptiness.Unknown.class);
    }

    @Test
    void aFullCheckOffersOnlyDisksReadWholeAndTheirVolumesAreProvenEmpty() throws Exception {
        LoopDevice hidden = loops.disk("hidden", 64 * MIB);
        Scratch.writeAt(hidden.path(), MIB + 128 * 1024, new byte[] {1});
        LoopDevice clean = loops.disk("clean", 64 * MIB);
        DevicePool pool = loops.pool(Wipe.ZERO, ZeroCheck.FULL, List.of(hidden, clean));

        Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
        while (pool.capacity().availableBytes() == 0) { // read whole in the background first
            assertThat(Instant.now()).isBefore(deadline);
            Thread.sleep(20);
        }
        assertThat(pool.capacity().availableBytes()).isEqualTo(64 * MIB);
        dropCache(clean);
        dropCache(hidden);
        long read = sectorsRead(clean) + sectorsRead(hidden);
        assertThat(pool.capacity().availableBytes()).isEqualTo(64 * MIB);
        assertThat(sectorsRead(clean) + sectorsRead(hidden)).as("a second GetCapacity reads no disk").isEqualTo(read);
        pool.close();
        long readClean = sectorsRead(clean);
        DevicePool restarted = loops.pool(Wipe.ZERO, ZeroCheck.FULL, List.of(hidden, clean));
        assertThat(restarted.capacity().availableBytes()).as("remembered across a restart").isEqualTo(64 * MIB);
        Volume volume = create(restarted, "pvc-1", 0);

        assertThat(restarted.attach(volume.id()).device()).isEqualTo(clean.path());
        assertThat(restarted.emptiness(volume.id())).isEqualTo(Emptiness.PROVEN);
        assertThat(sectorsRead(clean)).as("proven by the check it was offered on, before the restart")
                .isEqualTo(readClean);
        assertThatThrownBy(() -> create(restarted, "pvc-2", 0)).isInstanceOf(StorageException.Exhausted.class);
    }

    // ---- helpers

    @FunctionalInterface
    private interface Prepare {
        void on(Path file) throws Exception;
    }

    private LoopDevice withFile(String name, long size, Prepare prepare) throws Exception {
        Path file = Scratch.sparseFile(loops.file(name), size);
        prepare.on(file);
        return loops.attach(file);
    }

    private Map<String, String> checksums(Set<String> names) throws IOException {
        Map<String, String> sums = new LinkedHashMap<>();
        for (String name : names) {
            sums.put(name, sha256(loops.file(name)));
        }
        return sums;
    }

    /** The assessor's verdict on the disk under a rule that selects it, as {@code code: reason}. */
    private static String verdict(LoopDevice device) throws IOException {
        var disk = scanned(device);
        DiskVerdict verdict = DiskAssessor.unclaimed(disk, DiskIdentity.of(disk), new DiskAssessor.Rule("t",
                DiskSelector.parse(device.path().toString(), null, null, null), ZeroCheck.SAMPLED), _ -> {});
        return verdict.code() + ": " + verdict.reason();
    }

    /** Empties the device's page cache (BLKFLSBUF), so that a read of it shows in its counters. */
    private static void dropCache(LoopDevice device) throws IOException {
        run("blockdev", "--flushbufs", device.path().toString());
    }

    /** Sectors the kernel has read from the device (field 3 of its sysfs stat). */
    private static long sectorsRead(LoopDevice device) throws IOException {
        String stat = Files.readString(Path.of("/sys/block", device.path().getFileName().toString(), "stat")).strip();
        return Long.parseLong(stat.split("\\s+")[2]);
    }

    /**
     * An md 1.0 superblock (linux/raid/md_p.h, struct mdp_superblock_1) where md puts it: 8 KiB before
     * the end, aligned down to 4 KiB: magic, major version 1, a set UUID and name, raid1 of two.
     */
    private static void writeMd10Superblock(Path file) throws IOException {
        long size = Files.size(file);
        long offset = (size & ~0xFFFL) - 0x2000;
        ByteBuffer sb = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);
        sb.putInt(0, 0xa92b4efc); // magic
        sb.putInt(4, 1); // major_version
        for (int i = 0; i < 16; i++) {
            sb.put(16 + i, (byte) (0x11 * (i + 1))); // set_uuid
        }
        sb.put(32, "hearth-test:0".getBytes(StandardCharsets.US_ASCII)); // set_name
        sb.putInt(72, 1); // level: raid1
        sb.putLong(80, (size - 0x2000) / 512); // size, in sectors
        sb.putInt(92, 2); // raid_disks
        sb.putLong(128, offset / 512); // super_offset
        Scratch.writeAt(file, offset, sb.array());
    }

    private static void run(String... command) throws IOException {
        ScratchFilesystem.run(List.of(command));
    }
}
