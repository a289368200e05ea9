package dev.hearth.driver;

import static dev.hearth.driver.TestDriver.MIB;
import static dev.hearth.driver.TestDriver.block;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.hearth.csi.v1.CapacityRange;
import dev.hearth.csi.v1.ControllerGrpc;
import dev.hearth.csi.v1.CreateVolumeRequest;
import dev.hearth.csi.v1.DeleteVolumeRequest;
import dev.hearth.csi.v1.NodeGrpc;
import dev.hearth.csi.v1.NodePublishVolumeRequest;
import dev.hearth.csi.v1.NodeStageVolumeRequest;
import dev.hearth.csi.v1.NodeUnpublishVolumeRequest;
import dev.hearth.csi.v1.NodeUnstageVolumeRequest;
import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.UserModeLinux;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * DeleteVolume of an LVM raw block volume that a pod still has, in a user-mode Linux guest (this
 * kernel has no device-mapper). The publish binds the LV's device node at the pod's path, which
 * opens nothing, so LVM's open count does not see it: a thick volume was wiped and removed under
 * the bind, a thin one removed. Now both are refused with FAILED_PRECONDITION while bound, and
 * while a process holds the device open, and the data stays; once unpublished, unstaged and
 * closed, the delete goes through. An open one is refused by the driver from device-mapper's open
 * count, thin or thick, before lvremove would refuse it after its retries.
 */
@RequiresTools({"lvm", "thin_check"})
class LvmInUseUmlIT {

    private static final String VG = "inusevg";
    /** The guest has no network interface: netty's warnings about it would bury the output. */
    private static final Logger NETTY = Logger.getLogger("io.grpc.netty.shaded.io.netty");

    @TempDir
    Path dir;

    @Test
    void aRawBlockVolumeStillBoundOrOpenIsNotWipedOrRemoved() throws IOException {
        UserModeLinux.assumeAvailable("LVM needs device-mapper, which this kernel lacks");
        Path disk = Scratch.sparseFile(dir.resolve("disk.img"), 512L << 20);
        UserModeLinux.Result guest = UserModeLinux.runInGuest(LvmInUseUmlIT.class, "inGuest", dir,
                Duration.ofMinutes(6), List.of("-m", "1024M", "-k", "dm-thin-pool", "-d", disk.toString()));
        System.out.println(guest.describe());
    }

    // ---- in the guest

    static void inGuest(Path dir) throws Exception {
        NETTY.setLevel(Level.SEVERE);
        GuestLvm lvm = GuestLvm.create(VG, Path.of("/dev/ubda"), 256 * MIB);
        Path run = Files.createDirectories(Path.of("/run/hearth"));
        Path state = run.resolve("state");
        Path kubelet = run.resolve("kubelet");
        List<String> specs = List.of("name=thick,kind=lvm,vg=" + VG, "name=thin,kind=lvm,vg=" + VG
                + ",thinpool=tp,overprovision=2");
        List<PoolConfig> pools = specs.stream().map(s -> PoolSpec.parse(s, state).config()).toList();
        Driver.Settings settings = new Driver.Settings(Endpoint.parse("unix://" + run.resolve("csi.sock")), "uml",
                "csi.hearth.dev", state, pools, null, 100, Optional.empty(), FilesystemType.EXT4);
        try (Driver driver = Driver.start(settings)) {
            ManagedChannel channel = Channels.channelTo(driver.endpoint());
            var controller = ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.MINUTES);
            var node = NodeGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.MINUTES);
            byte[] data = TestData.random((int) MIB, 17);
            for (String pool : List.of("thick", "thin")) {
                String id = controller.createVolume(CreateVolumeRequest.newBuilder().setName("pvc-raw-" + pool)
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(16 * MIB))
                        .addVolumeCapabilities(block()).putParameters("hearth.dev/pool", pool).build())
                        .getVolume().getVolumeId();
                String lv = "hearth." + pool + "." + VolumeId.parse(id).orElseThrow().key();
                Path staging = Files.createDirectories(kubelet.resolve("plugins/staging").resolve(id));
                Path target = Files.createDirectories(kubelet.resolve("pods/p-" + pool)).resolve("dev");
                node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                        .setStagingTargetPath(staging.toString()).setVolumeCapability(block()).build());
                node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                        .setVolumeCapability(block()).build());
                try (FileChannel device = FileChannel.open(target, StandardOpenOption.WRITE)) {
                    device.write(ByteBuffer.wrap(data), 4 * MIB);
                    device.force(true);
                }
                DeleteVolumeRequest delete = DeleteVolumeRequest.newBuilder().setVolumeId(id).build();

                // Published, and no process has the device open.
                assertThatThrownBy(() -> controller.deleteVolume(delete)).as("%s: delete while published", pool)
                        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                            assertThat(e.getStatus().getDescription()).contains("raw block device")
                                    .contains(target.toString());
                        });
                assertThat(read(target)).as("%s: the pod's data after the refused delete", pool).isEqualTo(data);
                assertThat(lvm.run("lvs", "--noheadings", "-o", "lv_name", VG)).contains(lv);

                node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                        .setTargetPath(target.toString()).build());
                node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                        .setStagingTargetPath(staging.toString()).build());
                // Not bound any more, but open: LVM's open count refuses it.
                Path lvDevice = Path.of("/dev/mapper", VG + "-" + lv);
                try (FileChannel open = FileChannel.open(lvDevice, StandardOpenOption.READ)) {
                    assertThatThrownBy(() -> controller.deleteVolume(delete)).as("%s: delete while open", pool)
                            .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
                                // The driver's own answer, from device-mapper's open count, not lvremove's
                                // refusal after its retries (some 5 s of a thin volume's delete).
                                assertThat(e.getStatus().getDescription()).contains("is in use on this node")
                                        .contains("unstage it before deleting");
                            });
                    assertThat(read(lvDevice)).as("%s: the data after the refused delete", pool).isEqualTo(data);
                }
                controller.deleteVolume(delete);
                assertThat(lvm.run("lvs", "--noheadings", "-o", "lv_name", VG)).doesNotContain(lv);
                System.out.println("guest: " + pool + ": refused while bound and while open, deleted after");
            }
            channel.shutdownNow();
        }
    }

    private static byte[] read(Path device) throws IOException {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocate((int) MIB);
            while (buffer.hasRemaining() && channel.read(buffer, 4 * MIB + buffer.position()) > 0) {
                // the whole MiB
            }
            return buffer.array();
        }
    }
}
