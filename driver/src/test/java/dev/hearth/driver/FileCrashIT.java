package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of {@code hearth serve} on its default file pool in the middle of each call a volume's
 * life is made of, as the provisioner, the resizer, the snapshotter and the kubelet make them
 * (create, clone, snapshot, stage, publish, expand, unpublish, unstage, delete), then the same call
 * retried on a driver started again on the same state, as the sidecars and the kubelet retry it.
 * Each converges to what the crash-free call makes: the same answer; the filesystem formatted
 * once, sound ({@code e2fsck -fn}) and never over data a pod wrote; the data of a clone or
 * snapshot; and, once the volume is gone through the API, nothing left behind (no file in the
 * pool, no loop device, no mount, no open format record).
 *
 * <p>Each call is first made crash-free, which gives its duration; each kill lands at a delay drawn
 * from a stratum of 0 to 1 times it. The driver is killed with the tools it runs (mkfs, e2fsck),
 * as the end of its container would. The seed is printed; {@code -Dhearth.crash.seed=} repeats a
 * run, {@code -Dhearth.crash.kills=} sets the kills per scenario (3 unless given),
 * {@code -Dhearth.crash.only=} a regex of the scenarios to run (all unless given).
 */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "e2fsck", "resize2fs", "blkid", "mkfs.xfs", "xfs_growfs", "xfs_repair"})
class FileCrashIT {

    private static final long SIZE = 64 * MIB;
    private static final long GROWN = 96 * MIB;
    /** xfs's smallest filesystem is 300 MiB. */
    private static final long XFS_SIZE = 320 * MIB;
    private static final int DATA_BYTES = (int) MIB;
    /** The kubelet's handle for an inline (ephemeral) volume: "csi-" and a SHA-256. */
    private static final String EPHEMERAL = "csi-4b227777d4dd1fc61c6f884f48641d02b4d121d3fd328cb08b5531fcacdabf8a";
    /** An inline volume's ID as a client other than the kubelet may send it: of the shape of hearth's own. */
    private static final String EPHEMERAL_HEARTH_SHAPED = VolumeId.mint("default", "inline-0").toString();

    @TempDir
    Path dir;

    private KillableHearth hearth;

    @AfterEach
    void cleanUp() throws Exception {
        if (hearth != null) {
            hearth.close();
        }
        TestDriver.sweep(dir);
    }

    @TestFactory
    Stream<DynamicTest> aCallKilledMidwayAndRetriedConvergesWithNothingLeaked() throws Exception {
        long seed = Long.getLong("hearth.crash.seed", new SecureRandom().nextLong());
        int kills = Integer.getInteger("hearth.crash.kills", 3);
        System.out.println("FileCrashIT: seed " + seed + " (repeat with -Dhearth.crash.seed=" + seed + "), " + kills
                + " kills per scenario");
        Path state = dir.resolve("state");
        hearth = new KillableHearth(dir.resolve("logs"), dir.resolve("csi.sock"), KillableHearth.JVM,
                dir.resolve("hearth.jsa"),
                List.of("--node-id", "crash", "--state-dir", state.toString(), "--metrics-address", ""));
        hearth.start();
        Crashes crashes = new Crashes(hearth, state, dir.resolve("kubelet"));
        crashes.makeSources();
        // The classes the driver loaded are archived as it stops: every restart after this is faster.
        hearth.stop();
        hearth.start();
        System.out.println("FileCrashIT: sources made; a restart takes " + hearth.lastStart().toMillis() + " ms");
        crashes.baseline();
        String only = System.getProperty("hearth.crash.only", ".*");
        List<CrashScenarios.Scenario> scenarios = crashes.scenarios().stream().filter(s -> s.name().matches(only)).toList();
        return Stream.iterate(0, i -> i < scenarios.size(), i -> i + 1).map(i -> {
            CrashScenarios.Scenario scenario = scenarios.get(i);
            return DynamicTest.dynamicTest(scenario.name() + " (seed " + (seed + i) + ")",
                    () -> crashes.run(scenario, new Random(seed + i), kills));
        });
    }

