package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import dev.hearth.linux.DiskScan;
import dev.hearth.storage.Attachment;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.device.VolumeRecord.Empty;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A pool whose volumes are whole disks of the node, one disk per volume, for workloads that want a
 * disk's IOPS to themselves. A disk is offered only if the pool's selector takes it, nothing uses
 * it, it has a stable identity, and its bytes are empty by the pool's check ({@link FreeDisks}).
 * A volume is the disk's whole size; it has no snapshots, clones or expansion.
 *
 * <p><b>Order of steps, and what a crash leaves.</b> Two records make a volume: the node-wide claim
 * on the disk ({@link DiskClaims}, holder: the volume's ID) and the pool's volume record
 * ({@link VolumeRecords}). A create claims first and records second, so a record never names a
 * disk the pool does not hold. A crash between the two leaves a claim without a record: nothing
 * has written to that disk, so the create's retry (or the next start of the pool, or a delete of
 * that ID) simply gives the claim back, and the retry chooses again. A delete marks the record
 * {@code releasing} first (under an exclusive open of the disk, so a mounted disk is never marked),
 * then wipes, then gives the claim back, then removes the record. A crash mid-wipe leaves the record
 * {@code releasing} and the claim held: the disk cannot go to anyone, and the delete's retry or the
 * pool's next start wipes it again from the start. A crash after the claim was given back leaves a
 * {@code releasing} record without the claim: the record goes, and the disk, which may already be
 * another volume's, is never wiped again. A delete whose disk is gone leaves the record
 * {@code releasing} and the claim held until the disk is back and wiped.
 *
 * <p><b>Empty, and first formats.</b> A disk taken under {@code check=sampled} had no signature,
 * nothing using it, and zeros at its first and last MiB and at 256 samples across it: that is
 * empty enough to be offered, but it is not proof. So at the volume's first filesystem stage the
 * disk is read whole, once, and formatted only if every byte is zero (the record then says
 * {@code full}); a block volume never pays for that read. A disk taken under {@code check=full},
 * or one this pool zeroed when its last volume was deleted ({@code wipe=zero}, or a discard that
 * guarantees zeros), is proven empty already, and stays so while its write counts
 * ({@link DiskWrites}) say nothing has written to it since. Once a volume has been handed to a
 * user, nothing proves it empty again: a disk published raw and written is never formatted.
 */
public final class DevicePool implements Pool {

    private static final System.Logger LOG = System.getLogger(DevicePool.class.getName());

    private final DevicePoolConfig config;
    private final DiskScan scan;
    private final DiskWrites.Reader writes;
    private final DiskClaims claims;
    private final VolumeRecords records;
    private final ProvenDisks proven;
    private final FreeDisks free;
    private final DiskRelease release;
    private final boolean readOnly;

    private DevicePool(DevicePoolConfig config, DiskScan scan, DiskWrites.Reader writes, Path sysBlock,
            boolean readOnly) {
        this.config = config;
        this.readOnly = readOnly;
        this.scan = scan;
        this.writes = writes;
        this.claims = new DiskClaims(config.claimsDirectory());
        this.records = new VolumeRecords(config.stateDirectory().resolve("volumes"));
        this.proven = new ProvenDisks(config.stateDirectory().resolve("proven"));
        this.free = new FreeDisks(config, claims, proven, writes, !readOnly);
        this.release = new DiskRelease(config, claims, records, proven, writes, new DiskWiper(sysBlock),
                this::locate);
    }

    public static DevicePool open(DevicePoolConfig config) throws IOException {
        return open(config, new DiskScan(), new DiskWrites.Reader(), Path.of("/sys/block"));
    }

