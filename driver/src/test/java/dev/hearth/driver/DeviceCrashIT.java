package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.storage.device.DiskClaims;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of {@code hearth serve} on a device pool (a whole disk per volume; the disks are loop
 * devices over sparse files) in the middle of each call of a volume's life, then the call retried
 * on a driver started again on the same state, as {@link FileCrashIT} does for the file pool. What
 * this pool adds is its promise to the next tenant: a deleted volume's disk is wiped before anyone
 * else can have it. So after every kill, before the retry, every disk that holds no claim must read
 * back as zeros, whatever the kill interrupted (a claim, a first format, a wipe); and once a
 * scenario is undone, every disk does, and no claim, volume record, mount, read-only view or open
 * format record is left.
 *
 * <p>{@code -Dhearth.crash.seed=}, {@code -Dhearth.crash.kills=} (3 unless given) and
 * {@code -Dhearth.crash.only=} as for {@link FileCrashIT}.
 */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "e2fsck", "blkid"})
class DeviceCrashIT {

    private static final long DISK = 64 * MIB;
    private static final int DISKS = 3;
    private static final int DATA_BYTES = (int) MIB;

    @TempDir
    Path dir;

    private KillableHearth hearth;

    @AfterEach
    void cleanUp() throws Exception {
        if (hearth != null) {
            hearth.close();
        }
        TestDriver.sweep(dir); // the disks' loop devices too: their files are under dir
    }

    @TestFactory
    Stream<DynamicTest> aCallKilledMidwayAndRetriedConvergesAndNoDiskIsHandedOnUnwiped() throws Exception {
        long seed = Long.getLong("hearth.crash.seed", new SecureRandom().nextLong());
        int kills = Integer.getInteger("hearth.crash.kills", 3);
        System.out.println("DeviceCrashIT: seed " + seed + " (repeat with -Dhearth.crash.seed=" + seed + "), " + kills
                + " kills per scenario");
        Map<Path, LoopDevice> disks = new LinkedHashMap<>();
        Path files = Files.createDirectories(dir.resolve("disks")).toRealPath();
        for (int i = 0; i < DISKS; i++) {
            Path file = Scratch.sparseFile(files.resolve("disk" + i + ".img"), DISK);
            disks.put(file, Loop.attach(file, false, false));
        }
        String selector = disks.values().stream().map(d -> d.path().toString()).collect(Collectors.joining("|"));
        Path state = dir.resolve("state");
        hearth = new KillableHearth(dir.resolve("logs"), dir.resolve("csi.sock"), KillableHearth.JVM,
                dir.resolve("hearth.jsa"), List.of("--node-id", "crash", "--state-dir", state.toString(),
                        "--metrics-address", "", "--pool", "name=default,kind=device,disks=" + selector));
        hearth.start();
        Crashes crashes = new Crashes(hearth, state, dir.resolve("kubelet"), disks);
        // A volume's whole life once, so that the class archive the stop writes holds what the calls load.
        crashes.createNew("pvc-warm", mount("ext4"));
        crashes.stage(CrashScenarios.id("pvc-warm"), mount("ext4"));
        crashes.takeAway(CrashScenarios.id("pvc-warm"));
        crashes.assertNothingLeft();
        hearth.stop();
        hearth.start();
        System.out.println("DeviceCrashIT: " + DISKS + " disks " + selector + "; a restart takes "
                + hearth.lastStart().toMillis() + " ms");
        String only = System.getProperty("hearth.crash.only", ".*");
        List<CrashScenarios.Scenario> scenarios = crashes.scenarios().stream().filter(s -> s.name().matches(only))
                .toList();
        return Stream.iterate(0, i -> i < scenarios.size(), i -> i + 1).map(i -> {
            CrashScenarios.Scenario scenario = scenarios.get(i);
            return DynamicTest.dynamicTest(scenario.name() + " (seed " + (seed + i) + ")",
                    () -> crashes.run(scenario, new Random(seed + i), kills));
        });
    }

    /** The scenarios, on one driver that each kill replaces. */
    static final class Crashes extends CrashScenarios {

        private final Path state;
        private final DiskClaims claims;
        /** The disks by their backing files, which is how the pool knows a loop device. */
        private final Map<Path, LoopDevice> disks;

        Crashes(KillableHearth hearth, Path state, Path kubelet, Map<Path, LoopDevice> disks) {
            super(hearth, kubelet, TestData.random(DATA_BYTES, 13));
            this.state = state;
            this.claims = new DiskClaims(state.resolve("disks"));
            this.disks = disks;
        }

