package dev.hearth.storage.lvm;

import dev.hearth.linux.Disk;
import dev.hearth.linux.DiskScan;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.device.DiskAssessor;
import dev.hearth.storage.device.DiskClaims;
import dev.hearth.storage.device.DiskIdentity;
import dev.hearth.storage.device.DiskVerdict;
import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.AtomicFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Grows an LVM pool's volume group onto the node's empty disks that its spec selects: each such
 * disk becomes a physical volume of the group, once. The group itself is the admin's: a group that
 * does not exist is never created, and a disk is added only to it.
 *
 * <p>Order, so that a crash anywhere leaves something the next pass can finish or safely leave:
 * a disk found {@link DiskVerdict.Eligible} (selected, unused, recognisable, no signature, zeros
 * where the pool's check looks) is first claimed in the node's {@link DiskClaims} (holder
 * {@code pv of vg <vg>}), and only then written: {@code pvcreate} with a PV UUID derived from the
 * disk's identity and the group, then {@code vgextend}, then a record in the pool's state directory
 * ({@code grown/<disk key>}) that the group has it. A pass finds its own claims again and reads each
 * disk's LVM label: a PV of the group is done; the PV of that UUID in no group gets its vgextend,
 * unless the record says it was in the group once (the admin took it out: vgreduce); a disk with
 * no label is checked again as a new disk would be and made a PV if it still is empty, unless the
 * record says it was in the group (pvremove); anything else (another signature, another PV, data)
 * is never touched again, only reported, the claim staying so no other pool takes it either.
 *
 * <p>Passes run one at a time on a thread of their own: at start, then when capacity is asked, at
 * most once per {@link #INTERVAL}. A disk refused for what it holds is read again only after
 * {@link #REPROBE} (a full zero check reads the whole disk). Disks are taken one at a time, each
 * logged with its identity.
 */
public final class LvmGrowth implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(LvmGrowth.class.getName());
    static final Duration INTERVAL = Duration.ofMinutes(1);
    static final Duration REPROBE = Duration.ofHours(1);

    private final String pool;
    private final String group;
    private final LvmPoolConfig.Growth growth;
    /** The pool's record of the disks it added to the group: one file each, named by the disk's key. */
    private final Path addedRecords;
    private final Lvm lvm;
    private final DiskScan scan;
    private final DiskClaims claims;
    private final Clock clock;
    private final ReentrantLock passing = new ReentrantLock();
    private final ExecutorService background;
    private final AtomicBoolean queued = new AtomicBoolean();
    private volatile boolean closed;
    private volatile Instant lastPass = Instant.EPOCH;
    /** Disks this process has seen as PVs of the group: not read again. */
    private final Set<DiskIdentity> members = ConcurrentHashMap.newKeySet();
    /**
     * Disks refused for what they hold, when and why: not read again before {@link #REPROBE}, but
     * still in each pass's account of what it left.
     */
    private final Map<DiskIdentity, Refusal> refused = new ConcurrentHashMap<>();

    private record Refusal(Instant at, String reason) {}
    /** What has been logged about a disk: a refusal repeated every pass is said once. */
    private final Set<String> said = ConcurrentHashMap.newKeySet();

    LvmGrowth(LvmPoolConfig config, Lvm lvm, DiskScan scan, Clock clock) {
        this.pool = config.name();
        this.group = config.volumeGroup();
        this.growth = config.growth().orElseThrow();
        this.addedRecords = addedDirectory(config);
        this.lvm = lvm;
        this.scan = scan;
        this.claims = new DiskClaims(growth.claims());
        this.clock = clock;
        this.background = Executors.newSingleThreadExecutor(Thread.ofVirtual().name("lvm-growth-" + pool).factory());
    }

    /**
     * What one pass did: the disks it made PVs of the group, and what it left and why (disks
     * selected but refused, claims it could not finish).
     */
    public record Pass(List<String> added, List<String> left) {
        public Pass {
            added = List.copyOf(added);
            left = List.copyOf(left);
        }
    }

    /** Starts a pass in the background if none ran for {@link #INTERVAL} and none is waiting. */
    public void nudge() {
        if (closed || Duration.between(lastPass, clock.instant()).compareTo(INTERVAL) < 0
                || !queued.compareAndSet(false, true)) {
            return;
        }
        background.execute(() -> {
            try {
                pass();
            } catch (IOException | RuntimeException e) {
                if (!closed) {
                    LOG.log(System.Logger.Level.WARNING, "pool '" + pool + "': growing volume group " + group
                            + " onto disks: " + e.getMessage());
                }
            } finally {
                queued.set(false);
            }
        });
    }

    /** One pass now, after any running one: finishes this pool's claims, then takes every eligible disk. */
    public Pass pass() throws IOException {
        passing.lock();
        try {
            lastPass = clock.instant();
            List<String> taken = new ArrayList<>();
            List<String> left = new ArrayList<>();
            List<Disk> disks = scan.disks();
            List<DiskClaims.Claim> all = claims.all();
            for (DiskClaims.Claim claim : all) {
                if (mine(claim) && !members.contains(claim.disk())) {
                    finish(claim, disks, taken, left);
                }
            }
            takeEligible(disks, Set.copyOf(all.stream().map(DiskClaims.Claim::disk).toList()), taken, left);
            return new Pass(taken, left);
        } catch (CancellationException e) {
            return new Pass(List.of(), List.of("stopped: the pool is closing"));
        } finally {
            passing.unlock();
        }
    }

    /** Takes each selected disk no one has claimed that is eligible, one at a time, if the group exists. */
    private void takeEligible(List<Disk> disks, Set<DiskIdentity> claimed, List<String> taken, List<String> left)
            throws IOException {
        Optional<Boolean> groupExists = Optional.empty();
        for (Disk disk : disks) {
            if (closed) {
                return;
            }
            Optional<DiskIdentity> identity = DiskIdentity.of(disk);
            if (identity.isPresent() && claimed.contains(identity.get()) || growth.disks().refuses(disk).isPresent()) {
                continue;
            }
            Optional<Refusal> recently = identity.flatMap(this::recentRefusal);
            if (recently.isPresent()) {
                left.add(disk.path() + ": " + recently.get().reason());
                continue;
            }
            DiskVerdict verdict = DiskAssessor.unclaimed(disk, identity, rule(), this::stopIfClosed);
            if (!verdict.eligible()) {
                refuse(disk, identity, verdict, left);
                continue;
            }
            if (groupExists.isEmpty()) {
                groupExists = Optional.of(groupExists());
            }
            if (!groupExists.get()) {
                left.add(disk.path() + ": volume group " + group + " does not exist (hearth never creates it)");
                once("no-group", System.Logger.Level.WARNING, "pool '" + pool + "': volume group " + group
                        + " does not exist on this node; hearth never creates it, so its eligible disks wait");
                return;
            }
            take(disk, identity.get(), taken, left);
        }
    }

    /** Claims the disk, then makes it a PV of the group; a claim another pool holds already wins. */
    private void take(Disk disk, DiskIdentity identity, List<String> taken, List<String> left) throws IOException {
        DiskClaims.Claim mine = new DiskClaims.Claim(identity, pool, ClaimedPv.holder(group), clock.instant());
        DiskClaims.Claim standing = claims.claim(mine);
        if (!standing.sameHolder(mine)) {
            left.add(disk.path() + ": claimed by " + standing.describe() + " first");
            return;
        }
        LOG.log(System.Logger.Level.INFO, "pool '" + pool + "': taking disk " + describe(disk, identity)
                + " into volume group " + group + " (claimed in " + growth.claims() + ")");
        pvcreate(disk, identity, taken, left);
    }

    /** Takes up a claim of this pool's where the disk stands now: done, half done, or not ours to touch. */
    private void finish(DiskClaims.Claim claim, List<Disk> disks, List<String> taken, List<String> left) {
        Optional<Disk> found = disks.stream().filter(claim.disk()::matches).findFirst();
        if (found.isEmpty()) {
            left.add(claim.disk() + ": claimed for " + group + " but not on this node");
            once("gone " + claim.disk(), System.Logger.Level.WARNING, "pool '" + pool + "': disk " + claim.disk()
                    + ", taken into volume group " + group + ", is not on this node");
            return;
        }
        Disk disk = found.get();
        ClaimedPv state = ClaimedPv.of(claim, disk, Files.exists(addedRecords.resolve(claim.disk().key())));
        switch (state.state()) {
            case MEMBER -> recordAdded(disk, claim.disk(), left);
            case PREPARED -> {
                LOG.log(System.Logger.Level.INFO, "pool '" + pool + "': finishing disk " + describe(disk, claim.disk())
                        + ": a PV made for " + group + ", not yet in it");
                vgextend(disk, claim.disk(), taken, left);
            }
            case UNWRITTEN -> {
                DiskVerdict verdict = DiskAssessor.unclaimed(disk, Optional.of(claim.disk()), rule(), this::stopIfClosed);
                if (verdict.eligible()) {
                    LOG.log(System.Logger.Level.INFO, "pool '" + pool + "': finishing disk "
                            + describe(disk, claim.disk()) + ": claimed for " + group + ", still empty");
                    pvcreate(disk, claim.disk(), taken, left);
                } else if (verdict instanceof DiskVerdict.NotSelected) {
                    release(claim, disk, left);
                } else {
                    untouchable(claim, disk, verdict.reason(), left);
                }
            }
            case TORN -> left.add(disk.path() + ": its LVM label is being written; read again next pass");
            case REMOVED, FOREIGN -> untouchable(claim, disk, state.detail(), left);
        }
    }

    private void pvcreate(Disk disk, DiskIdentity identity, List<String> taken, List<String> left) {
        // Neither -y nor -f: pvcreate itself refuses a disk that shows any signature by now.
        if (tool(disk, left, "pvcreate", List.of("--uuid", ClaimedPv.uuid(identity, group), "--norestorefile",
                disk.path().toString()))) {
            vgextend(disk, identity, taken, left);
        }
    }

    private void vgextend(Disk disk, DiskIdentity identity, List<String> taken, List<String> left) {
        if (tool(disk, left, "vgextend", List.of(group, disk.path().toString())) && recordAdded(disk, identity, left)) {
            taken.add(disk.path().toString());
            LOG.log(System.Logger.Level.INFO, "pool '" + pool + "': disk " + describe(disk, identity)
                    + " is a physical volume of " + group + " now");
        }
    }

    /**
     * Records that the group has the disk, so that a PV later found outside it was taken out (by
     * the admin) rather than never put in (a crash), and is not added again. A crash between the
     * vgextend and this record leaves a member without it, which the next pass records.
     */
    private boolean recordAdded(Disk disk, DiskIdentity identity, List<String> left) {
        Path record = addedRecords.resolve(identity.key());
        try {
            if (!Files.exists(record)) {
                Files.createDirectories(addedRecords);
                AtomicFiles.write(record, "disk=" + identity + "\ngroup=" + group + "\nadded=" + clock.instant()
                        + "\n");
            }
            members.add(identity);
            return true;
        } catch (IOException e) {
            left.add(disk.path() + ": recording it as added to " + group + ": " + e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "pool '" + pool + "': recording " + describe(disk, identity)
                    + " as added to " + group + ": " + e.getMessage());
            return false;
        }
    }

    /** Where an lvm pool records the disks it added to its group. */
    public static Path addedDirectory(LvmPoolConfig config) {
        return config.stateDirectory().resolve("grown");
    }

    /** Whether the pool recorded that it added this disk to its group. */
    public static boolean added(LvmPoolConfig config, DiskIdentity disk) {
        return Files.exists(addedDirectory(config).resolve(disk.key()));
    }

    private boolean tool(Disk disk, List<String> left, String verb, List<String> args) {
        try {
            lvm.change(verb, args);
            return true;
        } catch (ToolException e) {
            left.add(disk.path() + ": " + verb + " failed: " + e.getMessage());
            LOG.log(System.Logger.Level.WARNING, "pool '" + pool + "': " + verb + " of " + disk.path() + " for "
                    + group + " failed; the next pass tries again: " + e.getMessage());
            return false;
        }
    }

    /** A claim whose disk no selector picks any more, with nothing of ours on it: given back. */
    private void release(DiskClaims.Claim claim, Disk disk, List<String> left) {
        try {
            claims.release(claim);
            left.add(disk.path() + ": no longer selected; its claim, with nothing written, is released");
            LOG.log(System.Logger.Level.INFO, "pool '" + pool + "': disk " + describe(disk, claim.disk())
                    + " is no longer selected; released its claim (nothing had been written to it)");
        } catch (IOException e) {
            left.add(disk.path() + ": releasing its claim: " + e.getMessage());
        }
    }

    private void untouchable(DiskClaims.Claim claim, Disk disk, String what, List<String> left) {
        left.add(disk.path() + ": claimed for " + group + " but " + what + "; left alone");
        once("foreign " + claim.disk() + what, System.Logger.Level.WARNING, "pool '" + pool + "': disk "
                + describe(disk, claim.disk()) + " was claimed for volume group " + group + " but " + what
                + "; hearth will not touch it again. To give it back, remove "
                + claims.directory().resolve(claim.disk().key() + ".claim"));
    }

    private void refuse(Disk disk, Optional<DiskIdentity> identity, DiskVerdict verdict, List<String> left) {
        if (verdict instanceof DiskVerdict.Signed || verdict instanceof DiskVerdict.NotEmpty
                || verdict instanceof DiskVerdict.Unreadable) {
            identity.ifPresent(id -> refused.put(id, new Refusal(clock.instant(), verdict.reason())));
        }
        left.add(disk.path() + ": " + verdict.reason());
        once("refused " + disk.path() + identity + verdict.code(), System.Logger.Level.INFO, "pool '" + pool
                + "': disk " + identity.map(id -> describe(disk, id)).orElse(disk.path().toString())
                + " is selected but not taken into " + group + ": " + verdict.reason());
    }

    private Optional<Refusal> recentRefusal(DiskIdentity identity) {
        return Optional.ofNullable(refused.get(identity))
                .filter(refusal -> Duration.between(refusal.at(), clock.instant()).compareTo(REPROBE) < 0);
    }

    private boolean groupExists() {
        try {
            return lvm.volumeGroup(group).isPresent();
        } catch (ToolException e) {
            LOG.log(System.Logger.Level.WARNING, "pool '" + pool + "': reading volume group " + group + ": "
                    + e.getMessage());
            return false;
        }
    }

    private DiskAssessor.Rule rule() {
        return new DiskAssessor.Rule(pool, growth.disks(), growth.check());
    }

    private boolean mine(DiskClaims.Claim claim) {
        return claim.pool().equals(pool) && claim.holder().equals(ClaimedPv.holder(group));
    }

    private void stopIfClosed(long bytesRead) {
        if (closed) {
            throw new CancellationException("closing");
        }
    }

    private void once(String key, System.Logger.Level level, String message) {
        if (said.add(key)) {
            LOG.log(level, message);
        }
    }

    private static String describe(Disk disk, DiskIdentity identity) {
        return disk.path() + " (" + identity.source() + " " + identity.value() + ", "
                + Quantity.format(identity.sizeBytes()) + ")";
    }

    /** Stops taking disks; a pass under way ends at its next disk (a zero check at its next read). */
    @Override
    public void close() {
        closed = true;
        background.shutdown();
        try {
            // pvcreate and vgextend take seconds; let a disk being added finish rather than cut it short.
            background.awaitTermination(Lvm.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