    /** The scenarios, on one driver that each kill replaces. */
    static final class Crashes extends CrashScenarios {

        private final Path state;
        private final Path pool;
        private String source;
        private String sourceSnapshot;
        private String xfsSource;
        private List<String> basePool;
        /** The snapshot the createSnapshot scenario made last. */
        private String snapshot;

        Crashes(KillableHearth hearth, Path state, Path kubelet) {
            super(hearth, kubelet, TestData.random(DATA_BYTES, 11));
            this.state = state;
            this.pool = state.resolve("pools/default");
        }

        /** A volume holding the data in a file, and a snapshot of it: what clones and restores copy. */
        void makeSources() throws Exception {
            source = idOf(create("src", SIZE, mount("ext4"), null).blocking(hearth));
            stage(source, mount("ext4"));
            write(staging(source).resolve("data"));
            unstage(source);
            xfsSource = idOf(create("src-xfs", XFS_SIZE, mount("xfs"), null).blocking(hearth));
            stage(xfsSource, mount("xfs"));
            write(staging(xfsSource).resolve("data"));
            unstage(xfsSource);
            sourceSnapshot = hearth.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName("src-snap")
                    .setSourceVolumeId(source).build()).getSnapshot().getSnapshotId();
        }

        /** What the pool directory holds between scenarios. */
        void baseline() throws IOException {
            basePool = poolFiles();
        }

