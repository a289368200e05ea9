package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Optional;

/**
 * What the kernel has counted of writes to a disk since it appeared: two equal counts mean nothing
 * was written to the disk in between, which is how a check of its bytes (a full zero scan, or
 * hearth's own zeroing) stays valid without reading them again.
 *
 * <p>The counts are the sectors the kernel wrote to or discarded from the disk ({@code /sys/block/NAME/stat},
 * which includes what was written through its partitions), its {@code diskseq} (a new number whenever the
 * disk or its medium is replaced, or a loop device attached again) and the boot's ID (counters
 * start again at a reboot). A loop device's file can be written without its device, so its size
 * and modification time count too. What bypasses the block layer altogether (SCSI or NVMe
 * passthrough commands) is not seen; nothing on a node writes a disk that way by accident.
 *
 * @param boot the boot ID ({@code /proc/sys/kernel/random/boot_id})
 * @param diskseq the disk's sequence number, 0 where the kernel has none (before 5.15)
 * @param written sectors written and sectors discarded, as {@code stat} counts them
 * @param backing for a loop device its file's size and modification time in nanoseconds, else empty
 */
public record DiskWrites(String boot, long diskseq, String written, String backing) {

    /** The text a record stores; {@link #parse} reads it back. */
    public String encode() {
        return boot + "/" + diskseq + "/" + written + "/" + backing;
    }

    public static Optional<DiskWrites> parse(String text) {
        if (text == null) {
            return Optional.empty();
        }
        String[] parts = text.split("/", -1);
        if (parts.length != 4) {
            return Optional.empty();
        }
        try {
            return Optional.of(new DiskWrites(parts[0], Long.parseLong(parts[1]), parts[2], parts[3]));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }

    /** Reads the counts of the node's disks. */
    public static final class Reader {

        private final Path sysBlock;
        private final String boot;

        public Reader() throws IOException {
            this(Path.of("/sys/block"), Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip());
        }

        public Reader(Path sysBlock, String boot) {
            this.sysBlock = sysBlock;
            this.boot = boot;
        }

        /** The disk's counts now; empty if the kernel shows none (the disk went away meanwhile). */
        public Optional<DiskWrites> of(Disk disk) {
            Path dir = sysBlock.resolve(disk.name());
            try {
                String[] stat = Files.readString(dir.resolve("stat"), StandardCharsets.US_ASCII).strip().split("\\s+");
                if (stat.length < 7) {
                    return Optional.empty();
                }
                // Sectors written (field 7, 1-based) and discarded (field 14), not the requests: a flush
                // (an fsync of the device, as every stage makes before it probes) counts as a write
                // request of no sectors, and must not look like data written.
                String written = stat[6] + (stat.length >= 14 ? "," + stat[13] : "");
                long diskseq = 0;
                Path seq = dir.resolve("diskseq");
                if (Files.exists(seq)) {
                    diskseq = Long.parseLong(Files.readString(seq, StandardCharsets.US_ASCII).strip());
                }
                String backing = "";
                if (disk.backingFile().isPresent()) {
                    BasicFileAttributes file = Files.readAttributes(disk.backingFile().get(), BasicFileAttributes.class);
                    backing = file.size() + "," + file.lastModifiedTime().toInstant().getEpochSecond() + "."
                            + file.lastModifiedTime().toInstant().getNano();
                }
                return Optional.of(new DiskWrites(boot, diskseq, written, backing));
            } catch (IOException | NumberFormatException e) {
                return Optional.empty(); // the disk went away meanwhile
            }
        }
    }
}
