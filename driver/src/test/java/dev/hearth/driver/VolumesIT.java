package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.Freeze;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.storage.VolumeId;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.StreamSupport;
import org.assertj.core.groups.Tuple;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hearth volumes}, run as an operator runs it in the DaemonSet's pod: the real jar, beside
 * a real {@code hearth serve} that holds its pool, after volumes were made, staged and published
 * at the kubelet's paths through the driver's socket, and after a few things were left behind by
 * hand. It must show each volume with its claim, device and mounts, name every orphan, and change nothing.
 */
@RequiresRoot
@RequiresTools("mkfs.ext4")
class VolumesIT {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String DRIVER = "csi.hearth.dev";

    @TempDir
    Path dir;

    private final List<AutoCloseable> resources = new ArrayList<>();
    private ManagedChannel channel;

    @AfterEach
    void cleanUp() throws Exception {
        try {
            for (AutoCloseable resource : resources.reversed()) {
                resource.close();
            }
        } finally {
            sweep();
        }
    }

    /** Whatever is mounted under the directory, or attached from it, goes: mounts, read-only views, images. */
    private void sweep() throws IOException {
        Path real = dir.toRealPath();
        for (MountEntry mount : TestDriver.mountsUnder(real).reversed()) {
            try {
                Freeze.thaw(mount.mountPoint());
            } catch (IOException | IllegalArgumentException e) {
                // not frozen, or not freezable
            }
            Mounts.unmount(mount.mountPoint());
        }
        List<LoopAttachment> loops = TestDriver.loopDevicesUnder(real);
        for (LoopAttachment loop : loops) {
            if (!loop.backingFile().startsWith(real)) {
                Loop.detach(loop.device());
            }
        }
        for (LoopAttachment loop : loops) {
            if (loop.backingFile().startsWith(real)) {
                Loop.detach(loop.device());
            }
        }
    }

    private Path state() {
        return dir.resolve("state");
    }

    private Path pool() {
        return dir.resolve("pool");
    }

    private Path kubelet() {
        return dir.resolve("kubelet");
    }

    private HearthProcess hearth(String... args) throws IOException {
        HearthProcess process = HearthProcess.start(dir.resolve("logs"), args);
        resources.add(process);
        return process;
    }

    private ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    private NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    /** CreateVolume as the external-provisioner sends it with --extra-create-metadata (no claim: without). */
    private String create(String name, long bytes, VolumeCapability capability, Map<String, String> claim) {
        return controller().createVolume(CreateVolumeRequest.newBuilder().setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
                .addVolumeCapabilities(capability).putAllParameters(claim).build()).getVolume().getVolumeId();
    }

    private static Map<String, String> claim(String namespace, String pvc, String pv) {
        return Map.of("csi.storage.k8s.io/pvc/namespace", namespace, "csi.storage.k8s.io/pvc/name", pvc,
                "csi.storage.k8s.io/pv/name", pv);
    }

