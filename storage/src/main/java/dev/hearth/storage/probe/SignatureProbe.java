package dev.hearth.storage.probe;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.function.LongConsumer;

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

    /**
     * How much of a device without a signature must read as zeros for it to be empty. Each reads
     * more than the one before and includes it; the verdict on a device with a signature is the
     * same for all three, since the signature is looked for first and a zero check then is moot.
     */
    public enum ZeroCheck {
        /**
         * The first and last MiB (the whole of a device of 2 MiB or less): where partition tables,
         * filesystem and volume-manager headers and their backups live, and what wiping a device's
         * signatures clears. Proves nothing about the middle.
         */
        EDGES,
        /**
         * {@link #EDGES} and {@value ZeroScan#SAMPLES} samples of {@value ZeroScan#SAMPLE_BYTES}
         * bytes spread evenly over the rest, the first where the first MiB ends and the last ending
         * (within a stride's rounding) where the last MiB begins, each aligned down to 4 KiB; a
         * middle no longer than all the samples together is read whole. Deterministic, so two
         * probes of one disk agree. 256 samples of 64 KiB read 16 MiB: 256 seeks on a spinning
         * disk (about two seconds), a few milliseconds on flash, and a 64 KiB read costs about what
         * a 4 KiB one does on either. Any non-zero run longer than the stride (1/255 of the disk,
         * 4 GiB of a 1 TiB disk) is certain to be hit, and so is a filesystem or database whose
         * data is spread over the disk; a small run between samples is not, which is what
         * {@link #FULL} is for.
         */
        SAMPLED,
        /**
         * Every byte, streamed in {@value ZeroScan#CHUNK_BYTES}-byte reads through one buffer: the
         * proof an admin may ask for before a disk joins a pool, at the cost of reading the whole
         * disk (about an hour and a half for 1 TiB at 200 MB/s). Interrupting the calling thread
         * stops it: the channel's read throws {@link java.nio.channels.ClosedByInterruptException}.
         */
        FULL
    }

    private static final List<Detector> DETECTORS = List.of(
            PartitionTables::detect,
            VolumeManagers::detect,
            Filesystems::detect,
            SwapAreas::detect);

    /**
     * Signatures whose search takes many reads, all in the first or last MiB: looked for only once
     * data was found there, so an empty device never pays for them.
     */
    private static final List<Detector> EDGE_DATA_DETECTORS = List.of(
            ZfsLabels::detect,
            XfsExternalLog::detect);

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
        return probe(channel, sizeBytes, ZeroCheck.EDGES, _ -> {});
    }

    /**
     * Probes the channel as {@link #probe(FileChannel, long)} does, checking the zeros {@code check}
     * asks for. {@code progress} is told how many bytes the zero check has read so far, at most
     * about once per percent of what it reads and once when it is done (for {@link ZeroCheck#FULL},
     * {@code sizeBytes} then); it is not called when a signature settles the verdict first, and it
     * runs on the caller's thread, so it should be quick. A {@link ProbeResult.NotEmpty}'s reason
     * names the first non-zero offset the check found, the lowest among the bytes it read.
     */
    public static ProbeResult probe(FileChannel channel, long sizeBytes, ZeroCheck check, LongConsumer progress)
            throws IOException {
        Objects.requireNonNull(check, "check");
        Objects.requireNonNull(progress, "progress");
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
            OptionalLong nonZero = ZeroScan.firstNonZero(device, check, progress);
            if (nonZero.isPresent()) {
                for (Detector detector : EDGE_DATA_DETECTORS) {
                    detector.detect(device, found);
                }
                return found.isEmpty()
                        ? new ProbeResult.NotEmpty("no known signature, but non-zero data at offset "
                                + nonZero.getAsLong())
                        : new ProbeResult.Signed(found);
            }
            OutlyingSignatures.detect(device, found);
            return found.isEmpty() ? ProbeResult.EMPTY : new ProbeResult.Signed(found);
        }
    }
}