        List<Scenario> scenarios() {
            VolumeCapability ext4 = mount("ext4");
            String vol = "pvc-crash";
            List<Scenario> own = List.of(
                    new Scenario("createVolume", () -> {}, create(vol, DISK, ext4, null), answer -> {
                        assertThat(answer).isEqualTo(id(vol) + " " + DISK);
                        assertThat(diskOf(id(vol))).as("the volume's claimed disk").isPresent();
                        assertThat(claims.all()).as("claims").hasSize(1);
                    }, this::deleteAll),
                    // The wipe: a kill inside it must leave the disk claimed until a wipe is done.
                    new Scenario("deleteVolume.ext4", () -> {
                        createStagedWithData(vol, ext4);
                        unstage(id(vol));
                    }, deleteCall(vol), answer -> assertNothingLeft(), this::deleteAll),
                    new Scenario("deleteVolume.block.filled", () -> {
                        createNew(vol, block());
                        stage(id(vol), block());
                        publishCall(vol, block()).blocking(hearth);
                        fill(target(id(vol)));
                        unpublish(id(vol));
                        unstage(id(vol));
                    }, deleteCall(vol), answer -> assertNothingLeft(), this::deleteAll),
                    new Scenario("block.nodeStageAndPublish", () -> createNew(vol, block()),
                            stageAndPublishCall(vol, block()), answer -> {
                                assertThat(BlockDevices.size(target(id(vol)))).isEqualTo(DISK);
                                writeRaw(target(id(vol)));
                            }, this::deleteAll));
            // Among them the first stage, which reads the whole disk, proves it zero and formats it.
            return Stream.concat(own.stream(), nodeScenarios(vol, DISK).stream()).toList();
        }

        /** Whatever the kill interrupted, a disk no one holds has nothing of a tenant's on it. */
        @Override
        void afterRestart() throws Exception {
            List<String> claimed = claims.all().stream().map(c -> c.disk().value()).toList();
            for (Map.Entry<Path, LoopDevice> disk : disks.entrySet()) {
                if (!claimed.contains(disk.getKey().toString())) {
                    assertThat(zeros(disk.getValue())).as("%s, claimed by no one after a restart", disk.getValue())
                            .isTrue();
                }
            }
        }

        @Override
        void assertNothingLeft() throws IOException {
            assertThat(claims.all()).as("disk claims").isEmpty();
            assertThat(records()).as("volume records").isEmpty();
            assertThat(TestDriver.mountsUnder(kubelet.getParent().toRealPath())).as("mounts").isEmpty();
            assertThat(views()).as("read-only views").isEmpty();
            try (Stream<Path> formatting = Files.list(state.resolve("formatting"))) {
                assertThat(formatting.toList()).as("open format records").isEmpty();
            }
            for (LoopDevice disk : disks.values()) {
                assertThat(zeros(disk)).as("%s after its volume was deleted", disk).isTrue();
            }
        }

        @Override
        void deleteAll() throws Exception {
            for (String name : List.of("pvc-crash", "pvc-warm")) {
                String id = id(name);
                if (diskOf(id).isPresent() || !records().isEmpty()) {
                    takeAway(id);
                }
            }
        }

        @Override
        void createNew(String name, VolumeCapability capability) throws Exception {
            create(name, DISK, capability, null).blocking(hearth);
        }

        @Override
        void fsck(String id) throws Exception {
            fsck(diskOf(id).orElseThrow().path(), "ext4");
        }

        @Override
        void assertReleased(String id) throws IOException {
            assertThat(views()).as("read-only views").isEmpty();
        }

        @Override
        byte[] raw(String id, long offset, int length) throws IOException {
            try (FileChannel disk = FileChannel.open(diskOf(id).orElseThrow().path())) {
                ByteBuffer raw = ByteBuffer.allocate(length);
                disk.read(raw, offset);
                return raw.array();
            }
        }

        private List<Path> records() throws IOException {
            Path records = state.resolve("pools/default/volumes");
            if (!Files.isDirectory(records)) {
                return List.of();
            }
            try (Stream<Path> files = Files.list(records)) {
                return files.toList();
            }
        }

        /** The loop device the volume's claim names, if it holds one. */
        private Optional<LoopDevice> diskOf(String id) throws IOException {
            return claims.all().stream().filter(c -> c.holder().equals(id))
                    .map(c -> disks.get(Path.of(c.disk().value()))).filter(d -> d != null).findFirst();
        }

        /** Loop devices over any of the disks: the read-only views of raw block publishes. */
        private List<Path> views() throws IOException {
            List<Path> devices = disks.values().stream().map(LoopDevice::path).toList();
            List<Path> views = new ArrayList<>();
            for (var loop : Loop.list()) {
                if (devices.contains(loop.backingFile())) {
                    views.add(loop.device().path());
                }
            }
            return views;
        }

        /** Every byte of the raw block volume written, and synced: a tenant who used the whole disk. */
        private void fill(Path device) throws IOException {
            try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
                for (long at = 0; at < DISK; at += DATA_BYTES) {
                    channel.write(ByteBuffer.wrap(data), at);
                }
                channel.force(true);
            }
        }

        private static boolean zeros(LoopDevice disk) throws IOException {
            try (FileChannel channel = FileChannel.open(disk.path())) {
                ByteBuffer buffer = ByteBuffer.allocateDirect(DATA_BYTES);
                for (long at = 0; at < DISK; at += DATA_BYTES) {
                    buffer.clear();
                    while (buffer.hasRemaining() && channel.read(buffer, at + buffer.position()) > 0) {
                        // read the whole MiB
                    }
                    buffer.flip();
                    while (buffer.remaining() >= Long.BYTES) {
                        if (buffer.getLong() != 0) {
                            return false;
                        }
                    }
                }
            }
            return true;
        }
    }
}
