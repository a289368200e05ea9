package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.protobuf.Message;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodeExpandVolumeRequest;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.linux.BlockDevices;
import dev.hearth.storage.VolumeId;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * What the kill -9 tests of one pool kind share ({@link FileCrashIT}, {@link DeviceCrashIT}): a
 * scenario (a volume brought to where a call starts, the call, a check of what it made, and its
 * undoing through the API), the loop that kills the driver in the middle of the call and retries
 * it on a restarted one, and the calls themselves, made as the sidecars and the kubelet make them
 * on paths laid out under {@code kubelet}. A volume is named: its ID is minted from the name in
 * the pool {@code default}, so every round's volume has the same ID.
 */
abstract class CrashScenarios {

    /** One CSI call with fixed arguments, begun asynchronously; its answer as far as a retry must repeat it. */
    record Call(String what, Function<KillableHearth, ListenableFuture<String>> begin) {

        static <T extends Message> Call of(String what, Function<KillableHearth, ListenableFuture<T>> begin,
                Function<T, String> answer) {
            return new Call(what, h -> Futures.transform(begin.apply(h), answer::apply, MoreExecutors.directExecutor()));
        }

        String blocking(KillableHearth hearth) throws Exception {
            try {
                return begin.apply(hearth).get(150, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof StatusRuntimeException status) {
                    throw status;
                }
                throw e;
            }
        }
    }

    @FunctionalInterface
    interface Step {
        void run() throws Exception;
    }

    @FunctionalInterface
    interface Check {
        void check(String answer) throws Exception;
    }

    /**
     * {@code prepare} brings the volume to where the call starts from, {@code check} looks at what
     * the call made, {@code undo} takes everything away again through the API.
     */
    record Scenario(String name, Step prepare, Call call, Check check, Step undo) {}

    protected final KillableHearth hearth;
    protected final Path kubelet;
    protected final byte[] data;

    CrashScenarios(KillableHearth hearth, Path kubelet, byte[] data) {
        this.hearth = hearth;
        this.kubelet = kubelet;
        this.data = data;
    }

    /** That the pool, the node and the state hold nothing a scenario made once it is undone. */
    abstract void assertNothingLeft() throws Exception;

    /** Everything the scenarios' volumes have, taken away as the kubelet and the provisioner would. */
    abstract void deleteAll() throws Exception;

    /** A new volume of the scenarios' size, made crash-free. */
    abstract void createNew(String name, VolumeCapability capability) throws Exception;

    /** The ext4 of a volume no one has staged, checked ({@code e2fsck -fn}), nothing changed. */
    abstract void fsck(String id) throws Exception;

    /** That an unstage left nothing of the volume attached on the node (its loop device, a read-only view). */
    abstract void assertReleased(String id) throws Exception;

    /** The volume's raw bytes, read where the pool keeps them (its image, its disk), outside any publish. */
    abstract byte[] raw(String id, long offset, int length) throws IOException;