    /**
     * Opens the pool and finishes what a crash cut short: claims of creates that never recorded
     * their volume are given back, records whose claim went missing claim their disk again, and
     * deletes that began wiping, or wait for their disk, are finished where the disk is there (in
     * the background: a wipe can take long).
     */
    static DevicePool open(DevicePoolConfig config, DiskScan scan, DiskWrites.Reader writes, Path sysBlock)
            throws IOException {
        Files.createDirectories(config.stateDirectory());
        Files.createDirectories(config.claimsDirectory());
        DevicePool pool = new DevicePool(config, scan, writes, sysBlock, false);
        pool.recover();
        return pool;
    }

    /**
     * Opens the pool to look at it, beside a driver that may be serving it ({@code hearth volumes}):
     * nothing is made, recovered or wiped, no disk is read whole in the background, and every
     * change (create, delete, attach, a stage's record) is refused.
     *
     * @throws IOException if the pool's state directory does not exist (no driver has served it here)
     */
    public static DevicePool openReadOnly(DevicePoolConfig config) throws IOException {
        if (!Files.isDirectory(config.stateDirectory())) {
            throw new NoSuchFileException(config.stateDirectory().toString(), null, "no such directory");
        }
        return new DevicePool(config, new DiskScan(), new DiskWrites.Reader(), Path.of("/sys/block"), true);
    }

    /** Refuses a change to a pool opened read-only. */
    private void requireWritable(String change) {
        if (readOnly) {
            throw new StorageException.Precondition("pool '" + name() + "' is open read-only here; it cannot "
                    + change);
        }
    }

    public DevicePoolConfig config() {
        return config;
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public String kind() {
        return "device";
    }

    @Override
    public List<Path> ownDirectories() {
        return List.of(config.stateDirectory(), config.claimsDirectory());
    }

    @Override
    public Set<String> parameterKeys() {
        return Set.of();
    }

    @Override
    public Map<String, String> validateParameters(Map<String, String> parameters) {
        for (String key : parameters.keySet()) {
            throw new StorageException.InvalidArgument("unknown parameter " + Quoted.of(key) + " for device pool '"
                    + name() + "'; it takes none (a volume is a whole disk: " + config.selector().describe() + ")");
        }
        return Map.of();
    }

    // ---- capacity

    /** Free: the disks the pool would give a volume now; the largest of them is the largest volume. */
    @Override
    public Capacity capacity() {
        List<Disk> disks = disks();
        List<FreeDisks.Free> offered = free.of(disks);
        long available = offered.stream().mapToLong(FreeDisks.Free::size).sum();
        long largest = offered.stream().mapToLong(FreeDisks.Free::size).max().orElse(0);
        long smallest = offered.stream().mapToLong(FreeDisks.Free::size).min().orElse(0);
        List<VolumeRecord> all = records.all(name());
        long allocated = all.stream().filter(r -> !r.releasing()).mapToLong(r -> r.volume().sizeBytes()).sum();
        if (!readOnly) {
            release.resume(all, new NodeDisks(disks)::find); // a deleted volume's disk that has come back gets its wipe
        }
        return new Capacity(allocated + available, allocated, available, largest, smallest);
    }

    // ---- volumes

    @Override
    public Volume create(VolumeRequest request) {
        requireWritable("create volumes");
        VolumeId id = VolumeId.mint(name(), request.name());
        Map<String, String> parameters = validateParameters(request.parameters());
        Optional<VolumeRecord> existing = records.read(id);
        if (existing.isPresent()) {
            if (existing.get().releasing()) {
                throw new StorageException.Busy("volume " + id + " is being deleted (its disk "
                        + existing.get().disk() + " is to be wiped before anything else has it); retry once that is done");
            }
            return request.sameRequestAgain(existing.get().volume(), parameters);
        }
        giveBackClaimsOf(id); // a create of this name that a crash cut short between claim and record
        List<FreeDisks.Free> fitting = SmallestFit.order(free.of(disks()), request.range(), name());
        for (FreeDisks.Free candidate : fitting) {
            Optional<VolumeRecord> made = take(id, request, parameters, candidate);
            if (made.isPresent()) {
                LOG.log(System.Logger.Level.INFO, "pool '" + name() + "': volume " + id + " is disk "
                        + candidate.disk().path() + " (" + candidate.identity() + ", empty: "
                        + made.get().empty().label() + ")");
                return made.get().volume();
            }
        }
        throw new StorageException.Exhausted("pool '" + name() + "': every free disk that fits "
                + request.range() + " was taken by another volume meanwhile");
    }

    /**
     * Claims the candidate for the volume and records it; empty if another claimant won the disk,
     * or the disk changed between the look and the claim (then the claim is given back).
     */
    private Optional<VolumeRecord> take(VolumeId id, VolumeRequest request, Map<String, String> parameters,
            FreeDisks.Free candidate) {
        DiskClaims.Claim mine = new DiskClaims.Claim(candidate.identity(), name(), id.toString(), now());
        try {
            if (!claims.claim(mine).sameHolder(mine)) {
                return Optional.empty();
            }
        } catch (IOException e) {
            throw new StorageException.Failed("claiming disk " + candidate.disk().path() + " for volume " + id + ": "
                    + e.getMessage(), e);
        }
        try {
            Optional<String> changed = changedSince(candidate);
            if (changed.isPresent()) {
                LOG.log(System.Logger.Level.INFO, "pool '" + name() + "': not taking " + candidate.disk().path()
                        + " for volume " + id + ": " + changed.get());
                release.giveBack(mine);
                return Optional.empty();
            }
            Volume volume = new Volume(id, request.name(), candidate.size(), parameters, Optional.empty(),
                    mine.since(), request.claim());
            VolumeRecord record = new VolumeRecord(volume, candidate.identity(), false, false, candidate.empty(),
                    candidate.writes());
            records.write(record);
            try {
                proven.clear(candidate.identity()); // the proof lives in the record now
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "could not clear the proven-empty mark of " + candidate.identity()
                        + ": " + e.getMessage());
            }
            return Optional.of(record);
        } catch (RuntimeException e) {
            giveBackQuietly(mine, e);
            throw e;
        }
    }