        List<Scenario> scenarios() {
            VolumeCapability ext4 = mount("ext4");
            VolumeCapability xfs = mount("xfs");
            String vol = "pvc-crash";
            List<Scenario> own = List.of(
                    new Scenario("createVolume", () -> {}, create(vol, SIZE, ext4, null),
                            answer -> assertThat(answer).endsWith(" " + SIZE), this::deleteAll),
                    new Scenario("createVolumeFromVolume", () -> {},
                            create(vol, SIZE, ext4, TestDriver.fromVolume(source)),
                            answer -> checkDataAfterStage(idOf(answer), ext4), this::deleteAll),
                    new Scenario("createVolumeFromSnapshot", () -> {},
                            create(vol, GROWN, ext4, TestDriver.fromSnapshot(sourceSnapshot)), answer -> {
                                assertThat(answer).endsWith(" " + GROWN);
                                checkDataAfterStage(idOf(answer), ext4);
                            }, this::deleteAll),
                    new Scenario("createSnapshot", () -> {},
                            Call.of("CreateSnapshot snap-crash", h -> h.controllerAsync().createSnapshot(
                                    CreateSnapshotRequest.newBuilder().setName("snap-crash").setSourceVolumeId(source)
                                            .build()), r -> r.getSnapshot().getSnapshotId() + " "
                                    + r.getSnapshot().getSizeBytes() + (r.getSnapshot().getReadyToUse() ? "" : " not ready")),
                            answer -> {
                                snapshot = idOf(answer);
                                create("pvc-restored", SIZE, ext4, TestDriver.fromSnapshot(snapshot)).blocking(hearth);
                                checkDataAfterStage(id("pvc-restored"), ext4);
                            },
                            () -> {
                                deleteAll();
                                hearth.controller().deleteSnapshot(
                                        DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshot).build());
                            }),
                    new Scenario("deleteVolume.used", () -> {
                        createStagedWithData(vol, ext4);
                        unstage(id(vol));
                    }, deleteCall(vol),
                            answer -> assertThat(poolFiles()).as("what the pool holds").isEqualTo(basePool),
                            this::deleteAll),
                    new Scenario("block.nodeStageAndPublish", () -> createNew(vol, block()),
                            stageAndPublishCall(vol, block()),
                            answer -> {
                                writeRaw(target(id(vol)));
                                assertThat(Files.size(pool.resolve(id(vol) + ".img"))).isEqualTo(SIZE);
                            }, this::deleteAll),
                    new Scenario("nodeExpandVolume.unstaged.ext4", () -> {
                        createStagedWithData(vol, ext4);
                        unstage(id(vol));
                    }, expandCall(vol, ext4, GROWN), answer -> {
                        assertThat(answer).isEqualTo("expanded " + GROWN);
                        checkGrownAfterStage(id(vol), ext4);
                    }, this::deleteAll),
                    // The stage after an expansion grows the ext4 before it mounts it (resize2fs offline).
                    new Scenario("nodeStageVolume.afterExpand.ext4", () -> {
                        createStagedWithData(vol, ext4);
                        unstage(id(vol));
                        expandCall(vol, ext4, GROWN).blocking(hearth);
                    }, stageCall(vol, ext4), answer -> {
                        unstage(id(vol));
                        checkGrownAfterStage(id(vol), ext4);
                    }, this::deleteAll),
                    new Scenario("ephemeral.nodePublishVolume", () -> {}, ephemeralPublishCall(EPHEMERAL), answer -> {
                        write(target(EPHEMERAL).resolve("data"));
                        assertThat(read(target(EPHEMERAL).resolve("data"))).isEqualTo(data);
                    }, () -> ephemeralUnpublishCall(EPHEMERAL).blocking(hearth)),
                    new Scenario("ephemeral.nodeUnpublishVolume", () -> {
                        ephemeralPublishCall(EPHEMERAL).blocking(hearth);
                        write(target(EPHEMERAL).resolve("data"));
                    }, ephemeralUnpublishCall(EPHEMERAL), answer -> assertThat(mounted(target(EPHEMERAL))).isFalse(),
                            () -> {}),
                    // The same under an ID of the shape of hearth's own, which the driver finds by its staging
                    // directory alone (no pool lookup): that directory must outlive the volume.
                    new Scenario("ephemeral.nodeUnpublishVolume.hearthShapedId", () -> {
                        ephemeralPublishCall(EPHEMERAL_HEARTH_SHAPED).blocking(hearth);
                        write(target(EPHEMERAL_HEARTH_SHAPED).resolve("data"));
                    }, ephemeralUnpublishCall(EPHEMERAL_HEARTH_SHAPED),
                            answer -> assertThat(mounted(target(EPHEMERAL_HEARTH_SHAPED))).isFalse(), () -> {}),
                    new Scenario("createVolumeFromVolume.xfs", () -> {}, create(vol, XFS_SIZE, xfs,
                            TestDriver.fromVolume(xfsSource)), answer -> checkDataAfterStage(idOf(answer), xfs),
                            this::deleteAll),
                    // xfs, which grows while mounted without CAP_SYS_RESOURCE (ext4 needs it, and this host's root lacks it)
                    new Scenario("nodeExpandVolume.online.xfs", () -> {
                        create(vol, XFS_SIZE, xfs, null).blocking(hearth);
                        stage(id(vol), xfs);
                        publishCall(vol, xfs).blocking(hearth);
                        write(target(id(vol)).resolve("data"));
                    }, expandCall(vol, xfs, 2 * XFS_SIZE),
                            answer -> {
                                assertThat(answer).isEqualTo("expanded " + 2 * XFS_SIZE);
                                assertThat(read(target(id(vol)).resolve("data"))).isEqualTo(data);
                                long total = Files.getFileStore(target(id(vol))).getTotalSpace();
                                assertThat(total).as("the filesystem's size").isGreaterThan(XFS_SIZE * 3 / 2);
                                assertThat(Files.size(pool.resolve(id(vol) + ".img"))).isEqualTo(2 * XFS_SIZE);
                            }, this::deleteAll));
            return Stream.concat(own.stream(), nodeScenarios(vol, SIZE).stream()).toList();
        }

        @Override
        void assertNothingLeft() throws IOException {
            assertThat(poolFiles()).as("the pool's files").isEqualTo(basePool);
            assertThat(TestDriver.mountsUnder(kubelet.getParent().toRealPath())).as("mounts").isEmpty();
            assertThat(TestDriver.loopDevicesUnder(pool.toRealPath())).as("loop devices").isEmpty();
            try (Stream<Path> records = Files.list(state.resolve("formatting"))) {
                assertThat(records.toList()).as("open format records").isEmpty();
            }
            if (Files.isDirectory(state.resolve("ephemeral"))) {
                try (Stream<Path> ephemeral = Files.list(state.resolve("ephemeral"))) {
                    assertThat(ephemeral.toList()).as("ephemeral volumes' staging").isEmpty();
                }
            }
        }

        // ---- calls

        private Call ephemeralPublishCall(String id) {
            return Call.of("NodePublishVolume ephemeral", h -> {
                directory(target(id).getParent());
                return h.nodeAsync().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                        .setTargetPath(target(id).toString()).setVolumeCapability(mount("ext4"))
                        .putAllVolumeContext(Map.of("csi.storage.k8s.io/ephemeral", "true",
                                "csi.storage.k8s.io/pod.name", "web-0", "csi.storage.k8s.io/pod.namespace", "default",
                                "hearth.dev/size", "64Mi"))
                        .build());
            }, r -> "published");
        }

        private Call ephemeralUnpublishCall(String id) {
            return Call.of("NodeUnpublishVolume ephemeral", h -> h.nodeAsync().nodeUnpublishVolume(
                    NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                            .setTargetPath(target(id).toString()).build()), r -> "unpublished");
        }

        // ---- volumes by name: an ID is minted from its name, so every round's volume has the same

        @Override
        void createNew(String name, VolumeCapability capability) throws Exception {
            create(name, SIZE, capability, null).blocking(hearth);
        }

        @Override
        void assertReleased(String id) throws IOException {
            assertThat(attached(id)).as("loop devices of the unstaged volume").isEmpty();
        }

        @Override
        byte[] raw(String id, long offset, int length) throws IOException {
            try (FileChannel image = FileChannel.open(pool.resolve(id + ".img"))) {
                ByteBuffer read = ByteBuffer.allocate(length);
                image.read(read, offset);
                return read.array();
            }
        }

        @Override
        void deleteAll() throws Exception {
            for (String name : List.of("pvc-crash", "pvc-restored")) {
                String id = id(name);
                if (!Files.exists(pool.resolve(id + ".img")) && !Files.exists(pool.resolve(id + ".meta"))) {
                    continue;
                }
                takeAway(id);
            }
        }

        /** Staged again, the ext4 fills the grown volume and holds the data; sound once unstaged. */
        private void checkGrownAfterStage(String id, VolumeCapability capability) throws Exception {
            stage(id, capability);
            assertThat(read(staging(id).resolve("data"))).as("the data after the growth").isEqualTo(data);
            assertThat(Files.getFileStore(staging(id)).getTotalSpace()).as("the grown filesystem's size")
                    .isGreaterThan(SIZE);
            unstage(id);
            fsck(id);
        }

        private void checkDataAfterStage(String id, VolumeCapability capability) throws Exception {
            stage(id, capability);
            assertThat(read(staging(id).resolve("data"))).as("the source's data").isEqualTo(data);
            unstage(id);
            fsck(id, capability.getMount().getFsType());
        }

        // ---- the node

        private List<LoopAttachment> attached(String id) throws IOException {
            Path image = pool.toRealPath().resolve(id + ".img");
            return Loop.list().stream().filter(l -> l.backingFile().equals(image)).toList();
        }

        @Override
        void fsck(String id) throws Exception {
            fsck(id, "ext4");
        }

        /** e2fsck -fn, or xfs_repair -n, of the unattached volume's image. */
        private void fsck(String id, String type) throws Exception {
            CrashScenarios.fsck(pool.resolve(id + ".img"), type);
        }

        private List<String> poolFiles() throws IOException {
            try (Stream<Path> files = Files.walk(pool)) {
                return files.filter(Files::isRegularFile).map(f -> pool.relativize(f).toString())
                        .filter(f -> !f.equals(".hearth.lock")).sorted().toList();
            }
        }
    }
}
