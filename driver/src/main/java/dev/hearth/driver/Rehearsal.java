package dev.hearth.driver;

import dev.hearth.controller.ControllerService;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.CreateVolumeResponse;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeResponse;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeResponse;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeResponse;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.node.NodeService;
import dev.hearth.storage.Pools;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Grower;
import dev.hearth.storage.mount.Mounter;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * For the warm-up: the Controller's CreateVolume and DeleteVolume, and the Node's NodeUnpublishVolume
 * and NodeUnstageVolume of a volume that is published nowhere, run by the services' own code on a
 * scratch file pool of the state directory ({@link #DIRECTORY}), called directly (no log line, no
 * metric, no lock). What it changes on the node is a file pool's files in that directory: no loop
 * device and no mount. A driver killed in it leaves the directory, which the next warm-up removes
 * before it begins.
 */
final class Rehearsal implements AutoCloseable {

    /** The scratch pool's directory in the state directory. */
    static final String DIRECTORY = ".warm-up-pool";
    private static final String NAME = "pvc-warm-up";
    private static final long VOLUME_BYTES = 64L << 20;

    private final Path directory;
    private final FilePool pool;
    private final ControllerService controller;
    private final NodeService node;
    private final VolumeCapability capability;

    private Rehearsal(Path directory, FilePool pool, ControllerService controller, NodeService node,
            FilesystemType type) {
        this.directory = directory;
        this.pool = pool;
        this.controller = controller;
        this.node = node;
        this.capability = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(type.kernelName()))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    /** What the services of the rehearsal are made with, as the driver's own are. */
    record Setup(String nodeId, FilesystemType type, Grower grower) {}

    /** Opens the scratch pool, after removing what a killed warm-up left of it. */
    static Rehearsal open(Path stateDir, Setup setup, Mounter mounter) throws IOException {
        Path directory = stateDir.resolve(DIRECTORY);
        remove(directory);
        FilePool pool = FilePool.open(new FilePoolConfig("warm-up", directory, 4 * VOLUME_BYTES,
                FilePoolConfig.Reserve.NONE, Provisioning.THICK, true, VOLUME_BYTES));
        try {
            Pools pools = new Pools(List.of(pool), "warm-up");
            return new Rehearsal(directory, pool, new ControllerService(pools, setup.nodeId(), setup.type()),
                    new NodeService(setup.nodeId(), 1, pools, mounter, setup.grower(), directory.resolve("ephemeral"),
                            List.of()), // its calls name paths in its own scratch directory
                    setup.type());
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /** One volume through the steps that change no mount: made, unpublished, unstaged, deleted. */
    void round() {
        CreateVolumeResponse created = call(observer -> controller.createVolume(CreateVolumeRequest.newBuilder()
                .setName(NAME)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(VOLUME_BYTES))
                .addVolumeCapabilities(capability)
                .putParameters("csi.storage.k8s.io/pvc/name", "warm-up")
                .putParameters("csi.storage.k8s.io/pvc/namespace", "default")
                .build(), observer));
        String id = created.getVolume().getVolumeId();
        Rehearsal.<NodeUnpublishVolumeResponse>call(observer -> node.nodeUnpublishVolume(
                NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                        .setTargetPath(directory.resolve("target").toString()).build(), observer));
        Rehearsal.<NodeUnstageVolumeResponse>call(observer -> node.nodeUnstageVolume(
                NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                        .setStagingTargetPath(directory.resolve("staging").toString()).build(), observer));
        Rehearsal.<DeleteVolumeResponse>call(observer -> controller.deleteVolume(
                DeleteVolumeRequest.newBuilder().setVolumeId(id).build(), observer));
    }

    private interface Call<R> {
        void run(StreamObserver<R> observer);
    }

    /** A handler's answer; what it throws or sends as an error ends the warm-up. */
    private static <R> R call(Call<R> call) {
        AtomicReference<R> answer = new AtomicReference<>();
        call.run(new StreamObserver<>() {
            @Override
            public void onNext(R value) {
                answer.set(value);
            }

            @Override
            public void onError(Throwable t) {
                throw new IllegalStateException("warm-up call failed", t);
            }

            @Override
            public void onCompleted() {}
        });
        if (answer.get() == null) {
            throw new IllegalStateException("warm-up call gave no answer");
        }
        return answer.get();
    }

    /** Closes the scratch pool and removes its directory. */
    @Override
    public void close() throws IOException {
        pool.close();
        remove(directory);
    }

    /** Removes the scratch pool's directory of the state directory, if there is one (a start that failed). */
    static void removeLeftovers(Path stateDir) throws IOException {
        remove(stateDir.resolve(DIRECTORY));
    }

    /** Removes the scratch directory: files and directories only, never what a link points to. */
    private static void remove(Path directory) throws IOException {
        if (!Files.isDirectory(directory, LinkOption.NOFOLLOW_LINKS)) {
            Files.deleteIfExists(directory);
            return;
        }
        Files.walkFileTree(directory, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException failure) throws IOException {
                if (failure != null) {
                    throw failure;
                }
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