    /**
     * Whether the disk is still as it was when it was offered, now that it is claimed: the same
     * device under its name, nothing using it, nothing written to it since its bytes were checked.
     */
    private Optional<String> changedSince(FreeDisks.Free candidate) {
        List<Disk> now = disks();
        Optional<Disk> disk = DiskScan.named(now, candidate.disk().name()).filter(candidate.identity()::matches);
        if (disk.isEmpty()) {
            return Optional.of("it is no longer " + candidate.identity());
        }
        Optional<DiskVerdict> refused = DiskAssessor.refusal(disk.get(), Optional.of(candidate.identity()),
                config.rule());
        if (refused.isPresent()) {
            return Optional.of(refused.get().reason());
        }
        if (!writes.of(disk.get()).equals(candidate.writes()) || candidate.writes().isEmpty()) {
            return Optional.of("it was written to since it was checked");
        }
        return Optional.empty();
    }

    @Override
    public Optional<Volume> find(VolumeId id) {
        return live(id).map(VolumeRecord::volume);
    }

    @Override
    public List<Volume> list() {
        return records.all(name()).stream().filter(r -> !r.releasing()).map(VolumeRecord::volume).toList();
    }

    @Override
    public Listing listing() {
        List<VolumeRecord> all = records.all(name()).stream().filter(r -> !r.releasing()).toList();
        NodeDisks disks = new NodeDisks(disks());
        Map<VolumeId, VolumeRecord> byId = new HashMap<>();
        all.forEach(r -> byId.put(r.volume().id(), r));
        return new Listing(all.stream().map(VolumeRecord::volume).toList(), volume -> {
            VolumeRecord record = byId.get(volume.id());
            return conditionOf(record, disks.locate(record.disk()));
        });
    }

