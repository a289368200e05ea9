package dev.hearth.storage.lvm;

import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.DiskScan;
import dev.hearth.linux.MountInfo;
import dev.hearth.storage.Attachment;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Emptiness;
import dev.hearth.storage.Expansion;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.Pool;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.Quoted;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Snapshots;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeCondition;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.VolumeSource;
import dev.hearth.storage.lvm.Lvm.VolumeGroup;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.Signature;
import dev.hearth.storage.probe.SignatureProbe;
import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;

/**
 * A pool whose volumes are logical volumes of one LVM volume group: thick (extents of the group)
 * or thin (blocks of one thin pool in it, overprovisioned up to a ratio). The truth is LVM's:
 * a volume is an LV named {@code hearth.<pool>.<key>} whose tags, given in the same lvcreate,
 * record what it was made for ({@link LvTags}); nothing in memory is consulted in its place.
 *
 * <p>Snapshots (thin ones, and the temporary copy-on-write snapshot a thick copy reads from) are
 * consistent, not merely crash-consistent: device-mapper freezes a mounted source's filesystem
 * (freeze_bdev) for the instant LVM suspends the source to take them. A freeze of hearth's own
 * around that would collide with it (the suspend then fails with EBUSY), so there is none.
 *
 * <p>An LV's device exists while it is active, and hearth's LVs stay active while they exist:
 * attaching activates one that is not (after a reboot without autoactivation), detaching does
 * nothing. A volume group this node does not have is no error: the pool then has no space, so
 * capacity tracking keeps pods away, and says so.
 */
public final class LvmPool implements Pool {

    private static final System.Logger LOG = System.getLogger(LvmPool.class.getName());
    private static final long MIB = 1L << 20;
    /** A thin pool fuller than this makes its volumes' condition abnormal. */
    static final double THIN_FULL_PERCENT = 95.0;
    /** Metadata a thin pool spends per mapped chunk, roughly (btree entries and their overhead). */
    private static final long METADATA_BYTES_PER_CHUNK = 64;
    private static final long THIN_CHUNK_BYTES = 64 * 1024;
    /** What is zeroed around a stray signature's magic: the 64 KiB block holding it. */
    private static final long SIGNATURE_BLOCK = 64 * 1024;

    private final LvmPoolConfig config;
    private final Lvm lvm;
    /** The group's metadata from its PVs, and device-mapper: what lvs would say, without an lvm process. */
    private final MetadataReader metadata;
    private final DirectReport.DeviceMapperView deviceMapper;
    private final BlankVolumes blank;
    private final LvmSnapshots snapshotStore;
    /** Held while a thin pool's room is checked and taken, so two creates cannot both take the last of it. */
    private final ReentrantLock allocation = new ReentrantLock();
    /** Open only to be looked at, beside a driver that may serve the pool: nothing is changed. */
    private final boolean readOnly;
    /** Adds the disks the spec selects to the group, if it names any. */
    private final Optional<LvmGrowth> growth;
    private volatile GroupState group;

    private LvmPool(LvmPoolConfig config, Lvm lvm, DirectReport.DeviceMapperView deviceMapper, boolean readOnly) {
        this.config = config;
        this.readOnly = readOnly;
        this.lvm = lvm;
        this.metadata = new MetadataReader(lvm);
        this.deviceMapper = deviceMapper;
        this.blank = new BlankVolumes(config.stateDirectory().resolve("blank"));
        this.snapshotStore = new LvmSnapshots(this);
        // A pool opened to be looked at never grows its group, however often its capacity is asked.
        this.growth = readOnly ? Optional.empty()
                : config.growth().map(g -> new LvmGrowth(config, lvm, new DiskScan(), Clock.systemUTC()));
    }

    public static LvmPool open(LvmPoolConfig config) throws IOException {
        return open(config, new ToolRunner());
    }

    /**
     * Opens the pool: reads the volume group, and resumes the thick snapshot copies a restart cut short.
     */
    public static LvmPool open(LvmPoolConfig config, ToolRunner tools) throws IOException {
        Files.createDirectories(config.stateDirectory());
        LvmPool pool = new LvmPool(config, new Lvm(tools), new KernelDeviceMapper(), false);
        pool.refresh();
        GroupState state = pool.group;
        if (state.problem() != null) {
            LOG.log(System.Logger.Level.ERROR, state.problem());
        } else if (state.absence() != null) {
            LOG.log(System.Logger.Level.WARNING, state.absence() + "; the pool offers no space on this node");
        } else {
            pool.snapshotStore.resume();
        }
        pool.growth.ifPresent(LvmGrowth::nudge);
        return pool;
    }

    /**
     * Opens the pool to look at it, beside a driver that may be serving it ({@code hearth volumes}):
     * the group is read as {@link #open} reads it (its PVs' metadata, device-mapper, and lvm's
     * read-only reports where those do not vouch), but no directory is made, no snapshot copy is
     * resumed, no leftover removed, and every change (create, delete, expand, attach, snapshot) is refused.
     */
    public static LvmPool openReadOnly(LvmPoolConfig config) {
        LvmPool pool = new LvmPool(config, new Lvm(new ToolRunner()), new KernelDeviceMapper(), true);
        pool.refresh();
        return pool;
    }

    /** Refuses a change to a pool opened read-only. */
    void requireWritable(String change) {
        if (readOnly) {
            throw new StorageException.Precondition("pool '" + name() + "' is open read-only here; it cannot "
                    + change);
        }
    }

    @Override
    public String name() {
        return config.name();
    }

    @Override
    public String kind() {
        return "lvm";
    }

    public LvmPoolConfig config() {
        return config;
    }

    @Override
    public Set<String> parameterKeys() {
        return Set.of();
    }

    @Override
    public Map<String, String> validateParameters(Map<String, String> parameters) {
        for (String key : parameters.keySet()) {
            throw new StorageException.InvalidArgument("unknown parameter " + Quoted.of(key) + " for lvm pool '"
                    + name() + "'; it takes none (thick or thin is the pool's: " + config.describeTarget() + ")");
        }
        return Map.of();
    }

    @Override
    public Optional<Snapshots> snapshots() {
        return Optional.of(snapshotStore);
    }

    @Override
    public Optional<Expansion> expansion() {
        return Optional.of(this::expand);
    }

    @Override
    public boolean clones() {
        return true;
    }

    // ---- capacity

    /** The group's growth onto the node's disks, if the spec names disks. */
    public Optional<LvmGrowth> growth() {
        return growth;
    }

