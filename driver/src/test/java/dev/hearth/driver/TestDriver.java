package dev.hearth.driver;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateSnapshotRequest;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteSnapshotRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetCapacityRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.ListSnapshotsRequest;
import dev.hearth.csi.v1.ListSnapshotsResponse;
import dev.hearth.csi.v1.ListVolumesRequest;
import dev.hearth.csi.v1.ListVolumesResponse;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.Snapshot;
import dev.hearth.csi.v1.Volume;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.csi.v1.VolumeCapability.AccessMode;
import dev.hearth.csi.v1.VolumeContentSource;
import dev.hearth.driver.metrics.MetricsAddress;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.Freeze;
import dev.hearth.linux.Host;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The whole driver, as {@code hearth serve} wires it, on a unix socket in a temporary directory
 * with a file pool there (more if a test asks), and a channel to it. Closing it stops the driver and then undoes
 * whatever a failed test left on the host: mounts under the directory, loop devices of the pool.
 */
final class TestDriver implements AutoCloseable {

    static final long MIB = 1L << 20;
    static final long GIB = 1L << 30;
    static final String NODE = "node-a";
    static final String POOL = "default";
    static final long POOL_CAPACITY = 2 * GIB;
    static final long MAX_VOLUMES = 42;

    private final Path dir;
    private final Path poolDir;
    private final Driver.Settings settings;
    private final Cleanup cleanup = new Cleanup();
    private Driver driver;
    private ManagedChannel channel;

    private TestDriver(Path dir, Path poolDir, Driver.Settings settings) throws IOException {
        this.dir = dir;
        this.poolDir = poolDir;
        this.settings = settings;
        this.driver = Driver.start(settings);
        this.channel = Channels.channelTo(driver.endpoint());
    }

    static TestDriver start(Path dir) throws IOException {
        return start(dir, List.of(new FilePoolConfig(POOL, dir.resolve("pool"), POOL_CAPACITY)));
    }

    /** A driver with these pools, the first the default; {@link #poolDir()} is the first's directory. */
    static TestDriver start(Path dir, List<FilePoolConfig> pools) throws IOException {
        Endpoint endpoint = Endpoint.parse("unix://" + dir.resolve("csi.sock"));
        return new TestDriver(dir, pools.getFirst().directory(), new Driver.Settings(endpoint, NODE, "csi.hearth.dev",
                dir.resolve("state"), pools, null, MAX_VOLUMES, Optional.empty(), FilesystemType.EXT4));
    }

    /** A driver with a file pool, the default, and a second pool of any kind. */
    static TestDriver start(Path dir, FilePoolConfig first, PoolConfig second) throws IOException {
        Endpoint endpoint = Endpoint.parse("unix://" + dir.resolve("csi.sock"));
        return new TestDriver(dir, first.directory(), new Driver.Settings(endpoint, NODE, "csi.hearth.dev",
                dir.resolve("state"), List.of(first, second), null, MAX_VOLUMES, Optional.empty(), FilesystemType.EXT4));
    }

    /** The default driver with its metrics served on 127.0.0.1 at a port the system chooses ({@link #metricsPort()}). */
    static TestDriver startServingMetrics(Path dir) throws IOException {
        Endpoint endpoint = Endpoint.parse("unix://" + dir.resolve("csi.sock"));
        return new TestDriver(dir, dir.resolve("pool"), new Driver.Settings(endpoint, NODE, "csi.hearth.dev",
                dir.resolve("state"), List.of(new FilePoolConfig(POOL, dir.resolve("pool"), POOL_CAPACITY)), null,
                MAX_VOLUMES, Optional.of(MetricsAddress.parse("127.0.0.1:0")), FilesystemType.EXT4));
    }

    /**
     * A driver with the default pool that judges its prerequisites on {@code host} (a faked machine)
     * and serves /healthz on a free port of 127.0.0.1.
     */
    static TestDriver start(Path dir, FilesystemType defaultFsType, Host host) throws IOException {
        Endpoint endpoint = Endpoint.parse("unix://" + dir.resolve("csi.sock"));
        return new TestDriver(dir, dir.resolve("pool"), new Driver.Settings(endpoint, NODE, "csi.hearth.dev",
                dir.resolve("state"), List.of(new FilePoolConfig(POOL, dir.resolve("pool"), POOL_CAPACITY)), null,
                MAX_VOLUMES, Optional.of(new MetricsAddress("127.0.0.1", 0)), defaultFsType, host));
    }

    /** The port /healthz and /metrics are served on. */
    int metricsPort() {
        return driver.metricsAddress().orElseThrow().port();
    }

    /** Stops the driver as a pod restart would, leaving mounts and loop devices, and starts a new one. */
    void restart() throws IOException {
        channel.shutdownNow();
        driver.shutdown(Duration.ofSeconds(5));
        driver = Driver.start(settings);
        channel = Channels.channelTo(driver.endpoint());
    }

