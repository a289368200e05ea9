package dev.hearth.storage.probe;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * Decides whether a device is safe to format: a pure-Java relative of blkid/wipefs that knows
 * the signatures a node's disks are likely to carry. It errs towards "not empty": any known
 * signature, primary or backup, or any non-zero byte in the first or last MiB disqualifies, and so
 * does a signature at one of the few places beyond them where libblkid looks
 * ({@link OutlyingSignatures}).
 *
 * <p>The size is the caller's because a block device's size comes from an ioctl, not from
 * the file system; on JDK 25 {@link FileChannel#size()} makes that ioctl, so {@link #probe(Path)}
 * may ask the channel. A size of 0 is refused: that is what {@code Files.size} reports for any
 * block device, and an "empty" verdict built on it would let a real disk be formatted.
 */
public final class SignatureProbe {

    private static final List<Detector> DETECTORS = List.of(
            PartitionTables::detect,
            VolumeManagers::detect,
            Filesystems::detect,
            SwapAreas::detect);

    private SignatureProbe() {}

    /** Opens the path read-only and probes all of it, taking the size from the channel. */
    public static ProbeResult probe(Path path) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            return probe(channel, channel.size());
        }
    }

    /** Opens the path read-only and probes it, {@code sizeBytes} long. */
    public static ProbeResult probe(Path path, long sizeBytes) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            return probe(channel, sizeBytes);
        }
    }

    /**
     * Probes the channel, {@code sizeBytes} long, with positional reads (its position is left
     * alone). The size must be the device's: signatures at the end (GPT backup, md 0.90/1.0) are
     * found relative to it.
     */
    public static ProbeResult probe(FileChannel channel, long sizeBytes) throws IOException {
        if (sizeBytes <= 0) {
            throw new IllegalArgumentException("device size must be positive, got " + sizeBytes
                    + " (Files.size() reports 0 for block devices; use the BLKGETSIZE64 size)");
        }
        long actual = channel.size();
        if (actual > 0 && actual != sizeBytes) {
            throw new IllegalArgumentException("device size given as " + sizeBytes
                    + " bytes, but the device has " + actual);
        }
        try (DeviceBytes device = DeviceBytes.of(channel, sizeBytes)) {
            List<Signature> found = new ArrayList<>();
            for (Detector detector : DETECTORS) {
                detector.detect(device, found);
            }
            if (!found.isEmpty()) {
                return new ProbeResult.Signed(found);
            }
            OptionalLong nonZero = device.firstNonZero();
            if (nonZero.isPresent()) {
                return new ProbeResult.NotEmpty("no known signature, but non-zero data at offset "
                        + nonZero.getAsLong());
            }
            OutlyingSignatures.detect(device, found);
            return found.isEmpty() ? ProbeResult.EMPTY : new ProbeResult.Signed(found);
        }
    }
}