    /** What the group offers; asking is also what starts a pass of growth onto new disks (rate-limited). */
    @Override
    public Capacity capacity() {
        growth.ifPresent(LvmGrowth::nudge);
        if (config.thin()) {
            return thinCapacity(allVolumes().orElse(null));
        }
        GroupState state = refresh();
        if (state.facts().isEmpty()) {
            return new Capacity(0, 0, 0, 0, extentBytes());
        }
        VolumeGroup vg = state.facts().get();
        long free = vg.freeBytes() / vg.extentBytes() * vg.extentBytes();
        return new Capacity(vg.sizeBytes(), vg.sizeBytes() - vg.freeBytes(), free, free, vg.extentBytes());
    }

    /** A thin pool's room from one listing of the group (null: the group does not exist). */
    private Capacity thinCapacity(List<LogicalVolume> lvs) {
        long extent = extentBytes();
        if (lvs == null) {
            return new Capacity(0, 0, 0, 0, extent);
        }
        Optional<LogicalVolume> tp = thinPoolOf(lvs);
        if (tp.isEmpty() || group.problem() != null) {
            return new Capacity(0, 0, 0, 0, extent);
        }
        long data = tp.get().sizeBytes();
        long dataUsed = (long) Math.ceil(data * tp.get().dataPercent().orElse(0) / 100);
        long dataFree = Math.max(0, data - dataUsed);
        long metadata = tp.get().metadataBytes();
        long metadataFree = (long) (metadata * (100 - tp.get().metadataPercent().orElse(0)) / 100);
        long metadataHolds = metadataFree / METADATA_BYTES_PER_CHUNK * THIN_CHUNK_BYTES;
        long promised = lvs.stream().filter(lv -> lv.pool().equals(tp.get().name()))
                .mapToLong(LogicalVolume::sizeBytes).sum();
        long allowed = (long) Math.floor(data * config.overprovision());
        long room = Math.max(0, Math.min(Math.min(dataFree, metadataHolds), allowed - promised));
        room = room / extent * extent;
        return new Capacity(allowed, promised, room, room, extent);
    }

    private Optional<LogicalVolume> thinPoolOf(List<LogicalVolume> lvs) {
        String tp = config.thinPool().orElseThrow();
        return lvs.stream().filter(lv -> lv.name().equals(tp)).findFirst();
    }

    // ---- volumes

    @Override
    public Volume create(VolumeRequest request) {
        requireWritable("create volumes");
        VolumeId id = VolumeId.mint(name(), request.name());
        Map<String, String> parameters = validateParameters(request.parameters());
        requireGroup();
        if (request.source().isPresent()) {
            return createFrom(id, request, parameters);
        }
        long extent = extentBytes();
        long size = request.range().resolve(extent, Math.max(config.defaultVolumeBytes(), extent), extent);
        String lv = Names.volume(id);
        if (!config.thin()) {
            return createThick(id, lv, request, parameters, size);
        }
        allocation.lock();
        try {
            List<LogicalVolume> lvs = allVolumes().orElseThrow(this::groupMissing);
            Optional<LogicalVolume> existing = named(lvs, lv);
            if (existing.isPresent()) {
                return again(id, existing.get(), request, parameters);
            }
            requireRoom(thinCapacity(lvs), size, "volume " + id);
            Instant created = now();
            blank.mark(id);
            List<String> args = new ArrayList<>(List.of("-n", lv, "-V", size + "b", "-T",
                    config.volumeGroup() + "/" + config.thinPool().get(), "-kn", "-Wn"));
            args.addAll(LvTags.addTags(LvTags.volume(request.name(), request.range().requiredBytes(), parameters,
                    Optional.empty(), request.claim(), created, false)));
            lvcreate(id, args);
            return new Volume(id, request.name(), size, parameters, Optional.empty(), created, request.claim());
        } finally {
            allocation.unlock();
        }
    }

    /**
     * One lvcreate, which LVM itself refuses when the group has too little free space; a create
     * retried after a crash finds the LV it made and, if it was never handed out, clears its ends again.
     * An LV that exists is looked up first and never marked blank again: it may have been handed out
     * since, and a mark would have its ends cleared here and a filesystem made over its data at the next stage.
     */
    private Volume createThick(VolumeId id, String lv, VolumeRequest request, Map<String, String> parameters,
            long size) {
        Optional<LogicalVolume> found = findLv(lv);
        if (found.isPresent()) {
            return again(id, found.get(), request, parameters);
        }
        Instant created = now();
        blank.mark(id);
        List<String> args = new ArrayList<>(List.of("-n", lv, "-L", size + "b", "-kn", "-Wn", "-Zn", "-y"));
        args.addAll(LvTags.addTags(LvTags.volume(request.name(), request.range().requiredBytes(), parameters,
                Optional.empty(), request.claim(), created, false)));
        args.add(config.volumeGroup());
        var result = lvm.tryChange("lvcreate", args);
        if (!result.succeeded()) {
            if (alreadyExists(result.stderr())) {
                LogicalVolume existing = findLv(lv).orElseThrow(() -> new StorageException.Busy(
                        "volume " + id + " was being made and removed at once; retry"));
                return again(id, existing, request, parameters);
            }
            blank.clear(id);
            throw failure("creating volume " + id + " (" + Quantity.format(size) + ") in " + config.describeTarget(),
                    ToolException.exited(List.of("lvm", "lvcreate"), result));
        }
        clearEnds(id, lv, size);
        return new Volume(id, request.name(), size, parameters, Optional.empty(), created, request.claim());
    }

    /** A create whose LV exists: the same request again, finished if a crash cut it short. */
    private Volume again(VolumeId id, LogicalVolume existing, VolumeRequest request, Map<String, String> parameters) {
        Volume volume = LvTags.toVolume(id, existing).orElseThrow(() -> new StorageException.Conflict(
                "logical volume " + config.volumeGroup() + "/" + existing.name()
                        + " exists but is not a complete hearth volume record; it is left alone"));
        long asked = request.range().requiredBytes();
        if (existing.sizeBytes() < asked
                && LvTags.value(existing.tags(), LvTags.REQUESTED).equals(Optional.of(Long.toString(asked)))) {
            // Smaller than its own request: a thin restore or clone larger than its source (lvcreate -s,
            // then lvextend) that a crash cut short between the two. Grown now, as the first call would have.
            long size = request.range().resolve(extentBytes(), asked, asked);
            request.sameRequestAgain(volume.withSize(size), parameters);
            if (config.thin()) {
                requireRoom(thinCapacity(allVolumes().orElseThrow(this::groupMissing)), size - existing.sizeBytes(),
                        "volume " + id);
            }
            lvextend(id, existing.name(), size);
            volume = volume.withSize(size);
        }
        request.sameRequestAgain(volume, parameters);
        if (existing.tags().contains(LvTags.COPYING)) {
            copyIn(volume, existing.name(), existing.sizeBytes()); // a restore or clone whose copy a crash cut short: done again, whole
        } else if (!config.thin() && blank.marked(id)) {
            clearEnds(id, existing.name(), existing.sizeBytes());
        }
        return volume;
    }

