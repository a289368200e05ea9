package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import dev.hearth.linux.DiskScan;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.device.DevicePoolConfig.Wipe;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Disks for device-pool tests: sparse files in the test's directory attached as loop devices
 * (whose identity is their file), and pools whose selector names exactly those devices, never
 * another loop device of the host. Everything is undone by the test's {@link Cleanup}.
 */
final class LoopDisks {

    static final long MIB = 1L << 20;

    private final Cleanup cleanup;
    private final Path dir;
    private final Path state;

    LoopDisks(Cleanup cleanup, Path dir) throws IOException {
        this.cleanup = cleanup;
        this.dir = Files.createDirectories(dir.resolve("disks"));
        this.state = Files.createDirectories(dir.resolve("state"));
    }

    Path state() {
        return state;
    }

    /** A disk of {@code size} zero bytes (a sparse file), attached. */
    LoopDevice disk(String name, long size) throws IOException {
        return attach(Scratch.sparseFile(dir.resolve(name + ".img"), size));
    }

    Path file(String name) {
        return dir.resolve(name + ".img");
    }

    LoopDevice attach(Path file) throws IOException {
        LoopDevice device = Loop.attach(file, false, false);
        cleanup.add(() -> detachIfAttached(device));
        return device;
    }

    static void detachIfAttached(LoopDevice device) throws IOException {
        if (Loop.list().stream().anyMatch(a -> a.device().equals(device))) {
            Loop.detach(device);
        }
    }

    /** A pool named {@code disks} whose selector is exactly these devices; closed after the test. */
    DevicePool pool(Wipe wipe, ZeroCheck check, List<LoopDevice> devices) throws IOException {
        List<String> paths = new ArrayList<>();
        devices.forEach(d -> paths.add(d.path().toString()));
        DevicePool pool = DevicePool.open(DevicePoolConfig.under(state, "disks",
                DiskSelector.parse(String.join("|", paths), null, null, null), wipe, check));
        cleanup.add(pool::close);
        return pool;
    }

    DevicePool pool(List<LoopDevice> devices) throws IOException {
        return pool(Wipe.ZERO, ZeroCheck.SAMPLED, devices);
    }

    static Volume create(DevicePool pool, String name, long required) {
        return pool.create(new VolumeRequest(name, new CapacityRange(required, 0), Map.of()));
    }

    /** The disk as the node's scan sees it now. */
    static Disk scanned(LoopDevice device) throws IOException {
        return DiskScan.named(new DiskScan().disks(), device.path().getFileName().toString()).orElseThrow();
    }

    static DiskIdentity identity(LoopDevice device) throws IOException {
        return DiskIdentity.of(scanned(device)).orElseThrow();
    }

    /** Fills the whole device with bytes from a seeded generator, as a tenant's raw writes would. */
    static void fill(Path device, long size, long seed) throws IOException {
        Random random = new Random(seed);
        byte[] chunk = new byte[(int) MIB];
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
            for (long at = 0; at < size; at += chunk.length) {
                random.nextBytes(chunk);
                ByteBuffer buffer = ByteBuffer.wrap(chunk, 0, (int) Math.min(chunk.length, size - at));
                while (buffer.hasRemaining()) {
                    channel.write(buffer, at + buffer.position());
                }
            }
            channel.force(true);
        }
    }

    /** The offset of the first non-zero byte of the whole device or file, or -1 if all of it is zeros. */
    static long firstNonZero(Path path) throws IOException {
        byte[] chunk = new byte[(int) MIB];
        long at = 0;
        try (InputStream in = Files.newInputStream(path)) {
            int n;
            while ((n = in.readNBytes(chunk, 0, chunk.length)) > 0) {
                for (int i = 0; i < n; i++) {
                    if (chunk[i] != 0) {
                        return at + i;
                    }
                }
                at += n;
            }
        }
        return -1;
    }

    /** The SHA-256 of every byte of a file. */
    static String sha256(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            byte[] chunk = new byte[(int) MIB];
            int n;
            while ((n = in.read(chunk)) > 0) {
                digest.update(chunk, 0, n);
            }
            return HexFormat.of().formatHex(digest.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
