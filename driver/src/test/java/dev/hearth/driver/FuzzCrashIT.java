package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.linux.Loop;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.VolumeId;
import io.grpc.CallOptions;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link CsiFuzzTest}'s random requests from two clients at once while {@code hearth serve} is killed
 * with SIGKILL (with the tools it runs) at random moments and started again on the same state;
 * one restart in three is itself killed. Where {@link BusyCrashIT} kills volumes' usual lives,
 * this kills the driver in whatever odd state the requests left: stages at odd paths, a volume
 * staged twice, half an expansion, an inline volume. No answer may be INTERNAL, UNKNOWN or
 * DATA_LOSS, or lack a message (a call the kill cut off, or sent while the driver is down, gets
 * UNAVAILABLE or CANCELLED from the client's gRPC), and the driver must still be running each time
 * it is to be killed.
 *
 * <p>Then the volumes' lives end in one of two ways ({@link Teardown}). After a reboot: the
 * driver is stopped and everything under the test's directory is unmounted and detached; started
 * again, it gets, as from the kubelet, an unpublish of every inline volume the clients asked for
 * (answered or not), and none of those volumes may be left. On the live node: the kubelet
 * unpublishes and unstages everything the clients asked to publish and stage, and then every
 * listed volume must delete at once and no mount or loop device may be left (what the kills left
 * in the kernel is the driver's to clean up, not a reboot's). Either way the driver must then
 * delete every volume and snapshot it lists, and its pools must hold nothing but what they held
 * before the first volume: a volume or snapshot that a kill left half-made and the driver neither
 * lists nor cleans up is a leak. No format record may be left. The seed is printed;
 * {@code -Dhearth.crash.seed=} repeats the requests and the kill times, {@code -Dhearth.fuzz.kills=}
 * sets the number of kills (8 unless given).
 *
 * <p>What it found: a file-pool delete killed between removing the image and the metadata left a
 * volume that was listed and could be staged with no image (INTERNAL), and one killed before it
 * dropped the volume's format record left that record for good (see {@code FilePoolTest} and
 * {@code NodeSafetyTest}, which pin both). With the pool's removal of unfinished images taken out,
 * two runs of 24 kills failed, one on an image left in the pool and one on INTERNAL. The inline
 * volumes' check found, in both tests' first runs, an inline volume under an ID of hearth's own
 * shape left after its unpublish: such an ID is found by the volume's staging directory alone, and
 * a kill between the volume and that directory lost it ({@code EphemeralVolumeTest} and
 * {@code FileCrashIT}'s {@code hearthShapedId} scenario pin the fix); an inline volume killed
 * in its mkfs whose unpublish deleted it but kept its format record, which DeleteVolume drops
 * ({@code EphemeralVolumeTest}); a freeze record's temporary file that a kill in its write left in
 * the pool ({@code FreezerTest}); and, on the live node, raw block publishes left bound after an
 * unstage the clients sent before the unpublish had detached the loop device under them, which
 * the next volume staged could get: another tenant's data in the pod ({@code NodeSafetyTest}).
 * In CI it found a raw block publish bound to a loop device whose unstage's detach was waiting for
 * someone's last close, which then freed it under the bind for the next volume, and an inline
 * volume published onto a file with data whose failed publish kept the volume for good ({@code
 * NodeSafetyTest} and {@code EphemeralVolumeTest} pin both).
 */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "mkfs.xfs", "mknod", "mkfifo"})
class FuzzCrashIT {

    private static final int CLIENTS = 2;
    private static final Set<Code> FORBIDDEN = EnumSet.of(Code.INTERNAL, Code.UNKNOWN, Code.DATA_LOSS);
    private static final String EPHEMERAL = "csi.storage.k8s.io/ephemeral";
    /** What a call cut off by the kill, or sent while the driver is down, gets from the client's own gRPC. */
    private static final Set<Code> DOWN = EnumSet.of(Code.UNAVAILABLE, Code.CANCELLED, Code.DEADLINE_EXCEEDED);

    @TempDir
    Path dir;

    /** The device pool's disks, where a case has them: a reboot ends the views over them, not the disks. */
    private Path disksDir;

    private KillableHearth hearth;

    @AfterEach
    void cleanUp() throws Exception {
        if (hearth != null) {
            hearth.close();
        }
        TestDriver.sweep(dir);
    }