    private Volume createFrom(VolumeId id, VolumeRequest request, Map<String, String> parameters) {
        VolumeSource source = request.source().orElseThrow();
        String lv = Names.volume(id);
        allocation.lock();
        try {
            List<LogicalVolume> lvs = allVolumes().orElseThrow(this::groupMissing);
            Optional<LogicalVolume> existing = named(lvs, lv);
            if (existing.isPresent() && config.thin()) {
                existing = finishThinCopy(id, lv, existing.get(), source);
            }
            if (existing.isPresent()) {
                return again(id, existing.get(), request, parameters);
            }
            LogicalVolume from = switch (source) {
                case VolumeSource.FromSnapshot(SnapshotId snapshot) -> {
                    LogicalVolume found = named(lvs, Names.snapshot(snapshot))
                            .filter(s -> snapshot.pool().equals(name()) && LvTags.toSnapshot(snapshot, s).isPresent())
                            .orElseThrow(() -> new StorageException.NotFound("source snapshot " + snapshot
                                    + " does not exist in pool '" + name() + "'"));
                    if (found.tags().contains(LvTags.COPYING)) {
                        throw new StorageException.Precondition("snapshot " + snapshot + " is still being copied "
                                + "(ready_to_use is false); restore it once it is ready");
                    }
                    yield found;
                }
                case VolumeSource.FromVolume(VolumeId volume) -> named(lvs, Names.volume(volume))
                        .filter(v -> volume.pool().equals(name()) && LvTags.toVolume(volume, v).isPresent())
                        .orElseThrow(() -> new StorageException.NotFound("source volume " + volume
                                + " does not exist in pool '" + name() + "'"));
            };
            long extent = extentBytes();
            long minimum = from.sizeBytes();
            long size = request.range().resolve(extent, Math.max(minimum, config.defaultVolumeBytes()), minimum);
            if (request.range().requiredBytes() == 0 && request.range().limitBytes() == 0) {
                size = minimum; // a restore or clone that names no size gets its source's
            }
            Instant created = now();
            if (config.thin()) {
                requireRoom(thinCapacity(lvs), size, "volume " + id);
                List<String> args = new ArrayList<>(List.of("-s", "-n", lv, "-kn"));
                args.addAll(LvTags.addTags(LvTags.volume(request.name(), request.range().requiredBytes(), parameters,
                        Optional.of(source), request.claim(), created, false)));
                args.add(config.volumeGroup() + "/" + from.name());
                lvcreate(id, args); // LVM freezes a mounted source's filesystem while it suspends it
                if (size > from.sizeBytes()) {
                    lvextend(id, lv, size);
                }
                return new Volume(id, request.name(), size, parameters, Optional.of(source), created,
                        request.claim());
            }
            List<String> args = new ArrayList<>(List.of("-n", lv, "-L", size + "b", "-kn", "-Wn", "-Zn", "-y"));
            args.addAll(LvTags.addTags(LvTags.volume(request.name(), request.range().requiredBytes(), parameters,
                    Optional.of(source), request.claim(), created, true)));
            args.add(config.volumeGroup());
            lvcreate(id, args);
            Volume volume = new Volume(id, request.name(), size, parameters, Optional.of(source), created,
                    request.claim());
            try {
                copyIn(volume, lv, size);
            } catch (RuntimeException e) {
                removeQuietly(lv, e);
                throw e;
            }
            return volume;
        } finally {
            allocation.unlock();
        }
    }

    /**
     * A thin restore or clone found on a retry: its lvcreate -s may have been killed midway. LVM may
     * then have left the source suspended (resumed here), committed the LV at a pool transaction the
     * pool never applied (the LV is removed, which also has LVM send the pool what it missed, and
     * made again: empty is returned), or committed it without activating it (activated here, as the
     * crash-free call leaves it).
     */
    private Optional<LogicalVolume> finishThinCopy(VolumeId id, String lv, LogicalVolume existing,
            VolumeSource source) {
        resumeIfSuspended(switch (source) {
            case VolumeSource.FromSnapshot(SnapshotId snapshot) -> Names.snapshot(snapshot);
            case VolumeSource.FromVolume(VolumeId from) -> Names.volume(from);
        });
        if (thinPoolLacks(lv)) {
            LOG.log(System.Logger.Level.WARNING, "volume " + id + " was cut short before its thin pool made it; "
                    + "making it again");
            change("removing half-made volume " + id, "lvremove", List.of("-f", config.volumeGroup() + "/" + lv));
            return Optional.empty();
        }
        ensureActive(lv);
        return Optional.of(existing);
    }

    /**
     * Copies a thick restore's or clone's content into its LV, then drops the copying tag. A
     * volume in use is read through a copy-on-write snapshot made under a freeze.
     */
    private void copyIn(Volume volume, String target, long targetSize) {
        VolumeSource source = volume.source().orElseThrow();
        String fromLv = switch (source) {
            case VolumeSource.FromSnapshot(SnapshotId snapshot) -> Names.snapshot(snapshot);
            case VolumeSource.FromVolume(VolumeId from) -> Names.volume(from);
        };
        LogicalVolume from = findLv(fromLv).orElseThrow(() -> new StorageException.NotFound(
                "the source of volume " + volume.id() + " (" + source + ") no longer exists"));
        String transfer = Names.transfer(name(), volume.id().key());
        boolean throughTransfer = source instanceof VolumeSource.FromVolume && from.open();
        try {
            Path reading;
            if (throughTransfer) {
                removeIfPresent(transfer);
                makeTransfer(transfer, from);
                reading = ensureActive(transfer);
            } else {
                reading = ensureActive(fromLv);
            }
            Path writing = ensureActive(target);
            BlockCopy.copy(reading, writing, from.sizeBytes());
            if (targetSize > from.sizeBytes()) {
                BlockDevices.zeroOut(writing, from.sizeBytes(), targetSize - from.sizeBytes());
            }
        } catch (IOException e) {
            throw new StorageException.Failed("copying " + source + " into volume " + volume.id() + ": "
                    + e.getMessage(), e);
        } finally {
            if (throughTransfer) {
                removeQuietly(transfer, null);
            }
        }
        change("marking volume " + volume.id() + " complete", "lvchange",
                List.of("--deltag", LvTags.COPYING, config.volumeGroup() + "/" + target));
    }

