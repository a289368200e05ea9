package dev.hearth.storage.mount;

import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Records, per volume, that its first mkfs has begun and not yet finished. A crash in the middle
 * of mkfs leaves a half-written filesystem that the signature probe rightly treats as foreign
 * data; the open entry is the proof that it is this driver's own unfinished work on a device that
 * was empty, so the retried stage may format it again. Entries live on the node's state directory.
 *
 * <p>An entry's existence is the record; its content (the device) is for a person reading the
 * directory. So it is written in place rather than through a temporary file and a rename: a torn
 * entry still says "begun", which is all a crash before mkfs started can make true, and the
 * entry and its directory are synced before mkfs starts, on ext4 one journal commit where the
 * rename cost two. Its removal is synced before the stage goes on to mount: lost in a crash after
 * the pod had written, it would have the next stage force a mkfs over the pod's data.
 */
public final class FormatJournal {

    private final Path directory;

    public FormatJournal(Path directory) throws IOException {
        this.directory = Files.createDirectories(directory);
    }

    void begin(VolumeId volume, Path device) {
        try (FileChannel entry = FileChannel.open(entry(volume), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer content = ByteBuffer.wrap((device + "\n").getBytes(StandardCharsets.UTF_8));
            while (content.hasRemaining()) {
                entry.write(content);
            }
            entry.force(true);
            AtomicFiles.syncDirectory(directory);
        } catch (IOException e) {
            throw new StorageException.Failed("recording the format of " + volume + ": " + e.getMessage(), e);
        }
    }

    void end(VolumeId volume) {
        try {
            if (Files.deleteIfExists(entry(volume))) {
                AtomicFiles.syncDirectory(directory);
            }
        } catch (IOException e) {
            throw new StorageException.Failed("closing the format record of " + volume + ": " + e.getMessage(), e);
        }
    }

    boolean isOpen(VolumeId volume) {
        return Files.exists(entry(volume));
    }

    private Path entry(VolumeId volume) {
        return directory.resolve(volume + ".formatting");
    }
}
