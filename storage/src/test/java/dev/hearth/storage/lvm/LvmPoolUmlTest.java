package dev.hearth.storage.lvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.GuestScenarios;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.UserModeLinux;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Snapshots;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.VolumeSource;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The LVM pool on real LVM: thick and thin volumes, tenant isolation, thin capacity under
 * overprovisioning, snapshots, restores, clones and expansion. This kernel has no device-mapper,
 * so one user-mode Linux guest (two disk images, dm-thin-pool and dm-snapshot loaded) runs every
 * scenario against the production code; each scenario is one test in the report.
 */
@RequiresTools({"lvm", "thin_check", "dmsetup", "mkfs.ext4", "e2fsck", "strace"})
class LvmPoolUmlTest {

    static final long MIB = 1L << 20;
    static final String VG = "hearth-test";
    static final String SMALL_VG = "hearth-small";
    /** A regex of the scenarios to run ({@code -Dhearth.lvm.only=}); all unless given. */
    static final String ONLY = "hearth.lvm.only";

    @TempDir
    Path dir;

    @TestFactory
    Stream<DynamicTest> scenariosInUserModeLinux() throws IOException {
        UserModeLinux.assumeAvailable("LVM needs device-mapper, which this kernel lacks");
        Path disk = dir.resolve("disk.img");
        Path small = dir.resolve("small.img");
        try (RandomAccessFile a = new RandomAccessFile(disk.toFile(), "rw");
             RandomAccessFile b = new RandomAccessFile(small.toFile(), "rw")) {
            a.setLength(4L << 30);
            b.setLength(1L << 30);
        }
        UserModeLinux.Result guest = UserModeLinux.run(dir, Duration.ofMinutes(12), guestCommand(),
                Map.of(), List.of("-m", "1536M", "-k", "dm-thin-pool", "-k", "dm-snapshot", "-d", disk.toString(),
                        "-d", small.toString()));
        System.out.println(guest.describe());
        Map<String, String> outcomes = GuestScenarios.outcomes(guest, "LVM-SCENARIO");
        assertThat(outcomes).as("scenarios reported by the guest: " + guest.describe()).isNotEmpty();
        assertThat(guest.output()).as(guest.describe()).contains(UserModeLinux.PASS);
        return GuestScenarios.tests(guest, "LVM-SCENARIO", outcomes, "");
    }