    /**
     * A temporary copy-on-write snapshot of {@code from}, a quarter of its size (at least 64 MiB)
     * for the writes that land on the source while the copy runs. LVM freezes a mounted source's
     * filesystem for the instant it suspends the source to make it.
     */
    void makeTransfer(String transfer, LogicalVolume from) {
        long extent = extentBytes();
        long cow = Math.max(64 * MIB, Math.ceilDiv(from.sizeBytes() / 4, extent) * extent);
        List<String> args = new ArrayList<>(List.of("-s", "-n", transfer, "-L", cow + "b", "-y"));
        args.addAll(LvTags.addTags(List.of(LvTags.TRANSFER)));
        args.add(config.volumeGroup() + "/" + from.name());
        change("making a copy-on-write snapshot of " + from.name(), "lvcreate", args);
    }

    @Override
    public Optional<Volume> find(VolumeId id) {
        if (!id.pool().equals(name())) {
            return Optional.empty();
        }
        return findLv(Names.volume(id)).flatMap(lv -> LvTags.toVolume(id, lv));
    }

    /** An active volume's device node answers without an lvm process; an inactive one is looked up. */
    @Override
    public boolean exists(VolumeId id) {
        if (!id.pool().equals(name())) {
            return false;
        }
        return active(Names.volume(id)) || find(id).isPresent();
    }

    @Override
    public List<Volume> list() {
        return volumesIn(allVolumes().orElse(List.of()));
    }

    private List<Volume> volumesIn(List<LogicalVolume> lvs) {
        List<Volume> volumes = new ArrayList<>();
        for (LogicalVolume lv : lvs) {
            Names.volumeId(name(), lv.name()).flatMap(id -> LvTags.toVolume(id, lv)).ifPresent(volumes::add);
        }
        volumes.sort(Comparator.comparing(v -> v.id().toString()));
        return volumes;
    }

    @Override
    public void delete(VolumeId id) {
        requireWritable("delete volumes");
        if (!id.pool().equals(name())) {
            return;
        }
        String lv = Names.volume(id);
        refuseIfBound(id, lv);
        if (config.thin()) {
            // Asked first, of device-mapper (one ioctl): lvremove refuses an open LV too, but only
            // after lvm's retries, some 5 s of the call.
            if (withDeviceMapper(() -> deviceMapper.openCount(Names.mapperName(config.volumeGroup(), lv)))
                    .map(count -> count.orElse(0)).orElse(0) > 0) {
                throw inUse(id);
            }
            // One lvremove, whose selection holds hearth's tag: an LV of this name that is not a hearth
            // volume is not touched, a missing one is nothing to do, and LVM refuses one in use.
            var result = lvm.tryChange("lvremove", List.of("-f", "-S", "lv_name=" + lv + " && lv_tags={\""
                    + LvTags.VOLUME + "\"}", config.volumeGroup()));
            if (!result.succeeded() && !Lvm.missingGroup(result.stderr())) {
                throw failure("removing volume " + id, ToolException.exited(List.of("lvm", "lvremove"), result));
            }
            blank.clear(id);
            return;
        }
        // Thick: the LV is read first, because its extents are wiped before it goes, and only a
        // volume of hearth's (by its tag) that nothing holds open is wiped.
        Optional<LogicalVolume> found = findLv(lv);
        if (found.isEmpty()) {
            blank.clear(id);
            return;
        }
        LogicalVolume volume = found.get();
        if (!volume.tags().contains(LvTags.VOLUME)) {
            throw new StorageException.Precondition("logical volume " + config.volumeGroup() + "/" + lv
                    + " is not tagged as a hearth volume; it is left alone");
        }
        if (volume.open()) {
            throw inUse(id);
        }
        if (node(Names.realDevice(config.volumeGroup(), lv)) != Node.ABSENT) {
            throw new StorageException.Busy("volume " + id + " is being copied (a snapshot or clone of it is "
                    + "in progress); retry when that is done");
        }
        wipe("volume " + id, lv, volume.sizeBytes());
        change("removing volume " + id, "lvremove", List.of("-f", config.volumeGroup() + "/" + lv));
        blank.clear(id);
    }

    private static StorageException inUse(VolumeId id) {
        return new StorageException.Precondition("volume " + id + " is in use on this node (mounted or open); "
                + "unstage it before deleting");
    }

    /**
     * A raw block volume staged or published on this node binds the LV's device node at its paths,
     * which opens nothing: LVM's open count, which refuses a mounted or open LV, does not see it, and
     * the LV would be wiped and removed under the pod's bind. Refused like a mounted one.
     */
    private void refuseIfBound(VolumeId id, String lv) {
        List<Path> binds;
        try {
            binds = MountInfo.bindsOf(MountInfo.read(), device(lv));
        } catch (IOException e) {
            throw new StorageException.Failed("reading the mount table: " + e.getMessage(), e);
        }
        if (!binds.isEmpty()) {
            throw new StorageException.Precondition("volume " + id + " is in use on this node as a raw block device "
                    + "(bound at " + binds.stream().map(Path::toString).collect(Collectors.joining(", "))
                    + "); unpublish and unstage it before deleting");
        }
    }

    /**
     * The pool's wipe policy over a thick LV's extents (a volume's, or a thick snapshot's full
     * copy of one), before they go back to the group and to the next volume made there.
     */
    void wipe(String what, String lv, long size) {
        if (config.wipe() == LvmPoolConfig.Wipe.NONE) {
            return;
        }
        Path device = ensureActive(lv);
        try {
            wipeWhole(device, size);
        } catch (IOException e) {
            throw new StorageException.Failed("wiping " + what + " (" + config.wipe().label() + ") before "
                    + "removing it: " + e.getMessage(), e);
        }
    }

    /** Zeroes or discards the whole device, by the pool's policy (not NONE). */
    private void wipeWhole(Path device, long size) throws IOException {
        if (config.wipe() == LvmPoolConfig.Wipe.ZERO) {
            BlockDevices.zeroOut(device, 0, size);
        } else {
            BlockDevices.discard(device, 0, size);
        }
    }

    private Volume expand(VolumeId id, CapacityRange range) {
        requireWritable("expand volumes");
        String lv = Names.volume(id);
        allocation.lock();
        try {
            List<LogicalVolume> lvs = id.pool().equals(name()) ? allVolumes().orElse(List.of()) : List.of();
            LogicalVolume found = named(lvs, lv).orElseThrow(() -> new StorageException.NotFound(
                    "volume " + id + " does not exist"));
            Volume volume = LvTags.toVolume(id, found).orElseThrow(() -> new StorageException.NotFound(
                    "volume " + id + " does not exist"));
            if (range.requiredBytes() <= volume.sizeBytes()) {
                return volume;
            }
            long size = range.resolve(extentBytes(), volume.sizeBytes(), volume.sizeBytes());
            if (config.thin()) {
                requireRoom(thinCapacity(lvs), size - volume.sizeBytes(), "expanding volume " + id);
            }
            lvextend(id, lv, size);
            return volume.withSize(size);
        } finally {
            allocation.unlock();
        }
    }