    private void stage(String id, Path staging, VolumeCapability capability) throws IOException {
        Files.createDirectories(staging);
        node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build());
    }

    private void publish(String id, Path staging, Path target, VolumeCapability capability) throws IOException {
        Files.createDirectories(target.getParent());
        node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(capability).build());
    }

    /** The kubelet's staging path of a filesystem volume: by the driver and the SHA-256 of the volume ID. */
    private Path fsStaging(String id) throws NoSuchAlgorithmException {
        String hash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                .digest(id.getBytes(StandardCharsets.UTF_8)));
        return kubelet().resolve("plugins/kubernetes.io/csi").resolve(DRIVER).resolve(hash).resolve("globalmount");
    }

    @Test
    void itShowsEveryVolumeWithItsClaimDeviceAndMountsAndEveryOrphanAndChangesNothing() throws Exception {
        HearthProcess serve = hearth("serve", "--endpoint", "unix://" + dir.resolve("csi.sock"), "--node-id", "node-it",
                "--state-dir", state().toString(), "--pool", "name=default,dir=" + pool() + ",create=true,capacity=1Gi",
                "--metrics-address", "");
        channel = Channels.channelTo(Endpoint.parse("unix://" + dir.resolve("csi.sock")));
        resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
        serve.awaitReady(channel, WAIT);

        String data = create("pvc-0a1b", 64 * MIB, mount("ext4"), claim("shop", "data-db-0", "pvc-0a1b"));
        String raw = create("pvc-2c3d", 32 * MIB, block(), claim("shop", "raw-0", "pvc-2c3d"));
        String lost = create("pvc-lost", 16 * MIB, mount("ext4"), Map.of());
        String gone = create("pvc-gone", 16 * MIB, mount("ext4"), Map.of());
        Path dataStaging = fsStaging(data);
        Path dataTarget = kubelet().resolve("pods/5f0c9a6e/volumes/kubernetes.io~csi/pvc-0a1b/mount");
        stage(data, dataStaging, mount("ext4"));
        publish(data, dataStaging, dataTarget, mount("ext4"));
        Path rawStaging = kubelet().resolve("plugins/kubernetes.io/csi/volumeDevices/staging/pvc-2c3d");
        Path rawTarget = kubelet().resolve("plugins/kubernetes.io/csi/volumeDevices/publish/pvc-2c3d/77d2e1b4");
        stage(raw, rawStaging, block());
        publish(raw, rawStaging, rawTarget, block());
        Path goneStaging = fsStaging(gone);
        stage(gone, goneStaging, mount("ext4"));
        Path goneDevice = Loop.findByBackingFile(pool().resolve(gone + ".img")).orElseThrow().device().path();
        // Left behind by hand: a volume's image lost, a volume deleted while staged, an image nobody recorded.
        Files.delete(pool().resolve(lost + ".img"));
        Files.delete(pool().resolve(gone + ".img"));
        Files.delete(pool().resolve(gone + ".meta"));
        VolumeId stray = VolumeId.mint("default", "pvc-stray");
        Files.write(pool().resolve(stray + ".img"), new byte[(int) MIB]);
        List<Path> poolFiles = poolFiles();

        HearthProcess json = hearth("volumes", "--state-dir", state().toString(), "--output", "json");

        assertThat(json.waitFor(WAIT)).as("exit code; stderr:%n%s", json.stderr()).isZero();
        JsonObject root = JsonParser.parseString(json.stdout()).getAsJsonObject();
        assertThat(root.get("stateDir").getAsString()).isEqualTo(state().toString());
        assertThat(root.get("driverName").getAsString()).isEqualTo(DRIVER);
        assertThat(root.getAsJsonArray("errors")).isEmpty();
        JsonObject pool = root.getAsJsonArray("pools").get(0).getAsJsonObject();
        assertThat(pool.get("name").getAsString()).isEqualTo("default");
        assertThat(pool.get("kind").getAsString()).isEqualTo("file");
        assertThat(pool.get("default").getAsBoolean()).isTrue();
        assertThat(pool.get("capacityBytes").getAsLong()).isEqualTo(1024 * MIB);
        assertThat(pool.get("usedBytes").getAsLong()).as("the images there: 64 + 32 MiB and the stray 1 MiB")
                .isEqualTo(97 * MIB);
        assertThat(pool.get("freeBytes").getAsLong()).isPositive().isLessThanOrEqualTo(1024 * MIB - 97 * MIB);
        Map<String, JsonObject> volumes = byId(pool.getAsJsonArray("volumes"));
        assertThat(volumes).containsOnlyKeys(data, raw, lost);

        JsonObject dataRow = volumes.get(data);
        assertThat(dataRow.get("name").getAsString()).isEqualTo("pvc-0a1b");
        assertThat(dataRow.getAsJsonObject("pvc").get("namespace").getAsString()).isEqualTo("shop");
        assertThat(dataRow.getAsJsonObject("pvc").get("name").getAsString()).isEqualTo("data-db-0");
        assertThat(dataRow.get("pv").getAsString()).isEqualTo("pvc-0a1b");
        assertThat(dataRow.get("sizeBytes").getAsLong()).isEqualTo(64 * MIB);
        assertThat(dataRow.get("source").isJsonNull()).isTrue();
        assertThat(dataRow.get("backing").getAsString()).isEqualTo(pool().resolve(data + ".img").toString());
        assertThat(dataRow.get("device").getAsString()).isEqualTo(deviceOf(data).toString());
        assertThat(mounts(dataRow)).containsExactly(tuple(dataStaging.toString(), "staging", false),
                tuple(dataTarget.toString(), "publish", false));
        assertThat(dataRow.getAsJsonObject("condition").get("abnormal").getAsBoolean()).isFalse();

        JsonObject rawRow = volumes.get(raw);
        assertThat(rawRow.getAsJsonObject("pvc").get("name").getAsString()).isEqualTo("raw-0");
        assertThat(rawRow.get("device").getAsString()).isEqualTo(deviceOf(raw).toString());
        assertThat(mounts(rawRow)).as("a block stage mounts nothing; its publish binds the device node")
                .containsExactly(tuple(rawTarget.toString(), "publish", false));

        JsonObject lostRow = volumes.get(lost);
        assertThat(lostRow.get("pvc").isJsonNull()).isTrue();
        assertThat(lostRow.get("device").isJsonNull()).isTrue();
        assertThat(lostRow.getAsJsonObject("condition").get("abnormal").getAsBoolean()).isTrue();
        assertThat(lostRow.getAsJsonObject("condition").get("message").getAsString()).contains("missing");

        assertThat(StreamSupport.stream(root.getAsJsonArray("orphans").spliterator(), false)
                .map(JsonElement::getAsJsonObject)
                .map(o -> tuple(o.get("kind").getAsString(), o.get("subject").getAsString(),
                        o.get("volumeId").getAsString(), o.get("pool").getAsString())).toList())
                .containsExactlyInAnyOrder(
                        tuple("record-without-backing", pool().resolve(lost + ".meta").toString(), lost, "default"),
                        tuple("backing-without-record", pool().resolve(stray + ".img").toString(), stray.toString(),
                                "default"),
                        tuple("loop-device", goneDevice.toString(), gone, "default"),
                        tuple("mount", goneStaging.toString(), gone, "default"));

        HearthProcess table = hearth("volumes", "--state-dir", state().toString());
        assertThat(table.waitFor(WAIT)).as("exit code; stderr:%n%s", table.stderr()).isZero();
        String text = table.stdout();
        Path dataDevice = deviceOf(data);
        Path rawDevice = deviceOf(raw);
        assertThat(text.lines())
                .anyMatch(l -> l.matches("default \\(default\\)\\s+file\\s+1Gi\\s+97Mi\\s+\\S+\\s+3\\s+-"));
        assertThat(text.lines()).anyMatch(l -> l.matches(data + "\\s+pvc-0a1b\\s+shop/data-db-0\\s+64Mi\\s+-\\s+"
                + dataDevice + "\\s+1\\s+1\\s+ok"));
        assertThat(text.lines()).anyMatch(l -> l.matches(raw + "\\s+pvc-2c3d\\s+shop/raw-0\\s+32Mi\\s+-\\s+"
                + rawDevice + "\\s+-\\s+1\\s+ok"));
        assertThat(text.lines()).anyMatch(l -> l.matches(data + "\\s+staging\\s+" + dataStaging));
        assertThat(text.lines()).anyMatch(l -> l.matches("loop-device\\s+default\\s+" + goneDevice + "\\s+serves .*"));
        System.out.println("hearth volumes, as an operator sees it:\n" + text);

        assertThat(poolFiles()).as("nothing in the pool changed, the orphans included").isEqualTo(poolFiles);
        assertThat(Files.exists(goneDevice)).isTrue();
        String after = create("pvc-after", 8 * MIB, mount("ext4"), Map.of());
        assertThat(pool().resolve(after + ".meta")).as("the driver still serves its pool").exists();
    }

    @Test
    void withoutARecordOrAPoolDirectoryItSaysWhatIsMissingAndExitsNonZero() throws Exception {
        HearthProcess noRecord = hearth("volumes", "--state-dir", Files.createDirectories(state()).toString());
        assertThat(noRecord.waitFor(WAIT)).isEqualTo(1);
        assertThat(noRecord.stderr()).contains(state().resolve("serve.properties") + " does not exist");

        HearthProcess noPool = hearth("volumes", "--pool", "name=default,dir=" + pool(), "--output", "json");
        assertThat(noPool.waitFor(WAIT)).isEqualTo(1);
        assertThat(noPool.stderr()).contains("pool 'default': cannot open it", pool().toString());
        assertThat(pool()).as("a look makes no pool directory").doesNotExist();
        JsonObject root = JsonParser.parseString(noPool.stdout()).getAsJsonObject();
        assertThat(root.getAsJsonArray("errors")).hasSize(1);
    }

    private static Map<String, JsonObject> byId(JsonArray volumes) {
        Map<String, JsonObject> byId = new LinkedHashMap<>();
        for (JsonElement volume : volumes) {
            byId.put(volume.getAsJsonObject().get("id").getAsString(), volume.getAsJsonObject());
        }
        return byId;
    }

    private static List<Tuple> mounts(JsonObject volume) {
        return StreamSupport.stream(volume.getAsJsonArray("mounts").spliterator(), false)
                .map(JsonElement::getAsJsonObject)
                .map(m -> tuple(m.get("path").getAsString(), m.get("role").getAsString(),
                        m.get("readOnly").getAsBoolean()))
                .toList();
    }

    private Path deviceOf(String id) throws IOException {
        return Loop.findByBackingFile(pool().resolve(id + ".img")).orElseThrow().device().path();
    }

    private List<Path> poolFiles() throws IOException {
        try (var files = Files.walk(pool())) {
            return files.sorted().toList();
        }
    }
}
