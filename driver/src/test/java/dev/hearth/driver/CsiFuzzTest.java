package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.GIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotResponse;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.CreateVolumeResponse;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.linux.Loop;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.file.FilePoolConfig;
import io.grpc.CallOptions;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random but well-typed requests to every RPC of Identity, Controller and Node, against a real
 * driver with real volumes staged and published (see {@link RequestFuzzer}). Whatever a request
 * holds, the driver must answer it with a status that is the client's to act on: never INTERNAL
 * or UNKNOWN, never a broken connection or no answer, and always with a message of bounded size.
 *
 * <p>The seed is fixed, so a run is the same every time; {@code -Dhearth.fuzz.seed=N} picks
 * another, {@code -Dhearth.fuzz.requests=N} and {@code -Dhearth.fuzz.seconds=S} make it longer,
 * {@code -Dhearth.fuzz.verbose=true} prints every request and answer, and
 * {@code -Dhearth.fuzz.clients=N} sends the first two runs from N clients at once (a run is then
 * not the same every time). A failure names the seed that reproduces it. Whatever the run staged, published or attached lies under the test's
 * directory, where closing the driver undoes it; the test checks that it does.
 */
class CsiFuzzTest extends DriverFixture {

    private static final long SEED = Long.getLong("hearth.fuzz.seed", 20261124L);
    private static final int REQUESTS = Integer.getInteger("hearth.fuzz.requests", 4000);
    private static final Duration BUDGET = Duration.ofSeconds(Long.getLong("hearth.fuzz.seconds", 45));
    private static final boolean VERBOSE = Boolean.getBoolean("hearth.fuzz.verbose");
    /** How many clients the first two runs send from (the third always four): more than one for a hunt. */
    private static final int CLIENTS = Integer.getInteger("hearth.fuzz.clients", 1);
    /** What no request may ever get: the driver's own failure, or no usable answer at all. */
    private static final Set<Code> FORBIDDEN = EnumSet.of(Code.INTERNAL, Code.UNKNOWN, Code.UNAVAILABLE,
            Code.DEADLINE_EXCEEDED, Code.CANCELLED, Code.DATA_LOSS);
    /** The most a status message may take (what ErrorMapping lets through, with room to spare). */
    private static final int MAX_DESCRIPTION = 2048;