    // ---- on the node

    @Override
    public Attachment attach(VolumeId id) {
        requireWritable("attach volumes");
        if (!id.pool().equals(name())) {
            throw new StorageException.NotFound("volume " + id + " does not exist in pool '" + name() + "'");
        }
        String lv = Names.volume(id);
        if (active(lv)) {
            return new Attachment(device(lv), false);
        }
        return new Attachment(ensureActive(lv), true);
    }

    @Override
    public Optional<Path> attachedDevice(VolumeId id) {
        if (!id.pool().equals(name())) {
            return Optional.empty();
        }
        String lv = Names.volume(id);
        return active(lv) ? Optional.of(device(lv)) : Optional.empty();
    }

    /** An LV stays active while it exists; there is nothing to release. */
    @Override
    public void detach(VolumeId id) {}

    /**
     * A new volume is blank until it is first handed to a user; LVM keeps no record of which
     * blocks were written after that, so only then is it proven empty. A restore or clone is never
     * marked blank: it holds its source's content.
     */
    @Override
    public Emptiness emptiness(VolumeId id) {
        if (blank.marked(id)) {
            return Emptiness.PROVEN;
        }
        return new Emptiness.Unknown("it has been handed to a user before (or holds a snapshot's or volume's "
                + "content), and LVM keeps no record of what was written to it");
    }

    @Override
    public void handedOut(VolumeId id) {
        requireWritable("mark volumes handed out");
        blank.clear(id);
    }

    @Override
    public VolumeCondition condition(VolumeId id) {
        String lv = Names.volume(id);
        List<LogicalVolume> lvs = id.pool().equals(name()) ? allVolumes().orElse(List.of()) : List.of();
        LogicalVolume volume = named(lvs, lv).filter(v -> v.tags().contains(LvTags.VOLUME))
                .orElseThrow(() -> new StorageException.NotFound("volume " + id + " does not exist"));
        return conditionOf(volume, lvs);
    }

    /** Every volume and its condition from one listing of the group. */
    @Override
    public Listing listing() {
        List<LogicalVolume> lvs = allVolumes().orElse(List.of());
        List<Volume> volumes = volumesIn(lvs);
        return new Listing(volumes, volume -> named(lvs, Names.volume(volume.id()))
                .map(lv -> conditionOf(lv, lvs))
                .orElse(VolumeCondition.abnormal("the volume's logical volume is gone")));
    }

    private VolumeCondition conditionOf(LogicalVolume volume, List<LogicalVolume> lvs) {
        String lv = volume.name();
        if (!volume.health().isEmpty()) {
            return VolumeCondition.abnormal("LVM reports logical volume " + config.volumeGroup() + "/" + lv + " as "
                    + volume.health());
        }
        if (volume.tags().contains(LvTags.COPYING)) {
            return VolumeCondition.abnormal("the volume's content is still being copied in");
        }
        if (config.thin()) {
            Optional<LogicalVolume> tp = thinPoolOf(lvs);
            if (tp.isEmpty()) {
                return VolumeCondition.abnormal("thin pool " + config.describeTarget() + " is missing");
            }
            double data = tp.get().dataPercent().orElse(0);
            double metadata = tp.get().metadataPercent().orElse(0);
            if (!tp.get().health().isEmpty()) {
                return VolumeCondition.abnormal("thin pool " + config.describeTarget() + " is "
                        + tp.get().health() + "; writes to the volume may fail");
            }
            if (data >= THIN_FULL_PERCENT || metadata >= THIN_FULL_PERCENT) {
                return VolumeCondition.abnormal(String.format(java.util.Locale.ROOT,
                        "thin pool %s is filling up (data %.1f%%, metadata %.1f%%); writes fail when it is full",
                        config.describeTarget(), data, metadata));
            }
        }
        if (!volume.active()) {
            return VolumeCondition.abnormal("logical volume " + config.volumeGroup() + "/" + lv + " is not active");
        }
        return VolumeCondition.NORMAL;
    }

    /** The LV's path as LVM names it, {@code /dev/<vg>/<lv>}; its device exists while it is active. */
    @Override
    public Optional<Path> backing(VolumeId id) {
        return id.pool().equals(name()) ? Optional.of(Path.of("/dev", config.volumeGroup(), Names.volume(id)))
                : Optional.empty();
    }

    /**
     * LVs named as this pool's that carry no complete record of hearth's, and temporary copy-on-write
     * snapshots that no copy in progress reads from (which the driver removes when it next starts).
     */
    @Override
    public List<Orphan> orphans() {
        List<LogicalVolume> lvs = allVolumes().orElse(List.of());
        List<Orphan> found = new ArrayList<>();
        for (LogicalVolume lv : lvs) {
            String path = config.volumeGroup() + "/" + lv.name();
            Optional<VolumeId> volume = Names.volumeId(name(), lv.name());
            if (volume.isPresent() && LvTags.toVolume(volume.get(), lv).isEmpty()) {
                found.add(new Orphan(name(), Orphan.Kind.BACKING_WITHOUT_RECORD, path, volume,
                        "a logical volume named as one of the pool's volumes without hearth's complete record (tags)"));
            }
            Optional<SnapshotId> snapshot = Names.snapshotId(name(), lv.name());
            if (snapshot.isPresent() && LvTags.toSnapshot(snapshot.get(), lv).isEmpty()) {
                found.add(new Orphan(name(), Orphan.Kind.BACKING_WITHOUT_RECORD, path, Optional.empty(),
                        "a logical volume named as one of the pool's snapshots without hearth's complete record "
                                + "(tags)"));
            }
            Optional<String> transfer = Names.transferKey(name(), lv.name());
            if (transfer.isPresent() && !copyingInto(lvs, transfer.get())) {
                found.add(new Orphan(name(), Orphan.Kind.UNFINISHED, path, Optional.empty(),
                        "a temporary copy-on-write snapshot that no copy in progress reads from (the driver removes "
                                + "it when it next starts)"));
            }
        }
        return found;
    }

