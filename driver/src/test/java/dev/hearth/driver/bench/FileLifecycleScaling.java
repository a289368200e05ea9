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
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.ManagedChannel;
import java.io.RandomAccessFile;
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
 * A file-pool volume's whole life (create, stage, publish, unpublish, unstage, delete) through the
 * real gRPC API, with more and more idle loop devices attached on the node: a per-RPC cost that
 * grows with the node shows as a total that grows with the idle count. Not a test; a probe run by
 * hand, e.g. under strace to count sysfs reads, or beside another build of hearth.
 *
 * <p>Arguments: {@code WORK block|fs IDLE,IDLE,... WARMUPS ROUNDS}; prints per idle count the
 * median of each RPC and of the total, in milliseconds, and the load average.
 */
public final class FileLifecycleScaling {

    private static final long VOLUME = 1L << 30;

    public static void main(String[] args) throws Exception {
        Path work = Files.createDirectories(Path.of(args[0]));
        boolean block = args[1].equals("block");
        int warmups = Integer.parseInt(args[3]);
        int rounds = Integer.parseInt(args[4]);
        List<LoopDevice> idle = new ArrayList<>();
        Endpoint endpoint = Endpoint.parse("unix://" + work.resolve("csi.sock"));
        Driver driver = Driver.start(new Driver.Settings(endpoint, "bench-node", "csi.hearth.dev", work.resolve("state"),
                List.of(new FilePoolConfig("default", work.resolve("pool"), 64L << 30)), "default", 1000,
                Optional.empty(), FilesystemType.EXT4));
        ManagedChannel channel = Channels.channelTo(endpoint);
        try {
            for (String count : args[2].split(",")) {
                int wanted = Integer.parseInt(count);
                while (idle.size() < wanted) {
                    Path file = work.resolve("idle-" + idle.size());
                    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                        raf.setLength(1 << 20);
                    }
                    idle.add(Loop.attach(file, true, false));
                }
                Map<String, List<Double>> samples = new LinkedHashMap<>();
                for (int round = 0; round < warmups + rounds; round++) {
                    Map<String, Double> millis = lifecycle(channel, work, block, "bench-" + wanted + "-" + round);
                    if (round >= warmups) {
                        millis.forEach((rpc, ms) -> samples.computeIfAbsent(rpc, k -> new ArrayList<>()).add(ms));
                    }
                }
                StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%s idle=%d", args[1], wanted));
                samples.forEach((rpc, ms) -> line.append(String.format(Locale.ROOT, " %s=%.1f", rpc, median(ms))));
                line.append(" load=").append(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
                System.out.println(line);
            }
        } finally {
            channel.shutdownNow();
            driver.shutdown(Duration.ofSeconds(5));
            for (LoopDevice device : idle) {
                Loop.detach(device);
            }
        }
    }

    private static Map<String, Double> lifecycle(ManagedChannel channel, Path work, boolean block, String name)
            throws Exception {
        var controller = ControllerGrpc.newBlockingStub(channel);
        var node = NodeGrpc.newBlockingStub(channel);
        VolumeCapability.Builder capability = VolumeCapability.newBuilder().setAccessMode(
                VolumeCapability.AccessMode.newBuilder().setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER));
        if (block) {
            capability.setBlock(VolumeCapability.BlockVolume.getDefaultInstance());
        } else {
            capability.setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"));
        }
        Path staging = Files.createDirectories(work.resolve("staging").resolve(name));
        Path target = Files.createDirectories(work.resolve("pods").resolve(name)).resolve("volume");
        Map<String, Double> millis = new LinkedHashMap<>();
        long start = System.nanoTime();
        String id = time(millis, "create", () -> controller.createVolume(CreateVolumeRequest.newBuilder().setName(name)
                .addVolumeCapabilities(capability).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(VOLUME))
                .build()).getVolume().getVolumeId());
        time(millis, "stage", () -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build()));
        time(millis, "publish", () -> node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(capability).build()));
        time(millis, "unpublish", () -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId(id).setTargetPath(target.toString()).build()));
        time(millis, "unstage", () -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).build()));
        time(millis, "delete", () -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
        millis.put("total", (System.nanoTime() - start) / 1e6);
        return millis;
    }

    private static <T> T time(Map<String, Double> millis, String rpc, java.util.function.Supplier<T> call) {
        long start = System.nanoTime();
        T result = call.get();
        millis.put(rpc, (System.nanoTime() - start) / 1e6);
        return result;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        return sorted.get(sorted.size() / 2);
    }
}