    private static List<String> guestCommand() {
        return List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx384m",
                "-Xshare:auto", "-XX:-UsePerfData", "-D" + ONLY + "=" + System.getProperty(ONLY, ".*"),
                "-cp", System.getProperty("java.class.path"),
                UserModeLinux.class.getName(), LvmPoolUmlTest.class.getName(), "inGuest", "/tmp");
    }

    // ---- in the guest

    /** Every scenario, each reported on its own line; the guest's disks and LVM exist only in the guest. */
    static void inGuest(Path ignored) throws Exception {
        LvmHost.setUp();
        Path state = Files.createTempDirectory(Path.of("/run"), "hearth-lvm-state");
        Map<String, Scenario> scenarios = new LinkedHashMap<>();
        scenarios.put("thickLifecycle", () -> thickLifecycle(state));
        scenarios.put("thickVolumeNeverShowsThePreviousTenantsBytes", () -> thickIsolation(state));
        scenarios.put("thickSnapshotsBytesAreNeverShownToTheNextVolume", () -> thickSnapshotIsolation(state));
        scenarios.put("thinVolumeNeverShowsThePreviousTenantsBytes", () -> thinIsolation(state));
        scenarios.put("thinPoolOverprovisionedThreeTimesReportsWhatCanReallyBeCreated", () -> thinCapacity(state));
        scenarios.put("thinSnapshotRestoreAndClone", () -> thinSnapshots(state));
        scenarios.put("thickSnapshotOfAMountedVolumeUnderAWriterRestoresConsistent",
                () -> snapshotUnderWriter(thick(state, LvmPoolConfig.Wipe.ZERO)));
        scenarios.put("thinSnapshotOfAMountedVolumeUnderAWriterRestoresConsistent",
                () -> snapshotUnderWriter(thin(state)));
        scenarios.put("aHalfMadeTransferIsNeverCopiedIntoASnapshot", () -> halfMadeTransfer(state));
        scenarios.put("aStaleNodeLeftByAKilledLvremoveIsNeverWrittenThroughAndTheStoreIsStillWiped",
                () -> staleNodes(state));
        scenarios.put("missingVolumeGroupMeansNoSpaceNotABrokenDriver", () -> missingGroup(state));
        scenarios.put("readingTheGroupFromItsDisksAgreesWithLvsAndVgs", () -> DirectReportScenario.run(state));
        scenarios.put("aThinSnapshotCutShortAtThePoolsMessageIsResumedAndRetakenOnRetry",
                () -> CutShortThinSnapshotScenario.run(state));
        scenarios.put("theClaimIsInTheTagsAndAReadOnlyOpenSeesItChangesNothingAndNamesOrphans",
                () -> InspectionScenario.run(state));
        boolean failed = false;
        for (var entry : scenarios.entrySet()) {
            if (!entry.getKey().matches(System.getProperty(ONLY, ".*"))) {
                continue;
            }
            System.out.println("LVM-SCENARIO-START " + entry.getKey());
            try {
                entry.getValue().run();
                System.out.println("LVM-SCENARIO " + entry.getKey() + " PASS");
            } catch (Throwable t) {
                t.printStackTrace(System.out);
                System.out.println("LVM-SCENARIO " + entry.getKey() + " FAIL");
                failed = true;
            } finally {
                LvmHost.removeAllVolumes();
            }
            System.out.flush();
        }
        System.out.println("scenarios done" + (failed ? " (some failed)" : ""));
    }

    @FunctionalInterface
    interface Scenario {
        void run() throws Exception;
    }

    static LvmPool thick(Path state, LvmPoolConfig.Wipe wipe) throws IOException {
        return LvmPool.open(new LvmPoolConfig("thick", VG, Optional.empty(), 1.0, wipe, 64 * MIB,
                state.resolve("thick-" + wipe.label())));
    }

    static LvmPool thin(Path state) throws IOException {
        return LvmPool.open(new LvmPoolConfig("thin", VG, Optional.of("tp"), 3.0, LvmPoolConfig.Wipe.ZERO, 64 * MIB,
                state.resolve("thin")));
    }

    static VolumeRequest request(String name, long bytes) {
        return new VolumeRequest(name, new CapacityRange(bytes, 0), Map.of());
    }

    static void thickLifecycle(Path state) throws Exception {
        try (LvmPool pool = thick(state, LvmPoolConfig.Wipe.ZERO)) {
            assertThat(pool.problem()).isNull();
            Capacity before = pool.capacity();
            assertThat(before.availableBytes()).isGreaterThan(2900 * MIB);

            Volume volume = pool.create(request("pvc-a", 100 * MIB));
            assertThat(volume.sizeBytes()).isEqualTo(100 * MIB);
            assertThat(pool.create(request("pvc-a", 100 * MIB))).as("the same request again").isEqualTo(volume);
            assertThatThrownBy(() -> pool.create(request("pvc-a", 200 * MIB)))
                    .isInstanceOf(StorageException.Conflict.class);
            assertThat(pool.find(volume.id())).contains(volume);
            assertThat(pool.list()).containsExactly(volume);
            assertThat(pool.capacity().availableBytes()).isEqualTo(before.availableBytes() - 100 * MIB);
            assertThat(LvmHost.tags("hearth.thick." + volume.id().key())).contains("hearth.kind=volume");

            Path device = pool.attach(volume.id()).device();
            assertThat(BlockDevices.size(device)).isEqualTo(100 * MIB);
            assertThat(pool.emptiness(volume.id())).isEqualTo(Emptiness.PROVEN);
            pool.handedOut(volume.id());
            assertThat(pool.emptiness(volume.id())).isInstanceOf(Emptiness.Unknown.class);
            assertThat(pool.condition(volume.id()).abnormal()).isFalse();
            writePattern(device, 100 * MIB);
            assertThat(pool.create(request("pvc-a", 100 * MIB))).as("the same request once it was handed out")
                    .isEqualTo(volume);
            assertThat(patternBlocks(device, 100 * MIB)).as("its data, untouched by the repeated create")
                    .isEqualTo(100 * MIB / 4096);
            assertThat(pool.emptiness(volume.id())).as("not blank again").isInstanceOf(Emptiness.Unknown.class);

            Volume grown = pool.expansion().orElseThrow().expand(volume.id(), new CapacityRange(150 * MIB, 0));
            assertThat(grown.sizeBytes()).isEqualTo(152 * MIB); // rounded up to 4 MiB extents
            assertThat(BlockDevices.size(device)).isEqualTo(152 * MIB);
            assertThat(pool.find(volume.id()).orElseThrow().sizeBytes()).isEqualTo(152 * MIB);

            assertThatThrownBy(() -> pool.create(request("too-big", 64L << 30)))
                    .isInstanceOf(StorageException.Exhausted.class);
            assertThat(LvmHost.lvNames()).containsExactly("hearth.thick." + volume.id().key(), "tp");

            pool.delete(volume.id());
            pool.delete(volume.id());
            assertThat(pool.find(volume.id())).isEmpty();
            assertThat(pool.capacity().availableBytes()).isEqualTo(before.availableBytes());
        }
    }

    /**
     * A pattern written to a thick volume is not readable from the next volume made on the same
     * extents; with wipe=none it is (so the test can tell).
     */
    static void thickIsolation(Path state) throws Exception {
        for (LvmPoolConfig.Wipe wipe : List.of(LvmPoolConfig.Wipe.ZERO, LvmPoolConfig.Wipe.NONE)) {
            try (LvmPool pool = thick(state, wipe)) {
                Volume first = pool.create(request("tenant-1", 64 * MIB));
                String firstExtents = LvmHost.extents("hearth.thick." + first.id().key());
                Path device = pool.attach(first.id()).device();
                pool.handedOut(first.id());
                writePattern(device, 64 * MIB);
                pool.delete(first.id());

                Volume second = pool.create(request("tenant-2", 64 * MIB));
                assertThat(LvmHost.extents("hearth.thick." + second.id().key())).as("same extents")
                        .isEqualTo(firstExtents);
                long patterned = patternBlocks(pool.attach(second.id()).device(), 64 * MIB);
                if (wipe == LvmPoolConfig.Wipe.ZERO) {
                    assertThat(patterned).as("blocks of the previous tenant readable").isZero();
                } else {
                    // Not the ends: a new volume's first and last MiB are always cleared.
                    assertThat(patterned).as("wipe=none leaves them (the control)").isGreaterThan(0);
                }
                pool.delete(second.id());
            }
        }
        // A deleted ext4 under wipe=none leaves backup superblocks all over its extents: the next
        // volume there must still probe empty (they are cleared at create), or it could never be formatted.
        ToolRunner tools = new ToolRunner();
        try (LvmPool pool = thick(state, LvmPoolConfig.Wipe.NONE)) {
            Volume first = pool.create(request("formatted", 256 * MIB));
            Path device = pool.attach(first.id()).device();
            pool.handedOut(first.id());
            tools.run(List.of("mkfs.ext4", "-q", device.toString()), Duration.ofMinutes(2));
            pool.delete(first.id());
            Volume second = pool.create(request("after-formatted", 256 * MIB));
            Path again = pool.attach(second.id()).device();
            assertThat(dev.hearth.storage.probe.SignatureProbe.probe(again).isEmpty()).isTrue();
            assertThat(pool.emptiness(second.id())).isEqualTo(Emptiness.PROVEN);
            pool.delete(second.id());
        }
    }

    /**
     * A thick snapshot is a full copy of its volume on extents of its own: once it is deleted, the
     * next volume made on them reads none of it (with wipe=none it does, so the test can tell).
     */
    static void thickSnapshotIsolation(Path state) throws Exception {
        for (LvmPoolConfig.Wipe wipe : List.of(LvmPoolConfig.Wipe.ZERO, LvmPoolConfig.Wipe.NONE)) {
            try (LvmPool pool = thick(state, wipe)) {
                Volume volume = pool.create(request("snapped-" + wipe.label(), 64 * MIB));
                writePattern(pool.attach(volume.id()).device(), 64 * MIB);
                Snapshots snapshots = pool.snapshots().orElseThrow();
                Snapshot snapshot = snapshots.create("snapshot-" + wipe.label(), volume.id());
                long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
                while (!snapshots.find(snapshot.id()).orElseThrow().readyToUse()) {
                    assertThat(System.nanoTime()).as("copy done within 2 minutes").isLessThan(deadline);
                    Thread.sleep(200);
                }
                String snapshotExtents = LvmHost.extents(Names.snapshot(snapshot.id()));
                snapshots.delete(snapshot.id());

                Volume next = pool.create(request("after-snapshot-" + wipe.label(), 64 * MIB));
                assertThat(LvmHost.extents(Names.volume(next.id()))).as("the snapshot's extents")
                        .isEqualTo(snapshotExtents);
                long patterned = patternBlocks(pool.attach(next.id()).device(), 64 * MIB);
                if (wipe == LvmPoolConfig.Wipe.ZERO) {
                    assertThat(patterned).as("blocks of the deleted snapshot readable").isZero();
                } else {
                    assertThat(patterned).as("wipe=none leaves them (the control)").isGreaterThan(0);
                }
                pool.delete(next.id());
                pool.delete(volume.id());
            }
        }
    }

    static void thinIsolation(Path state) throws Exception {
        try (LvmPool pool = thin(state)) {
            assertThat(pool.problem()).isNull();
            Volume first = pool.create(request("thin-tenant-1", 64 * MIB));
            Path device = pool.attach(first.id()).device();
            pool.handedOut(first.id());
            writePattern(device, 64 * MIB);
            pool.delete(first.id());
            Volume second = pool.create(request("thin-tenant-2", 64 * MIB));
            assertThat(pool.emptiness(second.id())).isEqualTo(Emptiness.PROVEN);
            assertThat(patternBlocks(pool.attach(second.id()).device(), 64 * MIB)).isZero();
            pool.delete(second.id());
        }
    }

    /** The thin pool fills the 1 GiB disk; overprovision 3. */
    static void thinCapacity(Path state) throws Exception {
        LvmHost.lvm("lvcreate", "-l", "100%FREE", "-Zy", "-T", SMALL_VG + "/tp");
        try (LvmPool pool = LvmPool.open(new LvmPoolConfig("small", SMALL_VG, Optional.of("tp"), 3.0,
                LvmPoolConfig.Wipe.ZERO, 64 * MIB, state.resolve("small")))) {
            assertThat(pool.problem()).isNull();
            Capacity capacity = pool.capacity();
            long data = LvmHost.size(SMALL_VG, "tp");
            System.out.println("thin pool data " + data + " bytes; capacity " + capacity);
            assertThat(data).isBetween(900 * MIB, 1L << 30);
            assertThat(capacity.maximumVolumeBytes()).as("one volume can at most be what the pool can hold")
                    .isEqualTo(data / (4 * MIB) * 4 * MIB);
            // Three volumes of the largest size: the ratio allows 3x the pool.
            List<Volume> made = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                long available = pool.capacity().availableBytes();
                assertThat(available).as("room before volume " + i).isGreaterThanOrEqualTo(4 * MIB);
                made.add(pool.create(request("over-" + i, available)));
            }
            Capacity full = pool.capacity();
            assertThat(full.availableBytes()).isLessThan(data);
            long left = full.availableBytes();
            List<String> before = LvmHost.lvNames(SMALL_VG);
            assertThatThrownBy(() -> pool.create(request("one-too-many", left + 4 * MIB)))
                    .isInstanceOf(StorageException.Exhausted.class).hasMessageContaining("overprovision 3.0");
            assertThat(LvmHost.lvNames(SMALL_VG)).as("no LV left behind").isEqualTo(before);
            if (left > 0) {
                made.add(pool.create(request("exactly-the-rest", left)));
            }
            assertThat(pool.capacity().availableBytes()).isZero();
            for (Volume v : made) {
                pool.delete(v.id());
            }
            assertThat(pool.capacity().availableBytes()).isEqualTo(capacity.availableBytes());
        } finally {
            LvmHost.lvm("lvremove", "-f", SMALL_VG + "/tp");
        }
    }

    static void thinSnapshots(Path state) throws Exception {
        try (LvmPool pool = thin(state)) {
            Volume volume = pool.create(request("thin-src", 64 * MIB));
            Path device = pool.attach(volume.id()).device();
            pool.handedOut(volume.id());
            writePattern(device, 8 * MIB);
            Snapshot snapshot = pool.snapshots().orElseThrow().create("snap-1", volume.id());
            assertThat(snapshot.readyToUse()).isTrue();
            assertThat(pool.snapshots().orElseThrow().create("snap-1", volume.id())).isEqualTo(snapshot);
            assertThat(pool.snapshots().orElseThrow().list()).containsExactly(snapshot);
            zero(device, 8 * MIB); // the source changes after the snapshot

            Volume restored = pool.create(new VolumeRequest("restored", new CapacityRange(128 * MIB, 0), Map.of(),
                    Optional.of(new VolumeSource.FromSnapshot(snapshot.id()))));
            assertThat(restored.sizeBytes()).isEqualTo(128 * MIB);
            Path restoredDevice = pool.attach(restored.id()).device();
            assertThat(BlockDevices.size(restoredDevice)).isEqualTo(128 * MIB);
            assertThat(patternBlocks(restoredDevice, 8 * MIB)).isEqualTo(8 * MIB / 4096);
            assertThat(pool.emptiness(restored.id())).isInstanceOf(Emptiness.Unknown.class);

            Volume clone = pool.create(new VolumeRequest("clone", CapacityRange.ANY, Map.of(),
                    Optional.of(new VolumeSource.FromVolume(restored.id()))));
            assertThat(clone.sizeBytes()).isEqualTo(128 * MIB);
            assertThat(patternBlocks(pool.attach(clone.id()).device(), 8 * MIB)).isEqualTo(8 * MIB / 4096);

            pool.delete(volume.id()); // a snapshot outlives its volume
            assertThat(pool.snapshots().orElseThrow().find(snapshot.id())).contains(snapshot);
            pool.snapshots().orElseThrow().delete(snapshot.id());
            pool.snapshots().orElseThrow().delete(snapshot.id());
            pool.delete(restored.id());
            pool.delete(clone.id());
            assertThat(LvmHost.lvNames()).containsExactly("tp");
        }
    }

    /**
     * A thick snapshot of a mounted ext4 while a writer appends to a file: frozen only while the
     * copy-on-write snapshot is made, copied in the background, and the restore passes e2fsck and
     * holds whole records only.
     */
    static void snapshotUnderWriter(LvmPool opened) throws Exception {
        ToolRunner tools = new ToolRunner();
        boolean thin = opened.config().thin();
        try (LvmPool pool = opened) {
            Volume volume = pool.create(request("busy", 256 * MIB));
            Path device = pool.attach(volume.id()).device();
            pool.handedOut(volume.id());
            tools.run(List.of("mkfs.ext4", "-q", device.toString()), Duration.ofMinutes(2));
            Path mnt = Files.createTempDirectory(Path.of("/run"), "busy");
            Mounts.mount(device.toString(), mnt, "ext4", 0, null);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong records = new AtomicLong();
            Thread writer = Thread.ofPlatform().start(() -> {
                byte[] record = new byte[4096];
                try (FileChannel log = FileChannel.open(mnt.resolve("log"), StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
                    while (!stop.get() && records.get() < 30_000) { // 120 MiB: the filesystem never fills
                        long n = records.get();
                        Arrays.fill(record, (byte) (n % 251 + 1));
                        ByteBuffer.wrap(record).putLong(0, n);
                        log.write(ByteBuffer.wrap(record));
                        records.incrementAndGet();
                        if (n % 64 == 0) {
                            log.force(false);
                        }
                    }
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            Snapshot snapshot;
            Volume restored;
            try {
                Thread.sleep(500);
                snapshot = pool.snapshots().orElseThrow().create("busy-snap", volume.id());
                long atSnapshot = records.get();
                assertThat(snapshot.readyToUse()).as("a thick copy runs in the background; thin is instant")
                        .isEqualTo(thin);
                assertThat(pool.condition(volume.id()).abnormal()).isFalse();
                // A clone of the mounted volume while the writer runs: read through its own transfer if thick.
                Volume clone = pool.create(new VolumeRequest("busy-clone", CapacityRange.ANY, Map.of(),
                        Optional.of(new VolumeSource.FromVolume(volume.id()))));
                tools.run(List.of("e2fsck", "-f", "-n", pool.attach(clone.id()).device().toString()), Duration.ofMinutes(2));
                pool.delete(clone.id());
                Thread.sleep(500);
                stop.set(true);
                writer.join();
                long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
                while (!pool.snapshots().orElseThrow().find(snapshot.id()).orElseThrow().readyToUse()) {
                    assertThat(System.nanoTime()).as("copy done within 3 minutes").isLessThan(deadline);
                    Thread.sleep(200);
                }
                assertThat(LvmHost.lvNames()).as("the transfer snapshot is gone")
                        .noneMatch(name -> name.contains(".xfer."));
                restored = pool.create(new VolumeRequest("busy-restored", CapacityRange.ANY, Map.of(),
                        Optional.of(new VolumeSource.FromSnapshot(snapshot.id()))));
                Path restoredDevice = pool.attach(restored.id()).device();
                tools.run(List.of("e2fsck", "-f", "-n", restoredDevice.toString()), Duration.ofMinutes(2));
                Path check = Files.createTempDirectory(Path.of("/run"), "restored");
                Mounts.mount(restoredDevice.toString(), check, "ext4", 0, null);
                try {
                    long count = Files.size(check.resolve("log")) / 4096;
                    assertThat(count).as("records in the snapshot").isPositive().isLessThanOrEqualTo(atSnapshot + 1);
                    try (FileChannel log = FileChannel.open(check.resolve("log"))) {
                        ByteBuffer record = ByteBuffer.allocate(4096);
                        for (long n = 0; n < count; n++) {
                            record.clear();
                            log.read(record, n * 4096);
                            assertThat(record.getLong(0)).as("record %d", n).isEqualTo(n);
                            assertThat(record.get(4095)).isEqualTo((byte) (n % 251 + 1));
                        }
                    }
                    System.out.println("snapshot under writer: " + count + " whole records of " + records.get());
                } finally {
                    Mounts.unmount(check);
                }
                assertThatThrownBy(() -> pool.delete(volume.id())).as("a mounted volume is not deleted")
                        .isInstanceOf(StorageException.Precondition.class);
            } finally {
                stop.set(true);
                writer.join();
                Mounts.unmount(mnt);
            }
            pool.delete(volume.id());
            pool.delete(restored.id());
            pool.snapshots().orElseThrow().delete(snapshot.id());
            assertThat(LvmHost.lvNames()).containsExactly("tp");
        }
    }

    /**
     * What a driver killed inside a thick snapshot's {@code lvcreate -s} can leave: the snapshot's
     * LV, still copying, and by its transfer's name a plain LV (LVM makes the copy-on-write LV
     * first and turns it into a snapshot of the origin in a second commit) whose bytes are whatever
     * its extents held. The restarted pool must not copy from it; the snapshot is taken again.
     */
    static void halfMadeTransfer(Path state) throws Exception {
        SnapshotId id = SnapshotId.mint("thick", "half-made");
        Volume volume;
        try (LvmPool pool = thick(state, LvmPoolConfig.Wipe.ZERO)) {
            volume = pool.create(request("half-made-source", 64 * MIB));
            writePattern(pool.attach(volume.id()).device(), 64 * MIB);
        }
        List<String> snapshotTags = LvTags.addTags(LvTags.snapshot("half-made", volume.id(), LvmPool.now(), true));
        List<String> args = new ArrayList<>(List.of("lvcreate", "-n", Names.snapshot(id), "-L", "64m", "-y", "-Zn"));
        args.addAll(snapshotTags);
        args.add(VG);
        LvmHost.lvm(args.toArray(String[]::new));
        LvmHost.lvm("lvcreate", "-n", Names.transfer("thick", id.key()), "-L", "64m", "-y", "-Zy", "--addtag",
                LvTags.TRANSFER, VG);
        try (LvmPool pool = thick(state, LvmPoolConfig.Wipe.ZERO)) {
            assertThat(LvmHost.lvNames()).as("the half-made transfer is removed at start").noneMatch(
                    name -> name.contains(".xfer."));
            Snapshots snapshots = pool.snapshots().orElseThrow();
            assertThatThrownBy(() -> snapshots.create("half-made", volume.id()))
                    .isInstanceOf(StorageException.Failed.class).hasMessageContaining("retry");
            Snapshot snapshot = snapshots.create("half-made", volume.id());
            long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
            while (!snapshots.find(id).orElseThrow().readyToUse()) {
                assertThat(System.nanoTime()).as("copy done within 2 minutes").isLessThan(deadline);
                Thread.sleep(200);
            }
            assertThat(patternBlocks(Names.device(VG, Names.snapshot(snapshot.id())), 64 * MIB))
                    .as("the snapshot holds its source's blocks").isEqualTo(64 * MIB / 4096);
            snapshots.delete(snapshot.id());
            pool.delete(volume.id());
        }
    }

    /**
     * What an lvremove of a transfer killed midway can leave (LVM makes and removes the nodes itself
     * where there is no udev): the snapshot's devices gone from device-mapper, the LV still in the
     * metadata, and under the copy-on-write store's name a stale node, whose number the kernel may
     * have given since to another LV. Removing the transfer must not write through that node (here
     * it names a victim volume, which keeps every byte) and must still wipe the store (it holds
     * the source's overwritten blocks): the next volume on its extents reads none of them. A stale
     * node of a deleted volume does not make it exist or attached.
     */
    static void staleNodes(Path state) throws Exception {
        try (LvmPool pool = thick(state, LvmPoolConfig.Wipe.ZERO)) {
            Volume source = pool.create(request("stale-source", 64 * MIB));
            Path sourceDevice = pool.attach(source.id()).device();
            writePattern(sourceDevice, 64 * MIB);
            Volume victim = pool.create(request("stale-victim", 64 * MIB));
            Path victimDevice = pool.attach(victim.id()).device();
            writePattern(victimDevice, 64 * MIB);

            String transfer = Names.transfer("thick", "stale-node");
            pool.makeTransfer(transfer, pool.findLv(Names.volume(source.id())).orElseThrow());
            zero(sourceDevice, 16 * MIB); // the store now keeps the 16 MiB of pattern this overwrote
            Path cow = Path.of(Names.device(VG, transfer) + "-cow");
            assertThat(patternBlocks(cow, 16 * MIB)).as("the source's overwritten blocks, in the store")
                    .isGreaterThan(0);
            String storeExtents = LvmHost.extents(transfer);

            String mapped = Names.mapperName(VG, transfer);
            for (String device : List.of(mapped, mapped + "-cow")) {
                LvmHost.TOOLS.run(List.of("dmsetup", "remove", "--noudevsync", device), Duration.ofSeconds(30));
            }
            staleNode(cow, victimDevice);
            assertThat(LvmHost.lvNames()).as("the transfer, still in LVM's metadata").contains(transfer);

            pool.removeIfPresent(transfer);
            assertThat(LvmHost.lvNames()).as("the transfer is removed").doesNotContain(transfer);
            assertThat(patternBlocks(victimDevice, 64 * MIB)).as("the victim's blocks, after the removal")
                    .isEqualTo(64 * MIB / 4096);
            Volume next = pool.create(request("on-the-store", 64 * MIB));
            assertThat(LvmHost.extents(Names.volume(next.id()))).as("the store's extents").isEqualTo(storeExtents);
            assertThat(patternBlocks(pool.attach(next.id()).device(), 64 * MIB))
                    .as("blocks of the store readable by the next volume").isZero();

            Path deleted = Names.device(VG, Names.volume(next.id()));
            pool.delete(next.id());
            assertThat(pool.attachedDevice(next.id())).isEmpty();
            staleNode(deleted, victimDevice);
            assertThat(pool.exists(next.id())).as("a deleted volume with a stale node").isFalse();
            assertThat(pool.attachedDevice(next.id())).as("a deleted volume with a stale node").isEmpty();
            Files.delete(deleted);
            pool.delete(victim.id());
            pool.delete(source.id());
        }
    }

    /** A node at {@code node} carrying {@code other}'s number, as a killed lvm command can leave. */
    private static void staleNode(Path node, Path other) throws IOException {
        Files.deleteIfExists(node);
        String[] number = BlockDevices.deviceNumber(other).orElseThrow().split(":");
        LvmHost.TOOLS.run(List.of("mknod", node.toString(), "b", number[0], number[1]), Duration.ofSeconds(10));
    }

    static void missingGroup(Path state) throws Exception {
        try (LvmPool pool = LvmPool.open(new LvmPoolConfig("elsewhere", "no-such-vg", Optional.empty(), 1.0,
                LvmPoolConfig.Wipe.ZERO, 64 * MIB, state.resolve("elsewhere")))) {
            assertThat(pool.problem()).as("not a broken driver").isNull();
            assertThat(pool.absence()).contains("no-such-vg");
            assertThat(pool.capacity().availableBytes()).isZero();
            assertThat(pool.list()).isEmpty();
            assertThatThrownBy(() -> pool.create(request("x", 64 * MIB)))
                    .isInstanceOf(StorageException.Exhausted.class).hasMessageContaining("does not exist here");
        }
        try (LvmPool pool = LvmPool.open(new LvmPoolConfig("nothin", VG, Optional.of("no-such-tp"), 2.0,
                LvmPoolConfig.Wipe.ZERO, 64 * MIB, state.resolve("nothin")))) {
            assertThat(pool.problem()).as("a group without its thin pool is broken").contains("no-such-tp");
        }
    }

    // ---- data

    /** Every 4 KiB block stamped "hearth-tenant" and its offset. */
    static void writePattern(Path device, long length) throws IOException {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
            ByteBuffer chunk = ByteBuffer.allocate((int) MIB);
            for (long offset = 0; offset < length; offset += MIB) {
                chunk.clear();
                for (int block = 0; block < MIB; block += 4096) {
                    chunk.put(block, "hearth-tenant".getBytes());
                    chunk.putLong(block + 16, offset + block);
                }
                channel.write(chunk, offset);
            }
            channel.force(true);
        }
    }

    /** How many 4 KiB blocks carry the pattern. */
    static long patternBlocks(Path device, long length) throws IOException {
        byte[] mark = "hearth-tenant".getBytes();
        long found = 0;
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
            ByteBuffer chunk = ByteBuffer.allocate((int) MIB);
            for (long offset = 0; offset < length; offset += MIB) {
                chunk.clear();
                while (chunk.hasRemaining() && channel.read(chunk, offset + chunk.position()) > 0) {
                    // fill
                }
                for (int block = 0; block < MIB; block += 4096) {
                    if (Arrays.equals(chunk.array(), block, block + mark.length, mark, 0, mark.length)) {
                        found++;
                    }
                }
            }
        }
        return found;
    }

    static void zero(Path device, long length) throws IOException {
        BlockDevices.zeroOut(device, 0, length);
    }

    /** The guest's LVM as a test sees it: set up, inspected and cleaned with the lvm tool. */
    static final class LvmHost {

        private static final ToolRunner TOOLS = new ToolRunner();

        static void setUp() throws IOException {
            // LVM keeps metadata backups under /etc/lvm: in the guest that is the host's, through hostfs.
            Files.createDirectories(Path.of("/etc/lvm"));
            Mounts.mount("tmpfs", Path.of("/etc/lvm"), "tmpfs", 0, null);
            lvm("pvcreate", "-y", "/dev/ubda", "/dev/ubdb");
            lvm("vgcreate", VG, "/dev/ubda");
            lvm("vgcreate", SMALL_VG, "/dev/ubdb");
            lvm("lvcreate", "-L", "1G", "-Zy", "-T", VG + "/tp");
        }

        static String lvm(String... args) {
            List<String> argv = new ArrayList<>(List.of("lvm", args[0], "--config", Lvm.WITHOUT_UDEV));
            argv.addAll(Arrays.asList(args).subList(1, args.length));
            return TOOLS.run(argv, Duration.ofMinutes(2)).stdout();
        }

        static List<String> lvNames() {
            return lvNames(VG);
        }

        static List<String> lvNames(String vg) {
            return Arrays.stream(lvm("lvs", "--noheadings", "-o", "lv_name", "--sort", "lv_name", vg).split("\n"))
                    .map(String::strip).filter(s -> !s.isEmpty()).toList();
        }

        static String extents(String lv) {
            return lvm("lvs", "--noheadings", "-o", "seg_pe_ranges", VG + "/" + lv).strip();
        }

        static List<String> tags(String lv) {
            return Arrays.asList(lvm("lvs", "--noheadings", "-o", "lv_tags", VG + "/" + lv).strip().split(","));
        }

        static long size(String vg, String lv) {
            return Long.parseLong(lvm("lvs", "--noheadings", "--units", "b", "--nosuffix", "-o", "lv_size",
                    vg + "/" + lv).strip());
        }

        /** Every LV but the thin pool, so one scenario's failure does not spill into the next. */
        static void removeAllVolumes() {
            for (String lv : lvNames()) {
                if (!lv.equals("tp")) {
                    try {
                        lvm("lvremove", "-f", VG + "/" + lv);
                    } catch (RuntimeException e) {
                        System.out.println("cleanup: " + e.getMessage());
                    }
                }
            }
        }
    }
}
