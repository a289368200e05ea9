package dev.hearth.storage.lvm;

import dev.hearth.storage.Quantity;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Snapshots;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * An LVM pool's snapshots. Thin: an LVM thin snapshot, taken with the source's filesystem frozen
 * by device-mapper (instant, and it shares the source's blocks). Thick: a full copy in an LV of its own, so the
 * snapshot outlives its source and costs the source nothing afterwards; the filesystem is frozen
 * only while a temporary copy-on-write snapshot is made, the copy from it runs in the background
 * ({@code ready_to_use} is false until it is done) and the temporary snapshot goes at the end.
 *
 * <p>A background copy's state is LVM's too: the snapshot LV carries {@link LvTags#COPYING} until
 * the copy is complete, and its transfer LV exists until then. A driver that restarts resumes
 * each copy from the start; a snapshot whose transfer is gone is half-made and is removed, and
 * the CO's retry makes it again.
 */
final class LvmSnapshots implements Snapshots, AutoCloseable {

    private static final System.Logger LOG = System.getLogger(LvmSnapshots.class.getName());

    private final LvmPool pool;
    private final LvmPoolConfig config;
    /** Running or failed background copies, by snapshot; a failure is reported to the next create of that name. */
    private final Map<SnapshotId, Copy> copies = new ConcurrentHashMap<>();
    private final ExecutorService copiers = Executors.newVirtualThreadPerTaskExecutor();

    LvmSnapshots(LvmPool pool) {
        this.pool = pool;
        this.config = pool.config();
    }

    @Override
    public Snapshot create(String name, VolumeId source) {
        pool.requireWritable("take snapshots");
        SnapshotId id = SnapshotId.mint(pool.name(), name);
        String lv = Names.snapshot(id);
        String sourceLv = Names.volume(source);
        List<LogicalVolume> lvs = source.pool().equals(pool.name())
                ? pool.allVolumes().orElseThrow(pool::groupMissing) : List.of();
        LogicalVolume from = LvmPool.named(lvs, sourceLv).filter(v -> v.tags().contains(LvTags.VOLUME))
                .orElseThrow(() -> new StorageException.NotFound("source volume " + source + " does not exist in pool '"
                        + pool.name() + "'"));
        Optional<LogicalVolume> existing = LvmPool.named(lvs, lv);
        if (config.thin()) {
            // A retry after a crash inside this snapshot's lvcreate -s: the source may be left suspended,
            // and the snapshot may exist for LVM but not in the pool. Such a snapshot is removed (the
            // lvremove also has LVM send the pool what it missed) and taken again.
            pool.resumeIfSuspended(sourceLv);
            if (existing.isPresent() && pool.thinPoolLacks(lv)) {
                LOG.log(System.Logger.Level.WARNING, "snapshot " + id + " was cut short before its thin pool made it; "
                        + "taking it again");
                pool.change("removing half-made snapshot " + id, "lvremove",
                        List.of("-f", config.volumeGroup() + "/" + lv));
                existing = Optional.empty();
            }
        }
        if (existing.isPresent()) {
            return again(id, name, source, existing.get(), lvs);
        }
        if (from.tags().contains(LvTags.COPYING)) {
            throw new StorageException.Precondition("volume " + source + " is still having its content copied in; "
                    + "snapshot it once that is done");
        }
        Instant taken = LvmPool.now();
        if (config.thin()) {
            // Thin snapshots are made inactive and skipped by autoactivation: they are read only when restored.
            // LVM freezes a mounted source's filesystem while it suspends the source for the snapshot.
            List<String> args = new ArrayList<>(List.of("-s", "-n", lv, "-ky"));
            args.addAll(LvTags.addTags(LvTags.snapshot(name, source, taken, false)));
            args.add(config.volumeGroup() + "/" + sourceLv);
            pool.change("snapshotting volume " + source, "lvcreate", args);
            return new Snapshot(id, name, source, from.sizeBytes(), taken, true);
        }
        List<String> args = new ArrayList<>(List.of("-n", lv, "-L", from.sizeBytes() + "b", "-kn", "-Wn", "-Zn", "-y"));
        args.addAll(LvTags.addTags(LvTags.snapshot(name, source, taken, true)));
        args.add(config.volumeGroup());
        pool.change("making the LV of snapshot " + id + " (" + Quantity.format(from.sizeBytes()) + ")", "lvcreate", args);
        String transfer = Names.transfer(pool.name(), id.key());
        try {
            pool.makeTransfer(transfer, from);
        } catch (RuntimeException e) {
            pool.removeQuietly(lv, e); // no copy can start: nothing half-made stays
            throw e;
        }
        start(id, lv, transfer, from.sizeBytes());
        return new Snapshot(id, name, source, from.sizeBytes(), taken, false);
    }

    /** A create of a snapshot that exists: the same one again, its copy resumed or its failure reported. */
    private Snapshot again(SnapshotId id, String name, VolumeId source, LogicalVolume existing, List<LogicalVolume> lvs) {
        Snapshot snapshot = LvTags.toSnapshot(id, existing).orElseThrow(() -> new StorageException.Conflict(
                "logical volume " + config.volumeGroup() + "/" + existing.name()
                        + " exists but is not a complete hearth snapshot record; it is left alone"));
        if (!snapshot.source().equals(source) || !snapshot.name().equals(name)) {
            throw new StorageException.Conflict("snapshot " + Quoted.of(name) + " exists already, of volume "
                    + snapshot.source() + ", not " + source);
        }
        if (snapshot.readyToUse()) {
            return snapshot;
        }
        Copy copy = copies.get(id);
        if (copy != null && copy.failure != null) {
            copies.remove(id);
            discard(id, existing);
            throw new StorageException.Failed("copying snapshot " + id + " failed, and what it made is removed; "
                    + "retry to take it again: " + copy.failure);
        }
        if (copy == null) {
            String transfer = Names.transfer(pool.name(), id.key());
            if (LvmPool.named(lvs, transfer).filter(t -> readable(t, existing)).isEmpty()) {
                discard(id, existing);
                throw new StorageException.Failed("snapshot " + id + " was cut short before its copy began; "
                        + "what it made is removed: retry to take it again");
            }
            start(id, existing.name(), transfer, snapshot.sizeBytes());
        }
        return snapshot;
    }

    /**
     * Starts the background copy of a thick snapshot from its transfer LV. It is stopped by its
     * flag, never by an interrupt: an interrupt would kill the lvm command the copy may be running
     * (its activations, the tag change, the transfer's lvremove), as a crash would, and leave
     * devices half-made for the delete that stopped it.
     */
    private void start(SnapshotId id, String lv, String transfer, long size) {
        Copy copy = new Copy();
        copies.put(id, copy);
        copiers.execute(() -> {
            try {
                Thread.currentThread().setName("copy " + id);
                BlockCopy.copy(pool.ensureActive(transfer), pool.ensureActive(lv), size, () -> copy.stopping);
                if (copy.stopping) {
                    copies.remove(id, copy);
                    return; // whoever stopped it removes what it made
                }
                pool.change("marking snapshot " + id + " complete", "lvchange",
                        List.of("--deltag", LvTags.COPYING, config.volumeGroup() + "/" + lv));
                pool.removeIfPresent(transfer);
                copies.remove(id, copy);
                LOG.log(System.Logger.Level.INFO, "snapshot " + id + " is ready: " + Quantity.format(size) + " copied");
            } catch (IOException | RuntimeException e) {
                if (copy.stopping) {
                    copies.remove(id, copy);
                    return;
                }
                copy.failure = e.getMessage();
                LOG.log(System.Logger.Level.WARNING, "copying snapshot " + id + " failed: " + e.getMessage());
                pool.removeQuietly(transfer, null);
            } finally {
                copy.done.countDown();
            }
        });
    }

    /** Resumes, after a restart, the copies LVM says are unfinished; removes transfers nothing needs. */
    void resume() {
        Optional<List<LogicalVolume>> all;
        try {
            all = pool.allVolumes();
        } catch (StorageException e) {
            LOG.log(System.Logger.Level.WARNING, "could not look for unfinished snapshot copies: " + e.getMessage());
            return;
        }
        List<LogicalVolume> lvs = all.orElse(List.of());
        for (LogicalVolume lv : lvs) {
            Optional<String> transferKey = Names.transferKey(pool.name(), lv.name());
            if (transferKey.isPresent()) {
                String snapshot = Names.snapshot(new SnapshotId(pool.name(), transferKey.get()));
                boolean needed = LvmPool.named(lvs, snapshot)
                        .filter(s -> s.tags().contains(LvTags.COPYING) && readable(lv, s)).isPresent();
                if (!needed) {
                    pool.removeQuietly(lv.name(), null); // a clone's, a finished copy's or a half-made one's
                }
                continue;
            }
            Optional<SnapshotId> id = Names.snapshotId(pool.name(), lv.name());
            if (id.isPresent() && lv.tags().contains(LvTags.COPYING)) {
                String transfer = Names.transfer(pool.name(), id.get().key());
                if (LvmPool.named(lvs, transfer).filter(t -> readable(t, lv)).isPresent()) {
                    LOG.log(System.Logger.Level.INFO, "resuming the copy of snapshot " + id.get());
                    start(id.get(), lv.name(), transfer, lv.sizeBytes());
                }
            }
        }
    }

    /**
     * Whether a copy can read {@code snapshot}'s content from {@code transfer}: only if it is a
     * copy-on-write snapshot of the snapshot's source. An lvcreate -s killed midway leaves a plain
     * LV by the transfer's name, with its tag, whose blocks are whatever its extents held before.
     */
    private static boolean readable(LogicalVolume transfer, LogicalVolume snapshot) {
        return LvTags.value(snapshot.tags(), LvTags.OF).flatMap(VolumeId::parse)
                .filter(source -> transfer.origin().equals(Names.volume(source))).isPresent();
    }

    @Override
    public Optional<Snapshot> find(SnapshotId id) {
        if (!id.pool().equals(pool.name())) {
            return Optional.empty();
        }
        return pool.findLv(Names.snapshot(id)).flatMap(lv -> LvTags.toSnapshot(id, lv));
    }

    @Override
    public List<Snapshot> list() {
        List<Snapshot> snapshots = new ArrayList<>();
        for (LogicalVolume lv : pool.allVolumes().orElse(List.of())) {
            Names.snapshotId(pool.name(), lv.name()).flatMap(id -> LvTags.toSnapshot(id, lv)).ifPresent(snapshots::add);
        }
        snapshots.sort(Comparator.comparing(s -> s.id().toString()));
        return snapshots;
    }

    @Override
    public void delete(SnapshotId id) {
        pool.requireWritable("delete snapshots");
        if (!id.pool().equals(pool.name())) {
            return;
        }
        String lv = Names.snapshot(id);
        Optional<LogicalVolume> found = pool.findLv(lv);
        if (found.isEmpty()) {
            return;
        }
        if (!found.get().tags().contains(LvTags.SNAPSHOT)) {
            throw new StorageException.Precondition("logical volume " + config.volumeGroup() + "/" + lv
                    + " is not tagged as a hearth snapshot; it is left alone");
        }
        stop(id);
        discard(id, found.get());
    }

    /**
     * Removes a snapshot's LV and its transfer, if one is left. A thick snapshot is a full copy of
     * a volume's data: its extents are wiped as a deleted volume's are, or the next volume made on
     * them would read it.
     */
    private void discard(SnapshotId id, LogicalVolume lv) {
        pool.removeIfPresent(Names.transfer(pool.name(), id.key()));
        if (!config.thin()) {
            pool.wipe("snapshot " + id, lv.name(), lv.sizeBytes());
        }
        pool.change("removing snapshot " + id, "lvremove", List.of("-f", config.volumeGroup() + "/" + lv.name()));
    }

    /**
     * Stops a running copy of the snapshot and waits for it to let go of its LVs: at its next
     * chunk, or once the lvm command it runs (if any) is done.
     */
    private void stop(SnapshotId id) {
        Copy copy = copies.remove(id);
        if (copy == null) {
            return;
        }
        copy.stopping = true;
        try {
            if (!copy.done.await(30, TimeUnit.SECONDS)) {
                throw new StorageException.Busy("the copy of snapshot " + id + " did not stop within 30 s; retry");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StorageException.Busy("interrupted while stopping the copy of snapshot " + id);
        }
    }

    /**
     * Stops the running copies (a restart resumes them) and waits a little for any lvm command they
     * run to finish, so that none is cut short by the daemon's exit.
     */
    @Override
    public void close() {
        copies.values().forEach(copy -> copy.stopping = true);
        copiers.shutdown();
        try {
            if (!copiers.awaitTermination(10, TimeUnit.SECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "snapshot copies still running after 10 s; leaving them");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * One background copy: running until {@code done}; {@code failure} set if it failed;
     * {@code stopping} once a delete or the daemon's end asks it to stop.
     */
    private static final class Copy {
        final java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
        volatile String failure;
        volatile boolean stopping;
    }
}
