package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.mount;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.GetPluginInfoRequest;
import dev.hearth.csi.v1.IdentityGrpc;
import dev.hearth.csi.v1.NodeGetCapabilitiesRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeResponse;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.csi.v1.VolumeCapability;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.file.FilePoolConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Calls whose handlers wait in the kernel or on a tool hold no other call up. A handler spends
 * most of its time in native calls (a tool's output polled, fsync, ioctl, mount), and a virtual
 * thread in a native call keeps its carrier: with one carrier per CPU, as many slow stages as the
 * node has CPUs would leave Probe, the kubelet's stats and every other call waiting.
 */
@RequiresRoot
@RequiresTools({"mkfs.ext4", "fsfreeze"})
class HandlerThreadsTest {

    @TempDir
    Path dir;

    /** The pool's own filesystem, apart from the driver's directory, whose sweep unmounts what is under it. */
    @TempDir
    Path fsDir;

    /**
     * More stages than the test's JVM has CPUs wait in mkfs, whose writes cannot reach the pool's
     * frozen filesystem; meanwhile other calls are answered, and once it thaws every stage ends well.
     */
    @Test
    void callsAreAnsweredWhileMoreStagesThanCpusWaitInMkfs() throws Exception {
        int stuck = Runtime.getRuntime().availableProcessors() + 1;
        try (Cleanup cleanup = new Cleanup()) {
            ScratchFilesystem fs = ScratchFilesystem.mount(cleanup, fsDir, "ext4", (stuck + 4) * 64 * MIB);
            Path poolDir = fs.mountPoint().resolve("pool");
            // Runs after the driver's own close, which sweeps only what lies under its directory.
            cleanup.add(() -> {
                for (LoopAttachment loop : TestDriver.loopDevicesUnder(fs.mountPoint().toRealPath())) {
                    Loop.detach(loop.device());
                }
            });
            try (TestDriver driver = TestDriver.start(dir,
                    List.of(new FilePoolConfig(TestDriver.POOL, poolDir, (stuck + 1) * 64 * MIB)))) {
                VolumeCapability ext4 = mount("ext4");
                List<String> ids = new ArrayList<>();
                for (int i = 0; i < stuck; i++) {
                    ids.add(driver.create("pvc-stuck-" + i, 64 * MIB, ext4).getVolumeId());
                }
                List<ListenableFuture<NodeStageVolumeResponse>> stages = new ArrayList<>();
                List<Path> stagings = new ArrayList<>();
                ScratchFilesystem.run(List.of("fsfreeze", "--freeze", fs.mountPoint().toString()));
                try {
                    for (String id : ids) {
                        Path staging = Files.createDirectories(dir.resolve("staging").resolve(id));
                        stagings.add(staging);
                        stages.add(NodeGrpc.newFutureStub(driver.channel()).withDeadlineAfter(120, TimeUnit.SECONDS)
                                .nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                                        .setStagingTargetPath(staging.toString()).setVolumeCapability(ext4).build()));
                    }
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (mkfsRunning() < stuck && System.nanoTime() < deadline) {
                        Thread.sleep(20);
                    }
                    assertThat(mkfsRunning()).as("every stage is in its mkfs, held by the frozen pool").isEqualTo(stuck);
                    assertThat(stages).noneMatch(ListenableFuture::isDone);

                    assertThat(IdentityGrpc.newBlockingStub(driver.channel()).withDeadlineAfter(10, TimeUnit.SECONDS)
                            .getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName())
                            .isEqualTo("csi.hearth.dev");
                    assertThat(NodeGrpc.newBlockingStub(driver.channel()).withDeadlineAfter(10, TimeUnit.SECONDS)
                            .nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance())
                            .getCapabilitiesCount()).isPositive();
                    assertThat(stages).as("the stages still wait").noneMatch(ListenableFuture::isDone);
                } finally {
                    ScratchFilesystem.run(List.of("fsfreeze", "--unfreeze", fs.mountPoint().toString()));
                    for (ListenableFuture<NodeStageVolumeResponse> stage : stages) {
                        try {
                            stage.get(120, TimeUnit.SECONDS); // before the driver's close sweeps
                        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                            // the assertions say what went wrong
                        }
                    }
                }
                for (ListenableFuture<NodeStageVolumeResponse> stage : stages) {
                    stage.get(120, TimeUnit.SECONDS);
                }
                for (int i = 0; i < stuck; i++) {
                    driver.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(ids.get(i))
                            .setStagingTargetPath(stagings.get(i).toString()).build());
                    driver.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(ids.get(i)).build());
                }
                assertThat(driver.poolLoopDevices()).isEmpty();
            }
        }
    }

    /** The mkfs processes this JVM's driver runs now (mkfs.ext4 is mke2fs under another name). */
    private static long mkfsRunning() {
        return ProcessHandle.current().descendants()
                .filter(p -> p.info().command().map(c -> c.endsWith("/mkfs.ext4") || c.endsWith("/mke2fs"))
                        .orElse(false))
                .count();
    }
}