    /**
     * The node's calls that every pool kind must answer alike, killed midway: an ext4 volume's first
     * stage, its stage over a pod's data, publish, unpublish and unstage; a raw block volume's
     * unpublish and unstage, and its read-only publish and unpublish. {@code size} is the volume's.
     */
    List<Scenario> nodeScenarios(String vol, long size) {
        VolumeCapability ext4 = TestDriver.mount("ext4");
        VolumeCapability block = TestDriver.block();
        return List.of(
                new Scenario("nodeStageVolume.new", () -> createNew(vol, ext4), stageCall(vol, ext4), answer -> {
                    assertThat(mounted(staging(id(vol)))).as("staged").isTrue();
                    write(staging(id(vol)).resolve("data"));
                    unstage(id(vol));
                    fsck(id(vol));
                    stage(id(vol), ext4);
                    assertThat(read(staging(id(vol)).resolve("data"))).isEqualTo(data);
                }, this::deleteAll),
                new Scenario("nodeStageVolume.withData", () -> {
                    createStagedWithData(vol, ext4);
                    unstage(id(vol));
                }, stageCall(vol, ext4), answer -> assertThat(read(staging(id(vol)).resolve("data")))
                        .as("the pod's data, never formatted over").isEqualTo(data), this::deleteAll),
                new Scenario("nodePublishVolume", () -> createStagedWithData(vol, ext4), publishCall(vol, ext4),
                        answer -> assertThat(read(target(id(vol)).resolve("data"))).isEqualTo(data), this::deleteAll),
                new Scenario("nodeUnpublishVolume", () -> {
                    createNew(vol, ext4);
                    stage(id(vol), ext4);
                    publishCall(vol, ext4).blocking(hearth);
                    write(target(id(vol)).resolve("data"));
                }, unpublishCall(vol), answer -> {
                    assertThat(mounted(target(id(vol)))).as("still published").isFalse();
                    assertThat(read(staging(id(vol)).resolve("data"))).isEqualTo(data);
                }, this::deleteAll),
                new Scenario("nodeUnstageVolume", () -> createStagedWithData(vol, ext4), unstageCall(vol), answer -> {
                    assertThat(mounted(staging(id(vol)))).as("still staged").isFalse();
                    assertReleased(id(vol));
                    fsck(id(vol));
                }, this::deleteAll),
                new Scenario("block.nodeUnpublishAndUnstage", () -> {
                    createNew(vol, block);
                    stage(id(vol), block);
                    publishCall(vol, block).blocking(hearth);
                    writeRaw(target(id(vol)));
                }, unpublishAndUnstageCall(vol), answer -> {
                    assertReleased(id(vol));
                    assertThat(Files.exists(target(id(vol)))).as("the target file").isFalse();
                    assertThat(raw(id(vol), 8 * TestDriver.MIB, data.length)).as("the volume's raw data")
                            .isEqualTo(data);
                }, this::deleteAll),
                // A read-only raw block publish binds a read-only loop device over the volume's:
                // killed between the two, that view held the volume's device open for good.
                new Scenario("block.nodePublishVolume.readOnly", () -> {
                    createNew(vol, block);
                    stage(id(vol), block);
                }, readOnlyPublishCall(vol, block), answer -> {
                    assertThat(BlockDevices.size(target(id(vol)))).isEqualTo(size);
                    assertThatThrownBy(() -> writeRaw(target(id(vol))))
                            .as("a write through the read-only publish").isInstanceOf(IOException.class);
                }, this::deleteAll),
                new Scenario("block.nodeUnpublishVolume.readOnly", () -> {
                    createNew(vol, block);
                    stage(id(vol), block);
                    readOnlyPublishCall(vol, block).blocking(hearth);
                }, unpublishCall(vol), answer -> {
                    assertThat(Files.exists(target(id(vol)))).as("the target file").isFalse();
                    unstage(id(vol));
                    assertReleased(id(vol));
                }, this::deleteAll));
    }

    /**
     * What must hold after every kill, on the restarted driver and before the call is retried,
     * wherever the kill landed. Nothing unless a pool kind says.
     */
    void afterRestart() throws Exception {}

    /**
     * The call made crash-free (its answer and duration the reference), then for each kill:
     * prepared, begun, the driver killed after the drawn delay and started again, the call
     * retried until it succeeds, the outcome checked and undone, and nothing left behind.
     */
    void run(Scenario scenario, Random random, int kills) throws Exception {
        try {
            // Timed as the killed calls run: on a driver started again a few calls before (a kill
            // between calls, which any call must survive), after the scenario's preparation.
            hearth.kill();
            hearth.start();
            scenario.prepare().run();
            long start = System.nanoTime();
            String reference = scenario.call().blocking(hearth);
            long took = Duration.ofNanos(System.nanoTime() - start).toMillis();
            scenario.check().check(reference);
            scenario.undo().run();
            assertNothingLeft();
            System.out.println(scenario.name() + ": crash-free " + scenario.call().what() + " took " + took
                    + " ms, answered " + reference);
            for (int kill = 0; kill < kills; kill++) {
                scenario.prepare().run();
                long delay = (long) (took * (kill + random.nextDouble()) / kills);
                long begun = System.nanoTime();
                ListenableFuture<String> call = scenario.call().begin().apply(hearth);
                Thread.sleep(delay);
                boolean returned = call.isDone();
                List<String> tools = hearth.tools();
                long killedAt = Duration.ofNanos(System.nanoTime() - begun).toMillis();
                hearth.kill();
                hearth.start();
                afterRestart();
                Map<String, Integer> refusals = new LinkedHashMap<>();
                String answer = KillableHearth.retry(scenario.call().what(), () -> scenario.call().blocking(hearth),
                        Duration.ofMillis(200), refusals);
                System.out.printf("  kill %d/%d at %d ms (drawn %d of %d)%s%s; restarted in %d ms; retried %s%n",
                        kill + 1, kills, killedAt, delay, took, returned ? ", after the call had returned" : "",
                        tools.isEmpty() ? "" : ", during " + tools, hearth.lastStart().toMillis(),
                        refusals.isEmpty() ? "once" : "after refusals " + refusals);
                assertThat(answer).as("the retried call answers as the crash-free one did").isEqualTo(reference);
                scenario.check().check(answer);
                scenario.undo().run();
                assertNothingLeft();
            }
        } catch (Throwable t) {
            System.out.println("driver stderr (tail):\n" + tail(hearth.stderr()));
            try {
                deleteAll(); // so that the next scenario starts from the baseline
            } catch (Exception | AssertionError again) {
                t.addSuppressed(again);
            }
            throw t;
        }
    }

