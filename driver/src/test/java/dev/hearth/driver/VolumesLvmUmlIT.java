package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.UserModeLinux;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.StreamSupport;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hearth volumes} on LVM pools, in a user-mode Linux guest (this kernel has no
 * device-mapper): a thick volume staged and published as a filesystem and a thin one published as
 * a block device, beside a running driver, are shown with their claims, LV paths, device-mapper
 * devices and mounts, and an LV named as a volume without hearth's tags is an orphan.
 */
@RequiresTools({"lvm", "thin_check", "mkfs.ext4"})
class VolumesLvmUmlIT {

    private static final String VG = "inspectvg";
    /** The guest has no network interface: netty's warnings about it, stack traces and all, would bury the output. */
    private static final Logger NETTY = Logger.getLogger("io.grpc.netty.shaded.io.netty");

    @TempDir
    Path dir;

    @Test
    void itShowsLvmVolumesWithTheirDevicesAndMountsAndAnUntaggedLvAsAnOrphan() throws IOException {
        UserModeLinux.assumeAvailable("LVM needs device-mapper, which this kernel lacks");
        Path disk = dir.resolve("disk.img");
        try (RandomAccessFile image = new RandomAccessFile(disk.toFile(), "rw")) {
            image.setLength(1L << 30);
        }
        UserModeLinux.Result guest = UserModeLinux.runInGuest(VolumesLvmUmlIT.class, "inGuest", dir,
                Duration.ofMinutes(6), List.of("-m", "1024M", "-k", "dm-thin-pool", "-k", "dm-snapshot", "-d",
                        disk.toString()));
        System.out.println(guest.describe());
    }

    // ---- in the guest

    static void inGuest(Path dir) throws Exception {
        NETTY.setLevel(Level.SEVERE);
        GuestLvm lvm = GuestLvm.create(VG, Path.of("/dev/ubda"), 256 * MIB);
        Path run = Files.createDirectories(Path.of("/run/hearth"));
        Path state = run.resolve("state");
        Path kubelet = run.resolve("kubelet");
        List<String> specs = List.of("name=thick,kind=lvm,vg=" + VG + ",wipe=none",
                "name=thin,kind=lvm,vg=" + VG + ",thinpool=tp,overprovision=2");
        List<PoolConfig> pools = specs.stream().map(s -> PoolSpec.parse(s, state).config()).toList();
        Driver.Settings settings = new Driver.Settings(Endpoint.parse("unix://" + run.resolve("csi.sock")), "uml",
                "csi.hearth.dev", state, pools, null, 100, Optional.empty(), FilesystemType.EXT4);
        try (Driver driver = Driver.start(settings)) {
            ManagedChannel channel = Channels.channelTo(driver.endpoint());
            var controller = ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.MINUTES);
            var node = NodeGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.MINUTES);
            String data = create(controller, "pvc-lvm-data", "thick", mount("ext4"), "data-0");
            String raw = create(controller, "pvc-lvm-raw", "thin", block(), "raw-0");
            Path dataStaging = kubelet.resolve("plugins/kubernetes.io/csi/csi.hearth.dev").resolve(sha256(data))
                    .resolve("globalmount");
            Path dataTarget = kubelet.resolve("pods/0c1d/volumes/kubernetes.io~csi/pvc-lvm-data/mount");
            Path rawStaging = kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/staging/pvc-lvm-raw");
            Path rawTarget = kubelet.resolve("plugins/kubernetes.io/csi/volumeDevices/publish/pvc-lvm-raw/0c1d");
            for (Path path : List.of(dataStaging, dataTarget.getParent(), rawStaging, rawTarget.getParent())) {
                Files.createDirectories(path);
            }
            stageAndPublish(node, data, dataStaging, dataTarget, mount("ext4"));
            stageAndPublish(node, raw, rawStaging, rawTarget, block());
            VolumeId stray = VolumeId.mint("thick", "pvc-stray");
            lvm.run("lvcreate", "-L", "8m", "-Zn", "-n", "hearth.thick." + stray.key(), VG);

            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int exit = Main.commandLine().setOut(new PrintWriter(out)).setErr(new PrintWriter(err)).execute("volumes",
                    "--state-dir", state.toString(), "--pool", specs.get(0), "--pool", specs.get(1), "-o", "json");

