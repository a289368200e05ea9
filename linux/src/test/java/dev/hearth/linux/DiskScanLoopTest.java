package dev.hearth.linux;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The scan and the exclusive-open check on a real loop device, as the device pool's tests use loop devices for disks. */
@RequiresRoot
class DiskScanLoopTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    void anAttachedLoopDeviceIsADiskWithItsFileAndSize() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 96 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);

        Disk disk = DiskScan.named(new DiskScan().disks(), device.path().getFileName().toString()).orElseThrow();

        assertThat(disk.path()).isEqualTo(device.path());
        assertThat(disk.sizeBytes()).isEqualTo(96 * MIB);
        assertThat(disk.backingFile()).contains(file.toRealPath());
        assertThat(disk.uses()).isEmpty();
        assertThat(BlockDevices.exclusiveOpenProblem(device.path())).isEmpty();
    }

    @Test
    @RequiresTools("mkfs.ext4")
    void aMountedLoopDeviceIsInUseAndRefusesAnExclusiveOpen() throws Exception {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);
        Process mkfs = new ProcessBuilder("mkfs.ext4", "-q", device.path().toString()).inheritIO().start();
        assertThat(mkfs.waitFor()).isZero();
        Path target = Files.createDirectory(dir.resolve("mnt"));
        Scratch.mount(cleanup, device.path().toString(), target, "ext4", 0, null);

        Disk disk = DiskScan.named(new DiskScan().disks(), device.path().getFileName().toString()).orElseThrow();

        assertThat(disk.uses()).containsExactly(disk.name() + " mounted at " + target);
        assertThat(BlockDevices.exclusiveOpenProblem(device.path())).hasValueSatisfying(
                why -> assertThat(why).contains("EBUSY"));
    }
}
