package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import dev.hearth.linux.Errno;
import dev.hearth.linux.ExclusiveDevice;
import dev.hearth.linux.LinuxException;
import dev.hearth.storage.device.DevicePoolConfig.Wipe;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.Signature;
import dev.hearth.storage.probe.SignatureProbe;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Wipes a whole disk by a device pool's policy, through the exclusive open its caller holds (so
 * nothing can mount the disk meanwhile), and says what it did and whether the disk is now known
 * to hold nothing but zeros.
 *
 * <p>How {@link Wipe#DISCARD} decides that a discard leaves zeros: the kernel no longer says so of
 * a plain discard ({@code queue/discard_zeroes_data} reads 0 on every device since Linux 4.12). A
 * loop device discards by punching a hole in its file, which reads back as zeros, so there a
 * BLKDISCARD is used. A disk whose queue reports {@code write_zeroes_unmap_max_bytes} (Linux 6.17
 * on) zeroes by deallocating, with the kernel's guarantee of zeros: fallocate(PUNCH_HOLE) asks
 * exactly that of it and never falls back to writing. Anywhere else the disk is zeroed (BLKZEROOUT)
 * as {@link Wipe#ZERO} would, and the result says so.
 */
final class DiskWiper {

    private static final long MIB = 1L << 20;
    /** What is zeroed around a signature's magic: the 64 KiB block that holds it. */
    private static final long SIGNATURE_BLOCK = 64 * 1024;

    /** What a wipe did, and whether every byte of the disk is now zero. */
    record Result(String how, boolean zeroed) {}

    private final Path sysBlock;

    DiskWiper(Path sysBlock) {
        this.sysBlock = sysBlock;
    }

    Result wipe(ExclusiveDevice device, Disk disk, Wipe wipe) throws IOException {
        long size = device.size();
        return switch (wipe) {
            case ZERO -> zero(device, size, "zeroed (BLKZEROOUT)");
            case DISCARD -> discard(device, disk, size);
            case SIGNATURES -> signatures(device, size);
        };
    }

    private static Result zero(ExclusiveDevice device, long size, String how) throws IOException {
        device.zeroOut(0, size);
        device.flush();
        return new Result(how, true);
    }

    /** How a discard is made certain to leave zeros on a disk, if it can be. */
    enum Discard {
        /** BLKDISCARD: the disk is a loop device that discards, punching holes in its file. */
        PUNCH_LOOP_FILE,
        /** fallocate(PUNCH_HOLE): the disk zeroes by unmapping, and the kernel guarantees the zeros. */
        UNMAP_ZEROING,
        /** Nothing certain: the disk is zeroed instead. */
        NONE
    }

    /** What {@link Wipe#DISCARD} does on this disk, from its queue's limits in sysfs. */
    Discard discardOn(Disk disk) throws IOException {
        if (disk.isLoop() && queueNumber(disk, "discard_max_bytes") > 0) {
            return Discard.PUNCH_LOOP_FILE;
        }
        if (queueNumber(disk, "write_zeroes_unmap_max_bytes") > 0) {
            return Discard.UNMAP_ZEROING;
        }
        return Discard.NONE;
    }

    private Result discard(ExclusiveDevice device, Disk disk, long size) throws IOException {
        try {
            switch (discardOn(disk)) {
                case PUNCH_LOOP_FILE -> {
                    device.discard(0, size);
                    device.flush();
                    return new Result("discarded (a loop device punches holes in its file, which read as zeros)",
                            true);
                }
                case UNMAP_ZEROING -> {
                    device.zeroByUnmapping(0, size);
                    device.flush();
                    return new Result("discarded (the disk zeroes by unmapping: fallocate PUNCH_HOLE)", true);
                }
                case NONE -> {}
            }
        } catch (LinuxException e) {
            if (!e.is(Errno.EOPNOTSUPP) && !e.is(Errno.EINVAL)) {
                throw e;
            }
        }
        return zero(device, size, "zeroed (BLKZEROOUT): " + disk.name()
                + " does not guarantee zeros after a discard");
    }

    /**
     * The first and last MiB, then every signature the probe still finds (backup superblocks, a
     * GPT backup header, an md superblock near the end), until it finds none.
     */
    private static Result signatures(ExclusiveDevice device, long size) throws IOException {
        long head = Math.min(MIB, size);
        device.zeroOut(0, head);
        if (size > head) {
            long tail = Math.min(MIB, size - head);
            device.zeroOut(size - tail, tail);
        }
        for (int round = 0; round < 8; round++) {
            device.flush();
            if (!(SignatureProbe.probe(device.path(), size) instanceof ProbeResult.Signed signed)) {
                return new Result("signatures cleared (the first and last MiB and every signature found)", false);
            }
            for (Signature signature : signed.found()) {
                long block = signature.offset() / SIGNATURE_BLOCK * SIGNATURE_BLOCK;
                device.zeroOut(block, Math.min(SIGNATURE_BLOCK, size - block));
            }
        }
        throw new IOException("signatures are still found after clearing them: "
                + SignatureProbe.probe(device.path(), size).describe());
    }

    /** A number from {@code /sys/block/NAME/queue/}; 0 for an attribute this kernel lacks. */
    private long queueNumber(Disk disk, String attribute) throws IOException {
        Path file = sysBlock.resolve(disk.name()).resolve("queue").resolve(attribute);
        if (!Files.exists(file)) {
            return 0;
        }
        try {
            return Long.parseLong(Files.readString(file, StandardCharsets.US_ASCII).strip());
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