    /**
     * Wipes the volume's disk by the pool's policy and only then gives the disk back. A disk that
     * is in use is refused (FAILED_PRECONDITION) and left as it is; so is a disk that is on the
     * node but no longer matches the volume's (resized): hearth never wipes a disk it cannot
     * recognise. A disk that is gone cannot be wiped: the volume is deleted for the caller, and its
     * disk stays claimed, its record {@code releasing}, until it comes back and is wiped (any later
     * GetCapacity, delete or start notices it).
     */
    @Override
    public void delete(VolumeId id) {
        if (!id.pool().equals(name())) {
            return;
        }
        requireWritable("delete volumes");
        Optional<VolumeRecord> record = records.read(id);
        if (record.isEmpty()) {
            giveBackClaimsOf(id); // a create cut short between claim and record, never retried
            return;
        }
        release.delete(record.get());
    }

    // ---- on the node

    /** The disk's device as the node names it now, found by identity (a scan of the selector's disks in sysfs). */
    @Override
    public Attachment attach(VolumeId id) {
        requireWritable("stage volumes");
        VolumeRecord record = live(id).orElseThrow(() -> new StorageException.NotFound("volume " + id
                + " does not exist in pool '" + name() + "'"));
        Located located = locate(record.disk());
        if (located instanceof Located.Found(Disk disk)) {
            return new Attachment(disk.path(), false);
        }
        throw new StorageException.Precondition("volume " + id + " cannot be used: " + located.problem());
    }

    @Override
    public Optional<Path> attachedDevice(VolumeId id) {
        return live(id).flatMap(record -> locate(record.disk()) instanceof Located.Found(Disk disk)
                ? Optional.of(disk.path()) : Optional.empty());
    }

    /** A disk stays where it is; there is nothing to release. */
    @Override
    public void detach(VolumeId id) {}

    /** The disk as the node names it now, by a stable link where udev made one; a loop device's file if it is gone. */
    @Override
    public Optional<Path> backing(VolumeId id) {
        return live(id).flatMap(record -> switch (locate(record.disk())) {
            case Located.Found(Disk disk) -> Optional.of(disk.links().stream()
                    .filter(link -> link.startsWith("/dev/disk/by-id")).findFirst().orElse(disk.path()));
            case Located.Changed(Disk disk, DiskIdentity recorded) -> Optional.of(disk.path());
            case Located.Missing(DiskIdentity recorded) -> recorded.source().equals("loop")
                    ? Optional.of(Path.of(recorded.value())) : Optional.empty();
        });
    }

    @Override
    public List<Orphan> orphans() {
        return DeviceOrphans.of(name(), records, claims, allDisks());
    }

    /**
     * Proven while the volume was never handed out and its disk is, by the record and its write
     * counts, still as it was proven (read whole, or zeroed by this pool). Otherwise, for a volume
     * never handed out, the proof is made now by reading every byte; see the class comment.
     */
    @Override
    public Emptiness emptiness(VolumeId id) {
        Optional<VolumeRecord> found = live(id);
        if (found.isEmpty()) {
            return new Emptiness.Unknown("volume " + id + " has no record in pool '" + name() + "'");
        }
        VolumeRecord record = found.get();
        if (record.handedOut()) {
            return new Emptiness.Unknown("it has been handed to a user before, and a whole disk keeps no record "
                    + "of what was written to it");
        }
        Located located = locate(record.disk());
        if (!(located instanceof Located.Found(Disk disk))) {
            return new Emptiness.Unknown(located.problem());
        }
        Optional<DiskWrites> now = writes.of(disk);
        if (record.empty().proof() && now.isPresent() && now.equals(record.emptyWrites())) {
            return Emptiness.PROVEN;
        }
        return proveByReading(record, disk, now);
    }