    @Test
    void randomRequestsWhileTheDriverIsKilledGetNoInternalAndLeaveNothingUnlisted() throws Exception {
        fuzzAcrossKills(secondFilePool(), Teardown.AFTER_A_REBOOT);
    }

    /**
     * The same, then no reboot: the kubelet unpublishes and unstages all that the clients asked it to
     * publish and stage (killed or not), and then every listed volume must delete at once, with no
     * mount or loop device left: the node's kernel state after kills is the driver's to clean up.
     */
    @Test
    void theKubeletsTeardownOnTheLiveNodeLeavesNothingAfterTheKills() throws Exception {
        fuzzAcrossKills(secondFilePool(), Teardown.ON_THE_LIVE_NODE);
    }

    private String secondFilePool() {
        return "name=second,create=true,dir=" + dir.resolve("pool2")
                + ",capacity=2Gi,reserve=0,provisioning=thick,default-size=64Mi";
    }

    /**
     * The same with the second pool a device pool (four loop devices over sparse files); at the end
     * its capacity must be what it was before the first volume: every disk back in the pool.
     */
    @ParameterizedTest
    @EnumSource(Teardown.class)
    void theSameWithADevicePoolBesideTheFilePool(Teardown teardown, @TempDir Path disksDir) throws Exception {
        // The disks' files lie outside dir, whose loop devices the reboot's reset detaches.
        try {
            this.disksDir = disksDir;
            List<String> disks = TestDriver.disks(disksDir, 4, RequestFuzzer.SIZE);
            fuzzAcrossKills("name=second,kind=device,disks=" + String.join("|", disks), teardown);
        } finally {
            if (hearth != null) {
                hearth.close();
            }
            TestDriver.sweep(dir); // what is mounted from a disk, before the disk goes
            TestDriver.sweep(disksDir);
        }
    }

    /** How the volumes' lives end after the kills. */
    enum Teardown {
        /** The node rebooted: every mount and loop device gone; the kubelet unpublishes inline volumes. */
        AFTER_A_REBOOT,
        /** No reboot: the kubelet unpublishes and unstages everything on the node as the kills left it. */
        ON_THE_LIVE_NODE
    }

