package dev.hearth.driver.bench;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.ListVolumesResponse;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.driver.Driver;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * GetCapacity and ListVolumes (every page) on a file pool holding many volumes, through the real
 * gRPC API. Not a test; a probe run by hand, beside another build of hearth.
 *
 * <p>Arguments: {@code WORK VOLUMES PAGE ROUNDS}; the pool directory is kept between runs with the
 * same WORK, so a second build measures the same volumes. Prints the medians in milliseconds and
 * the load average.
 */
public final class ManyVolumesProbe {

    public static void main(String[] args) throws Exception {
        Path work = Files.createDirectories(Path.of(args[0]));
        int volumes = Integer.parseInt(args[1]);
        int pageSize = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        Endpoint endpoint = Endpoint.parse("unix://" + work.resolve("csi.sock"));
        Files.deleteIfExists(work.resolve("csi.sock"));
        Driver driver = Driver.start(new Driver.Settings(endpoint, "bench-node", "csi.hearth.dev", work.resolve("state"),
                List.of(new FilePoolConfig("default", work.resolve("pool"), 64L << 40)), "default", 100_000,
                Optional.empty(), FilesystemType.EXT4));
        ManagedChannel channel = Channels.channelTo(endpoint);
        try {
            var controller = ControllerGrpc.newBlockingStub(channel);
            VolumeCapability capability = VolumeCapability.newBuilder()
                    .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
                    .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                            .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build();
            for (int i = 0; i < volumes; i++) { // idempotent: a second run finds them made
                controller.createVolume(CreateVolumeRequest.newBuilder().setName("many-" + i)
                        .addVolumeCapabilities(capability).putParameters("hearth.dev/provisioning", "thin")
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1L << 30)).build());
            }
            List<Double> capacity = new ArrayList<>();
            List<Double> listing = new ArrayList<>();
            int listed = 0;
            for (int round = 0; round < rounds + 3; round++) {
                long start = System.nanoTime();
                controller.getCapacity(GetCapacityRequest.newBuilder().addVolumeCapabilities(capability).build());
                double capacityMs = (System.nanoTime() - start) / 1e6;
                start = System.nanoTime();
                String token = "";
                listed = 0;
                do {
                    ListVolumesResponse page = controller.listVolumes(ListVolumesRequest.newBuilder()
                            .setMaxEntries(pageSize).setStartingToken(token).build());
                    listed += page.getEntriesCount();
                    token = page.getNextToken();
                } while (!token.isEmpty());
                double listingMs = (System.nanoTime() - start) / 1e6;
                if (round >= 3) {
                    capacity.add(capacityMs);
                    listing.add(listingMs);
                }
            }
            System.out.printf(Locale.ROOT, "volumes=%d listed=%d GetCapacity=%.2f ListVolumes(pages of %d)=%.1f load=%s%n",
                    volumes, listed, median(capacity), pageSize, median(listing),
                    Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } finally {
            channel.shutdownNow();
            driver.shutdown(Duration.ofSeconds(5));
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        return sorted.get(sorted.size() / 2);
    }
}
