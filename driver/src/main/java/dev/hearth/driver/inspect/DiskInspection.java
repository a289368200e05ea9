package dev.hearth.driver.inspect;

import dev.hearth.linux.Disk;
import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.device.DiskAssessor;
import dev.hearth.storage.device.DiskClaims;
import dev.hearth.storage.device.DiskIdentity;
import dev.hearth.storage.device.DiskSelector;
import dev.hearth.storage.device.DiskVerdict;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.lvm.ClaimedPv;
import dev.hearth.storage.lvm.LvmGrowth;
import dev.hearth.storage.lvm.LvmPoolConfig;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * What {@code hearth disks} shows: every disk of the node with its verdict under the pools that
 * take whole disks, read beside a driver that may be serving them. Nothing is written: claims are
 * read, disks are read (the probe, an LVM label) and opened with O_EXCL for an instant to ask the
 * kernel whether anything holds them.
 *
 * @param disks the disks, less the loop devices serving a file pool's images
 * @param pools the pools that take whole disks, in the order they choose
 * @param hiddenLoops loop devices left out: they serve a file pool's images (volumes, not disks)
 * @param missingClaims claims whose disk is not on the node now
 * @param probed whether disks no pool selects were read too ({@code --probe})
 */
public record DiskInspection(Path claimsDirectory, List<Pool> pools, List<Row> disks, List<Path> hiddenLoops,
        List<DiskClaims.Claim> missingClaims, boolean probed) {

    /** The zero check {@code --probe} applies to a disk no pool selects. */
    static final ZeroCheck PROBE_CHECK = ZeroCheck.SAMPLED;
    private static final java.util.regex.Pattern RUN = java.util.regex.Pattern.compile("\\d+|\\D+");
    /** Selects any disk: {@code /dev/NAME} is always one of a disk's names. */
    private static final DiskSelector ANY = new DiskSelector(List.of("/dev/*"), 0, Optional.empty(), Optional.empty());

    /** sda before sdb, loop2 before loop10, nvme2n1 before nvme10n1: names in the order people count them. */
    static final Comparator<Disk> BY_NAME = Comparator.comparing(Disk::name, DiskInspection::naturally);

    public DiskInspection {
        pools = List.copyOf(pools);
        disks = List.copyOf(disks);
        hiddenLoops = List.copyOf(hiddenLoops);
        missingClaims = List.copyOf(missingClaims);
    }

    /** A pool that takes whole disks, and its rule. */
    public record Pool(String name, String kind, DiskAssessor.Rule rule) {}

    /**
     * One disk.
     *
     * @param pool the pool whose selector picks it, if any
     * @param pv for a disk an lvm pool claimed for its group: what its LVM label says
     * @param ifSelected for a disk no pool selects, with {@code --probe}: the verdict a pool selecting it would get
     */
    public record Row(Disk disk, Optional<DiskIdentity> identity, Optional<String> pool, DiskVerdict verdict,
            Optional<ClaimedPv> pv, Optional<DiskVerdict> ifSelected) {}

    /**
     * The node's disks under {@code configs}.
     *
     * @param stateDir the driver's: its loop devices are volumes, and its claims are under {@code disks/}
     */
    public static DiskInspection of(List<Disk> scanned, List<? extends PoolConfig> configs, Path stateDir,
            boolean probe) throws IOException {
        List<Pool> pools = new ArrayList<>();
        List<Path> imageDirectories = new ArrayList<>(List.of(stateDir));
        for (PoolConfig config : configs) {
            config.diskRule().ifPresent(rule -> pools.add(new Pool(config.name(), config.kind(), rule)));
            if (config instanceof FilePoolConfig file) {
                imageDirectories.add(file.directory());
            }
        }
        List<Disk> disks = new ArrayList<>();
        List<Path> hidden = new ArrayList<>();
        for (Disk disk : scanned.stream().sorted(BY_NAME).toList()) {
            if (disk.backingFile().filter(f -> imageDirectories.stream().anyMatch(f::startsWith)).isPresent()) {
                hidden.add(disk.path());
            } else {
                disks.add(disk);
            }
        }
        DiskClaims claims = new DiskClaims(stateDir.resolve("disks"));
        List<DiskAssessor.Rule> rules = pools.stream().map(Pool::rule).toList();
        List<Row> rows = new ArrayList<>();
        for (DiskAssessor.Assessment a : new DiskAssessor(claims).assess(disks, rules)) {
            rows.add(new Row(a.disk(), a.identity(), a.pool(), a.verdict(), pv(a, configs), probe && a.verdict()
                    instanceof DiskVerdict.NotSelected
                    ? Optional.of(DiskAssessor.unclaimed(a.disk(), a.identity(), new DiskAssessor.Rule("", ANY,
                            PROBE_CHECK), _ -> {}))
                    : Optional.empty()));
        }
        List<DiskClaims.Claim> missing = claims.all().stream()
                .filter(c -> scanned.stream().noneMatch(c.disk()::matches)).toList();
        return new DiskInspection(claims.directory(), pools, rows, hidden, missing, probe);
    }

    /** Runs of digits compare as numbers, everything else as text. */
    static int naturally(String a, String b) {
        java.util.regex.Matcher x = RUN.matcher(a);
        java.util.regex.Matcher y = RUN.matcher(b);
        while (x.find() && y.find()) {
            String p = x.group();
            String q = y.group();
            int c = Character.isDigit(p.charAt(0)) && Character.isDigit(q.charAt(0))
                    ? Comparator.comparingInt(String::length).thenComparing(Comparator.naturalOrder())
                            .compare(p.replaceFirst("^0+(?=.)", ""), q.replaceFirst("^0+(?=.)", ""))
                    : p.compareTo(q);
            if (c != 0) {
                return c;
            }
        }
        return a.compareTo(b);
    }

    /**
     * For a disk claimed for an LVM group: where it stands, and for one with no label yet, what it
     * holds. Whether the pool once added it is read from the pool's record, if the pool is given.
     */
    private static Optional<ClaimedPv> pv(DiskAssessor.Assessment a, List<? extends PoolConfig> configs) {
        if (!(a.verdict() instanceof DiskVerdict.Claimed claimed) || ClaimedPv.groupOf(claimed.claim()).isEmpty()) {
            return Optional.empty();
        }
        DiskClaims.Claim claim = claimed.claim();
        boolean added = configs.stream().filter(c -> c.name().equals(claim.pool()))
                .anyMatch(c -> c instanceof LvmPoolConfig lvm && LvmGrowth.added(lvm, claim.disk()));
        ClaimedPv pv = ClaimedPv.of(claim, a.disk(), added);
        if (pv.state() == ClaimedPv.State.UNWRITTEN) {
            DiskVerdict contents = DiskAssessor.contents(a.disk(), PROBE_CHECK, _ -> {});
            if (!contents.eligible()) {
                return Optional.of(new ClaimedPv(ClaimedPv.State.FOREIGN, contents.reason()));
            }
        }
        return Optional.of(pv);
    }
}