    private void fuzzAcrossKills(String secondPool, Teardown teardown) throws Exception {
        long seed = Long.getLong("hearth.crash.seed", new SecureRandom().nextLong());
        int kills = Integer.getInteger("hearth.fuzz.kills", 8);
        System.out.println("FuzzCrashIT: seed " + seed + " (repeat the requests and kill times with"
                + " -Dhearth.crash.seed=" + seed + "), " + kills + " kills, " + CLIENTS + " clients, teardown " + teardown);
        Path state = dir.resolve("state");
        Path root = dir.resolve("kubelet");
        hearth = new KillableHearth(dir.resolve("logs"), dir.resolve("csi.sock"), KillableHearth.JVM,
                dir.resolve("hearth.jsa"), List.of("--node-id", TestDriver.NODE, "--state-dir", state.toString(),
                        "--metrics-address", "",
                        "--pool", "name=default,create=true,dir=" + dir.resolve("pool") + ",capacity=16Gi,reserve=0,provisioning=thin,"
                                + "default-size=64Mi",
                        "--pool", secondPool));
        hearth.start();
        hearth.stop(); // writes the class archive: every restart after this one is faster
        hearth.start();
        Map<Path, List<String>> basePools = pools();
        long baseCapacity = secondCapacity();

        Random random = new Random(seed);
        RequestFuzzer fuzzer = new RequestFuzzer(new Random(seed), root);
        // What the clients asked the node to publish and stage, as the kubelet's unpublishes and unstages
        Set<NodeUnpublishVolumeRequest> published = new LinkedHashSet<>();
        Set<NodeUnpublishVolumeRequest> inline = new LinkedHashSet<>();
        Set<NodeUnstageVolumeRequest> staged = new LinkedHashSet<>();
        prepare(fuzzer, root).forEach(request -> record(request, published, inline, staged));
        List<MethodDescriptor<Message, Message>> methods = CsiFuzzTest.methods();
        Map<String, Map<Code, Integer>> tally = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        AtomicBoolean stopping = new AtomicBoolean();
        AtomicInteger sent = new AtomicInteger();
        Runnable client = () -> {
            while (!stopping.get()) {
                MethodDescriptor<Message, Message> method;
                Message request;
                synchronized (fuzzer) {
                    method = methods.get(fuzzer.random(methods.size()));
                    request = fuzzer.request(CsiFuzzTest.prototype(method));
                    record(request, published, inline, staged);
                }
                sent.incrementAndGet();
                Status status;
                try {
                    Message response = ClientCalls.blockingUnaryCall(hearth.channel(), method,
                            CallOptions.DEFAULT.withDeadlineAfter(60, TimeUnit.SECONDS), request);
                    synchronized (fuzzer) {
                        CsiFuzzTest.learn(request, response, fuzzer);
                    }
                    status = Status.OK;
                } catch (StatusRuntimeException e) {
                    status = e.getStatus();
                } catch (RuntimeException e) { // a channel shut down by the kill under the call
                    status = Status.UNAVAILABLE.withDescription(e.toString());
                }
                if (status.getCode() == Code.UNAVAILABLE) {
                    pause(); // the driver is down: the requests wait for the next one rather than spin
                }
                Status answer = status;
                synchronized (fuzzer) {
                    tally.computeIfAbsent(method.getBareMethodName(), m -> new TreeMap<>())
                            .merge(answer.getCode(), 1, Integer::sum);
                    if (!DOWN.contains(answer.getCode())) {
                        CsiFuzzTest.problem(answer, FORBIDDEN).ifPresent(p -> failures.add("#" + failures.size() + " "
                                + method.getBareMethodName() + ": " + p + "\n    request: "
                                + CsiFuzzTest.shown(request)));
                    }
                }
            }
        };
        try (ExecutorService threads = Executors.newFixedThreadPool(CLIENTS)) {
            List<Future<?>> running = new ArrayList<>();
            try {
                for (int i = 0; i < CLIENTS; i++) {
                    running.add(threads.submit(client));
                }
                for (int k = 1; k <= kills; k++) {
                    Thread.sleep(300 + random.nextInt(1700));
                    assertThat(hearth.running()).as("the driver is running when kill %d comes", k).isTrue();
                    List<String> tools = hearth.tools();
                    hearth.kill();
                    Thread.sleep(random.nextInt(200));
                    String startKilled = "";
                    if (random.nextInt(3) == 0) {
                        int delay = random.nextInt(1200);
                        hearth.startAndKillAfter(Duration.ofMillis(delay));
                        startKilled = "; its restart killed at " + delay + " ms";
                    }
                    hearth.start();
                    System.out.println("  kill " + k + "/" + kills + " after " + sent.get() + " requests"
                            + (tools.isEmpty() ? "" : " (running " + tools + ")") + startKilled
                            + "; restarted in " + hearth.lastStart().toMillis() + " ms");
                }
                Thread.sleep(1000); // the clients go on for a while on the last driver
            } finally {
                stopping.set(true);
            }
            for (Future<?> each : running) {
                each.get(2, TimeUnit.MINUTES);
            }
        }
        System.out.println("FuzzCrashIT: " + sent.get() + " requests\n" + tally);
        assertThat(failures).as("seed %d: these answers failed", seed).isEmpty();
        assertThat(hearth.running()).as("the driver is running after the requests").isTrue();

        if (teardown == Teardown.ON_THE_LIVE_NODE) {
            unpublishInline(Set.of(), inline, seed, tearDownAsTheKubelet(published, staged, seed));
            System.out.println("FuzzCrashIT: deleted the " + TestDriver.deleteAllListed(hearth.controller())
                    + " left, without a reboot");
            assertThat(TestDriver.loopDevicesUnder(dir.toRealPath())).as("seed %d: loop devices once every volume"
                    + " was unpublished, unstaged and deleted", seed).isEmpty();
        }
        // A reboot: the driver stopped, every mount and loop device gone; then every volume and
        // snapshot the driver lists is deleted, and nothing else may be left of any.
        hearth.stop();
        TestDriver.sweep(dir);
        if (disksDir != null) { // the disks outlive a reboot; the read-only views over them do not
            TestDriver.sweepViewsOver(disksDir);
        }
        System.out.println("FuzzCrashIT: loop devices after the sweep: " + Loop.list());
        hearth.start();
        if (teardown == Teardown.AFTER_A_REBOOT) {
            unpublishInline(inline, inline, seed, Map.of());
        }
        System.out.println("FuzzCrashIT: loop devices before the deletes: " + Loop.list());
        System.out.println("FuzzCrashIT: deleted the " + TestDriver.deleteAllListed(hearth.controller()) + " left");
        assertThat(TestDriver.volumeIds(hearth.controller())).as("volumes listed after all were deleted").isEmpty();
        assertThat(TestDriver.snapshotIds(hearth.controller())).as("snapshots listed after all were deleted").isEmpty();
        assertThat(secondCapacity()).as("the second pool's capacity once every listed volume is deleted (seed %d)",
                seed).isEqualTo(baseCapacity);
        hearth.stop();
        assertThat(pools()).as("the pools' files once every listed volume and snapshot is deleted (seed %d)", seed)
                .isEqualTo(basePools);
        assertThat(TestDriver.loopDevicesUnder(dir.toRealPath())).as("loop devices").isEmpty();
        assertThat(TestDriver.mountsUnder(dir.toRealPath())).as("mounts").isEmpty();
        assertThat(files(state.resolve("formatting"))).as("open format records").isEmpty();
        assertThat(entries(state.resolve("ephemeral"))).as("inline volumes' staging directories").isEmpty();
    }

