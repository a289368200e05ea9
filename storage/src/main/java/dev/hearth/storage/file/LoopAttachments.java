package dev.hearth.storage.file;

import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.LoopDevice;
import dev.hearth.storage.Attachment;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A file pool's volumes as loop devices. sysfs is the record of which image is attached where;
 * this class only remembers which devices it has seen serving an image, so that finding a
 * volume's device reads that device's sysfs directory and not every loop device on the node
 * (a node has one per volume in use, up to {@code --max-volumes}). A remembered device is always
 * read back before it is used: one that serves nothing now is forgotten, one that serves
 * something else now sends the lookup to a scan of all devices.
 *
 * <p>An image with no device remembered is taken as not attached without a scan only where this
 * process owns the pool directory ({@code sole}): then it is the only hearth that attaches the
 * pool's images, and its memory starts from one scan of the node, made at its first lookup. A
 * pool opened read-only (beside a running driver) scans on every miss, as before.
 *
 * <p>The striped locks keep two calls on one volume from attaching it twice.
 */
final class LoopAttachments {

    private final Object[] stripes = new Object[64];
    private final boolean directIo;
    private final boolean sole;
    private final LoopTable table;
    /** Image (by its real path, as sysfs names it) to the devices seen serving it, live or deleted. */
    private final Map<Path, Set<LoopDevice>> seen = new ConcurrentHashMap<>();
    private final Object seeding = new Object();
    private volatile boolean seeded;

    LoopAttachments(boolean directIo, boolean sole, LoopTable table) {
        this.directIo = directIo;
        this.sole = sole;
        this.table = table;
        for (int i = 0; i < stripes.length; i++) {
            stripes[i] = new Object();
        }
    }

    Attachment attach(VolumeId id, Path image) {
        synchronized (lockOf(id)) {
            try {
                Path key = key(image);
                Optional<LoopAttachment> attached = serving(key).stream()
                        .filter(a -> !a.backingDeleted())
                        .min(java.util.Comparator.comparing(LoopAttachment::detaching)); // a kept one first
                if (attached.isPresent() && !attached.get().detaching()) {
                    return new Attachment(attached.get().device().path(), false);
                }
                // An unstage's detach still waiting for the last close of someone who had the device
                // open: taken back, the device is the volume's again, as attached by this call (a
                // failed stage detaches it again). Left to go, it would go under whatever bound its
                // node meanwhile, a pod's raw block device, and be the next volume's device there.
                if (attached.isPresent() && table.keep(attached.get().device())) {
                    return new Attachment(attached.get().device().path(), true);
                }
                ImageFiles.requireImage(image, "volume " + id, "its data is gone; delete the volume");
                LoopDevice device = table.attach(image, directIo);
                remember(key, device);
                return new Attachment(device.path(), true);
            } catch (IOException e) {
                throw new StorageException.Failed("attaching " + image + " as a loop device: " + e.getMessage(), e);
            }
        }
    }

    Optional<Path> device(Path image) {
        return attachment(image).map(a -> a.device().path());
    }

    /** The device serving the image (not a deleted one under its name), as sysfs describes it. */
    Optional<LoopAttachment> attachment(Path image) {
        try {
            return serving(key(image)).stream()
                    .filter(a -> !a.backingDeleted())
                    .findFirst();
        } catch (IOException e) {
            throw new StorageException.Failed("reading loop devices: " + e.getMessage(), e);
        }
    }

