package dev.hearth.driver.bench;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.driver.Driver;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.BlockDevices;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.lvm.LvmPoolConfig;
import dev.hearth.storage.tool.ToolRunner;
import io.grpc.ManagedChannel;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * One 1 GiB ext4 volume's whole life on an LVM pool, CreateVolume to DeleteVolume, driven through
 * the real gRPC API as the external-provisioner and the kubelet would drive it, each RPC timed.
 * Run by test/bench/lvm inside a user-mode Linux guest (this kernel has no device-mapper), which
 * sets up the volume group and thin pool, times a shell script doing the same lvm, mkfs and mount
 * commands beside it, and prints the comparison.
 *
 * <p>Every variant gets a driver of its own with that one pool, as a node with one LVM pool has:
 * CreateVolume looks the request name up in every configured pool, so each further pool would add
 * a listing to it.
 *
 * <p>Each round runs the floor first, a shell function doing the same lvm, mkfs and mount
 * commands and nothing else (it times itself and prints {@code floor VARIANT STEP MILLIS}), then
 * hearth's lifecycle ({@code hearth VARIANT STEP MILLIS}): rounds of the two alternate, so load
 * that comes and goes on the machine falls on both alike.
 *
 * <p>Before each of hearth's rounds of a thick variant, untimed, the extents its volume will get
 * are zeroed: a volume deleted without a wipe (wipe=none, or the floor) leaves an ext4 there whose
 * backup superblocks hearth's signature probe finds, and it then refuses to format the next volume
 * on them. A new group's extents are zeros; that is the state measured.
 *
 * <p>Arguments: {@code WORK VG THINPOOL WARMUPS ROUNDS floor COMMAND...}, the floor's command
 * being given the variant and an LV name; or {@code WORK VG THINPOOL tools LOG}, with LOG the file
 * the script's tool wrappers append to (one line per run: start, end, tool, arguments): then one
 * lifecycle per variant (after one untimed) and no floor, printing for each RPC its time
 * ({@code rpc VARIANT RPC MILLIS RUNS}) and the tools it ran ({@code tool VARIANT RPC MILLIS TOOL ARGS...}).
 */
public final class LvmLifecycleBenchmark {

    private static final long VOLUME = 1L << 30;
    private static final String LVM_CONFIG =
            "activation{udev_sync=0 udev_rules=0} devices{obtain_device_list_from_udev=0}";
    private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(2);

    /** A pool as the benchmark sets it up: the variant's name is the pool's. */
    private record Variant(String name, Optional<String> thinPool, double overprovision, LvmPoolConfig.Wipe wipe) {}

    public static void main(String[] args) throws Exception {
        Path work = Path.of(args[0]);
        String vg = args[1];
        String thinPool = args[2];
        boolean listTools = args[3].equals("tools");
        List<Variant> variants = List.of(
                new Variant("thick", Optional.empty(), 1.0, LvmPoolConfig.Wipe.ZERO),
                new Variant("thick-nowipe", Optional.empty(), 1.0, LvmPoolConfig.Wipe.NONE),
                new Variant("thin", Optional.of(thinPool), 3.0, LvmPoolConfig.Wipe.ZERO));
        for (Variant variant : variants) {
            Path dir = Files.createDirectories(work.resolve(variant.name() + (listTools ? "-tools" : "")));
            Endpoint endpoint = Endpoint.parse("unix://" + dir.resolve("csi.sock"));
            Driver driver = Driver.start(new Driver.Settings(endpoint, "bench-node", "csi.hearth.dev",
                    dir.resolve("state"), List.of(new LvmPoolConfig(variant.name(), vg, variant.thinPool(),
                            variant.overprovision(), variant.wipe(), VOLUME, dir.resolve("state").resolve("lvm"))),
                    variant.name(), 100, Optional.empty(), FilesystemType.EXT4));
            ManagedChannel channel = Channels.channelTo(endpoint);
            try {
                Lifecycle lifecycle = new Lifecycle(channel, dir, variant.name());
                if (listTools) {
                    scrub(vg, variant);
                    lifecycle.run("bench-" + variant.name() + "-warm-up", Step.NONE); // so the times listed are warm
                    scrub(vg, variant);
                    lifecycle.run("bench-" + variant.name() + "-tools",
                            new ToolCount(Path.of(args[4]), variant.name()));
                } else {
                    int warmups = Integer.parseInt(args[3]);
                    int rounds = Integer.parseInt(args[4]);
                    List<String> floor = List.of(args).subList(6, args.length);
                    for (int round = 0; round < warmups + rounds; round++) {
                        boolean measured = round >= warmups;
                        String floorLines = runFloor(floor, variant.name(), "floor-" + variant.name() + "-" + round);
                        scrub(vg, variant);
                        Map<String, Double> millis = lifecycle.run("bench-" + variant.name() + "-" + round,
                                Step.NONE);
                        if (measured) {
                            System.out.print(floorLines);
                            millis.forEach((step, ms) -> System.out.printf(Locale.ROOT, "hearth %s %s %.1f%n",
                                    variant.name(), step, ms));
                        }
                    }
                }
            } finally {
                channel.shutdownNow();
                driver.shutdown(Duration.ofSeconds(5));
            }
        }
    }