    /**
     * What the kubelet does after the reboot for each inline volume a pod had, or may have had: every
     * inline publish the clients sent, whatever it was answered (one the kill cut off is uncertain to
     * the kubelet, which unpublishes it), is unpublished. None may fail with a forbidden code, and
     * after them no inline volume may be left: a kill in the middle of a publish or unpublish must
     * not leave one that only DeleteVolume (which nobody calls for an inline volume) would remove.
     */
    private void unpublishInline(Set<NodeUnpublishVolumeRequest> toUnpublish, Set<NodeUnpublishVolumeRequest> inline,
            long seed, Map<String, List<String>> earlier) {
        List<String> failures = new ArrayList<>();
        Map<String, String> answers = new TreeMap<>();
        for (NodeUnpublishVolumeRequest request : toUnpublish) {
            answers.put(CsiFuzzTest.shown(request), answer(() -> hearth.node().nodeUnpublishVolume(request), request,
                    failures));
        }
        if (!toUnpublish.isEmpty()) {
            System.out.println("FuzzCrashIT: unpublished the " + toUnpublish.size()
                    + " inline volumes the clients asked for");
        }
        assertThat(failures).as("seed %d: these unpublishes of inline volumes failed", seed).isEmpty();
        Map<String, String> ids = new TreeMap<>(); // each inline volume's possible IDs: its unpublish
        for (NodeUnpublishVolumeRequest request : inline) {
            for (String pool : List.of("default", "second")) {
                ids.put(VolumeId.mint(pool, "ephemeral:" + request.getVolumeId()).toString(),
                        CsiFuzzTest.shown(request) + " -> " + answers.getOrDefault(CsiFuzzTest.shown(request),
                                "unpublished with the rest; the last answers at its target: "
                                        + earlier.getOrDefault(request.getTargetPath(), List.of())));
            }
        }
        List<String> left = TestDriver.volumeIds(hearth.controller()).stream().filter(ids::containsKey)
                .map(id -> id + " after " + ids.get(id)).toList();
        assertThat(left).as("seed %d: inline volumes left after the kubelet unpublished them all", seed).isEmpty();
    }