    private Emptiness proveByReading(VolumeRecord record, Disk disk, Optional<DiskWrites> before) {
        VolumeId id = record.volume().id();
        if (readOnly) {
            return new Emptiness.Unknown("pool '" + name() + "' is open read-only here; it does not read disks whole");
        }
        LOG.log(System.Logger.Level.INFO, "pool '" + name() + "': reading all of " + disk.path() + " ("
                + Quantity.format(disk.sizeBytes()) + ") to prove volume " + id + " empty before its first format ("
                + (record.empty().proof() ? "it may have been written since it was proven empty" : "it was taken "
                        + "on a sampled check") + ")");
        long started = System.nanoTime();
        DiskVerdict verdict = DiskAssessor.contents(disk, ZeroCheck.FULL, _ -> {});
        LOG.log(System.Logger.Level.INFO, "pool '" + name() + "': " + disk.path() + " read in "
                + (System.nanoTime() - started) / 1_000_000 + " ms: " + verdict.reason());
        if (!verdict.eligible()) {
            return new Emptiness.Written("disk " + disk.path() + " " + verdict.reason());
        }
        if (before.isEmpty() || !writes.of(disk).equals(before)) {
            return new Emptiness.Unknown("disk " + disk.path() + " was written to while it was being read");
        }
        records.write(record.provenFull(before));
        return Emptiness.PROVEN;
    }

    @Override
    public void handedOut(VolumeId id) {
        requireWritable("record a stage");
        live(id).filter(r -> !r.handedOut()).ifPresent(r -> records.write(r.handedOutNow()));
    }

    @Override
    public VolumeCondition condition(VolumeId id) {
        VolumeRecord record = live(id).orElseThrow(() -> new StorageException.NotFound("volume " + id
                + " does not exist"));
        return conditionOf(record, locate(record.disk()));
    }

    private VolumeCondition conditionOf(VolumeRecord record, Located located) {
        if (!(located instanceof Located.Found)) {
            return VolumeCondition.abnormal(located.problem());
        }
        try {
            Optional<DiskClaims.Claim> claim = claims.of(record.disk());
            if (claim.isEmpty()) {
                return VolumeCondition.abnormal("the node has no claim on the volume's disk (" + record.disk()
                        + " in " + claims.directory() + "): another pool could take it");
            }
            if (!claim.get().pool().equals(name()) || !claim.get().holder().equals(record.volume().id().toString())) {
                return VolumeCondition.abnormal("the volume's disk (" + record.disk() + ") is claimed by "
                        + claim.get().describe() + ", not by this volume");
            }
        } catch (IOException e) {
            return VolumeCondition.abnormal("the claim on the volume's disk cannot be read: " + e.getMessage());
        }
        return VolumeCondition.NORMAL;
    }