    Path dir() {
        return dir;
    }

    Path poolDir() {
        return poolDir;
    }

    Path socket() {
        return dir.resolve("csi.sock");
    }

    /** The channel to the driver, for calls the stubs below do not make (the fuzz's generic calls). */
    Channel channel() {
        return channel;
    }

    /** A stub whose deadline starts now: a hanging driver fails the test instead of hanging it. */
    IdentityGrpc.IdentityBlockingStub identity() {
        return IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    ControllerGrpc.ControllerFutureStub controllerAsync() {
        return ControllerGrpc.newFutureStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    /** Undo actions a test registers; they run, newest first, before the leftovers sweep. */
    Cleanup cleanup() {
        return cleanup;
    }

    Volume create(String name, long requiredBytes, VolumeCapability capability) {
        return controller().createVolume(CreateVolumeRequest.newBuilder()
                .setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(requiredBytes))
                .addVolumeCapabilities(capability)
                .build()).getVolume();
    }

    /** A restore or a clone: a volume made from {@code source}. */
    Volume create(String name, long requiredBytes, VolumeCapability capability, VolumeContentSource source) {
        return controller().createVolume(CreateVolumeRequest.newBuilder()
                .setName(name)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(requiredBytes))
                .addVolumeCapabilities(capability)
                .setVolumeContentSource(source)
                .build()).getVolume();
    }