    /** Whether a snapshot or volume of this key is still having its content copied in (through a transfer). */
    private boolean copyingInto(List<LogicalVolume> lvs, String key) {
        Optional<LogicalVolume> snapshot = SnapshotId.parse(name() + "_" + key)
                .flatMap(s -> named(lvs, Names.snapshot(s)));
        Optional<LogicalVolume> volume = VolumeId.parse(name() + "-" + key)
                .flatMap(v -> named(lvs, Names.volume(v)));
        return snapshot.or(() -> volume).filter(lv -> lv.tags().contains(LvTags.COPYING)).isPresent();
    }

    /** How full the thin pool is (the larger of data and metadata, 0 to 1); empty for a thick pool. */
    public Optional<Double> thinPoolFill() {
        if (!config.thin()) {
            return Optional.empty();
        }
        return allVolumes().flatMap(this::thinPoolOf).map(tp -> Math.max(tp.dataPercent().orElse(0),
                tp.metadataPercent().orElse(0)) / 100);
    }

    @Override
    public String problem() {
        return group.problem();
    }

    /** Why the pool offers nothing on this node although nothing is broken (no such volume group), or null. */
    public String absence() {
        return group.absence();
    }

    @Override
    public void close() {
        growth.ifPresent(LvmGrowth::close);
        snapshotStore.close();
    }

    // ---- shared with LvmSnapshots

    /**
     * The group's LVs, or empty if this node has no such group: from the group's metadata on its
     * PVs and device-mapper where those vouch for themselves, else from {@code lvs}.
     */
    Optional<List<LogicalVolume>> allVolumes() {
        Optional<List<LogicalVolume>> lvs = listing(metadata.read(config.volumeGroup()));
        noteGroup(lvs);
        return lvs;
    }

    /** One LV of the group, read alone: device-mapper is asked about that LV only. */
    Optional<LogicalVolume> findLv(String lv) {
        return metadata.read(config.volumeGroup())
                .flatMap(group -> withDeviceMapper(() -> DirectReport.logicalVolume(group, lv, deviceMapper)))
                .orElseGet(() -> reported(Optional.of("lv_name=" + lv)).flatMap(lvs -> named(lvs, lv)));
    }

    /** The group's LVs from its metadata as read (with device-mapper's part), else from lvs. */
    private Optional<List<LogicalVolume>> listing(Optional<GroupMetadata> read) {
        return read.flatMap(group -> withDeviceMapper(() -> DirectReport.logicalVolumes(group, deviceMapper)))
                .or(() -> reported(Optional.empty()));
    }

