package dev.hearth.linux;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

@RequiresRoot
@RequiresTools("mkfs.ext4")
class Ext4MountTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    @Test
    void mountsExt4OnALoopDeviceWithParsedOptions() throws Exception {
        LoopDevice device = formattedLoop();
        Path target = Files.createDirectory(dir.resolve("mnt"));
        MountFlags.Parsed options = MountFlags.parse(List.of("noatime", "nodev", "discard"));

        Scratch.mount(cleanup, device.path().toString(), target, "ext4", options.flags(), options.data());

        MountEntry entry = MountInfo.at(target).orElseThrow();
        assertThat(entry.fsType()).isEqualTo("ext4");
        assertThat(entry.source()).isEqualTo(device.path().toString());
        assertThat(entry.hasMountOption("noatime")).isTrue();
        assertThat(entry.hasMountOption("nodev")).isTrue();
        assertThat(entry.readOnly()).isFalse();
        assertThat(entry.hasSuperOption("discard")).isTrue();
        assertThat(LoopDevice.fromPath(Path.of(entry.source()))).contains(device);
        Files.writeString(target.resolve("hello"), "world");
        assertThat(FileSystems.statvfs(target).totalBytes()).isBetween(50L << 20, 64L << 20);
    }

    @Test
    void detachWhileMountedTakesEffectAtUnmount() throws Exception {
        LoopDevice device = formattedLoop();
        Path target = Files.createDirectory(dir.resolve("mnt"));
        Scratch.mount(cleanup, device.path().toString(), target, "ext4", 0, null);

        Loop.detach(device);
        assertThat(Loop.list()).anyMatch(a -> a.device().equals(device));
        Mounts.unmount(target);

        assertThat(Loop.list()).noneMatch(a -> a.device().equals(device));
    }

    private LoopDevice formattedLoop() throws IOException {
        Path file = Scratch.sparseFile(dir.resolve("disk.img"), 64 * MIB);
        LoopDevice device = Scratch.attach(cleanup, file, false, true);
        ScratchFilesystem.run(List.of("mkfs.ext4", "-q", "-F", device.path().toString()));
        return device;
    }
}