    /** Runs the floor's lifecycle and returns what it printed: its own timings. */
    private static String runFloor(List<String> command, String variant, String lv) throws Exception {
        List<String> argv = new ArrayList<>(command);
        argv.addAll(List.of(variant, lv));
        Process floor = new ProcessBuilder(argv).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(floor.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (floor.waitFor() != 0) {
            throw new IllegalStateException("the floor " + argv + " failed (exit " + floor.exitValue() + "):\n" + out);
        }
        return out;
    }

    /** Zeros the group's first free 1 GiB, which a thick variant's next volume gets; nothing for thin. */
    private static void scrub(String vg, Variant variant) throws Exception {
        if (variant.thinPool().isPresent()) {
            return;
        }
        ToolRunner tools = new ToolRunner();
        String lv = "bench-scrub";
        tools.run(List.of("lvm", "lvcreate", "--config", LVM_CONFIG, "-L", VOLUME + "b", "-n", lv, "-Wn", "-Zn", "-y",
                vg), TOOL_TIMEOUT);
        try {
            BlockDevices.zeroOut(Path.of("/dev", vg, lv), 0, VOLUME);
        } finally {
            tools.run(List.of("lvm", "lvremove", "--config", LVM_CONFIG, "-f", vg + "/" + lv), TOOL_TIMEOUT);
        }
    }

    /** What is done around each RPC besides timing it. */
    private interface Step {
        Step NONE = new Step() {};

        default void before() throws Exception {}

        default void after(String rpc, double millis) throws Exception {}
    }

    /** The six RPCs of one volume's life, each timed, in the order the CO sends them. */
    private record Lifecycle(ManagedChannel channel, Path dir, String pool) {

        Map<String, Double> run(String name, Step step) throws Exception {
            var controller = ControllerGrpc.newBlockingStub(channel);
            var node = NodeGrpc.newBlockingStub(channel);
            VolumeCapability capability = VolumeCapability.newBuilder()
                    .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
                    .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                            .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                    .build();
            // The kubelet makes the staging directory and the target's parent; the driver the target.
            Path staging = Files.createDirectories(dir.resolve("staging").resolve(name));
            Path target = Files.createDirectories(dir.resolve("pods").resolve(name)).resolve("mount");
            Map<String, Double> millis = new LinkedHashMap<>();
            long start = System.nanoTime();
            String[] id = new String[1];
            time(millis, step, "CreateVolume", () -> id[0] = controller.createVolume(CreateVolumeRequest.newBuilder()
                    .setName(name).addVolumeCapabilities(capability).putParameters("hearth.dev/pool", pool)
                    .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(VOLUME)).build())
                    .getVolume().getVolumeId());
            time(millis, step, "NodeStageVolume", () -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                    .setVolumeId(id[0]).setStagingTargetPath(staging.toString()).setVolumeCapability(capability)
                    .build()));
            time(millis, step, "NodePublishVolume", () -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder()
                    .setVolumeId(id[0]).setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                    .setVolumeCapability(capability).build()));
            time(millis, step, "NodeUnpublishVolume", () -> node.nodeUnpublishVolume(
                    NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id[0]).setTargetPath(target.toString())
                            .build()));
            time(millis, step, "NodeUnstageVolume", () -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                    .setVolumeId(id[0]).setStagingTargetPath(staging.toString()).build()));
            time(millis, step, "DeleteVolume", () -> controller.deleteVolume(DeleteVolumeRequest.newBuilder()
                    .setVolumeId(id[0]).build()));
            millis.put("total", (System.nanoTime() - start) / 1e6);
            return millis;
        }

        private static void time(Map<String, Double> millis, Step step, String rpc, Runnable call) throws Exception {
            step.before();
            long start = System.nanoTime();
            call.run();
            millis.put(rpc, (System.nanoTime() - start) / 1e6);
            step.after(rpc, millis.get(rpc));
        }
    }

    /**
     * Reads what the tool wrappers logged during one RPC: a line {@code rpc VARIANT RPC MILLIS COUNT}
     * and then one {@code tool VARIANT RPC MILLIS TOOL ARGS...} per tool run.
     */
    private static final class ToolCount implements Step {

        private final Path log;
        private final String variant;
        private int seen;

        ToolCount(Path log, String variant) {
            this.log = log;
            this.variant = variant;
        }

        @Override
        public void before() throws Exception {
            seen = lines().size();
        }

        @Override
        public void after(String rpc, double millis) throws Exception {
            List<String> lines = lines();
            List<String> runs = new ArrayList<>(lines.subList(seen, lines.size()));
            System.out.printf(Locale.ROOT, "rpc %s %s %.0f %d%n", variant, rpc, millis, runs.size());
            for (String run : runs) {
                String[] parts = run.split(" ", 4);
                double ms = (Double.parseDouble(parts[1]) - Double.parseDouble(parts[0])) * 1000;
                System.out.printf(Locale.ROOT, "tool %s %s %.0f %s %s%n", variant, rpc, ms, parts[2],
                        parts.length > 3 ? parts[3] : "");
            }
        }

        private List<String> lines() throws Exception {
            return Files.exists(log) ? Files.readAllLines(log) : List.of();
        }
    }
}
