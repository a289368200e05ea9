package dev.hearth.driver.bench;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGetCapabilitiesRequest;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.GetPluginCapabilitiesRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.ListVolumesResponse;
import dev.hearth.csi.v1.NodeGetCapabilitiesRequest;
import dev.hearth.csi.v1.NodeGetInfoRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeServiceCapability;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.ProbeRequest;
import dev.hearth.csi.v1.ProbeResponse;
import dev.hearth.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.hearth.csi.v1.VolumeCapability;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import java.io.File;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The one CSI client of test/bench/csi: it starts a driver (hearth, csi-driver-host-path, any CSI
 * plugin) from the command line it is given, and drives it over its unix socket the way the
 * external-provisioner and the kubelet would, timing each RPC. It knows nothing of the driver it
 * talks to, so the numbers of different drivers come from the same client code.
 *
 * <p>Arguments: {@code key=value...} and then {@code -- COMMAND...}, the driver's command line. Keys:
 * {@code socket} (the path the driver serves), {@code work} (a directory for staging and target
 * paths), {@code do} (a comma list of scenarios, run in this order: ready, first, lifecycle, rpcs,
 * burst, many, hold, restart), {@code rounds}, {@code size} (bytes of a lifecycle's volume), {@code burst}
 * (how many concurrent creates), {@code many} (how many volumes for many/restart), {@code params}
 * (CreateVolume parameters, {@code k=v;k=v}), {@code clientwarm} (rounds of the client's own warm-up,
 * 50), {@code firsts} (how many filesystem lifecycles the first scenario times one by one, 1); {@code floor}, {@code floorwork} and {@code floorlabel}
 * (test/bench/floor, its directory and its label: a floor round runs before each lifecycle round of
 * the same kind, so that load which comes and goes on the machine falls on both alike).
 *
 * <p>Output, one result per line, for test/bench/csi to tabulate: {@code KEY MILLIS}, where one key
 * may be printed once per round ({@code fs.NodeStageVolume 41.2}); the script takes medians.
 */
public final class CsiBench {

    private static final long MIB = 1L << 20;

    private final Map<String, String> options;
    private final List<String> command;
    private Path socket;
    private final Path work;
    private volatile Process driver;
    private ManagedChannel channel;
    private boolean stages;
    private int serial;

    private CsiBench(Map<String, String> options, List<String> command) {
        this.options = options;
        this.command = command;
        this.socket = Path.of(options.get("socket"));
        this.work = Path.of(options.get("work"));
    }

    public static void main(String[] args) throws Exception {
        int dash = Arrays.asList(args).indexOf("--");
        Map<String, String> options = new HashMap<>();
        for (String arg : Arrays.asList(args).subList(0, dash)) {
            int eq = arg.indexOf('=');
            options.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        CsiBench bench = new CsiBench(options, List.of(args).subList(dash + 1, args.length));
        // A client stopped by a signal (the script's clean-up, Ctrl-C) still stops its driver.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            Process driver = bench.driver;
            if (driver != null && driver.isAlive()) {
                driver.destroy();
                try {
                    if (!driver.waitFor(20, TimeUnit.SECONDS)) {
                        driver.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    driver.destroyForcibly();
                }
            }
        }));
        try {
            bench.run(List.of(options.getOrDefault("do", "ready").split(",")));
        } finally {
            bench.stop();
        }
    }

    private void run(List<String> scenarios) throws Exception {
        int rounds = Integer.parseInt(options.getOrDefault("rounds", "20"));
        long size = Long.parseLong(options.getOrDefault("size", String.valueOf(1L << 30)));
        warmClient(size, Integer.parseInt(options.getOrDefault("clientwarm", "50")));
        start("ready");
        if (scenarios.contains("ready")) {
            Thread.sleep(2000);
            print("rss", rssMib());
        }
        var node = NodeGrpc.newBlockingStub(channel);
        stages = node.nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList()
                .stream().anyMatch(c -> c.getRpc().getType() == NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME);
        if (scenarios.contains("first")) {
            Map<String, ThreadCpu> before = threadCpu();
            Map<String, Double> first = lifecycle(true, size);
            first.forEach((step, ms) -> print(step.equals("total") ? "first" : "first." + step, ms));
            threadCpuMillisSince(before).forEach((group, ms) -> print("first.cpu." + group, ms));
            // With firsts=N, the filesystem lifecycles after it too, one by one, up to the Nth: how
            // many a driver needs before it runs at its later pace.
            for (int n = 2; n <= Integer.parseInt(options.getOrDefault("firsts", "1")); n++) {
                Map<String, ThreadCpu> then = threadCpu();
                print("first." + n, lifecycle(true, size).get("total"));
                String key = "first." + n + ".cpu.";
                threadCpuMillisSince(then).forEach((group, ms) -> print(key + group, ms));
            }
        }
        if (scenarios.contains("lifecycle")) {
            floor("fs", -1, size); // the first of each kind is not counted
            lifecycle(true, size);
            floor("block", -1, size);
            lifecycle(false, size);
            for (int round = 0; round < rounds; round++) {
                floor("fs", round, size);
                lifecycle(true, size).forEach((step, ms) -> print("fs." + step, ms));
                floor("block", round, size);
                lifecycle(false, size).forEach((step, ms) -> print("block." + step, ms));
            }
        }
        if (scenarios.contains("rpcs")) {
            rpcs(rounds, size);
        }
        if (scenarios.contains("burst")) {
            burst(Integer.parseInt(options.getOrDefault("burst", "64")), Math.max(rounds, 5));
        }
        if (scenarios.contains("many")) {
            many(Integer.parseInt(options.getOrDefault("many", "1000")), Math.max(rounds, 3));
        }
        if (scenarios.contains("hold")) {
            hold(size);
        }
        if (scenarios.contains("settled")) {
            // What a driver holds once it has sat idle a while after its work: the start's and the
            // scenarios' transient memory (the compiler's arenas, buffers freed to malloc) handed
            // back where the JVM's flags say so. One reading, settle=SECONDS after the last call.
            Thread.sleep(TimeUnit.SECONDS.toMillis(Long.parseLong(options.getOrDefault("settle", "12"))));
            print("rss.settled", rssMib());
        }
        if (scenarios.contains("restart")) {
            stop();
            start("restart");
        }
    }

    /**
     * With the option {@code floor} (test/bench/floor), one round of the floor's lifecycle of KIND,
     * passed through as it printed it (its lines carry {@code floorlabel}); round -1 is not printed.
     */
    private void floor(String kind, int round, long size) throws Exception {
        String script = options.get("floor");
        if (script == null) {
            return;
        }
        Path dir = Path.of(options.get("floorwork"), kind + "-" + (round < 0 ? "first" : round));
        Process floor = new ProcessBuilder(script, kind, options.getOrDefault("floorlabel", "floor"), dir.toString(),
                String.valueOf(size)).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(floor.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (floor.waitFor() != 0) {
            throw new IllegalStateException("the floor " + script + " " + kind + " failed (exit " + floor.exitValue() + ")");
        }
        if (round >= 0) {
            System.out.print(out);
            System.out.flush();
        }
    }

    private void print(String key, double millis) {
        System.out.printf(Locale.ROOT, "%s %.2f%n", key, millis);
        System.out.flush();
    }

    // ---- the client's own start-up, kept out of the driver's numbers

    /**
     * Makes every call the scenarios make against a stand-in server in this process that answers
     * each with an empty response. The client's first channel and first calls of each kind cost it
     * some 0.4 s of class loading and compilation (host-path's "start to ready" was 0.44 s through a
     * cold client, 18 ms through a warm one); paid here, it stays out of "start to ready" and "first
     * lifecycle after start", which are meant to time the driver alone.
     * They are made {@code clientwarm} times (50): after 3, as before, the client's own code was
     * still interpreted in the first lifecycle, which a Go sidecar's never is (alternating starts:
     * 123-141 ms against 103-118 ms after 100).
     */
    private void warmClient(long size, int warmRounds) throws Exception {
        Path dir = Files.createTempDirectory(Files.createDirectories(work), "client-warm-up");
        Path fakeSocket = dir.resolve("csi.sock");
        List<io.grpc.ServerServiceDefinition> services = BareServer.emptyServices();
        ExecutorService executor = Executors.newSingleThreadExecutor();
        var server = dev.hearth.driver.server.GrpcServer.start(
                dev.hearth.driver.server.Endpoint.parse("unix://" + fakeSocket), services, List.of(), executor);
        Path driverSocket = socket;
        try {
            socket = fakeSocket;
            channel = channel();
            stages = true;
            for (int round = 0; round < warmRounds; round++) {
                lifecycle(true, size);
                lifecycle(false, size);
                IdentityGrpc.newBlockingStub(channel).probe(ProbeRequest.getDefaultInstance());
                rpcCalls(IdentityGrpc.newBlockingStub(channel), ControllerGrpc.newBlockingStub(channel),
                        NodeGrpc.newBlockingStub(channel), "warm-up", Path.of("/"), 1).values()
                        .forEach(Supplier::get);
            }
        } finally {
            socket = driverSocket;
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            channel = null;
            server.shutdown(java.time.Duration.ZERO);
            executor.shutdownNow();
            try (var left = Files.walk(dir)) {
                left.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    // ---- the driver's process

    /** Starts the driver and prints KEY and the milliseconds until its Probe answered ready. */
    private void start(String key) throws Exception {
        Files.deleteIfExists(socket);
        long t0 = System.nanoTime();
        driver = new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectOutput(ProcessBuilder.Redirect.appendTo(work.resolve("driver.log").toFile()))
                .redirectErrorStream(true).start();
        long deadline = t0 + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            if (!driver.isAlive()) {
                throw new IllegalStateException("the driver exited " + driver.exitValue() + "; see " + work.resolve("driver.log"));
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the driver did not get ready in 60 s; see " + work.resolve("driver.log"));
            }
            if (accepts(key)) {
                channel = channel();
                try {
                    ProbeResponse probe = IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
                            .probe(ProbeRequest.getDefaultInstance());
                    if (!probe.hasReady() || probe.getReady().getValue()) {
                        break;
                    }
                } catch (RuntimeException notYet) {
                    // serving but not yet answering: a fresh channel next time, free of grpc's reconnect backoff
                }
                channel.shutdownNow();
            }
            Thread.sleep(2);
        }
        print(key, (System.nanoTime() - t0) / 1e6);
    }

    /**
     * Whether the socket takes a connection; the first that does is timed to the server's first
     * HTTP/2 frame (KEY.handshake), as a sidecar's first connection would be: grpc-go gives a new
     * connection about one second for it, and a sidecar that misses it exits.
     */
    private boolean accepts(String key) {
        if (!Files.exists(socket)) {
            return false;
        }
        long t0 = System.nanoTime();
        try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
            if (!handshakeTimed) {
                handshakeTimed = true;
                probe.write(ByteBuffer.wrap(HTTP2_PREFACE_AND_SETTINGS));
                ByteBuffer frameHeader = ByteBuffer.allocate(9);
                while (frameHeader.hasRemaining() && probe.read(frameHeader) >= 0) {
                    // blocks until the server's SETTINGS frame header is in, or it hangs up
                }
                if (!frameHeader.hasRemaining()) {
                    print(key + ".handshake", (System.nanoTime() - t0) / 1e6);
                }
            }
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /** The HTTP/2 client preface and an empty SETTINGS frame: what a gRPC client sends first. */
    private static final byte[] HTTP2_PREFACE_AND_SETTINGS = ByteBuffer.allocate(24 + 9)
            .put("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII))
            .put(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0})
            .array();

    private boolean handshakeTimed;

    private ManagedChannel channel() {
        var builder = Grpc.newChannelBuilder("unix://" + socket, InsecureChannelCredentials.create());
        if (builder instanceof NettyChannelBuilder netty) {
            netty.withOption(ChannelOption.SO_KEEPALIVE, null);
        }
        return builder.build();
    }

    private void stop() throws Exception {
        if (channel != null) {
            channel.shutdownNow();
            channel = null;
        }
        if (driver != null && driver.isAlive()) {
            driver.destroy();
            if (!driver.waitFor(30, TimeUnit.SECONDS)) {
                driver.destroyForcibly().waitFor();
            }
        }
    }

    /** One thread's reading: what it does, and its CPU time and its wait for a CPU so far, in milliseconds. */
    private record ThreadCpu(String group, double cpu, double waited) {}

    /**
     * The CPU time the driver's threads have used since {@code before}, in milliseconds, by what
     * they do: a JVM's request handlers (hearth's hearth-rpc threads; a virtual thread's carrier for
     * drivers that use them), its gRPC transport, its JIT compiler, the rest (GC, VM, a Go driver's
     * threads); and under the same names prefixed {@code wait.}, the time they were runnable but
     * waited for a CPU. Each thread's own difference is summed: a thread that ended in between takes
     * its time with it (subtracting group totals made a group negative), one begun since counts whole.
     */
    private Map<String, Double> threadCpuMillisSince(Map<String, ThreadCpu> before) throws Exception {
        Map<String, Double> groups = new java.util.TreeMap<>();
        for (String group : List.of("handlers", "transport", "jit", "other")) {
            groups.put(group, 0.0);
            groups.put("wait." + group, 0.0);
        }
        threadCpu().forEach((tid, now) -> {
            ThreadCpu then = before.get(tid);
            boolean same = then != null && then.group().equals(now.group()) && then.cpu() <= now.cpu();
            groups.merge(now.group(), now.cpu() - (same ? then.cpu() : 0), Double::sum);
            groups.merge("wait." + now.group(), now.waited() - (same ? then.waited() : 0), Double::sum);
        });
        return groups;
    }

    /** Each of the driver's threads by its ID, from its schedstat (nanoseconds; stat's clock ticks are 10 ms, too coarse for one lifecycle); its stat gives the name. */
    private Map<String, ThreadCpu> threadCpu() throws Exception {
        Map<String, ThreadCpu> threads = new java.util.HashMap<>();
        try (var tasks = Files.list(Path.of("/proc", String.valueOf(driver.pid()), "task"))) {
            for (Path task : tasks.toList()) {
                String stat;
                String[] sched;
                try {
                    stat = Files.readString(task.resolve("stat"));
                    sched = Files.readString(task.resolve("schedstat")).trim().split(" ");
                } catch (java.io.IOException gone) {
                    continue;
                }
                String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                String group = name.startsWith("hearth-rpc") || name.startsWith("ForkJoinPool") ? "handlers"
                        // grpc-okhttp names a connection's reading thread after its class (cut to 15 characters)
                        : name.startsWith("hearth-grpc") || name.startsWith("OkHttpServerTra") ? "transport"
                        : name.startsWith("C1 Compiler") || name.startsWith("C2 Compiler") ? "jit" : "other";
                threads.put(task.getFileName().toString(), new ThreadCpu(group, Long.parseLong(sched[0]) / 1e6,
                        Long.parseLong(sched[1]) / 1e6));
            }
        }
        return threads;
    }

    private double rssMib() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc", String.valueOf(driver.pid()), "status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
            }
        }
        return Double.NaN;
    }

    // ---- scenarios

    private static VolumeCapability capability(boolean filesystem) {
        var builder = VolumeCapability.newBuilder().setAccessMode(VolumeCapability.AccessMode.newBuilder()
                .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER));
        return filesystem ? builder.setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4")).build()
                : builder.setBlock(VolumeCapability.BlockVolume.getDefaultInstance()).build();
    }

    private CreateVolumeRequest create(String name, boolean filesystem, long size) {
        var request = CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(capability(filesystem))
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(size));
        String params = options.getOrDefault("params", "");
        for (String kv : params.isEmpty() ? new String[0] : params.split(";")) {
            request.putParameters(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        }
        return request.build();
    }

    /** The six RPCs of one volume's life, each timed; "total" is the whole. */
    private Map<String, Double> lifecycle(boolean filesystem, long size) throws Exception {
        var controller = ControllerGrpc.newBlockingStub(channel);
        var node = NodeGrpc.newBlockingStub(channel);
        String name = "bench-" + ProcessHandle.current().pid() + "-" + serial++;
        VolumeCapability capability = capability(filesystem);
        Path staging = Files.createDirectories(work.resolve("staging").resolve(name));
        Path target = Files.createDirectories(work.resolve("pods").resolve(name)).resolve("target");
        Map<String, Double> millis = new java.util.LinkedHashMap<>();
        long start = System.nanoTime();
        String id = time(millis, "CreateVolume", () -> controller.createVolume(create(name, filesystem, size))
                .getVolume().getVolumeId());
        if (stages) {
            time(millis, "NodeStageVolume", () -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                    .setVolumeId(id).setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build()));
        }
        var publish = NodePublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
                .setVolumeCapability(capability);
        if (stages) {
            publish.setStagingTargetPath(staging.toString());
        }
        time(millis, "NodePublishVolume", () -> node.nodePublishVolume(publish.build()));
        time(millis, "NodeUnpublishVolume", () -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId(id).setTargetPath(target.toString()).build()));
        if (stages) {
            time(millis, "NodeUnstageVolume", () -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                    .setVolumeId(id).setStagingTargetPath(staging.toString()).build()));
        }
        time(millis, "DeleteVolume", () -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
        millis.put("total", (System.nanoTime() - start) / 1e6);
        return millis;
    }

    private static <T> T time(Map<String, Double> millis, String rpc, Supplier<T> call) {
        long start = System.nanoTime();
        T result = call.get();
        millis.put(rpc, (System.nanoTime() - start) / 1e6);
        return result;
    }

    /** Every other RPC, against one published filesystem volume, ROUNDS times each. */
    private void rpcs(int rounds, long size) throws Exception {
        var identity = IdentityGrpc.newBlockingStub(channel);
        var controller = ControllerGrpc.newBlockingStub(channel);
        var node = NodeGrpc.newBlockingStub(channel);
        String name = "bench-rpcs-" + ProcessHandle.current().pid();
        Path staging = Files.createDirectories(work.resolve("staging").resolve(name));
        Path target = Files.createDirectories(work.resolve("pods").resolve(name)).resolve("target");
        String id = controller.createVolume(create(name, true, size)).getVolume().getVolumeId();
        if (stages) {
            node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(staging.toString()).setVolumeCapability(capability(true)).build());
        }
        var publish = NodePublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
                .setVolumeCapability(capability(true));
        if (stages) {
            publish.setStagingTargetPath(staging.toString());
        }
        node.nodePublishVolume(publish.build());
        Map<String, Supplier<Object>> calls = rpcCalls(identity, controller, node, id, target, 100);
        // Every call ten times before any is timed: the driver's shared path (transport, interceptors)
        // warms up on these, not on the rounds of whichever RPC happens to be timed first.
        Map<String, Supplier<Object>> supported = new java.util.LinkedHashMap<>();
        calls.forEach((rpc, call) -> {
            try {
                call.get();
                supported.put(rpc, call);
            } catch (RuntimeException unsupported) {
                System.err.println(rpc + ": " + unsupported.getMessage());
            }
        });
        for (int warm = 0; warm < 10; warm++) {
            supported.values().forEach(Supplier::get);
        }
        supported.forEach((rpc, call) -> {
            for (int round = 0; round < rounds; round++) {
                long start = System.nanoTime();
                call.get();
                print("rpc." + rpc, (System.nanoTime() - start) / 1e6);
            }
        });
        node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
        if (stages) {
            node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                    .setStagingTargetPath(staging.toString()).build());
        }
        controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    }

    /** The RPCs that do no disk work, and NodeGetVolumeStats, against volume ID published at TARGET. */
    private static Map<String, Supplier<Object>> rpcCalls(IdentityGrpc.IdentityBlockingStub identity,
            ControllerGrpc.ControllerBlockingStub controller, NodeGrpc.NodeBlockingStub node, String id, Path target,
            int page) {
        Map<String, Supplier<Object>> calls = new java.util.LinkedHashMap<>();
        calls.put("Probe", () -> identity.probe(ProbeRequest.getDefaultInstance()));
        calls.put("GetPluginInfo", () -> identity.getPluginInfo(GetPluginInfoRequest.getDefaultInstance()));
        calls.put("GetPluginCapabilities", () -> identity.getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance()));
        calls.put("ControllerGetCapabilities", () -> controller.controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance()));
        calls.put("NodeGetCapabilities", () -> node.nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()));
        calls.put("NodeGetInfo", () -> node.nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()));
        calls.put("GetCapacity", () -> controller.getCapacity(GetCapacityRequest.newBuilder()
                .addVolumeCapabilities(capability(true)).build()));
        calls.put("ListVolumes", () -> listAll(controller, page));
        calls.put("ValidateVolumeCapabilities", () -> controller.validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(id).addVolumeCapabilities(capability(true)).build()));
        calls.put("NodeGetVolumeStats", () -> node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                .setVolumeId(id).setVolumePath(target.toString()).build()));
        return calls;
    }

    /**
     * A filesystem and a block volume of SIZE, staged and published; prints {@code path.fs TARGET}
     * and {@code path.block TARGET}, waits until the file WORK/release exists (the script runs fio
     * meanwhile), then takes both down.
     */
    private void hold(long size) throws Exception {
        var controller = ControllerGrpc.newBlockingStub(channel);
        var node = NodeGrpc.newBlockingStub(channel);
        List<Runnable> undo = new ArrayList<>();
        for (boolean filesystem : new boolean[] {true, false}) {
            String kind = filesystem ? "fs" : "block";
            String name = "bench-hold-" + kind;
            Path staging = Files.createDirectories(work.resolve("staging").resolve(name));
            Path target = Files.createDirectories(work.resolve("pods").resolve(name)).resolve("target");
            String id = controller.createVolume(create(name, filesystem, size)).getVolume().getVolumeId();
            undo.addFirst(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
            if (stages) {
                node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                        .setStagingTargetPath(staging.toString()).setVolumeCapability(capability(filesystem)).build());
                undo.addFirst(() -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                        .setStagingTargetPath(staging.toString()).build()));
            }
            var publish = NodePublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
                    .setVolumeCapability(capability(filesystem));
            if (stages) {
                publish.setStagingTargetPath(staging.toString());
            }
            node.nodePublishVolume(publish.build());
            undo.addFirst(() -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                    .setTargetPath(target.toString()).build()));
            System.out.println("path." + kind + " " + target);
        }
        System.out.flush();
        try {
            Path release = work.resolve("release");
            while (!Files.exists(release) && driver.isAlive()) {
                Thread.sleep(50);
            }
        } finally {
            undo.forEach(Runnable::run);
        }
    }

    private static int listAll(ControllerGrpc.ControllerBlockingStub controller, int page) {
        int count = 0;
        String token = "";
        do {
            ListVolumesResponse response = controller.listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(page)
                    .setStartingToken(token).build());
            count += response.getEntriesCount();
            token = response.getNextToken();
        } while (!token.isEmpty());
        return count;
    }

    /**
     * SINGLES sequential CreateVolume calls (the single-call p50), then COUNT at once from COUNT
     * threads: each call's latency (p50, p99) and the burst's wall time. 1 MiB volumes, deleted after.
     */
    private void burst(int count, int singles) throws Exception {
        var controller = ControllerGrpc.newBlockingStub(channel);
        List<Double> single = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        String prefix = "bench-burst-" + ProcessHandle.current().pid() + "-";
        for (int i = 0; i < singles; i++) {
            long start = System.nanoTime();
            ids.add(controller.createVolume(create(prefix + "single-" + i, true, MIB)).getVolume().getVolumeId());
            single.add((System.nanoTime() - start) / 1e6);
        }
        print("burst.single_p50", percentile(single, 50));
        ExecutorService pool = Executors.newFixedThreadPool(count);
        CountDownLatch ready = new CountDownLatch(count);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<double[]>> calls = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String name = prefix + i;
            calls.add(pool.submit(() -> {
                ready.countDown();
                go.await();
                long start = System.nanoTime();
                String id = controller.createVolume(create(name, true, MIB)).getVolume().getVolumeId();
                synchronized (ids) {
                    ids.add(id);
                }
                return new double[] {(System.nanoTime() - start) / 1e6};
            }));
        }
        ready.await();
        Map<String, ThreadCpu> before = threadCpu();
        long start = System.nanoTime();
        go.countDown();
        List<Double> latencies = new ArrayList<>();
        for (Future<double[]> call : calls) {
            latencies.add(call.get()[0]);
        }
        print("burst.wall", (System.nanoTime() - start) / 1e6);
        threadCpuMillisSince(before).forEach((group, ms) -> print("burst.cpu." + group, ms));
        pool.shutdown();
        print("burst.p50", percentile(latencies, 50));
        print("burst.p99", percentile(latencies, 99));
        for (String id : ids) {
            controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
        }
        print("burst.rss", rssMib()); // what the burst left the process holding
    }

    /** COUNT volumes of 1 MiB, left in place; then GetCapacity and ListVolumes (pages of 100), ROUNDS times. */
    private void many(int count, int rounds) throws Exception {
        var controller = ControllerGrpc.newBlockingStub(channel);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<?>> creates = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String name = "bench-many-" + i;
            creates.add(pool.submit(() -> controller.createVolume(create(name, true, MIB))));
        }
        for (Future<?> create : creates) {
            create.get();
        }
        pool.shutdown();
        var request = GetCapacityRequest.newBuilder().addVolumeCapabilities(capability(true)).build();
        controller.getCapacity(request);
        int listed = listAll(controller, 100);
        System.out.println("many.listed " + listed);
        for (int round = 0; round < rounds; round++) {
            long start = System.nanoTime();
            controller.getCapacity(request);
            print("many.GetCapacity", (System.nanoTime() - start) / 1e6);
            start = System.nanoTime();
            listAll(controller, 100);
            print("many.ListVolumes", (System.nanoTime() - start) / 1e6);
            // One more volume beside the many, and away again: what a create costs on a full node.
            start = System.nanoTime();
            String id = controller.createVolume(create("bench-many-extra-" + round, true, MIB)).getVolume().getVolumeId();
            print("many.CreateVolume", (System.nanoTime() - start) / 1e6);
            controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
        }
    }

    private static double percentile(List<Double> values, int p) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int index = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(index, sorted.size() - 1)));
    }
}
