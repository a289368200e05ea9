package dev.hearth.driver;

import dev.hearth.controller.ControllerService;
import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.CreateVolumeResponse;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeResponse;
import dev.hearth.csi.v1.NodeGetVolumeStatsRequest;
import dev.hearth.csi.v1.NodeGetVolumeStatsResponse;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodePublishVolumeResponse;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeResponse;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeResponse;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeResponse;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.MountNamespace;
import dev.hearth.node.NodeService;
import dev.hearth.storage.Pools;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Formatter;
import dev.hearth.storage.fs.Grower;
import dev.hearth.storage.mount.FormatJournal;
import dev.hearth.storage.mount.Mounter;
import dev.hearth.storage.tool.ToolRunner;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * For the warm-up: a filesystem volume's and a raw block volume's whole lifecycle, run by the
 * services' own code on a scratch file pool of the state directory ({@link #DIRECTORY}), called
 * directly (no log line, no metric, no lock):
 * CreateVolume; NodeStageVolume (attach; for a filesystem probe, mkfs, mount), NodePublishVolume (a bind),
 * NodeGetVolumeStats, NodeUnpublishVolume and NodeUnstageVolume; DeleteVolume. The node steps run
 * on a thread of their own in a mount namespace of its own ({@link MountNamespace}): no mount of
 * them is ever seen on the node, and a driver killed among them takes its mounts with it. What the
 * node sees is the scratch pool's files and, while a round runs, a loop device over its image; a
 * driver killed in it leaves those, which the next start detaches and removes
 * ({@link #releaseLeftovers}) before it serves. Where no namespace can be had, the node steps are
 * those of a volume that is staged and published nowhere, which change nothing.
 */
final class Rehearsal implements AutoCloseable {

    /** The scratch pool's directory in the state directory. */
    static final String DIRECTORY = ".warm-up-pool";
    private static final String NAME = "pvc-warm-up";
    private static final long VOLUME_BYTES = 64L << 20;
    /** The system property that turns the namespaced stage and publish on. */
    static final String NAMESPACE_PROPERTY = "hearth.warmup.namespace";
    private static final Logger LOG = Logger.getLogger(Rehearsal.class.getName());
    /** How long a round's node steps may take before the warm-up gives up on them. */
    private static final long NODE_STEPS_SECONDS = 60;

    private final Path directory;
    private final FilePool pool;
    private final ControllerService controller;
    private final NodeService node;
    private final VolumeCapability filesystem;
    private final VolumeCapability block;
    private final long bytes;
    /** The thread in a mount namespace of its own that runs the node steps; null once it could not have one. */
    private ExecutorService namespaced;

    private Rehearsal(Path directory, FilePool pool, ControllerService controller, NodeService node,
            FilesystemType type, long bytes) {
        this.directory = directory;
        this.pool = pool;
        this.controller = controller;
        this.node = node;
        this.bytes = bytes;
        // Off unless asked for (-Dhearth.warmup.namespace=true): a driver stopped inside a round under
        // user-mode Linux left the scratch loop device attached (CI's LVM csi-sanity), not yet understood.
        this.namespaced = Boolean.getBoolean(NAMESPACE_PROPERTY) ? Executors.newSingleThreadExecutor(task
                -> Thread.ofPlatform().name("hearth-warm-up-namespace").daemon().unstarted(task)) : null;
        VolumeCapability.AccessMode writer = VolumeCapability.AccessMode.newBuilder()
                .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER).build();
        this.filesystem = VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(type.kernelName()))
                .setAccessMode(writer).build();
        this.block = VolumeCapability.newBuilder()
                .setBlock(VolumeCapability.BlockVolume.getDefaultInstance()).setAccessMode(writer).build();
    }

    private static long volumeBytes(FilesystemType type) {
        // mkfs.xfs refuses less than 300 MiB; without the namespaced steps nothing is formatted
        return Boolean.getBoolean(NAMESPACE_PROPERTY) ? Math.max(VOLUME_BYTES, type.minimumBytes()) : VOLUME_BYTES;
    }

    /** What the services of the rehearsal are made with, as the driver's own are. */
    record Setup(String nodeId, FilesystemType type, Formatter formatter, Grower grower) {}

    /**
     * Opens the scratch pool, after removing what a killed warm-up left of it. Its stages keep their
     * format journal in the scratch directory, never in the driver's.
     */
    static Rehearsal open(Path stateDir, Setup setup) throws IOException {
        Path directory = stateDir.resolve(DIRECTORY);
        removeLeftovers(stateDir);
        // Thick, as a file pool is unless its spec says otherwise: its stage proves emptiness as theirs do.
        long bytes = volumeBytes(setup.type());
        FilePool pool = FilePool.open(new FilePoolConfig("warm-up", directory, 2 * bytes,
                FilePoolConfig.Reserve.NONE, Provisioning.THICK, true, bytes));
        try {
            Pools pools = new Pools(List.of(pool), "warm-up");
            Mounter mounter = new Mounter(setup.formatter(), new FormatJournal(directory.resolve("formatting")),
                    setup.grower(), setup.type());
            return new Rehearsal(directory, pool, new ControllerService(pools, setup.nodeId(), setup.type()),
                    new NodeService(setup.nodeId(), 1, pools, mounter, setup.grower(), directory.resolve("ephemeral"),
                            List.of()), // its calls name paths in its own scratch directory
                    setup.type(), bytes);
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /**
     * A filesystem volume and a raw block volume, each through its lifecycle. Returns whether their
     * node steps staged and published them (in the namespace); false where they could only run as
     * for volumes staged nowhere.
     */
    boolean round() throws IOException {
        boolean mounted = lifecycle(filesystem);
        return lifecycle(block) && mounted;
    }

    private boolean lifecycle(VolumeCapability capability) throws IOException {
        CreateVolumeResponse created = call(observer -> controller.createVolume(CreateVolumeRequest.newBuilder()
                .setName(capability.hasBlock() ? NAME + "-block" : NAME)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
                .addVolumeCapabilities(capability)
                .putParameters("csi.storage.k8s.io/pvc/name", "warm-up")
                .putParameters("csi.storage.k8s.io/pvc/namespace", "default")
                .build(), observer));
        String id = created.getVolume().getVolumeId();
        Path staging = directory.resolve("staging");
        Path target = directory.resolve("target");
        boolean mounted;
        try {
            mounted = namespaced(() -> {
                Rehearsal.<NodeStageVolumeResponse>call(observer -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
                        .setVolumeId(id).setStagingTargetPath(staging.toString()).setVolumeCapability(capability)
                        .putAllPublishContext(created.getVolume().getVolumeContextMap()).build(), observer));
                Rehearsal.<NodePublishVolumeResponse>call(observer -> node.nodePublishVolume(
                        NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                                .setTargetPath(target.toString()).setVolumeCapability(capability)
                                .putAllVolumeContext(created.getVolume().getVolumeContextMap()).build(), observer));
                Rehearsal.<NodeGetVolumeStatsResponse>call(observer -> node.nodeGetVolumeStats(
                        NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id).setVolumePath(target.toString()).build(),
                        observer));
                unpublishAndUnstage(id, staging, target);
            });
        } catch (IOException | RuntimeException e) {
            if (Thread.currentThread().isInterrupted()) {
                throw e; // the driver stops: close() ends the steps and removes what they left
            }
            // A tool missing or failing (mkfs.xfs, say): the rest of the warm-up goes on without these steps.
            LOG.log(Level.FINE, "warm-up: its stage and publish failed, and are not rehearsed again: " + e, e);
            shutDown(); // what the steps mounted goes with the namespace; the unstage below detaches the rest
            mounted = false;
        }
        if (!mounted) {
            unpublishAndUnstage(id, staging, target);
        }
        Rehearsal.<DeleteVolumeResponse>call(observer -> controller.deleteVolume(
                DeleteVolumeRequest.newBuilder().setVolumeId(id).build(), observer));
        return mounted;
    }

    private void unpublishAndUnstage(String id, Path staging, Path target) {
        Rehearsal.<NodeUnpublishVolumeResponse>call(observer -> node.nodeUnpublishVolume(
                NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build(),
                observer));
        Rehearsal.<NodeUnstageVolumeResponse>call(observer -> node.nodeUnstageVolume(
                NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString()).build(),
                observer));
    }

    /**
     * Runs the steps on the namespaced thread and waits for them; false, without running them, where
     * that thread cannot have a namespace of its own (no CAP_SYS_ADMIN, say). What they throw is
     * thrown here.
     */
    private boolean namespaced(Runnable steps) throws IOException {
        if (namespaced == null) {
            return false;
        }
        Future<Boolean> done = namespaced.submit(() -> {
            try {
                MountNamespace.enterPrivate(needed()); // the first time only: the thread stays in it
            } catch (LinuxException e) {
                LOG.log(Level.FINE, () -> "warm-up: no mount namespace of its own (" + e.getMessage()
                        + "); it rehearses no stage or publish");
                return false;
            }
            steps.run();
            return true;
        });
        try {
            if (done.get(NODE_STEPS_SECONDS, TimeUnit.SECONDS)) {
                return true;
            }
            shutDown(); // it is in no namespace of its own, or in one it could not make private: never again
            return false;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IOException("warm-up node steps: " + e.getCause(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("warm-up node steps took over " + NODE_STEPS_SECONDS + " s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("warm-up interrupted", e);
        }
    }

    /**
     * The paths the node steps need in their namespace, whose mounts it keeps: the scratch pool, the
     * tools and their configuration, and the JVM.
     */
    private List<Path> needed() {
        List<Path> needed = new java.util.ArrayList<>(List.of(directory, Path.of("/etc"),
                Path.of(System.getProperty("java.home"))));
        ToolRunner.SEARCH_PATH.forEach(dir -> needed.add(Path.of(dir)));
        return needed;
    }

    /**
     * Ends the namespaced thread (interrupted, a tool it runs is killed), and with it its namespace
     * and whatever is still mounted there; waits for it even when the caller was interrupted (the
     * driver stops), so that nothing of its steps runs on once this returns.
     */
    private void shutDown() {
        if (namespaced == null) {
            return;
        }
        namespaced.shutdownNow();
        boolean interrupted = Thread.interrupted();
        try {
            if (!namespaced.awaitTermination(NODE_STEPS_SECONDS, TimeUnit.SECONDS)) {
                LOG.warning("the warm-up's stage and publish did not end within " + NODE_STEPS_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            interrupted = true;
        } finally {
            namespaced = null;
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
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

    /**
     * Ends the namespaced thread (its mounts go with its namespace), closes the scratch pool,
     * detaches a loop device a failed round left over its image, and removes the directory.
     */
    @Override
    public void close() throws IOException {
        shutDown();
        pool.close();
        removeLeftovers(directory.getParent());
    }

    /** Removes the scratch pool's directory of the state directory, if there is one (a start that failed). */
    static void removeLeftovers(Path stateDir) throws IOException {
        releaseLeftovers(stateDir);
        remove(stateDir.resolve(DIRECTORY));
    }

    /**
     * Detaches the loop devices over files of the scratch directory: what a driver killed in a
     * round's node steps left attached (its mounts went with the killed process's namespace). Only
     * where the directory is there, so a start after a clean stop reads no loop device. A device
     * something still holds goes at its last close.
     */
    static void releaseLeftovers(Path stateDir) throws IOException {
        Path directory = stateDir.resolve(DIRECTORY);
        if (!Files.isDirectory(directory, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Path canonical = MountInfo.canonical(directory);
        for (LoopAttachment attachment : Loop.list()) {
            if (attachment.backingFile().startsWith(canonical)) {
                Loop.detach(attachment.device());
                LOG.fine(() -> "detached " + attachment.device() + ", left over " + attachment.backingFile()
                        + " by a warm-up that did not finish");
            }
        }
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