    /** What device-mapper adds to the metadata; empty (ask lvm instead) if it cannot answer. */
    private <T> Optional<T> withDeviceMapper(KernelRead<T> read) {
        try {
            return Optional.of(read.get());
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "reading device-mapper for " + config.volumeGroup() + ": "
                    + e.getMessage() + "; asking lvm instead");
            return Optional.empty();
        }
    }

    @FunctionalInterface
    private interface KernelRead<T> {
        T get() throws IOException;
    }

    private Optional<List<LogicalVolume>> reported(Optional<String> select) {
        Optional<List<LogicalVolume>> lvs = run("listing " + config.volumeGroup(),
                () -> lvm.logicalVolumes(config.volumeGroup(), select));
        if (lvs.isPresent()) {
            metadata.groupExists(config.volumeGroup());
        }
        return lvs;
    }

    static Optional<LogicalVolume> named(List<LogicalVolume> lvs, String name) {
        return lvs.stream().filter(lv -> lv.name().equals(name)).findFirst();
    }

    Path device(String lv) {
        return Names.device(config.volumeGroup(), lv);
    }

    /**
     * The LV's device, activating the LV first if it is not active (it is, unless the node rebooted,
     * or a crash cut its lvcreate short).
     */
    Path ensureActive(String lv) {
        Path device = device(lv);
        Node node = node(device);
        if (node == Node.LIVE) {
            return device;
        }
        if (node == Node.MISNAMED) {
            refreshNode(lv);
            return device;
        }
        List<String> activate = List.of("-ay", "-K", config.volumeGroup() + "/" + lv);
        var result = lvm.tryChange("lvchange", activate);
        if (!result.succeeded() && config.thin() && result.stderr().contains("No data available")) {
            // In LVM's metadata but not in the thin pool's: an lvcreate killed after committing the one
            // and before sending the pool its message. LVM sends what the pool missed when a volume of
            // the pool is refreshed (not when the pool or this LV is activated); inactive ones are skipped.
            change("refreshing the volumes of " + config.describeTarget(), "lvchange",
                    List.of("--refresh", "-S", "pool_lv=" + config.thinPool().orElseThrow(), config.volumeGroup()));
            result = lvm.tryChange("lvchange", activate);
        }
        if (!result.succeeded()) {
            throw failure("activating " + lv, ToolException.exited(List.of("lvm", "lvchange"), result));
        }
        if (node(device) == Node.MISNAMED) {
            refreshNode(lv);
        }
        return device;
    }

    /** Whether the LV is active and its node is its device's: a process-free check, one ioctl. */
    private boolean active(String lv) {
        return node(device(lv)) == Node.LIVE;
    }

    /** What a {@code /dev/mapper} node stands for now. */
    enum Node {
        /** device-mapper has the device, with a live table, and the node carries its number. */
        LIVE,
        /** device-mapper has the device, but the node is missing or carries another number. */
        MISNAMED,
        /** device-mapper has no such device (the LV is not active), whatever the node says. */
        ABSENT
    }

    /**
     * Whether {@code node}, under {@code /dev/mapper}, is device-mapper's device of its name. The
     * node alone does not say:
     * an lvremove or lvchange -an killed between removing a device and unlinking its node (LVM
     * makes and removes the nodes itself where there is no udev) leaves a node that opens with
     * ENXIO, or, once the kernel has given that number to another LV, opens that other LV; one
     * killed before it made a node leaves the device without one. So the node's number must be the
     * one the kernel has for that name. When the kernel cannot be asked, the node is taken at its
     * word, as before.
     */
    private Node node(Path node) {
        Optional<String> number = BlockDevices.deviceNumber(node);
        String name = node.getFileName().toString();
        Optional<Optional<String>> live = withDeviceMapper(() -> deviceMapper.liveDeviceNumber(name));
        if (live.isEmpty()) {
            return number.isPresent() ? Node.LIVE : Node.ABSENT;
        }
        if (live.get().isEmpty()) {
            return Node.ABSENT;
        }
        return live.get().equals(number) ? Node.LIVE : Node.MISNAMED;
    }

    /**
     * Has LVM make an active LV's nodes again ({@code lvchange --refresh} reloads its devices and
     * fixes their nodes; {@code -ay} does neither for an LV already active).
     */
    private void refreshNode(String lv) {
        Path device = device(lv);
        LOG.log(System.Logger.Level.WARNING, device + " does not name the active device of that name"
                + " (an lvm command cut short?); refreshing " + config.volumeGroup() + "/" + lv);
        change("refreshing " + lv, "lvchange", List.of("--refresh", config.volumeGroup() + "/" + lv));
        if (node(device) != Node.LIVE) {
            throw new StorageException.Failed(device + " still does not name the active device of that name"
                    + " after a refresh of " + config.volumeGroup() + "/" + lv + "; it is not used");
        }
    }

    /**
     * Whether a thin LV exists for LVM but not in its thin pool: its lvcreate was killed after
     * committing LVM's metadata and before sending the pool its message (activating it then fails
     * with ENODATA). LVM records for each thin LV the pool transaction that makes it; the pool's own
     * transaction id says which it has applied. LVM sends the pool what it missed at its next change
     * of the pool (an lvcreate or lvremove in it). Costs no process; false when the group cannot be
     * read directly.
     */
    boolean thinPoolLacks(String lv) {
        Optional<Long> made = metadata.read(config.volumeGroup())
                .flatMap(group -> Optional.ofNullable(group.lvs().get(lv)))
                .flatMap(GroupMetadata.Lv::only).filter(segment -> segment.type().equals("thin"))
                .flatMap(segment -> segment.settings().number("transaction_id"));
        if (made.isEmpty()) {
            return false;
        }
        String pool = Names.mapperName(config.volumeGroup(), config.thinPool().orElseThrow()) + "-tpool";
        Optional<Long> applied = withDeviceMapper(() -> deviceMapper.thinPool(pool)).flatMap(status -> status)
                .filter(status -> !status.failed()).map(DirectReport.PoolStatus::transactionId);
        return applied.isPresent() && made.get() >= applied.get();
    }

    /**
     * Resumes an LV that an lvm command killed midway left suspended (a thin snapshot's lvcreate
     * suspends its source): until then every I/O to it waits. A refresh reloads and resumes it.
     */
    void resumeIfSuspended(String lv) {
        boolean suspended = withDeviceMapper(() -> deviceMapper.suspended(Names.mapperName(config.volumeGroup(), lv)))
                .orElse(false);
        if (suspended) {
            LOG.log(System.Logger.Level.WARNING, config.volumeGroup() + "/" + lv + " was left suspended by an lvm "
                    + "command cut short; resuming it");
            change("resuming " + lv, "lvchange", List.of("--refresh", config.volumeGroup() + "/" + lv));
        }
    }

    void change(String doing, String verb, List<String> args) {
        try {
            lvm.change(verb, args);
        } catch (ToolException e) {
            throw failure(doing, e);
        }
    }

    /**
     * Removes an LV if it is there. A copy-on-write snapshot (a thick copy's transfer) keeps the
     * source's overwritten blocks in its hidden exception store ({@code <lv>-cow}): that is zeroed
     * by the pool's wipe policy first, or the next thick volume on those extents could read them.
     */
    void removeIfPresent(String lv) {
        if (config.wipe() != LvmPoolConfig.Wipe.NONE) {
            wipeCopyOnWriteStore(lv);
        }
        var result = lvm.tryChange("lvremove", List.of("-f", config.volumeGroup() + "/" + lv));
        if (!result.succeeded() && !result.stderr().contains("Failed to find logical volume")) {
            throw failure("removing " + lv, ToolException.exited(List.of("lvm", "lvremove"), result));
        }
    }

    /**
     * Wipes the exception store of {@code lv} if it is a copy-on-write snapshot. The store is
     * written through only when its node is the kernel's device of that name (see {@link #node}):
     * a stale node left by a killed lvremove may by now open another LV. A snapshot LVM still has
     * whose store is not active (an lvremove killed after removing its devices; a reboot) gets it
     * back from its origin: a refresh of an active origin reloads its snapshots, an activation of
     * an inactive one activates them.
     */
    private void wipeCopyOnWriteStore(String lv) {
        Path cow = Path.of(device(lv) + "-cow");
        if (node(cow) != Node.LIVE) {
            Optional<LogicalVolume> snapshot = findLv(lv).filter(found -> !found.origin().isEmpty());
            if (snapshot.isEmpty()) {
                return; // gone, or not a copy-on-write snapshot: it holds no one's overwritten blocks
            }
            String origin = snapshot.get().origin();
            LOG.log(System.Logger.Level.WARNING, "the copy-on-write store of " + config.volumeGroup() + "/" + lv
                    + " is not active (an lvm command cut short?); bringing it back from " + origin + " to wipe it");
            if (node(device(origin)) == Node.ABSENT) {
                ensureActive(origin);
            } else {
                change("refreshing " + origin + " to reload its snapshot " + lv, "lvchange",
                        List.of("--refresh", config.volumeGroup() + "/" + origin));
            }
            if (node(cow) != Node.LIVE) {
                throw new StorageException.Failed("the copy-on-write store of " + lv + " could not be brought back to "
                        + "be wiped before it is removed; it is left as it is");
            }
        }
        try {
            wipeWhole(cow, BlockDevices.size(cow));
        } catch (IOException e) {
            throw new StorageException.Failed("wiping the copy-on-write store of " + lv + " before removing it: "
                    + e.getMessage(), e);
        }
    }

    void removeQuietly(String lv, Exception cause) {
        try {
            removeIfPresent(lv);
        } catch (RuntimeException e) {
            if (cause != null) {
                cause.addSuppressed(e);
            }
            LOG.log(System.Logger.Level.WARNING, "could not remove " + lv + ": " + e.getMessage());
        }
    }

    long extentBytes() {
        GroupState state = group;
        if (state.facts().isEmpty() && state.absence() == null && state.problem() == null) {
            state = refresh();
        }
        return state.facts().map(VolumeGroup::extentBytes).orElse(4 * MIB);
    }

    StorageException failure(String doing, ToolException e) {
        String stderr = e.stderr();
        String said = firstLines(stderr);
        if (stderr.contains("insufficient free space") || stderr.contains("Insufficient free")
                || stderr.contains("Not enough free")) {
            return new StorageException.Exhausted(doing + ": pool '" + name() + "' has too little free space: " + said);
        }
        if (Lvm.missingGroup(stderr)) {
            return groupMissing();
        }
        if (stderr.contains("in use") || stderr.contains("is open")) {
            return new StorageException.Precondition(doing + ": " + said);
        }
        return StorageException.Failed.byTool(doing + ": " + e.getMessage(), e);
    }

    StorageException groupMissing() {
        refresh();
        return new StorageException.Exhausted("pool '" + name() + "' has no space on this node: volume group "
                + Quoted.of(config.volumeGroup()) + " does not exist here");
    }

    void requireRoom(Capacity capacity, long bytes, String what) {
        if (bytes > capacity.availableBytes()) {
            throw new StorageException.Exhausted(what + " needs " + Quantity.format(bytes) + " but pool '" + name()
                    + "' (" + config.describeTarget() + ", overprovision " + config.overprovision() + ") can give "
                    + Quantity.format(capacity.availableBytes()) + " more");
        }
    }

    Lvm lvm() {
        return lvm;
    }

    // ---- internals

    private void lvcreate(VolumeId id, List<String> args) {
        change("creating volume " + id + " in " + config.describeTarget(), "lvcreate", args);
    }

    private void lvextend(VolumeId id, String lv, long size) {
        change("growing volume " + id + " to " + Quantity.format(size), "lvextend",
                List.of("-L", size + "b", config.volumeGroup() + "/" + lv));
    }

    /**
     * Clears what a new thick LV may carry over from earlier use of its extents (a deleted volume
     * under wipe=none, or whatever the group's disks held before hearth): its first and last MiB
     * are zeroed, then every signature the probe still finds (an ext4 backup superblock, a btrfs
     * mirror, a GPT backup header) is zeroed where it lies, so none of them blocks or fools the
     * first-format decision. The volume has never been handed out: what is on it is no one's.
     */
    private void clearEnds(VolumeId id, String lv, long size) {
        Path device = ensureActive(lv);
        try {
            long head = Math.min(MIB, size);
            BlockDevices.zeroOut(device, 0, head);
            if (size > head) {
                long tail = Math.min(MIB, size - head);
                BlockDevices.zeroOut(device, size - tail, tail);
            }
            for (int round = 0; round < 8; round++) {
                if (!(SignatureProbe.probe(device, size) instanceof ProbeResult.Signed signed)) {
                    return;
                }
                for (Signature signature : signed.found()) {
                    long block = signature.offset() / SIGNATURE_BLOCK * SIGNATURE_BLOCK;
                    BlockDevices.zeroOut(device, block, Math.min(SIGNATURE_BLOCK, size - block));
                }
            }
            throw new StorageException.Failed("new volume " + id + " still shows signatures after clearing them: "
                    + SignatureProbe.probe(device, size).describe());
        } catch (IOException e) {
            throw new StorageException.Failed("clearing the ends of new volume " + id + ": " + e.getMessage(), e);
        }
    }

    private void requireGroup() {
        GroupState state = group;
        if (state.facts().isEmpty()) {
            state = refresh();
        }
        if (state.problem() != null) {
            throw new StorageException.Failed(state.problem());
        }
        if (state.facts().isEmpty()) {
            throw groupMissing();
        }
    }

    /** Reads the group (and thin pool) and keeps what was found for {@link #problem} and {@link #absence}. */
    private GroupState refresh() {
        Optional<GroupMetadata> read = metadata.read(config.volumeGroup());
        Optional<VolumeGroup> vg = read.map(DirectReport::volumeGroup);
        try {
            if (vg.isEmpty()) {
                vg = lvm.volumeGroup(config.volumeGroup());
                if (vg.isPresent()) {
                    metadata.groupExists(config.volumeGroup());
                }
            }
        } catch (ToolException e) {
            return group = new GroupState(Optional.empty(), "pool '" + name() + "': cannot read volume group "
                    + Quoted.of(config.volumeGroup()) + ": " + e.getMessage(), null);
        }
        if (vg.isEmpty()) {
            return group = new GroupState(Optional.empty(), null, "pool '" + name() + "': volume group "
                    + Quoted.of(config.volumeGroup()) + " does not exist on this node");
        }
        if (vg.get().partial()) {
            return group = new GroupState(vg, "pool '" + name() + "': volume group " + Quoted.of(config.volumeGroup())
                    + " is missing one of its physical volumes", null);
        }
        group = new GroupState(vg, null, null);
        if (config.thin()) {
            noteGroup(listing(read)); // checks the thin pool, from the same reading of the group
        }
        return group;
    }

    /** What a listing of the group says about it: gone, there, and for a thin pool, usable or not. */
    private void noteGroup(Optional<List<LogicalVolume>> lvs) {
        GroupState state = group;
        if (state == null) {
            return;
        }
        if (lvs.isEmpty()) {
            group = new GroupState(Optional.empty(), null, "pool '" + name() + "': volume group "
                    + Quoted.of(config.volumeGroup()) + " does not exist on this node");
            return;
        }
        if (state.facts().isEmpty()) {
            state = refresh();
            if (state.facts().isEmpty()) {
                return;
            }
        }
        String problem = config.thin() ? thinPoolProblem(lvs.get()) : null;
        group = new GroupState(state.facts(), problem, null);
    }

    private String thinPoolProblem(List<LogicalVolume> lvs) {
        String target = config.describeTarget();
        Optional<LogicalVolume> tp = thinPoolOf(lvs);
        if (tp.isEmpty()) {
            return "pool '" + name() + "': thin pool " + target + " does not exist (create it with lvcreate -T "
                    + target + " -L SIZE -Zy)";
        }
        if (!tp.get().isThinPool()) {
            return "pool '" + name() + "': " + target + " is not a thin pool";
        }
        if (!tp.get().zeroesNewBlocks()) {
            return "pool '" + name() + "': thin pool " + target + " does not zero new blocks, so a new volume could "
                    + "read a deleted one's data; turn zeroing on with: lvchange -Zy " + target;
        }
        if (tp.get().health().equals("failed") || tp.get().health().equals("metadata_read_only")) {
            return "pool '" + name() + "': thin pool " + target + " is " + tp.get().health();
        }
        return null;
    }

    private <T> T run(String doing, java.util.function.Supplier<T> read) {
        try {
            return read.get();
        } catch (ToolException e) {
            throw failure(doing, e);
        } catch (IllegalArgumentException e) {
            throw new StorageException.Failed(doing + ": " + e.getMessage(), e);
        }
    }

    /** Now, to the millisecond a tag records, so a volume made and one read back are equal. */
    static Instant now() {
        return Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
    }

    private static boolean alreadyExists(String stderr) {
        return stderr.contains("already exists");
    }

    private static String firstLines(String stderr) {
        String trimmed = stderr.strip();
        return trimmed.length() <= 500 ? trimmed : trimmed.substring(0, 500) + "...";
    }

    /**
     * What was last read of the group: its facts if it exists, what makes the pool unusable
     * (null if nothing), and why it has no space here without being broken (null if it has).
     */
    private record GroupState(Optional<VolumeGroup> facts, String problem, String absence) {}
}
