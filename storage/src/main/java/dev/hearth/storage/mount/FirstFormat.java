package dev.hearth.storage.mount;

import dev.hearth.storage.Emptiness;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.fs.Formatter;
import dev.hearth.storage.fs.NotBlankException;
import dev.hearth.storage.mount.Mounter.EmptyProof;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.SignatureProbe;
import dev.hearth.storage.tool.ToolException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

/**
 * Whether a device about to be staged gets a filesystem made on it: only when the probe finds no
 * signature and its pool proves it empty, or when our own mkfs on it was cut short (the
 * {@link FormatJournal} says so). A filesystem already there is used as it is; anything else is refused.
 */
final class FirstFormat {

    private final Formatter formatter;
    private final FormatJournal journal;
    private final FilesystemType defaultType;

    FirstFormat(Formatter formatter, FormatJournal journal, FilesystemType defaultType) {
        this.formatter = formatter;
        this.journal = journal;
        this.defaultType = defaultType;
    }

    /** The filesystem a device holds, and whether it was made just now (it then fills the device). */
    record Prepared(FilesystemType type, boolean madeNow) {}

    /** The filesystem the device holds once this returns, made now if the device was provably empty. */
    Prepared prepare(VolumeId volume, Path device, EmptyProof proof, Optional<FilesystemType> requested) {
        FileChannel channel;
        try {
            channel = FileChannel.open(device, StandardOpenOption.READ);
        } catch (IOException e) {
            throw new StorageException.Failed("reading " + device + ": " + e.getMessage(), e);
        }
        // Open until the end, mkfs included: mkfs's close is then not the device's last, which
        // would drop the device's page cache, so the check of what mkfs made reads it from memory
        // rather than from the disk again (2.2 ms here, more on a busy disk). A plain open does not
        // stand in mkfs's way (it opens with O_EXCL, which only mounts and other O_EXCL opens refuse).
        try (channel) {
            return prepare(volume, device, channel, proof, requested);
        } catch (IOException e) {
            throw new StorageException.Failed("closing " + device + ": " + e.getMessage(), e);
        }
    }

    private Prepared prepare(VolumeId volume, Path device, FileChannel channel, EmptyProof proof,
            Optional<FilesystemType> requested) {
        ProbeResult probe;
        long size;
        try {
            // What a raw user wrote and the page cache still holds must reach the backing store,
            // where the pool's proof (an image's extent map) looks.
            channel.force(false);
            size = channel.size(); // a block device's: BLKGETSIZE64
            probe = SignatureProbe.probe(channel, size);
        } catch (IOException e) {
            throw new StorageException.Failed("reading " + device + ": " + e.getMessage(), e);
        }
        FilesystemType wanted = requested.orElse(defaultType);
        if (journal.isOpen(volume)) {
            // Our own mkfs on this empty volume was cut short; what it left is ours to replace.
            format(device, wanted, () -> formatter.reformatInterrupted(device, wanted, size));
            journal.end(volume);
            return new Prepared(wanted, true);
        }
        switch (probe) {
            case ProbeResult.Empty empty -> {
                Emptiness emptiness = proof.emptiness();
                if (!(emptiness instanceof Emptiness.Proven proven)) {
                    throw new StorageException.Precondition("refusing to format " + device + " of volume " + volume
                            + ": it has no signature, but it is not provably empty: " + emptiness.describe());
                }
                if (size < wanted.minimumBytes()) {
                    throw new StorageException.Precondition("volume " + volume + " is " + Quantity.format(size)
                            + ", smaller than the " + Quantity.format(wanted.minimumBytes()) + " that "
                            + wanted.kernelName() + " needs; stage it with another fs_type");
                }
                journal.begin(volume, device);
                try {
                    format(device, wanted, () -> formatter.formatProvenEmpty(device, wanted, size, empty, proven));
                } catch (StorageException.Precondition refused) {
                    journal.end(volume); // refused before writing anything: nothing of ours is there
                    throw refused;
                }
                journal.end(volume);
                return new Prepared(wanted, true);
            }
            case ProbeResult.Signed signed -> {
                Optional<FilesystemType> found = Formatter.detect(signed);
                if (found.isEmpty()) {
                    throw new StorageException.Precondition("refusing to format " + device + ": it holds "
                            + signed.found());
                }
                if (requested.isPresent() && requested.get() != found.get()) {
                    throw new StorageException.Precondition(device + " already holds a " + found.get().kernelName()
                            + " filesystem; it will not be reformatted as " + wanted.kernelName());
                }
                return new Prepared(found.get(), false);
            }
            case ProbeResult.NotEmpty notEmpty -> throw new StorageException.Precondition(
                    "refusing to format " + device + ": it is not empty (" + notEmpty.reason() + ")");
        }
    }

    /**
     * The formatter speaks in its own exceptions; callers of the Mounter get storage ones, so a
     * signature only blkid knows is refused as foreign data and a failing mkfs is a failure, not
     * an unclassified error.
     */
    private static void format(Path device, FilesystemType type, Runnable mkfs) {
        try {
            mkfs.run();
        } catch (NotBlankException e) {
            throw new StorageException.Precondition(e.getMessage());
        } catch (ToolException e) {
            throw StorageException.Failed.byTool("making " + type.kernelName() + " on " + device + ": "
                    + e.getMessage(), e);
        } catch (UncheckedIOException | IllegalStateException e) {
            throw new StorageException.Failed("making " + type.kernelName() + " on " + device + ": "
                    + e.getMessage(), e);
        }
    }
}
