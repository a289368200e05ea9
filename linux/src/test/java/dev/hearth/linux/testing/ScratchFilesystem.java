package dev.hearth.linux.testing;

import dev.hearth.linux.Errno;
import dev.hearth.linux.LinuxException;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real filesystem for a test: mkfs on a sparse image file, attached to a loop device and mounted
 * in a directory of the test's. Every step registers its undo with the test's {@link Cleanup} as soon
 * as it is done, so a failure half way leaves nothing behind. Needs root and the mkfs in question.
 */
public record ScratchFilesystem(Path image, LoopDevice device, Path mountPoint) {

    /**
     * @param type        {@code ext4}, {@code xfs}, {@code btrfs}, ...
     * @param mkfsOptions extra options before the device, e.g. {@code "-m", "reflink=1"}
     */
    public static ScratchFilesystem mount(Cleanup cleanup, Path dir, String type, long sizeBytes,
            String... mkfsOptions) throws IOException {
        Path image = Files.createTempFile(dir, type + "-", ".img");
        cleanup.add(() -> Files.deleteIfExists(image));
        Scratch.resize(image, sizeBytes);
        List<String> mkfs = new ArrayList<>(List.of("mkfs." + type, "-q"));
        mkfs.addAll(List.of(mkfsOptions));
        mkfs.add(image.toString());
        run(mkfs);
        LoopDevice device = Scratch.attach(cleanup, image, false, true);
        Path mountPoint = Files.createTempDirectory(dir, type + "-mnt-");
        cleanup.add(() -> Files.deleteIfExists(mountPoint));
        Scratch.mount(cleanup, device.path().toString(), mountPoint, type, 0, null);
        return new ScratchFilesystem(image, device, mountPoint);
    }

    /**
     * Grows the image and has its loop device take the new size, as a resized cloud disk would;
     * the filesystem on it stays the size it was.
     */
    public void growDevice(long sizeBytes) throws IOException {
        Scratch.resize(image, sizeBytes);
        Loop.setCapacity(device);
    }

    /**
     * For tests that unmount themselves part way, and for cleanups. A loop device detached a moment
     * ago may still hold its backing file here while another process has the device open (the
     * kernel finishes the detach at its last close), so EBUSY is retried for a few seconds.
     */
    public static void unmountIfMounted(Path mountPoint) throws IOException {
        for (int attempt = 1; MountInfo.at(mountPoint).isPresent(); attempt++) {
            try {
                Mounts.unmount(mountPoint);
            } catch (LinuxException e) {
                if (!e.is(Errno.EBUSY) || attempt == 50) {
                    throw e;
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /** Runs a host tool and fails with its output unless it exits 0 within a minute; returns its output. */
    public static String run(List<String> command) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(command + " did not finish within a minute: " + output);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException(command + " interrupted", e);
        }
        if (process.exitValue() != 0) {
            throw new IOException(command + " exited " + process.exitValue() + ": " + output);
        }
        return output;
    }
}
