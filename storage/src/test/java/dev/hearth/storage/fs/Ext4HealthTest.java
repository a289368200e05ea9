package dev.hearth.storage.fs;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.ScratchFilesystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

class Ext4HealthTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aHealthyMountCountsNoErrorsAndEachErrorTheKernelRecordsIsCounted() throws IOException {
        ScratchFilesystem fs = ScratchFilesystem.mount(cleanup, dir, "ext4", 64 * MIB);

        assertThat(Ext4Health.errorCount(fs.device().path())).hasValue(0);

        // ext4's own debugging hook: records an error exactly as a corrupt block found would.
        // The mount carries on after errors (mkfs's default), so the filesystem stays usable.
        Path trigger = Path.of("/sys/fs/ext4", fs.device().path().getFileName().toString(), "trigger_fs_error");
        Files.writeString(trigger, "hearth test");

        // ext4 counts the error from a work queue, a moment after the write returns.
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (Ext4Health.errorCount(fs.device().path()).orElse(0) == 0 && System.nanoTime() < deadline) {
            sleep(10);
        }
        assertThat(Ext4Health.errorCount(fs.device().path())).hasValue(1);
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.xfs")
    void anotherFilesystemHasNoExt4Record() throws IOException {
        ScratchFilesystem fs = ScratchFilesystem.mount(cleanup, dir, "xfs", 320 * MIB);

        assertThat(Ext4Health.errorCount(fs.device().path())).isEmpty();
    }

    @Test
    void aDeviceThatDoesNotExistHasNoRecord() throws IOException {
        assertThat(Ext4Health.errorCount(dir.resolve("no-such-device"))).isEmpty();
    }

    @Test
    @RequiresRoot
    @RequiresTools("mkfs.ext4")
    void aSymlinkToTheDeviceIsFollowedToItsKernelName() throws IOException {
        ScratchFilesystem fs = ScratchFilesystem.mount(cleanup, dir, "ext4", 64 * MIB);
        Path link = Files.createSymbolicLink(dir.resolve("by-id-link"), fs.device().path());

        assertThat(Ext4Health.errorCount(link)).hasValue(0);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