            assertThat(exit).as("exit; stderr: %s", err).isZero();
            JsonObject root = JsonParser.parseString(out.toString()).getAsJsonObject();
            assertThat(root.getAsJsonArray("errors")).isEmpty();
            Map<String, JsonObject> volumes = new LinkedHashMap<>();
            for (JsonElement pool : root.getAsJsonArray("pools")) {
                assertThat(pool.getAsJsonObject().get("kind").getAsString()).isEqualTo("lvm");
                assertThat(pool.getAsJsonObject().get("capacityBytes").getAsLong()).isPositive();
                for (JsonElement volume : pool.getAsJsonObject().getAsJsonArray("volumes")) {
                    volumes.put(volume.getAsJsonObject().get("id").getAsString(), volume.getAsJsonObject());
                }
            }
            assertThat(volumes).containsOnlyKeys(data, raw);
            String dataLv = "hearth.thick." + VolumeId.parse(data).orElseThrow().key();
            String rawLv = "hearth.thin." + VolumeId.parse(raw).orElseThrow().key();
            JsonObject dataRow = volumes.get(data);
            assertThat(dataRow.getAsJsonObject("pvc").get("name").getAsString()).isEqualTo("data-0");
            assertThat(dataRow.get("backing").getAsString()).isEqualTo("/dev/" + VG + "/" + dataLv);
            assertThat(dataRow.get("device").getAsString()).isEqualTo("/dev/mapper/" + VG + "-" + dataLv);
            assertThat(mounts(dataRow)).containsExactly(tuple(dataStaging.toString(), "staging"),
                    tuple(dataTarget.toString(), "publish"));
            JsonObject rawRow = volumes.get(raw);
            assertThat(rawRow.getAsJsonObject("pvc").get("name").getAsString()).isEqualTo("raw-0");
            assertThat(rawRow.get("device").getAsString()).isEqualTo("/dev/mapper/" + VG + "-" + rawLv);
            assertThat(mounts(rawRow)).containsExactly(tuple(rawTarget.toString(), "publish"));
            assertThat(StreamSupport.stream(root.getAsJsonArray("orphans").spliterator(), false)
                    .map(o -> tuple(o.getAsJsonObject().get("kind").getAsString(),
                            o.getAsJsonObject().get("subject").getAsString())).toList())
                    .containsExactly(tuple("backing-without-record", VG + "/hearth.thick." + stray.key()));

            StringWriter table = new StringWriter();
            Main.commandLine().setOut(new PrintWriter(table)).execute("volumes", "--state-dir", state.toString(),
                    "--pool", specs.get(0), "--pool", specs.get(1));
            System.out.println(table);

            node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(data)
                    .setTargetPath(dataTarget.toString()).build());
            node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(data)
                    .setStagingTargetPath(dataStaging.toString()).build());
            node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(raw)
                    .setTargetPath(rawTarget.toString()).build());
            channel.shutdownNow();
        }
    }

    private static String create(ControllerGrpc.ControllerBlockingStub controller, String name, String pool,
            VolumeCapability capability, String pvc) {
        return controller.createVolume(CreateVolumeRequest.newBuilder().setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(16 * MIB))
                .addVolumeCapabilities(capability).putParameters("hearth.dev/pool", pool)
                .putParameters("csi.storage.k8s.io/pvc/namespace", "shop")
                .putParameters("csi.storage.k8s.io/pvc/name", pvc)
                .putParameters("csi.storage.k8s.io/pv/name", name).build()).getVolume().getVolumeId();
    }

    private static void stageAndPublish(NodeGrpc.NodeBlockingStub node, String id, Path staging, Path target,
            VolumeCapability capability) {
        node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build());
        node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(capability).build());
    }

    private static List<Tuple> mounts(JsonObject volume) {
        return StreamSupport.stream(volume.getAsJsonArray("mounts").spliterator(), false)
                .map(m -> tuple(m.getAsJsonObject().get("path").getAsString(),
                        m.getAsJsonObject().get("role").getAsString()))
                .toList();
    }

    private static String sha256(String id) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                .digest(id.getBytes(StandardCharsets.UTF_8)));
    }
}
