package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a thread mounts in a namespace of its own is seen by it and by the tools it starts, never
 * by the process's other threads, by the node's namespace or by a peer of a shared mount it lies
 * under, and it goes when the thread ends.
 */
@RequiresRoot
class MountNamespaceTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    /** What the namespaced thread saw. */
    private record Seen(boolean ownTable, boolean watchedTable, boolean tool, boolean nodeTableMeanwhile,
            boolean peerMeanwhile) {}

    @Test
    void aMountInAThreadsOwnNamespaceStaysThereAndGoesWithTheThread() throws Exception {
        // A shared mount and a peer of it, as the kubelet's directory is: a mount beneath the one
        // that propagated would appear beneath the other.
        Path shared = Files.createDirectory(dir.resolve("shared"));
        Path peer = Files.createDirectory(dir.resolve("peer"));
        Mounts.mount("tmpfs", shared, "tmpfs", 0, "size=1m");
        // Detached whole: a mount that leaked beneath them (the failure this test looks for) goes too.
        cleanup.add(() -> Mounts.unmount(shared, MountFlags.MNT_DETACH));
        Mounts.mount(null, shared, null, MountFlags.MS_SHARED, null);
        Mounts.bind(shared, peer, false);
        cleanup.add(() -> Mounts.unmount(peer, MountFlags.MNT_DETACH));
        Path inside = Files.createDirectory(shared.resolve("inside"));
        int nodeMounts = MountInfo.read().size();

        CompletableFuture<Seen> seen = new CompletableFuture<>();
        Thread thread = Thread.ofPlatform().name("namespaced").start(() -> {
            try {
                MountNamespace.enterPrivate(List.of(dir));
                assertThat(MountNamespace.isPrivate()).isTrue();
                Mounts.mount("tmpfs", inside, "tmpfs", 0, "size=1m");
                Files.writeString(inside.resolve("file"), "only here");
                seen.complete(new Seen(
                        MountInfo.at(MountInfo.read(), inside).isPresent(),
                        MountInfo.at(MountInfo.readWatched(), inside).isPresent(),
                        toolSees(inside),
                        MountInfo.at(MountInfo.parse(Files.readString(Path.of("/proc/self/mountinfo"))), inside)
                                .isPresent(),
                        Files.exists(peer.resolve("inside/file"))));
            } catch (Throwable t) {
                seen.completeExceptionally(t);
            }
        });
        Seen answer = seen.get(30, TimeUnit.SECONDS);
        thread.join();

        assertThat(answer.ownTable()).as("the thread's own table").isTrue();
        assertThat(answer.watchedTable()).as("the thread's watched table").isTrue();
        assertThat(answer.tool()).as("a tool the thread started").isTrue();
        assertThat(answer.nodeTableMeanwhile()).as("the node's table while the thread ran").isFalse();
        assertThat(answer.peerMeanwhile()).as("the shared mount's peer while the thread ran").isFalse();
        assertThat(MountNamespace.isPrivate()).as("the test's thread").isFalse();
        assertThat(MountInfo.at(inside)).as("the node's table after").isEmpty();
        assertThat(MountInfo.at(MountInfo.readWatched(), inside)).isEmpty();
        assertThat(MountInfo.read()).hasSize(nodeMounts);
        assertThat(inside).isEmptyDirectory();
    }

    /**
     * A copy of the node's mounts would hold each filesystem, and its device, for as long as the
     * namespace lives: the node could unmount a volume's filesystem, but its loop device would stay
     * open and could not go. The thread detaches its copies of block device mounts it does not need,
     * so once the node unmounts, the device is free (an exclusive open, which fails while any
     * namespace has it mounted, succeeds), while the thread still lives in its namespace.
     */
    @Test
    @RequiresTools("mkfs.ext4")
    void aThreadsNamespaceHoldsNoDeviceTheNodeHadMounted() throws Exception {
        ScratchFilesystem volume = ScratchFilesystem.mount(cleanup, dir, "ext4", 64 * Scratch.MIB);
        LoopDevice loop = volume.device();
        Path staged = volume.mountPoint();
        Path needed = Files.createDirectory(dir.resolve("scratch"));

        CompletableFuture<Boolean> entered = new CompletableFuture<>();
        CompletableFuture<Void> release = new CompletableFuture<>();
        Thread thread = Thread.ofPlatform().name("namespaced").start(() -> {
            try {
                MountNamespace.enterPrivate(List.of(needed));
                entered.complete(MountInfo.at(MountInfo.read(), staged).isPresent());
                release.get(30, TimeUnit.SECONDS); // the namespace lives on while the node unmounts
            } catch (Throwable t) {
                entered.completeExceptionally(t);
            }
        });
        try {
            assertThat(entered.get(30, TimeUnit.SECONDS)).as("the thread's copy of the volume's mount").isFalse();
            Mounts.unmount(staged);
            try (ExclusiveDevice device = ExclusiveDevice.open(loop.path(), 7, loop.number())) {
                assertThat(device).isNotNull();
            }
        } finally {
            release.complete(null);
            thread.join();
        }
    }

    /** Whether {@code cat /proc/self/mountinfo}, started from the calling thread, lists the path. */
    private static boolean toolSees(Path path) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ChildProcess cat = ChildProcess.start("/bin/cat", List.of("cat", "/proc/self/mountinfo"), List.of())) {
            while (cat.readOutput(10_000, (chunk, length) -> out.write(chunk, 0, length), (chunk, length) -> {})) {
                // until both streams end
            }
        }
        return MountInfo.at(MountInfo.parse(out.toString(StandardCharsets.UTF_8)), path).isPresent();
    }
}