    // ---- calls

    Call create(String name, long bytes, VolumeCapability capability, VolumeContentSource source) {
        CreateVolumeRequest.Builder request = CreateVolumeRequest.newBuilder().setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
                .addVolumeCapabilities(capability);
        if (source != null) {
            request.setVolumeContentSource(source);
        }
        CreateVolumeRequest built = request.build();
        return Call.of("CreateVolume " + name, h -> h.controllerAsync().createVolume(built),
                r -> r.getVolume().getVolumeId() + " " + r.getVolume().getCapacityBytes());
    }

    Call stageCall(String name, VolumeCapability capability) {
        return Call.of("NodeStageVolume " + name,
                h -> h.nodeAsync().nodeStageVolume(stageRequest(name, capability)), r -> "staged");
    }

    Call publishCall(String name, VolumeCapability capability) {
        return Call.of("NodePublishVolume " + name,
                h -> h.nodeAsync().nodePublishVolume(publishRequest(name, capability)), r -> "published");
    }

    /** A raw block volume published read-only: the request's readonly flag, as for a pod's read-only mount. */
    Call readOnlyPublishCall(String name, VolumeCapability capability) {
        return Call.of("NodePublishVolume read-only " + name, h -> h.nodeAsync().nodePublishVolume(
                publishRequest(name, capability).toBuilder().setReadonly(true).build()), r -> "published");
    }

