package dev.hearth.storage.device;

import dev.hearth.linux.BlockDevices;
import dev.hearth.linux.Disk;
import dev.hearth.storage.file.FilePool;
import dev.hearth.storage.probe.ProbeResult;
import dev.hearth.storage.probe.SignatureProbe;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongConsumer;

/**
 * Decides, for each of the node's disks, whether a pool may take it: the one rule shared by the
 * device pool (which disks it offers), an LVM pool growing onto disks, and {@code hearth disks}.
 *
 * <p>The checks run cheapest first and the first failure is the verdict: a claim on record, the
 * pools' selectors, read-only, what uses it (mounts, swap, holders from sysfs, then the kernel's
 * own refusal of an exclusive open), size, a stable identity, and only then the disk's bytes (the
 * signature probe and its zero check), so a disk in use is never read for nothing.
 */
public final class DiskAssessor {

    /** One pool's claim on the node's disks: which it may take, and how hard to look for data. */
    public record Rule(String pool, DiskSelector selector, ZeroCheck check) {}

    /** A disk, the pool whose selector took it (if any), its identity, and the verdict. */
    public record Assessment(Disk disk, Optional<String> pool, Optional<DiskIdentity> identity, DiskVerdict verdict) {}

    private final DiskClaims claims;

    public DiskAssessor(DiskClaims claims) {
        this.claims = claims;
    }

    /** Every disk's verdict under the node's rules (in pool order: the first pool that selects a disk has it). */
    public List<Assessment> assess(List<Disk> disks, List<Rule> rules) throws IOException {
        List<DiskClaims.Claim> all = claims.all();
        List<Assessment> out = new ArrayList<>();
        for (Disk disk : disks) {
            Optional<DiskIdentity> identity = DiskIdentity.of(disk);
            Optional<DiskClaims.Claim> claim = identity.flatMap(id -> all.stream()
                    .filter(c -> c.disk().equals(id)).findFirst());
            Optional<Rule> rule = rules.stream().filter(r -> r.selector().refuses(disk).isEmpty()).findFirst();
            DiskVerdict verdict;
            if (claim.isPresent()) {
                verdict = new DiskVerdict.Claimed(claim.get());
            } else if (rule.isEmpty()) {
                verdict = new DiskVerdict.NotSelected(String.join("; ", rules.stream()
                        .map(r -> (rules.size() == 1 ? "" : "pool " + r.pool() + ": ")
                                + r.selector().refuses(disk).orElse(""))
                        .toList()));
            } else {
                verdict = unclaimed(disk, identity, rule.get(), _ -> {});
            }
            out.add(new Assessment(disk, rule.map(Rule::pool), identity, verdict));
        }
        return out;
    }

    /**
     * The verdict on a disk no one has claimed, under one rule (selector and zero check already
     * matched or not: the selector is asked again). {@code progress} hears the bytes a full zero
     * check has read.
     */
    public static DiskVerdict unclaimed(Disk disk, Optional<DiskIdentity> identity, Rule rule, LongConsumer progress) {
        return refusal(disk, identity, rule).orElseGet(() -> contents(disk, rule.check(), progress));
    }

    /**
     * The verdict on a disk no one has claimed from every check but its bytes (selector, read-only,
     * uses, exclusive open, size, identity), or empty if it passes them all: cheap enough to ask
     * on every call, so a disk that was mounted or taken a moment ago is refused at once, while
     * what its bytes say may come from an earlier read.
     */
    public static Optional<DiskVerdict> refusal(Disk disk, Optional<DiskIdentity> identity, Rule rule) {
        Optional<String> refused = rule.selector().refuses(disk);
        if (refused.isPresent()) {
            return Optional.of(new DiskVerdict.NotSelected(refused.get()));
        }
        if (disk.readOnly()) {
            return Optional.of(new DiskVerdict.ReadOnly());
        }
        // A file pool's volume on its loop device looks like an empty disk between its attach and its
        // mkfs (the warm-up's scratch volume, too): a selector such as /dev/loop* must not take it.
        Optional<Path> image = disk.backingFile().filter(FilePool::isImageFile);
        if (image.isPresent()) {
            return Optional.of(new DiskVerdict.InUse(List.of(disk.name() + " serves " + image.get()
                    + ", a volume image of a hearth file pool")));
        }
        List<String> uses = disk.uses();
        if (!uses.isEmpty()) {
            return Optional.of(new DiskVerdict.InUse(uses));
        }
        Optional<String> busy = BlockDevices.exclusiveOpenProblem(disk.path());
        if (busy.isPresent()) {
            return Optional.of(new DiskVerdict.InUse(List.of(disk.name() + ": " + busy.get())));
        }
        if (rule.selector().tooSmall(disk)) {
            return Optional.of(new DiskVerdict.TooSmall(disk.sizeBytes(), rule.selector().minSizeBytes()));
        }
        if (identity.isEmpty()) {
            return Optional.of(new DiskVerdict.NoIdentity());
        }
        return Optional.empty();
    }

    /** What the disk's bytes say: a signature, data where zeros belong, or empty as far as {@code check} looks. */
    public static DiskVerdict contents(Disk disk, ZeroCheck check, LongConsumer progress) {
        ProbeResult probe;
        try (FileChannel channel = FileChannel.open(disk.path(), StandardOpenOption.READ)) {
            probe = SignatureProbe.probe(channel, disk.sizeBytes(), check, progress);
        } catch (IOException | IllegalArgumentException e) {
            return new DiskVerdict.Unreadable(e.getMessage());
        }
        return switch (probe) {
            case ProbeResult.Empty _ -> DiskVerdict.ELIGIBLE;
            case ProbeResult.Signed signed -> new DiskVerdict.Signed(signed.found());
            case ProbeResult.NotEmpty notEmpty -> new DiskVerdict.NotEmpty(notEmpty.reason());
        };
    }
}