    void detach(VolumeId id, Path image) {
        synchronized (lockOf(id)) {
            try {
                Path key = key(image);
                // Also a device whose image was deleted under it: it still holds the old inode.
                // A device still open (mounted at another staging path, say) is detached by the kernel
                // only at its last close: until then sysfs shows it bound, and so does the next lookup.
                List<LoopAttachment> serving = serving(key);
                for (LoopAttachment attached : serving) {
                    table.detach(attached.device());
                }
                awaitRelease(key, serving);
            } catch (IOException e) {
                throw new StorageException.Failed("detaching the loop device of " + image + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Waits a moment for devices the kernel could not detach at once. A device someone still has
     * open is only marked to go at its last close, and a close is often a moment away: a process
     * forked elsewhere holding a copy of a descriptor until its exec, a read-only view of the
     * device whose own last close is pending. A DeleteVolume right after the unstage would find
     * the volume still attached. After about 300 ms the device is left to go at its last close.
     */
    private void awaitRelease(Path key, List<LoopAttachment> detached) throws IOException {
        for (int pause = 10; pause <= 160; pause *= 2) {
            boolean bound = false;
            for (LoopAttachment attached : detached) {
                Optional<LoopAttachment> now = table.describe(attached.device());
                bound |= now.isPresent() && now.get().backingFile().equals(key);
            }
            if (!bound) {
                return;
            }
            try {
                Thread.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * The devices serving the image now (its own or, deleted, its old inode), lowest number first:
     * those remembered, each read back from sysfs; a scan of the node when one of them serves
     * something else now, or when none is remembered and this process is not the pool's owner.
     */
    private List<LoopAttachment> serving(Path key) throws IOException {
        seed();
        Set<LoopDevice> remembered = seen.getOrDefault(key, Set.of());
        List<LoopAttachment> found = new ArrayList<>();
        Set<LoopDevice> unbound = new HashSet<>();
        boolean stale = false;
        for (LoopDevice device : remembered) {
            Optional<LoopAttachment> now = table.describe(device);
            if (now.isEmpty()) {
                unbound.add(device); // detached (by us, or at its last close): it serves nothing now
            } else if (now.get().backingFile().equals(key)) {
                found.add(now.get());
            } else {
                stale = true; // bound again to something else behind our back: look at everything
            }
        }
        if (!unbound.isEmpty()) {
            forget(key, unbound);
        }
        if (stale || (found.isEmpty() && !sole)) {
            found = scan(key);
        }
        found.sort(java.util.Comparator.comparingInt(a -> a.device().number()));
        return found;
    }

    private List<LoopAttachment> scan(Path key) throws IOException {
        List<LoopAttachment> found = table.list().stream().filter(a -> a.backingFile().equals(key)).toList();
        Set<LoopDevice> devices = new HashSet<>();
        found.forEach(a -> devices.add(a.device()));
        if (devices.isEmpty()) {
            seen.remove(key);
        } else {
            seen.put(key, Set.copyOf(devices));
        }
        return new ArrayList<>(found);
    }

    /** Makes the first lookup's scan now, if it is still to be made (off a request's time). */
    void learn() throws IOException {
        seed();
    }

    /** The first lookup of a pool that owns its directory learns every image's devices with one scan. */
    private void seed() throws IOException {
        if (!sole || seeded) {
            return;
        }
        synchronized (seeding) {
            if (!seeded) {
                for (LoopAttachment attachment : table.list()) {
                    remember(attachment.backingFile(), attachment.device());
                }
                seeded = true;
            }
        }
    }

    private void forget(Path key, Set<LoopDevice> devices) {
        seen.computeIfPresent(key, (k, known) -> {
            Set<LoopDevice> left = new HashSet<>(known);
            left.removeAll(devices);
            return left.isEmpty() ? null : Set.copyOf(left);
        });
    }

    private void remember(Path key, LoopDevice device) {
        seen.merge(key, Set.of(device), (a, b) -> {
            Set<LoopDevice> union = new HashSet<>(a);
            union.addAll(b);
            return Set.copyOf(union);
        });
    }

    /** sysfs names a backing file by its real path: the directory's, since the image may be gone. */
    private static Path key(Path image) {
        Path absolute = image.toAbsolutePath().normalize();
        try {
            return absolute.getParent().toRealPath().resolve(absolute.getFileName());
        } catch (IOException e) {
            return absolute;
        }
    }

    private Object lockOf(VolumeId id) {
        return stripes[Math.floorMod(id.hashCode(), stripes.length)];
    }
}
