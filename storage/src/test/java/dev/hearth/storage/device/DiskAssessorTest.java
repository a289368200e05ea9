package dev.hearth.storage.device;

import static dev.hearth.linux.testing.Scratch.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Disk;
import dev.hearth.linux.DiskScan;
import dev.hearth.linux.LoopDevice;
import dev.hearth.linux.MountFlags;
import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.RequiresRoot;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.ScratchFilesystem;
import dev.hearth.storage.device.DiskAssessor.Assessment;
import dev.hearth.storage.device.DiskAssessor.Rule;
import dev.hearth.storage.probe.Signature;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The verdict on each of a node's disks, on real loop devices standing in for disks: one with a
 * filesystem, one mounted, an empty one, one of random bytes, one with data only in its middle, a
 * too-small one, a read-only one and a claimed one. Each verdict is the one an operator reads in
 * {@code hearth disks}, and no assessment writes a byte to any of them.
 */
@RequiresRoot
@RequiresTools("mkfs.ext4")
class DiskAssessorTest {

    private static final long SIZE = 64 * MIB;

    @TempDir
    Path dir;

    @RegisterExtension
    final Cleanup cleanup = new Cleanup();

    /** Test disks by role, each a loop device over a file of this test's. */
    private final Map<String, LoopDevice> devices = new LinkedHashMap<>();
    private final Map<String, Path> files = new LinkedHashMap<>();

    @Test
    void eachDiskGetsItsVerdictAndNoneIsWrittenTo() throws Exception {
        mkfs(file("signed", SIZE));
        attach("signed", false);
        mkfs(file("mounted", SIZE));
        attach("mounted", false);
        Path target = Files.createDirectory(dir.resolve("mnt"));
        Scratch.mount(cleanup, devices.get("mounted").path().toString(), target, "ext4", MountFlags.MS_RDONLY, null);
        attach("empty", SIZE, false);
        Scratch.writeAt(file("random", SIZE), 0, random(SIZE, 7));
        attach("random", false);
        attach("small", 16 * MIB, false);
        attach("read-only", SIZE, true);
        attach("claimed", SIZE, false);
        DiskClaims claims = new DiskClaims(dir.resolve("state/disks"));
        Disk claimedDisk = scanned("claimed");
        DiskClaims.Claim claim = new DiskClaims.Claim(DiskIdentity.of(claimedDisk).orElseThrow(), "lvm",
                "pv of vg vg0", Instant.parse("2026-11-24T06:00:00Z"));
        claims.claim(claim);
        Map<String, String> before = checksums();

        List<Assessment> assessed = new DiskAssessor(claims).assess(scannedAll(),
                List.of(new Rule("fast", selector("32Mi"), ZeroCheck.SAMPLED)));

        Map<String, Assessment> byRole = byRole(assessed);
        assertThat(byRole.get("signed").verdict()).isInstanceOfSatisfying(DiskVerdict.Signed.class, signed ->
                assertThat(signed.signatures()).extracting(Signature::type, Signature::offset)
                        .contains(org.assertj.core.groups.Tuple.tuple("ext4", 0x438L)));
        assertThat(byRole.get("signed").verdict().reason()).startsWith("holds ext4 at offset 0x438");
        assertThat(byRole.get("mounted").verdict()).isEqualTo(new DiskVerdict.InUse(
                List.of(devices.get("mounted").path().getFileName() + " mounted at " + target)));
        assertThat(byRole.get("empty").verdict()).isEqualTo(DiskVerdict.ELIGIBLE);
        assertThat(byRole.get("random").verdict()).isInstanceOfSatisfying(DiskVerdict.NotEmpty.class,
                notEmpty -> assertThat(notEmpty.where()).isEqualTo("no known signature, but non-zero data at offset 0"));
        assertThat(byRole.get("small").verdict()).isEqualTo(new DiskVerdict.TooSmall(16 * MIB, 32 * MIB));
        assertThat(byRole.get("small").verdict().reason()).isEqualTo(
                "too small: 16.0 MiB, the pool takes 32.0 MiB or more");
        assertThat(byRole.get("read-only").verdict()).isEqualTo(new DiskVerdict.ReadOnly());
        assertThat(byRole.get("claimed").verdict()).isEqualTo(new DiskVerdict.Claimed(claim));
        assertThat(byRole.get("claimed").verdict().reason()).isEqualTo("claimed by pv of vg vg0 of pool lvm");
        assertThat(byRole.values()).allSatisfy(a -> {
            assertThat(a.pool()).contains("fast");
            assertThat(a.identity()).hasValueSatisfying(id -> assertThat(id.source()).isEqualTo("loop"));
        });
        assertThat(byRole.values()).extracting(a -> a.verdict().code()).containsExactly(
                "signature", "in-use", "eligible", "not-empty", "too-small", "read-only", "claimed");

        assertThat(checksums()).as("every disk's bytes, after the assessment").isEqualTo(before);
        assertThat(claims.all()).containsExactly(claim);
    }

