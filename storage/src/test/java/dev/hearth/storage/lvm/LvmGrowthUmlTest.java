package dev.hearth.storage.lvm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Disk;
import dev.hearth.linux.DiskScan;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.testing.GuestScenarios;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.UserModeLinux;
import dev.hearth.storage.device.DiskClaims;
import dev.hearth.storage.device.DiskIdentity;
import dev.hearth.storage.device.DiskSelector;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * An LVM pool growing its volume group onto the node's disks, on real LVM in a user-mode Linux
 * guest. The guest's disks are ubd images with serial numbers (ubd shows them in
 * /sys/block/ubdX/serial, as virtio disks do, so each has a {@code serial} identity): the group's
 * own PV, two empty disks, one with ext4, one with data only in its middle, one without a serial,
 * and disks for the crash cases (a claim without a PV, a PV without vgextend, a claimed disk that
 * gained a filesystem) and for a group that does not exist.
 */
@RequiresTools({"lvm", "mkfs.ext4"})
class LvmGrowthUmlTest {

    static final long MIB = 1L << 20;
    static final String VG = "hearth-grow";
    static final String MARKER = "GROWTH-SCENARIO";

    /** The guest's disks in ubd order (ubda, ubdb, ...): a serial number ("" for none) and a size. */
    record Image(String serial, long size) {}

    static final List<Image> IMAGES = List.of(
            new Image("HEARTH-VG-0", 512 * MIB),      // ubda: the group's first PV, made by the admin
            new Image("HEARTH-EMPTY-1", 256 * MIB),   // ubdb
            new Image("HEARTH-EMPTY-2", 256 * MIB),   // ubdc
            new Image("HEARTH-EXT4-3", 256 * MIB),    // ubdd: a filesystem
            new Image("HEARTH-MIDDLE-4", 256 * MIB),  // ubde: data in the middle only, no signature
            new Image("", 256 * MIB),                 // ubdf: no serial, no identity
            new Image("HEARTH-CLAIM-6", 256 * MIB),   // ubdg: claimed, then the driver died
            new Image("HEARTH-PV-7", 256 * MIB),      // ubdh: claimed and made a PV, then the driver died
            new Image("HEARTH-LATER-8", 256 * MIB),   // ubdi: claimed, then someone made a filesystem on it
            new Image("HEARTH-NOVG-9", 256 * MIB));   // ubdj: selected by a pool whose group does not exist

    @TempDir
    Path dir;