    Snapshot snapshot(String name, String sourceVolumeId) {
        return controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName(name)
                .setSourceVolumeId(sourceVolumeId).build()).getSnapshot();
    }

    static VolumeContentSource fromSnapshot(String snapshotId) {
        return VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId)).build();
    }

    static VolumeContentSource fromVolume(String volumeId) {
        return VolumeContentSource.newBuilder()
                .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(volumeId)).build();
    }

    /** GetCapacity of the default pool. */
    long available() {
        return controller().getCapacity(GetCapacityRequest.getDefaultInstance()).getAvailableCapacity();
    }

    /** Files in the pool directory: images, metadata, partial images (not the driver's lock file). */
    List<Path> poolFiles() throws IOException {
        if (!Files.isDirectory(poolDir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(poolDir)) {
            return files.filter(f -> !Set.of(".hearth.lock", "snapshots").contains(f.getFileName().toString()))
                    .sorted().toList();
        }
    }

    Path image(String volumeId) {
        return poolDir.resolve(volumeId + ".img");
    }

    /**
     * Loop devices whose backing file lies in the pool directory, and those layered over them
     * (the read-only views of read-only block publishes).
     */
    List<LoopAttachment> poolLoopDevices() throws IOException {
        return loopDevicesUnder(poolDir.toRealPath());
    }

    /** Loop devices backed by a file under {@code dir}, and those layered over them. */
    static List<LoopAttachment> loopDevicesUnder(Path dir) throws IOException {
        List<LoopAttachment> all = Loop.list();
        List<Path> backed = all.stream().filter(l -> l.backingFile().startsWith(dir))
                .map(l -> l.device().path()).toList();
        return all.stream()
                .filter(l -> l.backingFile().startsWith(dir) || backed.contains(l.backingFile()))
                .toList();
    }

    /**
     * The loop devices over files below {@code dir} (unless {@code stackedOnly}) and those stacked
     * over them, at any depth.
     */
    private static List<LoopAttachment> stackedOver(Path dir, boolean stackedOnly) throws IOException {
        List<LoopAttachment> all = Loop.list();
        List<LoopAttachment> found = new ArrayList<>();
        Set<Path> devices = new HashSet<>();
        for (boolean grew = true; grew; ) {
            grew = false;
            for (LoopAttachment loop : all) {
                if (!found.contains(loop) && (loop.backingFile().startsWith(dir) || devices.contains(loop.backingFile()))) {
                    found.add(loop);
                    devices.add(loop.device().path());
                    grew = true;
                }
            }
        }
        if (stackedOnly) {
            found.removeIf(loop -> loop.backingFile().startsWith(dir));
        }
        return found;
    }

    /** Mounts at or under {@code path}, in mount order. */
    static List<MountEntry> mountsUnder(Path path) throws IOException {
        return MountInfo.read().stream().filter(m -> m.mountPoint().startsWith(path)).toList();
    }

    /** Every volume ID ListVolumes gives, page after page. */
    static List<String> volumeIds(ControllerGrpc.ControllerBlockingStub controller) {
        List<String> ids = new ArrayList<>();
        String token = "";
        do {
            ListVolumesResponse page = controller.listVolumes(ListVolumesRequest.newBuilder().setStartingToken(token)
                    .build());
            page.getEntriesList().forEach(e -> ids.add(e.getVolume().getVolumeId()));
            token = page.getNextToken();
        } while (!token.isEmpty());
        return ids;
    }

    /** Every snapshot ID ListSnapshots gives, page after page. */
    static List<String> snapshotIds(ControllerGrpc.ControllerBlockingStub controller) {
        List<String> ids = new ArrayList<>();
        String token = "";
        do {
            ListSnapshotsResponse page = controller.listSnapshots(ListSnapshotsRequest.newBuilder()
                    .setStartingToken(token).build());
            page.getEntriesList().forEach(e -> ids.add(e.getSnapshot().getSnapshotId()));
            token = page.getNextToken();
        } while (!token.isEmpty());
        return ids;
    }

    /**
     * Deletes every snapshot, then every volume, the driver lists, each through the API (so any
     * refusal fails the caller); returns what went, as "N volumes and M snapshots".
     */
    static String deleteAllListed(ControllerGrpc.ControllerBlockingStub controller) {
        List<String> snapshots = snapshotIds(controller);
        snapshots.forEach(id -> controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(id).build()));
        List<String> volumes = volumeIds(controller);
        volumes.forEach(id -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
        return volumes.size() + " volumes and " + snapshots.size() + " snapshots";
    }

    /** {@code count} loop devices over sparse files of {@code bytes} in {@code dir}: disks for a device pool. */
    static List<String> disks(Path dir, int count, long bytes) throws IOException {
        List<String> disks = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Path file = Scratch.sparseFile(dir.resolve("disk" + i + ".img"), bytes);
            disks.add(Loop.attach(file, false, false).path().toString());
        }
        return disks;
    }

    static VolumeCapability mount(String fsType) {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType))
                .setAccessMode(AccessMode.newBuilder().setMode(AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    static VolumeCapability block() {
        return VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                .setAccessMode(AccessMode.newBuilder().setMode(AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    /** The capability with the pod's fsGroup, as the kubelet passes it when VOLUME_MOUNT_GROUP is offered. */
    static VolumeCapability withMountGroup(VolumeCapability capability, String group) {
        return capability.toBuilder().setMount(capability.getMount().toBuilder().setVolumeMountGroup(group)).build();
    }

    static VolumeCapability withMode(VolumeCapability capability, AccessMode.Mode mode) {
        return capability.toBuilder().setAccessMode(AccessMode.newBuilder().setMode(mode)).build();
    }

    @Override
    public void close() throws IOException {
        try (Cleanup last = new Cleanup()) {
            last.add(this::sweep);
            last.add(() -> {
                channel.shutdownNow();
                driver.shutdown(Duration.ofSeconds(5));
            });
            last.add(cleanup::close);
        }
    }

    private void sweep() throws IOException {
        sweep(dir);
    }

    /** Whatever is still mounted under the directory or attached from a file under it after a failed test. */
    static void sweep(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        Path real = dir.toRealPath();
        List<MountEntry> mounts = new ArrayList<>(mountsUnder(real));
        for (MountEntry mount : mounts.reversed()) {
            try {
                Freeze.thaw(mount.mountPoint()); // a test that failed inside a freeze must not leave one
            } catch (IOException | IllegalArgumentException e) {
                // not freezable, or gone: nothing to thaw
            }
            Mounts.unmount(mount.mountPoint());
        }
        detachStacked(real, false);
    }

    /**
     * What a reboot ends of the disks below {@code disks}, which outlive it: the loop devices a
     * driver stacked over them (read-only views), at any depth. The disks themselves stay.
     */
    static void sweepViewsOver(Path disks) throws IOException {
        if (Files.exists(disks)) {
            detachStacked(disks.toRealPath(), true);
        }
    }

    /**
     * Detaches the loop devices over files below {@code real} (unless {@code keepBase}) and every
     * one stacked over those, the top ones first: a device that another reads is released only at
     * that one's last close. Until none is left, or 5 s.
     */
    private static void detachStacked(Path real, boolean keepBase) throws IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        for (List<LoopAttachment> loops = stackedOver(real, keepBase); !loops.isEmpty();
                loops = stackedOver(real, keepBase)) {
            Set<Path> read = loops.stream().map(LoopAttachment::backingFile).collect(Collectors.toSet());
            for (LoopAttachment loop : loops) {
                if (!read.contains(loop.device().path())) {
                    try {
                        Loop.detach(loop.device());
                    } catch (IOException e) {
                        if (System.nanoTime() > deadline) {
                            throw e;
                        }
                    }
                }
            }
            if (System.nanoTime() > deadline) {
                break;
            }
            try {
                Thread.sleep(10); // a detach of a device still open completes at its last close
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while detaching loop devices under " + real, e);
            }
        }
    }
}