    @Test
    void dataOnlyInTheMiddleIsSeenBySamplesAndAFullScanButNotAtTheEdges() throws Exception {
        Scratch.writeAt(file("middle", SIZE), 32 * MIB, random(MIB, 11));
        attach("middle", false);
        Disk disk = scanned("middle");
        Map<String, String> before = checksums();
        AtomicLong progress = new AtomicLong();

        assertThat(DiskAssessor.contents(disk, ZeroCheck.EDGES, _ -> {})).isEqualTo(DiskVerdict.ELIGIBLE);
        assertThat(DiskAssessor.contents(disk, ZeroCheck.SAMPLED, _ -> {}))
                .isInstanceOf(DiskVerdict.NotEmpty.class);
        assertThat(DiskAssessor.contents(disk, ZeroCheck.FULL, progress::set)).isEqualTo(
                new DiskVerdict.NotEmpty("no known signature, but non-zero data at offset " + 32 * MIB));
        assertThat(progress.get()).as("bytes read before the data was found").isBetween(MIB, 32 * MIB);

        assertThat(checksums()).isEqualTo(before);
    }

    @Test
    void theFirstPoolWhoseSelectorMatchesHasTheDiskAndOthersAreNotSelected() throws Exception {
        attach("a", SIZE, false);
        attach("b", SIZE, false);
        String a = devices.get("a").path().toString();
        String b = devices.get("b").path().toString();
        Rule first = new Rule("first", DiskSelector.parse(a, null, null, null), ZeroCheck.SAMPLED);
        Rule both = new Rule("both", DiskSelector.parse(a + "|" + b, null, null, null), ZeroCheck.SAMPLED);
        DiskAssessor assessor = new DiskAssessor(new DiskClaims(dir.resolve("state/disks")));

        Map<String, Assessment> twoPools = byRole(assessor.assess(scannedAll(), List.of(first, both)));
        Map<String, Assessment> onePool = byRole(assessor.assess(scannedAll(), List.of(first)));

        assertThat(twoPools.get("a").pool()).contains("first");
        assertThat(twoPools.get("b").pool()).contains("both");
        assertThat(onePool.get("b").pool()).isEmpty();
        assertThat(onePool.get("b").verdict()).isEqualTo(new DiskVerdict.NotSelected("no name of it matches " + a));
        assertThat(onePool.get("b").verdict().reason())
                .isEqualTo("not matched by any pool's selector (no name of it matches " + a + ")");
        Rule other = new Rule("other", DiskSelector.parse("/dev/disk/by-id/nvme-*", null, null, null),
                ZeroCheck.SAMPLED);
        assertThat(byRole(assessor.assess(scannedAll(), List.of(first, other))).get("b").verdict().reason())
                .as("each pool's reason").isEqualTo("not matched by any pool's selector (pool first: no name of it "
                        + "matches " + a + "; pool other: no name of it matches /dev/disk/by-id/nvme-*)");
        assertThat(byRole(assessor.assess(scannedAll(), List.of())).get("a").verdict())
                .isEqualTo(new DiskVerdict.NotSelected(""));
        assertThat(dir.resolve("state/disks")).as("assessing creates no claims directory").doesNotExist();
    }

    @Test
    void aDiskThatCannotBeRecognisedAgainIsNeverEligible() throws Exception {
        attach("anonymous", SIZE, false);
        Disk real = scanned("anonymous");
        // As a disk reporting no WWN and no serial would be: the loop device's file is its only identity.
        Disk anonymous = new Disk(real.name(), real.path(), real.major(), real.minor(), real.sizeBytes(),
                real.logicalSectorSize(), real.physicalSectorSize(), real.rotational(), real.removable(),
                real.readOnly(), "", "", "", "", List.of(), Optional.empty(), List.of(), List.of(), List.of(), false);

        DiskVerdict verdict = DiskAssessor.unclaimed(anonymous, DiskIdentity.of(anonymous),
                new Rule("fast", selector(null), ZeroCheck.SAMPLED), _ -> {});

        assertThat(verdict).isEqualTo(new DiskVerdict.NoIdentity());
        assertThat(verdict.code()).isEqualTo("no-identity");
    }