    /**
     * The kubelet's end of every pod on a node that did not reboot: each publish and stage the
     * clients sent (whatever it was answered) is unpublished and unstaged, the latest first. As the
     * kubelet does, a call that fails is made again, in rounds, while a round gets somewhere (a call
     * answered OK or a mount gone): some of the fuzzer's paths nest one mount in another, which the
     * outer one's unmount refuses until the inner one is gone, and some share one target, which an
     * inline volume's unpublish refuses while another volume is mounted there. No answer may be
     * forbidden, and after the last round nothing may be left to take down.
     *
     * @return each call's last answer, by the path it names
     */
    private Map<String, List<String>> tearDownAsTheKubelet(Set<NodeUnpublishVolumeRequest> published,
            Set<NodeUnstageVolumeRequest> staged, long seed) throws IOException {
        List<Message> pending = new ArrayList<>(new ArrayList<>(published).reversed());
        pending.addAll(new ArrayList<>(staged).reversed());
        List<String> forbidden = new ArrayList<>();
        List<MountEntry> mounts = TestDriver.mountsUnder(dir.toRealPath());
        Map<String, String> last = new LinkedHashMap<>(); // each call's last answer
        Map<String, String> paths = new HashMap<>(); // each call's path
        for (int round = 1; round <= 8 && !pending.isEmpty(); round++) {
            List<Message> failed = new ArrayList<>();
            for (Message request : pending) {
                String answer = switch (request) {
                    case NodeUnpublishVolumeRequest unpublish -> {
                        paths.put(CsiFuzzTest.shown(request), unpublish.getTargetPath());
                        yield answer(() -> hearth.node().nodeUnpublishVolume(unpublish), request, forbidden);
                    }
                    case NodeUnstageVolumeRequest unstage -> {
                        paths.put(CsiFuzzTest.shown(request), unstage.getStagingTargetPath());
                        yield answer(() -> hearth.node().nodeUnstageVolume(unstage), request, forbidden);
                    }
                    default -> throw new IllegalArgumentException(request.toString());
                };
                last.put(CsiFuzzTest.shown(request), answer);
                if (!answer.equals("OK")) {
                    failed.add(request);
                }
            }
            List<MountEntry> left = TestDriver.mountsUnder(dir.toRealPath());
            System.out.println("FuzzCrashIT: the kubelet's round " + round + ": " + pending.size() + " unpublishes"
                    + " and unstages, " + failed.size() + " failed; " + mounts.size() + " mounts before, " + left.size()
                    + " after");
            boolean progress = failed.size() < pending.size() || !left.equals(mounts);
            pending = progress ? failed : List.of();
            mounts = left;
        }
        assertThat(forbidden).as("seed %d: these unpublishes and unstages failed", seed).isEmpty();
        Map<String, List<String>> answers = new TreeMap<>();
        last.forEach((call, answer) -> answers.computeIfAbsent(paths.get(call), p -> new ArrayList<>())
                .add(call + " -> " + answer));
        List<String> left = new ArrayList<>();
        for (MountEntry mount : TestDriver.mountsUnder(dir.toRealPath())) {
            left.add(mount + "\n    the last answers of the calls on that path: " + answers.entrySet().stream()
                    .filter(e -> names(e.getKey(), mount.mountPoint()))
                    .flatMap(e -> e.getValue().stream()).toList());
        }
        assertThat(left).as("seed %d: mounts once every volume was unpublished and unstaged", seed).isEmpty();
        return answers;
    }

    /** Whether a request's path names the mount point (through links); false for a path that is none. */
    private static boolean names(String path, Path mountPoint) {
        try {
            Path named = Path.of(path);
            return named.isAbsolute() && (named.equals(mountPoint) || named.toRealPath().equals(mountPoint));
        } catch (IOException | java.nio.file.InvalidPathException e) {
            return false;
        }
    }

    /** Calls {@code call}; its code and message, or OK; a forbidden answer goes to {@code failures}. */
    private static String answer(Runnable call, Message request, List<String> failures) {
        try {
            call.run();
            return "OK";
        } catch (StatusRuntimeException e) {
            CsiFuzzTest.problem(e.getStatus(), FORBIDDEN).ifPresent(p -> failures.add(p + "\n    request: "
                    + CsiFuzzTest.shown(request)));
            return e.getStatus().getCode() + " " + e.getStatus().getDescription();
        }
    }

    /** Notes a publish or stage the clients send as the unpublish or unstage that ends it. */
    private static void record(Message request, Set<NodeUnpublishVolumeRequest> published,
            Set<NodeUnpublishVolumeRequest> inline, Set<NodeUnstageVolumeRequest> staged) {
        switch (request) {
            case NodePublishVolumeRequest publish -> {
                NodeUnpublishVolumeRequest unpublish = NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(publish.getVolumeId()).setTargetPath(publish.getTargetPath()).build();
                latest(published, unpublish);
                if ("true".equals(publish.getVolumeContextMap().get(EPHEMERAL))) {
                    latest(inline, unpublish);
                }
            }
            case NodeStageVolumeRequest stage -> latest(staged, NodeUnstageVolumeRequest.newBuilder()
                    .setVolumeId(stage.getVolumeId()).setStagingTargetPath(stage.getStagingTargetPath()).build());
            default -> {}
        }
    }

