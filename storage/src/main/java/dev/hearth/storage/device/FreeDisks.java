package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.device.VolumeRecord.Empty;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * Which of the node's disks a device pool may give a volume right now, cheaply enough for every
 * GetCapacity. Each call asks, for every disk its selector takes, what can change at any moment
 * (a claim, a mount, a holder, an exclusive opener; a few sysfs reads and one open), while what the
 * disk's bytes say is remembered with the disk's write counts ({@link DiskWrites}) and read again
 * only when those change. A disk is thus read once when it appears, not once per call, and a disk
 * mounted a moment ago stops counting at once.
 *
 * <p>Under {@code check=full}, a disk is read whole in the background (one disk at a time, progress
 * logged about every tenth): until that is done it is not offered, and once it is, the pool
 * remembers it ({@link ProvenDisks}) across restarts of the driver. A disk the pool zeroed itself,
 * or read whole, and that nothing wrote since is offered without reading it at all.
 */
final class FreeDisks implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(FreeDisks.class.getName());

    /** A disk the pool may take, and how it is known to be empty. */
    record Free(Disk disk, DiskIdentity identity, Empty empty, Optional<DiskWrites> writes) {
        long size() {
            return disk.sizeBytes();
        }
    }

    /** What a disk's bytes said, and the write counts they were read under. */
    private record Checked(DiskWrites writes, DiskVerdict verdict) {}

    private final DevicePoolConfig config;
    private final DiskClaims claims;
    private final ProvenDisks proven;
    private final DiskWrites.Reader writes;
    private final Map<DiskIdentity, Checked> checked = new ConcurrentHashMap<>();
    private final Set<DiskIdentity> checking = ConcurrentHashMap.newKeySet();
    /** The verdict last logged for each disk the selector takes, so a change is logged once. */
    private final Map<String, String> logged = new ConcurrentHashMap<>();
    private final boolean background;
    private final ExecutorService fullChecks = Executors.newSingleThreadExecutor(
            Thread.ofVirtual().name("hearth-full-check").factory());

    /** @param background whether a full check may read disks in the background (not for a pool opened read-only) */
    FreeDisks(DevicePoolConfig config, DiskClaims claims, ProvenDisks proven, DiskWrites.Reader writes,
            boolean background) {
        this.config = config;
        this.background = background;
        this.claims = claims;
        this.proven = proven;
        this.writes = writes;
    }

    /** The disks the pool may take now, in the order of {@code disks}. */
    List<Free> of(List<Disk> disks) {
        List<Free> free = new ArrayList<>();
        for (Disk disk : disks) {
            if (config.selector().refuses(disk).isPresent()) {
                continue; // not this pool's business, and not worth a log line
            }
            Optional<DiskIdentity> identity = DiskIdentity.of(disk);
            Optional<Free> offered = offer(disk, identity);
            offered.ifPresent(free::add);
        }
        return free;
    }

    private Optional<Free> offer(Disk disk, Optional<DiskIdentity> identity) {
        try {
            // Read now, not from a listing taken before: a disk claimed a moment ago may be mounting,
            // and the exclusive open below would make that mount fail.
            Optional<DiskClaims.Claim> claim = identity.isPresent() ? claims.of(identity.get()) : Optional.empty();
            if (claim.isPresent()) {
                note(disk, new DiskVerdict.Claimed(claim.get()));
                return Optional.empty();
            }
        } catch (IOException e) {
            throw new StorageException.Failed("reading the claim of disk " + disk.path() + ": " + e.getMessage(), e);
        }
        Optional<DiskVerdict> refused = DiskAssessor.refusal(disk, identity, config.rule());
        if (refused.isPresent()) {
            note(disk, refused.get());
            return Optional.empty();
        }
        DiskIdentity id = identity.orElseThrow();
        Optional<DiskWrites> now = writes.of(disk);
        Optional<Empty> known = proven.proven(id, now);
        if (known.isPresent()) {
            note(disk, DiskVerdict.ELIGIBLE);
            return Optional.of(new Free(disk, id, known.get(), now));
        }
        Optional<DiskVerdict> contents = contents(disk, id, now);
        if (contents.isEmpty()) {
            return Optional.empty(); // a full check is reading it
        }
        note(disk, contents.get());
        if (!contents.get().eligible()) {
            return Optional.empty();
        }
        return Optional.of(new Free(disk, id, config.check() == ZeroCheck.FULL ? Empty.FULL : Empty.SAMPLED, now));
    }

    /** What the disk's bytes say, from the last read while its write counts are unchanged; empty while a full check runs. */
    private Optional<DiskVerdict> contents(Disk disk, DiskIdentity identity, Optional<DiskWrites> now) {
        Checked last = checked.get(identity);
        if (last != null && now.isPresent() && last.writes().equals(now.get())) {
            return Optional.of(last.verdict());
        }
        if (config.check() == ZeroCheck.FULL) {
            startFullCheck(disk, identity, now);
            return Optional.empty();
        }
        DiskVerdict verdict = DiskAssessor.contents(disk, ZeroCheck.SAMPLED, _ -> {});
        now.ifPresent(w -> checked.put(identity, new Checked(w, verdict)));
        return Optional.of(verdict);
    }

    private void startFullCheck(Disk disk, DiskIdentity identity, Optional<DiskWrites> before) {
        if (!background || before.isEmpty() || !checking.add(identity)) {
            return;
        }
        LOG.log(System.Logger.Level.INFO, "pool '" + config.name() + "': reading all of " + disk.path() + " ("
                + identity + ", " + Quantity.format(disk.sizeBytes()) + ") before offering it (check=full)");
        try {
            fullChecks.execute(() -> {
                try {
                    long tenth = Math.max(1, disk.sizeBytes() / 10);
                    long[] next = {tenth};
                    DiskVerdict verdict = DiskAssessor.contents(disk, ZeroCheck.FULL, read -> {
                        if (read >= next[0] && read < disk.sizeBytes()) {
                            LOG.log(System.Logger.Level.INFO, "pool '" + config.name() + "': " + disk.path() + " "
                                    + (read * 100 / disk.sizeBytes()) + "% read");
                            next[0] = (read / tenth + 1) * tenth;
                        }
                    });
                    checked.put(identity, new Checked(before.get(), verdict));
                    if (verdict.eligible()) {
                        remember(identity, before.get());
                    }
                    LOG.log(System.Logger.Level.INFO, "pool '" + config.name() + "': full check of " + disk.path()
                            + ": " + verdict.reason());
                } finally {
                    checking.remove(identity);
                }
            });
        } catch (RejectedExecutionException e) {
            checking.remove(identity); // the pool is closing
        }
    }

    private void remember(DiskIdentity identity, DiskWrites writes) {
        try {
            proven.mark(identity, writes, Empty.FULL, "every byte read (check=full)");
        } catch (IOException e) {
            // Only a shortcut is lost: the disk is read whole again after a restart.
            LOG.log(System.Logger.Level.WARNING, "could not record that " + identity + " was read whole: "
                    + e.getMessage());
        }
    }

    /** Logs a disk's verdict when it changes (a disk refused, taken, or offered again). */
    private void note(Disk disk, DiskVerdict verdict) {
        String previous = logged.put(disk.name(), verdict.reason());
        if (verdict.reason().equals(previous)) {
            return;
        }
        String what = DiskIdentity.of(disk).map(DiskIdentity::toString).orElse("no identity");
        LOG.log(System.Logger.Level.INFO, "pool '" + config.name() + "': " + disk.path() + " (" + what + "): "
                + (verdict.eligible() ? "offered" : "not offered: " + verdict.reason()));
    }

    @Override
    public void close() {
        fullChecks.shutdownNow();
    }
}