    // ---- helpers

    private DiskSelector selector(String minSize) {
        String globs = String.join("|", devices.values().stream().map(d -> d.path().toString()).toList());
        return DiskSelector.parse(globs, minSize, null, null);
    }

    /** A new sparse file for the disk of this role, to fill before it is attached. */
    private Path file(String role, long size) throws IOException {
        Path file = Scratch.sparseFile(dir.resolve(role + ".img"), size);
        files.put(role, file);
        return file;
    }

    private void attach(String role, boolean readOnly) throws IOException {
        devices.put(role, Scratch.attach(cleanup, files.get(role), readOnly, true));
    }

    private void attach(String role, long size, boolean readOnly) throws IOException {
        file(role, size);
        attach(role, readOnly);
    }

    /**
     * A file pool's volume on its loop device is all zeros between its attach and its mkfs, and a
     * selector such as /dev/loop* matches it: it is in use, never a disk to take. The same zeros
     * under another name are eligible.
     */
    @Test
    void aLoopDeviceServingAFilePoolsImageIsInUse() throws Exception {
        Path image = Scratch.sparseFile(dir.resolve("default-" + "a".repeat(26) + ".img"), SIZE);
        Path part = Scratch.sparseFile(dir.resolve("warm-up-" + "b".repeat(26) + ".img.part"), SIZE);
        LoopDevice volume = Scratch.attach(cleanup, image, false, true);
        LoopDevice making = Scratch.attach(cleanup, part, false, true);
        attach("empty", SIZE, false);
        List<Disk> all = new DiskScan().disks();
        Rule rule = new Rule("loops", DiskSelector.parse("/dev/loop*", null, null, null), ZeroCheck.SAMPLED);

        Disk volumeDisk = DiskScan.named(all, volume.path().getFileName().toString()).orElseThrow();
        assertThat(DiskAssessor.refusal(volumeDisk, DiskIdentity.of(volumeDisk), rule)).contains(new DiskVerdict.InUse(
                List.of(volumeDisk.name() + " serves " + image + ", a volume image of a hearth file pool")));
        Disk makingDisk = DiskScan.named(all, making.path().getFileName().toString()).orElseThrow();
        assertThat(DiskAssessor.refusal(makingDisk, DiskIdentity.of(makingDisk), rule))
                .hasValueSatisfying(v -> assertThat(v).isInstanceOf(DiskVerdict.InUse.class));
        assertThat(DiskAssessor.unclaimed(scanned("empty"), DiskIdentity.of(scanned("empty")), rule, _ -> {}))
                .isEqualTo(DiskVerdict.ELIGIBLE);
    }

    /** This test's disks as the scan sees them, in the order they were attached. */
    private List<Disk> scannedAll() throws IOException {
        List<Disk> all = new DiskScan().disks();
        List<Disk> ours = new ArrayList<>();
        for (LoopDevice device : devices.values()) {
            ours.add(DiskScan.named(all, device.path().getFileName().toString()).orElseThrow());
        }
        return ours;
    }

    private Disk scanned(String role) throws IOException {
        return DiskScan.named(new DiskScan().disks(), devices.get(role).path().getFileName().toString())
                .orElseThrow();
    }

    private Map<String, Assessment> byRole(List<Assessment> assessed) {
        Map<String, Assessment> out = new LinkedHashMap<>();
        for (var role : devices.entrySet()) {
            out.put(role.getKey(), assessed.stream().filter(a -> a.disk().path().equals(role.getValue().path()))
                    .findFirst().orElseThrow());
        }
        return out;
    }

    private Map<String, String> checksums() throws Exception {
        Map<String, String> sums = new LinkedHashMap<>();
        for (var role : files.entrySet()) {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            try (InputStream in = new DigestInputStream(Files.newInputStream(role.getValue()), digest)) {
                in.transferTo(java.io.OutputStream.nullOutputStream());
            }
            sums.put(role.getKey(), HexFormat.of().formatHex(digest.digest()));
        }
        return sums;
    }

    private static void mkfs(Path file) throws IOException {
        ScratchFilesystem.run(List.of("mkfs.ext4", "-q", "-F", file.toString()));
    }

    private static byte[] random(long size, long seed) {
        byte[] bytes = new byte[(int) size];
        new Random(seed).nextBytes(bytes);
        bytes[0] = (byte) 0xa5; // the first byte is data, whatever the seed
        return bytes;
    }
}
