package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@RequiresRoot
@RequiresTools("mkfs.ext4")
class Ext4MountTest {

    @TempDir
    Path dir;

    private final Cleanup cleanup = new Cleanup();

    @AfterEach
    void cleanUp() throws Exception {
        cleanup.close();
    }

    @Test
    void mountsExt4OnALoopDeviceWithParsedOptions() throws Exception {
        LoopDevice device = formattedLoop();
        Path target = Files.createDirectory(dir.resolve("mnt"));
        MountFlags.Parsed options = MountFlags.parse(List.of("noatime", "nodev", "discard"));

        Mounts.mount(device.path().toString(), target, "ext4", options.flags(), options.data());
        cleanup.add(() -> Mounts.unmount(target));

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
        Mounts.mount(device.path().toString(), target, "ext4", 0, null);
        cleanup.add(() -> {
            if (MountInfo.at(target).isPresent()) {
                Mounts.unmount(target);
            }
        });

        Loop.detach(device);
        assertThat(Loop.list()).anyMatch(a -> a.device().equals(device));
        Mounts.unmount(target);

        assertThat(Loop.list()).noneMatch(a -> a.device().equals(device));
    }

    private LoopDevice formattedLoop() throws IOException, InterruptedException {
        Path file = dir.resolve("disk.img");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(64L << 20);
        }
        LoopDevice device = Loop.attach(file, false, true);
        cleanup.add(() -> Loop.detach(device));
        Process mkfs = new ProcessBuilder("mkfs.ext4", "-q", "-F", device.path().toString())
                .redirectErrorStream(true).start();
        String output = new String(mkfs.getInputStream().readAllBytes());
        assertThat(mkfs.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(mkfs.exitValue()).as(output).isZero();
        return device;
    }
}