    Call unpublishCall(String name) {
        return Call.of("NodeUnpublishVolume " + name, h -> h.nodeAsync().nodeUnpublishVolume(
                NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id(name))
                        .setTargetPath(target(id(name)).toString()).build()), r -> "unpublished");
    }

    Call unstageCall(String name) {
        return Call.of("NodeUnstageVolume " + name, h -> h.nodeAsync().nodeUnstageVolume(
                NodeUnstageVolumeRequest.newBuilder().setVolumeId(id(name))
                        .setStagingTargetPath(staging(id(name)).toString()).build()), r -> "unstaged");
    }

    /** A stage and, once it answered, a publish: what a pod's start asks of the node. */
    Call stageAndPublishCall(String name, VolumeCapability capability) {
        return Call.of("NodeStageVolume+NodePublishVolume " + name, h -> Futures.transformAsync(
                h.nodeAsync().nodeStageVolume(stageRequest(name, capability)),
                r -> h.nodeAsync().nodePublishVolume(publishRequest(name, capability)),
                MoreExecutors.directExecutor()), r -> "published");
    }

    /** An unpublish and, once it answered, an unstage: what a pod's end asks of the node. */
    Call unpublishAndUnstageCall(String name) {
        return Call.of("NodeUnpublishVolume+NodeUnstageVolume " + name, h -> Futures.transformAsync(
                h.nodeAsync().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                        .setVolumeId(id(name)).setTargetPath(target(id(name)).toString()).build()),
                r -> h.nodeAsync().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                        .setVolumeId(id(name)).setStagingTargetPath(staging(id(name)).toString()).build()),
                MoreExecutors.directExecutor()), r -> "unstaged");
    }

    Call deleteCall(String name) {
        return Call.of("DeleteVolume " + name, h -> h.controllerAsync().deleteVolume(
                DeleteVolumeRequest.newBuilder().setVolumeId(id(name)).build()), r -> "deleted");
    }

    /** NodeExpandVolume of a published volume at its target, of an unpublished one at its staging path. */
    Call expandCall(String name, VolumeCapability capability, long bytes) {
        return Call.of("NodeExpandVolume " + name, h -> {
            Path path = Files.exists(target(id(name))) ? target(id(name)) : staging(id(name));
            return h.nodeAsync().nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id(name))
                    .setVolumePath(path.toString()).setStagingTargetPath(staging(id(name)).toString())
                    .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
                    .setVolumeCapability(capability).build());
        }, r -> "expanded " + r.getCapacityBytes());
    }

    NodeStageVolumeRequest stageRequest(String name, VolumeCapability capability) {
        directory(staging(id(name)));
        return NodeStageVolumeRequest.newBuilder().setVolumeId(id(name))
                .setStagingTargetPath(staging(id(name)).toString()).setVolumeCapability(capability).build();
    }

    NodePublishVolumeRequest publishRequest(String name, VolumeCapability capability) {
        directory(target(id(name)).getParent());
        return NodePublishVolumeRequest.newBuilder().setVolumeId(id(name))
                .setStagingTargetPath(staging(id(name)).toString()).setTargetPath(target(id(name)).toString())
                .setVolumeCapability(capability).build();
    }

    // ---- volumes by name, and blocking calls

    /** The ID of the volume named {@code nameOrId}; an ID stays as it is. */
    static String id(String nameOrId) {
        return nameOrId.startsWith("pvc-") ? VolumeId.mint("default", nameOrId).toString() : nameOrId;
    }

    static String idOf(String answer) {
        return answer.substring(0, answer.indexOf(' '));
    }

    void stage(String id, VolumeCapability capability) {
        directory(staging(id));
        hearth.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging(id).toString()).setVolumeCapability(capability).build());
    }

    void unpublish(String id) {
        hearth.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setTargetPath(target(id).toString()).build());
    }

    void unstage(String id) {
        hearth.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging(id).toString()).build());
    }

    void deleteVolume(String id) {
        hearth.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    }

    /** Unpublished, unstaged and deleted, as the kubelet and the provisioner take a volume away. */
    void takeAway(String id) {
        unpublish(id);
        unstage(id);
        deleteVolume(id);
    }

    // ---- the node

    Path staging(String id) {
        return kubelet.resolve("plugins/staging").resolve(id);
    }

    Path target(String id) {
        return kubelet.resolve("pods/pod-0/volumes").resolve(id);
    }

    /** As the kubelet makes a staging directory, and a target's parent, before its call. */
    static void directory(Path path) {
        try {
            Files.createDirectories(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    boolean mounted(Path path) throws IOException {
        Path real = path.toAbsolutePath();
        return TestDriver.mountsUnder(real).stream().anyMatch(m -> m.mountPoint().equals(real));
    }

    void write(Path file) throws IOException {
        TestData.writeSynced(file, data);
    }

    /** A new ext4 volume, staged, with the scenarios' data written in it: most node scenarios' start. */
    void createStagedWithData(String name, VolumeCapability ext4) throws Exception {
        createNew(name, ext4);
        stage(id(name), ext4);
        write(staging(id(name)).resolve("data"));
    }

    /** The data written at 8 MiB into a raw block device, and synced. */
    void writeRaw(Path device) throws IOException {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(data), 8 * TestDriver.MIB);
            channel.force(true);
        }
    }

    static byte[] read(Path file) throws IOException {
        return Files.readAllBytes(file);
    }

    /** e2fsck -fn, or xfs_repair -n, of an image or a device no one has mounted: checked, nothing changed. */
    static void fsck(Path imageOrDevice, String type) throws Exception {
        String path = imageOrDevice.toString();
        Process fsck = new ProcessBuilder(type.equals("xfs") ? List.of("xfs_repair", "-n", "-f", path)
                : List.of("e2fsck", "-fn", path)).redirectErrorStream(true).start();
        String output = new String(fsck.getInputStream().readAllBytes());
        assertThat(fsck.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(fsck.exitValue()).as("%s of %s: %s", type.equals("xfs") ? "xfs_repair -n" : "e2fsck -fn", path,
                output).isZero();
    }

    static String tail(String text) {
        return text.length() <= 4000 ? text : text.substring(text.length() - 4000);
    }
}