    /** Adds {@code call} last, where it was before too: the kubelet undoes the latest publish of a path first. */
    private static <T> void latest(Set<T> calls, T call) {
        calls.remove(call);
        calls.add(call);
    }

    /** The names in a directory (none when it does not exist). */
    private static List<String> entries(Path directory) throws IOException {
        if (!Files.isDirectory(directory)) {
            return List.of();
        }
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** As {@link CsiFuzzTest}'s: real volumes staged and published, a snapshot, odd paths beside them. */
    private List<Message> prepare(RequestFuzzer fuzzer, Path root) throws IOException {
        record Made(String name, String pool, VolumeCapability capability, String fsType) {}
        List<Message> sent = new ArrayList<>();
        for (Made made : List.of(new Made("fuzz-ext4", "default", mount("ext4"), "ext4"),
                new Made("fuzz-xfs", "default", mount("xfs"), "xfs"), new Made("fuzz-block", "default", block(), ""),
                new Made("fuzz-second", "second", mount(""), ""))) {
            String id = hearth.controller().createVolume(CreateVolumeRequest.newBuilder().setName(made.name())
                    .addVolumeCapabilities(made.capability()).putParameters("hearth.dev/pool", made.pool()).build())
                    .getVolume().getVolumeId();
            RequestFuzzer.Known volume = fuzzer.known(id, made.name(), made.pool(), made.capability().hasBlock(),
                    made.fsType());
            fuzzer.learnVolume(volume);
            Files.createDirectories(volume.staging());
            Files.createDirectories(volume.target().getParent());
            NodeStageVolumeRequest stage = NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(volume.staging().toString()).setVolumeCapability(made.capability()).build();
            hearth.node().nodeStageVolume(stage);
            NodePublishVolumeRequest publish = NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(volume.staging().toString()).setTargetPath(volume.target().toString())
                    .setVolumeCapability(made.capability()).build();
            hearth.node().nodePublishVolume(publish);
            sent.add(stage);
            sent.add(publish);
        }
        fuzzer.learnSnapshot(hearth.controller().createSnapshot(CreateSnapshotRequest.newBuilder()
                .setName("fuzz-snapshot").setSourceVolumeId(fuzzer.volumes().get(1).id()).build())
                .getSnapshot().getSnapshotId());
        Path fixtures = Files.createDirectories(root.resolve("fixtures"));
        fuzzer.learnFixture(Files.writeString(fixtures.resolve("file"), "a regular file"));
        fuzzer.learnFixture(Files.createDirectories(fixtures.resolve("dir")));
        Files.writeString(Files.createDirectories(fixtures.resolve("full")).resolve("file"), "x");
        fuzzer.learnFixture(fixtures.resolve("full"));
        Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
        fuzzer.learnFixture(Files.createSymbolicLink(fixtures.resolve("link-dir"), elsewhere));
        return sent;
    }

    /**
     * What GetCapacity gives for the second pool: for a device pool, its free disks. (A file pool's
     * also follows the free space of the filesystem it shares with the driver's logs.)
     */
    private long secondCapacity() {
        return hearth.controller().getCapacity(GetCapacityRequest.newBuilder()
                .putParameters("hearth.dev/pool", "second").build()).getAvailableCapacity();
    }

    private static void pause() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }



    /** Every file under each pool's directory, by pool. */
    private Map<Path, List<String>> pools() throws IOException {
        Map<Path, List<String>> pools = new TreeMap<>();
        for (Path pool : List.of(dir.resolve("pool"), dir.resolve("pool2"))) {
            pools.put(pool, files(pool));
        }
        return pools;
    }

    private static List<String> files(Path directory) throws IOException {
        if (!Files.isDirectory(directory)) {
            return List.of();
        }
        try (Stream<Path> files = Files.walk(directory)) {
            return files.filter(Files::isRegularFile).map(p -> directory.relativize(p).toString()).sorted().toList();
        }
    }
}