    /** Each publish and stage that was answered OK, as the unpublish or unstage that ends it; guarded by the run's fuzzer. */
    private final Set<NodeUnpublishVolumeRequest> published = new LinkedHashSet<>();
    private final Set<NodeUnstageVolumeRequest> staged = new LinkedHashSet<>();

    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "mkfs.xfs", "mknod", "mkfifo"})
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void randomRequestsToEveryRpcGetAnAnswerThatIsNeverInternalOrUnknown() throws Exception {
        fuzz(secondFilePool(), SEED, REQUESTS, BUDGET, true);
    }

    /**
     * The same with the second pool a device pool (whole disks: four loop devices over sparse files):
     * creates that fit a disk or not, deletes that wipe, stages and publishes of a whole disk. A
     * shorter run of another seed. Six other seeds of 3,000 requests each gave no failure either, nor
     * did eight of 10,000 (four from one client, four from four).
     */
    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "mkfs.xfs", "mknod", "mkfifo"})
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void theSameWithADevicePoolBesideTheFilePool(@TempDir Path disksDir) throws Exception {
        // The disks' files lie outside the driver's directory, which closing a driver sweeps of loop devices.
        try {
            List<String> disks = TestDriver.disks(disksDir, 4, RequestFuzzer.SIZE);
            fuzz(PoolSpec.parse("name=second,kind=device,disks=" + String.join("|", disks), dir.resolve("state"))
                    .config(), SEED + 1, REQUESTS / 2, BUDGET.dividedBy(2), false);
        } finally {
            TestDriver.sweep(disksDir); // a disk still mounted goes when the fixture's driver is closed and unmounts it
        }
    }

    /**
     * The main run's pools and volumes, fuzzed by four clients at once: calls on the same volumes
     * and paths meet in the driver as no one client's can. Which call wins a meeting depends on
     * the threads, so a run is not the same every time; a failure still names its request.
     */
    @Test
    @RequiresRoot
    @RequiresTools({"mkfs.ext4", "mkfs.xfs", "mknod", "mkfifo"})
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void theSameFromFourClientsAtOnce() throws Exception {
        fuzz(secondFilePool(), SEED + 2, REQUESTS, BUDGET, false, 4);
    }

    /**
     * The main run's requests with {@code second} as the second pool, outside JUnit (in a user-mode
     * Linux guest, for an lvm pool): a driver on {@code dir}, closed at the end.
     */
    static void fuzzWith(Path dir, PoolConfig second, long seed, int requests, Duration budget, int clients)
            throws Exception {
        CsiFuzzTest test = new CsiFuzzTest();
        test.dir = dir;
        test.startDriver();
        try {
            test.fuzz(second, seed, requests, budget, false, clients);
        } finally {
            test.stopDriver();
        }
    }

    /** The fuzz's default pool: thin, and large enough for every size a request may ask. */
    static FilePoolConfig defaultPool(Path dir) {
        return new FilePoolConfig("default", dir.resolve("pool"), 16 * GIB, Provisioning.THIN, true, RequestFuzzer.SIZE);
    }

    private FilePoolConfig secondFilePool() {
        return new FilePoolConfig("second", dir.resolve("pool2"), 2 * GIB, Provisioning.THICK, true, RequestFuzzer.SIZE);
    }

    private void fuzz(PoolConfig second, long seed, int requests, Duration budget, boolean depth) throws Exception {
        fuzz(second, seed, requests, budget, depth, CLIENTS);
    }

    /**
     * @param depth whether every deep call must have got past validation at least once (the main
     *     run's seed does; a shorter run's may not, and that says nothing of the driver)
     * @param clients how many send at once; with one, the run is the same every time
     */
    private void fuzz(PoolConfig second, long seed, int requests, Duration budget, boolean depth, int clients)
            throws Exception {
        driver.close();
        driver = TestDriver.start(dir, defaultPool(dir), second);
        kubelet = new Kubelet(driver);
        published.clear();
        staged.clear();
        Path root = dir.resolve("kubelet");
        RequestFuzzer fuzzer = new RequestFuzzer(new Random(seed), root);
        prepare(fuzzer, root);

        List<MethodDescriptor<Message, Message>> methods = methods();
        Map<String, Map<Code, Integer>> tally = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        long started = System.nanoTime();
        int[] sent = {0};
        boolean[] stopped = {false};
        // The fuzzer and what the run keeps are guarded by the fuzzer; only the calls run outside it.
        Runnable client = () -> {
            while (true) {
                MethodDescriptor<Message, Message> method;
                Message request;
                int number;
                synchronized (fuzzer) {
                    if (stopped[0] || sent[0] >= requests || System.nanoTime() - started >= budget.toNanos()
                            || failures.size() >= 20) {
                        return;
                    }
                    method = methods.get(fuzzer.random(methods.size()));
                    request = fuzzer.request(prototype(method));
                    number = ++sent[0];
                }
                Status status = call(method, request, fuzzer);
                synchronized (fuzzer) {
                    if (VERBOSE) {
                        System.out.printf("fuzz #%d %s -> %s %s%n    %s%n", number, method.getBareMethodName(),
                                status.getCode(), shown(String.valueOf(status.getDescription())), shown(request));
                    }
                    tally.computeIfAbsent(method.getBareMethodName(), m -> new TreeMap<>())
                            .merge(status.getCode(), 1, Integer::sum);
                    problem(status).ifPresent(p -> failures.add("#" + failures.size() + " "
                            + method.getBareMethodName() + ": " + p + "\n    request: " + shown(request)));
                    if (status.getCode() == Code.UNAVAILABLE || status.getCode() == Code.DEADLINE_EXCEEDED) {
                        stopped[0] = true; // the driver is gone or hangs: the rest would only repeat it
                    }
                }
            }
        };
        try (ExecutorService threads = Executors.newFixedThreadPool(clients)) {
            List<Future<?>> running = new ArrayList<>();
            for (int i = 0; i < clients; i++) {
                running.add(threads.submit(client));
            }
            for (Future<?> each : running) {
                each.get();
            }
        }
        int total = sent[0];
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.printf("fuzz: seed %d, %d clients, %d requests in %.1f s%n%s%n", seed, clients, total, seconds,
                tally);

        assertThat(failures).as("fuzz seed %d (rerun with -Dhearth.fuzz.seed=%d): %d requests from %d clients,"
                + " these failed", seed, seed, total, clients).isEmpty();
        assertThat(driver.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue())
                .as("the driver still answers Probe after the fuzz").isTrue();
        if (depth && total == requests) { // a run cut short by the time budget may not have got that far
            for (String deep : List.of("CreateVolume", "CreateSnapshot", "NodeStageVolume", "NodePublishVolume",
                    "NodeUnpublishVolume", "NodeGetVolumeStats", "NodeExpandVolume", "DeleteVolume")) {
                assertThat(tally.getOrDefault(deep, Map.of()).getOrDefault(Code.OK, 0))
                        .as("requests of %s that got past validation (seed %d)", deep, seed).isPositive();
            }
        }

        // The driver mounts only where nothing is mounted: two mounts on one path are two calls that
        // both found it free.
        Map<Path, Long> stacked = TestDriver.mountsUnder(dir.toRealPath()).stream()
                .collect(Collectors.groupingBy(MountEntry::mountPoint, TreeMap::new, Collectors.counting()));
        stacked.values().removeIf(count -> count == 1);
        assertThat(stacked).as("paths with more than one mount (seed %d)", seed).isEmpty();

        tearDownAsTheKubelet(seed);
        // Closing the driver must undo whatever the run mounted or attached: check it here, where a
        // leftover still fails the test, then start a driver for the fixture to close.
        driver.close();
        assertThat(TestDriver.mountsUnder(dir.toRealPath())).as("mounts left under %s", dir).isEmpty();
        assertThat(TestDriver.loopDevicesUnder(dir.toRealPath())).as("loop devices left").isEmpty();
        driver = TestDriver.start(dir);
    }

    /**
     * On the live node, what the kubelet and the provisioner do once the pods and claims are gone:
     * every publish and stage answered OK is undone, the latest first (a path published again
     * belongs to its last publish), then every listed snapshot and volume is deleted. None of it
     * may get a forbidden answer, and after it nothing the driver made may be left under the test's
     * directory: no mount, no loop device, no volume. A random run must never leave what only a
     * restart, a reboot or closing the driver would clean up.
     */
    private void tearDownAsTheKubelet(long seed) throws IOException {
        List<String> forbidden = new ArrayList<>();
        NodeGrpc.NodeBlockingStub node = driver.node();
        for (NodeUnpublishVolumeRequest unpublish : new ArrayList<>(published).reversed()) {
            undo(() -> node.nodeUnpublishVolume(unpublish), unpublish, forbidden);
        }
        for (NodeUnstageVolumeRequest unstage : new ArrayList<>(staged).reversed()) {
            undo(() -> node.nodeUnstageVolume(unstage), unstage, forbidden);
        }
        assertThat(forbidden).as("seed %d: these of the kubelet's unpublishes and unstages failed", seed).isEmpty();
        assertThat(TestDriver.mountsUnder(dir.toRealPath())).as("seed %d: mounts once the %d publishes and %d stages"
                + " answered OK were undone, on the live node (loop devices: %s)", seed, published.size(), staged.size(),
                Loop.list()).isEmpty();
        System.out.println("fuzz: undid " + published.size() + " publishes and " + staged.size()
                + " stages; deleted the " + TestDriver.deleteAllListed(driver.controller()) + " left");
        assertThat(TestDriver.volumeIds(driver.controller())).as("seed %d: volumes listed once all were deleted",
                seed).isEmpty();
        assertThat(TestDriver.loopDevicesUnder(dir.toRealPath())).as("seed %d: loop devices once every volume was"
                + " unpublished, unstaged and deleted, on the live node", seed).isEmpty();
    }

    private static void undo(Runnable call, Message request, List<String> forbidden) {
        try {
            call.run();
        } catch (StatusRuntimeException e) {
            problem(e.getStatus()).ifPresent(p -> forbidden.add(p + "\n    request: " + shown(request)));
        }
    }

    /** Notes a publish or stage answered OK as the unpublish or unstage that ends it. */
    private void record(Message request) {
        switch (request) {
            case NodePublishVolumeRequest publish -> published.add(NodeUnpublishVolumeRequest.newBuilder()
                    .setVolumeId(publish.getVolumeId()).setTargetPath(publish.getTargetPath()).build());
            case NodeStageVolumeRequest stage -> staged.add(NodeUnstageVolumeRequest.newBuilder()
                    .setVolumeId(stage.getVolumeId()).setStagingTargetPath(stage.getStagingTargetPath()).build());
            default -> {}
        }
    }

    /** Real volumes for requests to name, staged and published as the kubelet would; odd paths beside them. */
    private void prepare(RequestFuzzer fuzzer, Path root) throws IOException {
        String ext4 = driver.create("fuzz-ext4", RequestFuzzer.SIZE, mount("ext4")).getVolumeId();
        String xfs = driver.create("fuzz-xfs", RequestFuzzer.SIZE, mount("xfs")).getVolumeId();
        String raw = driver.create("fuzz-block", RequestFuzzer.SIZE, block()).getVolumeId();
        String second = driver.controller().createVolume(CreateVolumeRequest.newBuilder().setName("fuzz-second")
                .addVolumeCapabilities(mount("")).putParameters("hearth.dev/pool", "second").build())
                .getVolume().getVolumeId();
        fuzzer.learnVolume(fuzzer.known(ext4, "fuzz-ext4", "default", false, "ext4"));
        fuzzer.learnVolume(fuzzer.known(xfs, "fuzz-xfs", "default", false, "xfs"));
        fuzzer.learnVolume(fuzzer.known(raw, "fuzz-block", "default", true, ""));
        fuzzer.learnVolume(fuzzer.known(second, "fuzz-second", "second", false, ""));
        for (RequestFuzzer.Known volume : fuzzer.volumes()) {
            VolumeCapability capability = volume.block() ? block() : mount(volume.fsType());
            Files.createDirectories(volume.staging());
            Files.createDirectories(volume.target().getParent());
            kubelet.stage(volume.id(), volume.staging(), capability);
            kubelet.publish(volume.id(), volume.staging(), volume.target(), capability);
            record(NodeStageVolumeRequest.newBuilder().setVolumeId(volume.id())
                    .setStagingTargetPath(volume.staging().toString()).build());
            record(NodePublishVolumeRequest.newBuilder().setVolumeId(volume.id())
                    .setTargetPath(volume.target().toString()).build());
        }
        fuzzer.learnSnapshot(driver.snapshot("fuzz-snapshot", xfs).getSnapshotId());

        Path fixtures = Files.createDirectories(root.resolve("fixtures"));
        Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
        Files.writeString(elsewhere.resolve("file"), "not the driver's");
        fuzzer.learnFixture(Files.writeString(fixtures.resolve("file"), "a regular file"));
        fuzzer.learnFixture(Files.createDirectories(fixtures.resolve("dir")));
        Files.writeString(Files.createDirectories(fixtures.resolve("full")).resolve("file"), "x");
        fuzzer.learnFixture(fixtures.resolve("full"));
        fuzzer.learnFixture(Files.createSymbolicLink(fixtures.resolve("link-dir"), elsewhere));
        fuzzer.learnFixture(Files.createSymbolicLink(fixtures.resolve("link-file"), elsewhere.resolve("file")));
        fuzzer.learnFixture(fixtures.resolve("link-dir/file"));
        fuzzer.learnFixture(run("mknod", fixtures.resolve("null").toString(), "c", "1", "3"));
        fuzzer.learnFixture(run("mknod", fixtures.resolve("no-device").toString(), "b", "7", "1048000"));
        fuzzer.learnFixture(run("mkfifo", fixtures.resolve("fifo").toString()));
        String device = driver.poolLoopDevices().stream()
                .filter(l -> l.backingFile().getFileName().toString().startsWith(raw)).findFirst().orElseThrow()
                .device().path().getFileName().toString();
        fuzzer.learnFixture(run("mknod", fixtures.resolve("volume-device").toString(), "b", "7",
                device.substring("loop".length())));
    }

    private static Path run(String... command) throws IOException {
        try {
            Process process = new ProcessBuilder(command).inheritIO().start();
            if (process.waitFor() != 0) {
                throw new IOException(String.join(" ", command) + " failed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        return Path.of(command[1]);
    }

    /** Calls the method and learns from a success what later requests can name. */
    private Status call(MethodDescriptor<Message, Message> method, Message request, RequestFuzzer fuzzer) {
        Message response;
        try {
            response = ClientCalls.blockingUnaryCall(driver.channel(), method,
                    CallOptions.DEFAULT.withDeadlineAfter(60, TimeUnit.SECONDS), request);
        } catch (StatusRuntimeException e) {
            return e.getStatus();
        }
        synchronized (fuzzer) {
            learn(request, response, fuzzer);
            record(request);
        }
        return Status.OK;
    }

    static void learn(Message request, Message response, RequestFuzzer fuzzer) {
        if (response instanceof CreateVolumeResponse created && request instanceof CreateVolumeRequest create) {
            boolean raw = create.getVolumeCapabilitiesCount() > 0 && create.getVolumeCapabilities(0).hasBlock();
            fuzzer.learnVolume(fuzzer.known(created.getVolume().getVolumeId(), create.getName(),
                    created.getVolume().getVolumeContextOrDefault("hearth.dev/pool", "default"), raw, ""));
        }
        if (response instanceof CreateSnapshotResponse snapshot) {
            fuzzer.learnSnapshot(snapshot.getSnapshot().getSnapshotId());
        }
    }

    static Optional<String> problem(Status status) {
        return problem(status, FORBIDDEN);
    }

    /** What is wrong with an answer: a code of {@code forbidden}, no message, or one too long. */
    static Optional<String> problem(Status status, Set<Code> forbidden) {
        if (status.isOk()) {
            return Optional.empty();
        }
        String description = status.getDescription();
        if (forbidden.contains(status.getCode())) {
            return Optional.of(status.getCode() + " " + shown(String.valueOf(description)));
        }
        if (description == null || description.isBlank()) {
            return Optional.of(status.getCode() + " without a message");
        }
        if (description.length() > MAX_DESCRIPTION) {
            return Optional.of(status.getCode() + " with a message of " + description.length()
                    + " characters: " + shown(description));
        }
        return Optional.empty();
    }

    /** Every unary RPC of the three services; the node's, which reach the most code, three times. */
    @SuppressWarnings("unchecked")
    static List<MethodDescriptor<Message, Message>> methods() {
        List<MethodDescriptor<Message, Message>> methods = new ArrayList<>();
        for (ServiceDescriptor service : List.of(IdentityGrpc.getServiceDescriptor(),
                ControllerGrpc.getServiceDescriptor(), NodeGrpc.getServiceDescriptor())) {
            for (MethodDescriptor<?, ?> method : service.getMethods()) {
                int weight = service == NodeGrpc.getServiceDescriptor() ? 3 : 1;
                for (int i = 0; i < weight; i++) {
                    methods.add((MethodDescriptor<Message, Message>) method);
                }
            }
        }
        return methods;
    }

    static Message prototype(MethodDescriptor<Message, Message> method) {
        return (Message) ((MethodDescriptor.PrototypeMarshaller<?>) method.getRequestMarshaller()).getMessagePrototype();
    }

    /** A request or message as a bounded, printable line. */
    static String shown(Object value) {
        String text = value instanceof Message m ? TextFormat.shortDebugString(m) : value.toString();
        int length = text.length();
        text = text.replaceAll("(.)\\1{40,}", "$1$1$1…");
        StringBuilder out = new StringBuilder();
        for (char c : text.substring(0, Math.min(text.length(), 600)).toCharArray()) {
            out.append(c < 0x20 || (c >= 0x7f && c < 0xa0) || Character.isSurrogate(c)
                    ? String.format("\\u%04x", (int) c) : String.valueOf(c));
        }
        return text.length() > 600 ? out + "…(" + length + " characters)" : out.toString();
    }
}