    @Override
    public String problem() {
        Path dir = config.stateDirectory();
        if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
            return "pool '" + name() + "': state directory " + dir + " is missing or not writable";
        }
        return null;
    }

    @Override
    public void close() {
        free.close();
    }

    // ---- recovery

    private void recover() throws IOException {
        List<VolumeRecord> all = records.all(name());
        Set<String> recorded = new HashSet<>(); // a malformed record too: its disk stays claimed, never given back
        records.ids(name()).forEach(id -> recorded.add(id.toString()));
        for (VolumeRecord record : all) {
            VolumeId id = record.volume().id();
            if (record.releasing()) {
                continue;
            }
            Optional<DiskClaims.Claim> claim = claims.of(record.disk());
            if (claim.isEmpty()) {
                DiskClaims.Claim again = claims.claim(new DiskClaims.Claim(record.disk(), name(), id.toString(), now()));
                LOG.log(System.Logger.Level.WARNING, "pool '" + name() + "': volume " + id + " had no claim on its disk ("
                        + record.disk() + "); " + (again.holder().equals(id.toString()) ? "claimed it again"
                                : "it is claimed by " + again.describe()));
            }
        }
        release.resume(all, new NodeDisks(disks())::find);
        for (DiskClaims.Claim claim : claims.all()) {
            if (claim.pool().equals(name()) && VolumeId.parse(claim.holder()).isPresent()
                    && !recorded.contains(claim.holder())) {
                LOG.log(System.Logger.Level.WARNING, "pool '" + name() + "': giving back disk " + claim.disk()
                        + ", claimed for volume " + claim.holder() + " by a create that never recorded it");
                claims.release(claim);
            }
        }
    }

    // ---- internals

    /** The volume's record, if it is a volume (not one being deleted). */
    private Optional<VolumeRecord> live(VolumeId id) {
        if (!id.pool().equals(name())) {
            return Optional.empty();
        }
        return records.read(id).filter(r -> !r.releasing());
    }

    /** Gives back every claim this pool holds for {@code id}: a volume that has no record holds no disk. */
    private void giveBackClaimsOf(VolumeId id) {
        try {
            for (DiskClaims.Claim claim : claims.all()) {
                if (claim.pool().equals(name()) && claim.holder().equals(id.toString())) {
                    LOG.log(System.Logger.Level.INFO, "pool '" + name() + "': giving back disk " + claim.disk()
                            + ", claimed for volume " + id + " by a create that did not record it");
                    claims.release(claim);
                }
            }
        } catch (IOException e) {
            throw new StorageException.Failed("reading the disk claims in " + claims.directory() + ": "
                    + e.getMessage(), e);
        }
    }

    private void giveBackQuietly(DiskClaims.Claim claim, Exception cause) {
        try {
            claims.release(claim);
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    /**
     * The disks the selector may take, by their names: what a create, GetCapacity and a volume's
     * own disk need. The node's other block devices (hundreds of loop devices on some nodes) are
     * not read, so a call costs the same on any node.
     */
    private List<Disk> disks() {
        try {
            return scan.disks(config.selector()::mayTake);
        } catch (IOException e) {
            throw new StorageException.Failed("reading the node's disks from sysfs: " + e.getMessage(), e);
        }
    }

    /** Every disk of the node. */
    private List<Disk> allDisks() {
        try {
            return scan.disks();
        } catch (IOException e) {
            throw new StorageException.Failed("reading the node's disks from sysfs: " + e.getMessage(), e);
        }
    }

    /** Every disk of the node of exactly {@code sizeBytes}, the others read no further than their size. */
    private List<Disk> disksOfSize(long sizeBytes) {
        try {
            return scan.disksOfSize(sizeBytes);
        } catch (IOException e) {
            throw new StorageException.Failed("reading the node's disks from sysfs: " + e.getMessage(), e);
        }
    }

    /** Where the volume's disk is now: among the selector's disks, else (renamed outside the selector's names) anywhere. */
    private Located locate(DiskIdentity identity) {
        return new NodeDisks(disks()).locate(identity);
    }

    /**
     * One call's look at the disks: the selector's, read first, and every disk of the node only if
     * a volume's disk is not found among them (a disk the selector names by {@code /dev/sdb}, after
     * a reboot {@code sdc}), at most once a call.
     */
    private final class NodeDisks {

        private final List<Disk> selected;
        private List<Disk> all;
        private final Map<Long, List<Disk>> bySize = new HashMap<>();

        NodeDisks(List<Disk> selected) {
            this.selected = selected;
        }

        /**
         * Where the disk is, when only finding it matters (has a deleted volume's disk come back for
         * its wipe? asked by every GetCapacity while it is away): beyond the selector's disks, only
         * the node's disks of its size are read, since a disk of another size is never it. The answer
         * is {@link Located.Found} or {@link Located.Missing}, never {@link Located.Changed}.
         */
        Located find(DiskIdentity identity) {
            if (Located.find(identity, selected) instanceof Located.Found found) {
                return found;
            }
            List<Disk> candidates = all != null ? all
                    : bySize.computeIfAbsent(identity.sizeBytes(), DevicePool.this::disksOfSize);
            return Located.find(identity, candidates) instanceof Located.Found found ? found
                    : new Located.Missing(identity);
        }

        Located locate(DiskIdentity identity) {
            Located located = Located.find(identity, selected);
            if (located instanceof Located.Found) {
                return located;
            }
            if (all == null) {
                all = allDisks();
            }
            return Located.find(identity, all);
        }
    }

    private static Instant now() {
        return Instant.now().truncatedTo(ChronoUnit.MILLIS);
    }
}