    @TestFactory
    Stream<DynamicTest> scenariosInUserModeLinux() throws Exception {
        UserModeLinux.assumeAvailable("LVM needs device-mapper, which this kernel lacks");
        List<String> options = new ArrayList<>(List.of("-m", "1024M", "-k", "dm-mod"));
        for (int i = 0; i < IMAGES.size(); i++) {
            Path image = dir.resolve("disk" + i + ".img");
            try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
                file.setLength(IMAGES.get(i).size());
            }
            options.addAll(List.of("-d", image + (IMAGES.get(i).serial().isEmpty() ? "" : ",," + IMAGES.get(i).serial())));
        }
        run(List.of("mkfs.ext4", "-q", "-F", dir.resolve("disk3.img").toString()));
        byte[] middle = new byte[(int) MIB];
        new Random(4).nextBytes(middle);
        try (RandomAccessFile file = new RandomAccessFile(dir.resolve("disk4.img").toFile(), "rw")) {
            file.seek(128 * MIB);
            file.write(middle);
        }
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx384m",
                "-Xshare:auto", "-XX:-UsePerfData", "-cp", System.getProperty("java.class.path"),
                UserModeLinux.class.getName(), LvmGrowthUmlTest.class.getName(), "inGuest", "/tmp");
        UserModeLinux.Result guest = UserModeLinux.run(dir, Duration.ofMinutes(6), command, Map.of(), options);
        System.out.println(guest.describe());
        Map<String, String> outcomes = GuestScenarios.outcomes(guest, MARKER);
        assertThat(outcomes).as("scenarios reported by the guest: " + guest.describe()).isNotEmpty();
        assertThat(guest.output()).as(guest.describe()).contains(UserModeLinux.PASS);
        return GuestScenarios.tests(guest, MARKER, outcomes, "");
    }

    // ---- in the guest

    static void inGuest(Path ignored) throws Exception {
        Files.createDirectories(Path.of("/etc/lvm"));
        Mounts.mount("tmpfs", Path.of("/etc/lvm"), "tmpfs", 0, null);
        lvm("pvcreate", "/dev/ubda");
        lvm("vgcreate", VG, "/dev/ubda");
        Path state = Files.createTempDirectory(Path.of("/run"), "hearth-growth-state");
        Map<String, Scenario> scenarios = new LinkedHashMap<>();
        scenarios.put("emptyDisksJoinTheGroupOnceAndNoOtherDiskIsTouched", () -> growsOntoEmptyDisks(state));
        scenarios.put("aDiskTheAdminTookOutOfTheGroupIsNeverAddedAgain", () -> takenOut(state));
        scenarios.put("aClaimWithoutAPhysicalVolumeIsFinished", () -> claimWithoutPv(state));
        scenarios.put("aPhysicalVolumeNotYetInTheGroupIsFinished", () -> pvWithoutVgextend(state));
        scenarios.put("aClaimedDiskThatGainedAFilesystemIsNeverTouched", () -> claimedThenFormatted(state));
        scenarios.put("aGroupThatDoesNotExistIsNeverCreatedNorAnyDiskClaimed", () -> missingGroup(state));
        scenarios.put("aPoolOpenedReadOnlyNeverGrows", () -> readOnly(state));
        for (var entry : scenarios.entrySet()) {
            System.out.println(MARKER + "-START " + entry.getKey());
            try {
                entry.getValue().run();
                System.out.println(MARKER + " " + entry.getKey() + " PASS");
            } catch (Throwable t) {
                t.printStackTrace(System.out);
                System.out.println(MARKER + " " + entry.getKey() + " FAIL");
            }
            System.out.flush();
        }
    }

    @FunctionalInterface
    interface Scenario {
        void run() throws Exception;
    }

    static void growsOntoEmptyDisks(Path state) throws Exception {
        Map<String, String> before = checksums("ubdd", "ubde", "ubdf");
        LvmPoolConfig config = config(state, "grow", VG, "/dev/ubd[a-f]");
        long initial = vgSize();
        long total;
        try (LvmPool pool = LvmPool.open(config)) {
            LvmGrowth.Pass pass = pool.growth().orElseThrow().pass(); // after the pass open started
            assertThat(pvs()).containsExactly("/dev/ubda", "/dev/ubdb", "/dev/ubdc");
            assertThat(pass.left()).as("what the pass left, and why").anySatisfy(l -> assertThat(l)
                    .startsWith("/dev/ubdd: holds ext4"));
            assertThat(pass.left()).anySatisfy(l -> assertThat(l)
                    .startsWith("/dev/ubde: no known signature, but non-zero data at offset"));
            assertThat(pass.left()).anySatisfy(l -> assertThat(l).startsWith("/dev/ubdf: no stable identity"));
            assertThat(pass.left()).noneSatisfy(l -> assertThat(l).contains("failed"));
            // The disks refused are not read again so soon, but each pass still says why it left them
            // (whether the pass above or the one open started in the background ran first).
            assertThat(pool.growth().orElseThrow().pass().left()).as("the next pass's account")
                    .containsExactlyInAnyOrderElementsOf(pass.left());
            total = pool.capacity().totalBytes();
            assertThat(initial).isEqualTo(pvSize("/dev/ubda"));
            assertThat(total).as("capacity grew by the two new PVs")
                    .isEqualTo(initial + pvSize("/dev/ubdb") + pvSize("/dev/ubdc"));
            assertThat(pvSize("/dev/ubdb")).isGreaterThan(200 * MIB);
        }
        DiskClaims claims = new DiskClaims(state.resolve("disks"));
        assertThat(claims.all()).extracting(DiskClaims.Claim::holder).containsExactly("pv of vg " + VG,
                "pv of vg " + VG);
        for (String name : List.of("ubdb", "ubdc")) {
            DiskClaims.Claim claim = claims.of(identity(name)).orElseThrow();
            assertThat(claim.pool()).isEqualTo("grow");
            assertThat(ClaimedPv.of(claim, disk(name), true).state()).isEqualTo(ClaimedPv.State.MEMBER);
            assertThat(lvm("pvs", "--noheadings", "-o", "pv_uuid", "/dev/" + name).strip())
                    .isEqualTo(ClaimedPv.uuid(identity(name), VG));
        }

        try (LvmPool restarted = LvmPool.open(config)) {
            LvmGrowth.Pass again = restarted.growth().orElseThrow().pass();
            assertThat(again.added()).isEmpty();
            assertThat(again.left()).noneSatisfy(l -> assertThat(l).contains("failed"));
            assertThat(restarted.capacity().totalBytes()).isEqualTo(total);
        }
        assertThat(pvs()).as("after a restart").containsExactly("/dev/ubda", "/dev/ubdb", "/dev/ubdc");
        assertThat(checksums("ubdd", "ubde", "ubdf")).as("the disks not taken, byte for byte").isEqualTo(before);
    }

    /** After the first scenario: ubdb and ubdc are in the group, recorded as added by pool "grow". */
    static void takenOut(Path state) throws Exception {
        LvmPoolConfig config = config(state, "grow", VG, "/dev/ubd[a-f]");
        Path record = LvmGrowth.addedDirectory(config).resolve(identity("ubdb").key());
        assertThat(record).exists();
        Files.delete(record); // as a crash between the vgextend and the record leaves it
        assertThat(growthOnly(state, "grow", "/dev/ubd[a-f]").pass().added()).isEmpty();
        assertThat(record).as("recorded again: the disk is in the group").exists();

        lvm("vgreduce", VG, "/dev/ubdc");
        LvmGrowth.Pass reduced = growthOnly(state, "grow", "/dev/ubd[a-f]").pass();
        assertThat(reduced.added()).isEmpty();
        assertThat(reduced.left()).contains("/dev/ubdc: claimed for " + VG + " but it was taken out of " + VG
                + " (vgreduce); left alone");
        assertThat(pvs()).containsExactly("/dev/ubda", "/dev/ubdb");

        lvm("pvremove", "/dev/ubdc");
        LvmGrowth.Pass removed = growthOnly(state, "grow", "/dev/ubd[a-f]").pass();
        assertThat(removed.added()).isEmpty();
        assertThat(removed.left()).contains("/dev/ubdc: claimed for " + VG + " but it was a physical volume of " + VG
                + " and is no physical volume now (pvremove); left alone");
        assertThat(pvs()).containsExactly("/dev/ubda", "/dev/ubdb");
        assertThat(ClaimedPv.of(claimOf(state, "ubdc"), disk("ubdc"), LvmGrowth.added(config, identity("ubdc")))
                .state()).isEqualTo(ClaimedPv.State.REMOVED);
    }

    static void claimWithoutPv(Path state) throws Exception {
        claim(state, "crash", "ubdg");
        LvmGrowth growth = growthOnly(state, "crash", "/dev/ubdg");
        LvmGrowth.Pass pass = growth.pass();
        assertThat(pass.added()).containsExactly("/dev/ubdg");
        assertThat(pvs()).contains("/dev/ubdg");
        assertThat(ClaimedPv.of(claimOf(state, "ubdg"), disk("ubdg"), true).state()).isEqualTo(ClaimedPv.State.MEMBER);
        assertThat(growth.pass().added()).isEmpty();
    }

    static void pvWithoutVgextend(Path state) throws Exception {
        DiskClaims.Claim claim = claim(state, "crash", "ubdh");
        lvm("pvcreate", "--uuid", ClaimedPv.uuid(identity("ubdh"), VG), "--norestorefile", "/dev/ubdh");
        assertThat(ClaimedPv.of(claim, disk("ubdh"), false).state()).isEqualTo(ClaimedPv.State.PREPARED);

        LvmGrowth.Pass pass = growthOnly(state, "crash", "/dev/ubdh").pass();

        assertThat(pass.added()).containsExactly("/dev/ubdh");
        assertThat(lvm("pvs", "--noheadings", "-o", "vg_name", "/dev/ubdh").strip()).isEqualTo(VG);
    }

    static void claimedThenFormatted(Path state) throws Exception {
        DiskClaims.Claim claim = claim(state, "crash", "ubdi");
        run(List.of("mkfs.ext4", "-q", "/dev/ubdi"));
        Map<String, String> before = checksums("ubdi");
        LvmGrowth growth = growthOnly(state, "crash", "/dev/ubdi");

        LvmGrowth.Pass first = growth.pass();
        LvmGrowth.Pass second = growth.pass();

        assertThat(first.added()).isEmpty();
        assertThat(first.left()).singleElement().asString().startsWith("/dev/ubdi: claimed for " + VG + " but holds ext4")
                .endsWith("; left alone");
        assertThat(second.left()).isEqualTo(first.left());
        assertThat(pvs()).doesNotContain("/dev/ubdi");
        assertThat(checksums("ubdi")).isEqualTo(before);
        assertThat(claimOf(state, "ubdi")).as("the claim stays: no pool takes the disk").isEqualTo(claim);
        assertThat(ClaimedPv.of(claim, disk("ubdi"), false).state()).isEqualTo(ClaimedPv.State.UNWRITTEN);
    }

    static void missingGroup(Path state) throws Exception {
        Map<String, String> before = checksums("ubdj");
        try (LvmPool pool = LvmPool.open(config(state, "elsewhere", "no-such-vg", "/dev/ubdj"))) {
            LvmGrowth.Pass pass = pool.growth().orElseThrow().pass();
            assertThat(pass.added()).isEmpty();
            assertThat(pass.left()).containsExactly(
                    "/dev/ubdj: volume group no-such-vg does not exist (hearth never creates it)");
            assertThat(pool.capacity().totalBytes()).isZero();
        }
        assertThat(new DiskClaims(state.resolve("disks")).of(identity("ubdj"))).isEmpty();
        assertThat(lvm("vgs", "--noheadings", "-o", "vg_name").strip()).isEqualTo(VG);
        assertThat(checksums("ubdj")).isEqualTo(before);
    }

    /** ubdj is still empty and unclaimed after the scenario before. */
    static void readOnly(Path state) throws Exception {
        List<String> before = pvs();
        try (LvmPool pool = LvmPool.openReadOnly(config(state, "peek", VG, "/dev/ubdj"))) {
            assertThat(pool.growth()).isEmpty();
            pool.capacity();
        }
        assertThat(new DiskClaims(state.resolve("disks")).of(identity("ubdj"))).isEmpty();
        assertThat(pvs()).isEqualTo(before);
    }

    // ---- helpers

    static LvmPoolConfig config(Path state, String pool, String vg, String disks) {
        return new LvmPoolConfig(pool, vg, Optional.empty(), 1.0, LvmPoolConfig.Wipe.ZERO, 64 * MIB,
                state.resolve("pools").resolve(pool), Optional.of(new LvmPoolConfig.Growth(
                        DiskSelector.parse(disks, null, null, null), ZeroCheck.SAMPLED, state.resolve("disks"))));
    }

    /** The growth alone, with no pass started behind the test's back. */
    static LvmGrowth growthOnly(Path state, String pool, String disks) {
        return new LvmGrowth(config(state, pool, VG, disks), new Lvm(new dev.hearth.storage.tool.ToolRunner(), true),
                new DiskScan(), java.time.Clock.systemUTC());
    }

    /** A claim as the pool makes it before writing anything: what a crash right after it leaves. */
    static DiskClaims.Claim claim(Path state, String pool, String name) throws IOException {
        DiskClaims.Claim claim = new DiskClaims.Claim(identity(name), pool, ClaimedPv.holder(VG),
                Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS));
        assertThat(new DiskClaims(state.resolve("disks")).claim(claim)).isEqualTo(claim);
        return claim;
    }

    static DiskClaims.Claim claimOf(Path state, String name) throws IOException {
        return new DiskClaims(state.resolve("disks")).of(identity(name)).orElseThrow();
    }

    static Disk disk(String name) throws IOException {
        return new DiskScan().disk(name).orElseThrow();
    }

    static DiskIdentity identity(String name) throws IOException {
        return DiskIdentity.of(disk(name)).orElseThrow();
    }

    static List<String> pvs() {
        return Arrays.stream(lvm("pvs", "--noheadings", "-o", "pv_name", "-S", "vg_name=" + VG, "--sort", "pv_name")
                .split("\n")).map(String::strip).filter(s -> !s.isEmpty()).toList();
    }

    static long pvSize(String device) {
        return Long.parseLong(lvm("pvs", "--noheadings", "--units", "b", "--nosuffix", "-o", "pv_size", device).strip());
    }

    static long vgSize() {
        return Long.parseLong(lvm("vgs", "--noheadings", "--units", "b", "--nosuffix", "-o", "vg_size", VG).strip());
    }

    static String lvm(String... args) {
        return LvmPoolUmlTest.LvmHost.lvm(args);
    }

    static Map<String, String> checksums(String... names) throws Exception {
        Map<String, String> sums = new LinkedHashMap<>();
        for (String name : names) {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            try (InputStream in = new DigestInputStream(Files.newInputStream(Path.of("/dev", name)), digest)) {
                in.transferTo(OutputStream.nullOutputStream());
            }
            sums.put(name, HexFormat.of().formatHex(digest.digest()));
        }
        return sums;
    }

    static void run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertThat(process.waitFor()).as(command + ": " + output).isZero();
    }
}
