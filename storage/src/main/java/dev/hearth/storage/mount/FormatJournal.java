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
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Records, per volume, that its first mkfs has begun and not yet finished, and likewise an offline
 * grow of its ext4 (resize2fs before the stage mounts it); and that a read-only raw block publish
 * has made a view of it since its stage.
 *
 * <p>A crash in the middle of mkfs leaves a half-written filesystem that the signature probe
 * rightly treats as foreign data; the open entry is the proof that it is this driver's own
 * unfinished work on a device that was empty, so the retried stage may format it again. A crash in
 * the middle of resize2fs leaves an ext4 whose new groups, counts or resize inode are half written,
 * which {@code e2fsck -p} refuses to touch; the open entry is the proof that the damage is this
 * driver's own interrupted grow, so the retried stage may let {@code e2fsck -y} repair it before
 * growing again. Entries live on the node's state directory.
 *
 * <p>An entry's existence is the record; its content (the device) is for a person reading the
 * directory. So it is written in place rather than through a temporary file and a rename: a torn
 * entry still says "begun", which is all a crash before the tool started can make true, and the
 * entry and its directory are synced before the tool starts, on ext4 one journal commit where the
 * rename cost two. Its removal is synced before the stage goes on to mount: lost in a crash after
 * the pod had written, it would have the next stage force a mkfs over the pod's data.
 *
 * <p>A view entry says only where to look: a publish killed between making a read-only view (a loop
 * device over the volume's device) and binding it leaves a view nothing binds, which holds the
 * volume's device open until someone detaches it; the unstage looks for such views only where the
 * entry is. Loop devices do not outlive the node's boot, so neither the entry nor its removal is
 * synced: a kill keeps both in the page cache, and a power loss takes the views with it.
 */
public final class FormatJournal {

    private static final String FORMATTING = ".formatting";
    private static final String GROWING = ".growing";
    private static final String VIEWS = ".views";

    private final Path directory;

    public FormatJournal(Path directory) throws IOException {
        this.directory = Files.createDirectories(directory);
    }

    void begin(VolumeId volume, Path device) {
        open(entry(volume, FORMATTING), device, "the format of " + volume);
    }

    void end(VolumeId volume) {
        close(entry(volume, FORMATTING), "the format record of " + volume);
    }

    boolean isOpen(VolumeId volume) {
        return Files.exists(entry(volume, FORMATTING));
    }

    void beginGrowth(VolumeId volume, Path device) {
        open(entry(volume, GROWING), device, "the growth of " + volume);
    }

    void endGrowth(VolumeId volume) {
        close(entry(volume, GROWING), "the growth record of " + volume);
    }

    boolean isGrowing(VolumeId volume) {
        return Files.exists(entry(volume, GROWING));
    }

    /** Notes, before a read-only view of the volume is made, that its unstage must look for views left unbound. */
    void markViews(VolumeId volume) {
        Path entry = entry(volume, VIEWS);
        try {
            if (!Files.exists(entry)) {
                Files.write(entry, new byte[0]);
            }
        } catch (IOException e) {
            throw new StorageException.Failed("recording a read-only view of " + volume + ": " + e.getMessage(), e);
        }
    }

    boolean hasViews(VolumeId volume) {
        return Files.exists(entry(volume, VIEWS));
    }

    void clearViews(VolumeId volume) {
        try {
            Files.deleteIfExists(entry(volume, VIEWS));
        } catch (IOException e) {
            throw new StorageException.Failed("closing the view record of " + volume + ": " + e.getMessage(), e);
        }
    }

    /**
     * Drops the volume's records, for a volume that has been deleted: its ID comes back if a claim
     * of the same name is made again, and a record left by the old volume (a stage killed in mkfs,
     * never retried) would otherwise license a format or a repair on the new one's data.
     */
    public void forget(VolumeId volume) {
        close(entry(volume, FORMATTING), "the format record of " + volume);
        close(entry(volume, GROWING), "the growth record of " + volume);
        clearViews(volume);
    }

    /**
     * Drops the records of every volume that {@code exists} says is gone, and returns those volumes.
     * A DeleteVolume killed after its volume went and before {@link #forget} leaves them; a
     * provisioner retries the delete, which forgets them, but a client that does not would leave
     * them for a volume made again under the same name. For the start, before any call.
     */
    public List<VolumeId> forgetDeleted(Predicate<VolumeId> exists) {
        String[] names = directory.toFile().list();
        if (names == null) {
            return List.of();
        }
        Set<VolumeId> gone = new LinkedHashSet<>();
        for (String name : names) {
            for (String suffix : List.of(FORMATTING, GROWING, VIEWS)) {
                if (name.endsWith(suffix)) {
                    VolumeId.parse(name.substring(0, name.length() - suffix.length()))
                            .filter(id -> !gone.contains(id) && !exists.test(id))
                            .ifPresent(gone::add);
                }
            }
        }
        gone.forEach(this::forget);
        return List.copyOf(gone);
    }

    private void open(Path entry, Path device, String what) {
        try (FileChannel channel = FileChannel.open(entry, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer content = ByteBuffer.wrap((device + "\n").getBytes(StandardCharsets.UTF_8));
            while (content.hasRemaining()) {
                channel.write(content);
            }
            channel.force(true);
            AtomicFiles.syncDirectory(directory);
        } catch (IOException e) {
            throw new StorageException.Failed("recording " + what + ": " + e.getMessage(), e);
        }
    }

    private void close(Path entry, String what) {
        try {
            if (Files.deleteIfExists(entry)) {
                AtomicFiles.syncDirectory(directory);
            }
        } catch (IOException e) {
            throw new StorageException.Failed("closing " + what + ": " + e.getMessage(), e);
        }
    }

    private Path entry(VolumeId volume, String suffix) {
        return directory.resolve(volume + suffix);
    }
}
