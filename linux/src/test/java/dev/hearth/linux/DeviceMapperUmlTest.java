package dev.hearth.linux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.Cleanup;
import dev.hearth.linux.testing.GuestScenarios;
import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.UserModeLinux;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * DeviceMapper against a real kernel: LVM's linear volumes, thin pool and thin volumes in a
 * user-mode Linux guest (this kernel has no device-mapper), every answer compared with what
 * {@code dmsetup} prints for the same device at the same moment. One guest boot runs every
 * scenario; each is one test in the report.
 */
@RequiresTools({"lvm", "dmsetup", "mkfs.ext4"})
class DeviceMapperUmlTest {

    static final long MIB = 1L << 20;
    static final String VG = "hearth-dm";
    /** Device-mapper names: LVM doubles each '-' inside VG and LV names. */
    static final String LIN = "hearth--dm-lin";
    static final String GAP = "hearth--dm-gap";
    static final String TPOOL = "hearth--dm-pool-tpool";
    static final String THIN = "hearth--dm-thin";
    static final String WRITTEN = "hearth--dm-written";
    static final String WITHOUT_UDEV =
            "activation{udev_sync=0 udev_rules=0} devices{obtain_device_list_from_udev=0}";

    @TempDir
    Path dir;

    @TestFactory
    Stream<DynamicTest> scenariosInUserModeLinux() throws IOException {
        UserModeLinux.assumeAvailable("device-mapper is not in this kernel");
        Path disk = Scratch.sparseFile(dir.resolve("disk.img"), 256 * MIB);
        UserModeLinux.Result guest = UserModeLinux.runInGuest(DeviceMapperUmlTest.class, "inGuest", dir,
                Duration.ofMinutes(4), List.of("-k", "dm-thin-pool", "-d", disk.toString()));
        System.out.println(guest.describe());
        Map<String, String> outcomes = GuestScenarios.outcomes(guest, "DM-SCENARIO");
        assertThat(outcomes).as("scenarios reported by the guest: " + guest.describe()).hasSize(7);
        return GuestScenarios.tests(guest, "DM-SCENARIO", outcomes, "");
    }

    // ---- in the guest

    @FunctionalInterface
    interface Scenario {
        void run() throws Exception;
    }

    /**
     * A VG on the guest's disk /dev/ubda with a linear LV of three segments, two other linear LVs, a thin
     * pool and two thin LVs; then every scenario, each reported on its own line. The VG is removed
     * at the end however the scenarios went, and LVM's backups land on a tmpfs, not the host's /etc/lvm.
     */
    static void inGuest(Path dir) throws Exception {
        try (Cleanup cleanup = new Cleanup()) {
            Path etcLvm = Files.createDirectories(Path.of("/etc/lvm"));
            Mounts.mount("tmpfs", etcLvm, "tmpfs", 0, null);
            cleanup.add(() -> Mounts.unmount(etcLvm));
            lvm("pvcreate", "-y", "/dev/ubda");
            lvm("vgcreate", VG, "/dev/ubda");
            cleanup.add(() -> lvm("vgremove", "-f", VG));
            // lin in three pieces around gap and gap2: three targets, each found by its predecessor's next
            lvm("lvcreate", "-L", "8M", "-n", "lin", VG);
            lvm("lvcreate", "-L", "4M", "-n", "gap", VG);
            lvm("lvextend", "-L", "12M", VG + "/lin");
            lvm("lvcreate", "-L", "4M", "-n", "gap2", VG);
            lvm("lvextend", "-L", "16M", VG + "/lin");
            lvm("lvcreate", "-L", "64M", "-T", VG + "/pool");
            lvm("lvcreate", "-V", "128M", "-T", VG + "/pool", "-n", "thin");
            lvm("lvcreate", "-V", "64M", "-T", VG + "/pool", "-n", "written");

            Map<String, Scenario> scenarios = new LinkedHashMap<>();
            scenarios.put("everyDeviceIsReportedAsDmsetupReportsIt", DeviceMapperUmlTest::asDmsetup);
            scenarios.put("openCountFollowsOpenDescriptorsAndMounts", () -> openCount(dir));
            scenarios.put("thinPoolUsedDataBlocksGrowAsAThinVolumeIsWritten", DeviceMapperUmlTest::thinUsage);
            scenarios.put("flagsFollowSuspendReadOnlyAndLoadedTables", DeviceMapperUmlTest::flags);
            scenarios.put("aMissingDeviceIsEmpty", DeviceMapperUmlTest::missing);
            scenarios.put("aTableTooLargeForTheFirstBufferIsReadWhole", () -> largeTable(dir));
            scenarios.put("queriesKeepNoDescriptorAndArePrintedAgainstLvs", DeviceMapperUmlTest::cost);
            for (var entry : scenarios.entrySet()) {
                System.out.println("DM-SCENARIO-START " + entry.getKey());
                try {
                    entry.getValue().run();
                    System.out.println("DM-SCENARIO " + entry.getKey() + " PASS");
                } catch (Throwable t) {
                    t.printStackTrace(System.out);
                    System.out.println("DM-SCENARIO " + entry.getKey() + " FAIL");
                }
                System.out.flush();
            }
        }
    }

    /** Every device LVM made, of each kind: linear (one of them read-only, one in three pieces), thin-pool, thin. */
    static void asDmsetup() throws Exception {
        List<String> names = Arrays.stream(dmsetup("info", "-c", "--noheadings", "-o", "name").split("\n"))
                .map(String::strip).filter(s -> !s.isEmpty()).toList();
        assertThat(names).contains(LIN, GAP, "hearth--dm-gap2", "hearth--dm-pool", TPOOL, THIN, WRITTEN,
                "hearth--dm-pool_tdata", "hearth--dm-pool_tmeta");
        for (String name : names) {
            assertThat(DeviceMapper.status(name)).as(name).contains(dmsetupInfo(name));
            assertThat(DeviceMapper.tableStatus(name)).as(name).contains(dmsetupStatus(name));
        }
        assertThat(DeviceMapper.tableStatus(LIN).orElseThrow()).containsExactly(new TargetStatus(0, 16384, "linear", ""),
                new TargetStatus(16384, 8192, "linear", ""), new TargetStatus(24576, 8192, "linear", ""));
        assertThat(DeviceMapper.status("hearth--dm-pool").orElseThrow().readOnly()).as("LVM's pool LV").isTrue();

        TargetStatus pool = DeviceMapper.tableStatus(TPOOL).orElseThrow().getFirst();
        assertThat(pool.type()).isEqualTo("thin-pool");
        ThinPoolStatus.Working working = (ThinPoolStatus.Working) ThinPoolStatus.parse(pool.status());
        String[] lvs = lvm("lvs", "--noheadings", "--units", "b", "--nosuffix", "-o", "transaction_id,chunk_size",
                VG + "/pool").strip().split("\\s+");
        assertThat(working.transactionId()).as("LVM's transaction id").isEqualTo(Long.parseLong(lvs[0]));
        assertThat(working.totalDataBlocks() * Long.parseLong(lvs[1])).as("blocks times chunk").isEqualTo(64 * MIB);
        assertThat(working.mode()).isEqualTo(ThinPoolStatus.Mode.READ_WRITE);
        assertThat(working.needsCheck()).isFalse();
        TargetStatus thin = DeviceMapper.tableStatus(THIN).orElseThrow().getFirst();
        assertThat(thin.type()).isEqualTo("thin");
        assertThat(ThinStatus.parse(thin.status())).isEqualTo(new ThinStatus.Working(0, OptionalLong.empty()));
    }

    static void openCount(Path dir) throws Exception {
        Path lin = Path.of("/dev/mapper", LIN);
        assertOpenCount(LIN, 0);
        try (FileChannel first = FileChannel.open(lin, StandardOpenOption.READ)) {
            assertOpenCount(LIN, 1);
            try (FileChannel second = FileChannel.open(lin, StandardOpenOption.READ)) {
                assertOpenCount(LIN, 2);
            }
            assertOpenCount(LIN, 1);
        }
        assertOpenCount(LIN, 0);

        int poolOpens = DeviceMapper.status(TPOOL).orElseThrow().openCount();
        assertThat(poolOpens).as("held by pool, thin and written").isEqualTo(3);
        run("mkfs.ext4", "-q", "/dev/mapper/" + THIN);
        Path mnt = Files.createDirectories(dir.resolve("mnt"));
        try (Cleanup cleanup = new Cleanup()) {
            Mounts.mount("/dev/mapper/" + THIN, mnt, "ext4", 0, null);
            cleanup.add(() -> Mounts.unmount(mnt));
            assertOpenCount(THIN, 1);
            try (FileChannel alsoOpen = FileChannel.open(Path.of("/dev/mapper", THIN), StandardOpenOption.READ)) {
                assertOpenCount(THIN, 2);
            }
            assertOpenCount(THIN, 1);
        }
        assertOpenCount(THIN, 0);
        assertOpenCount(TPOOL, poolOpens);
    }

    /** 8 MiB written at 16 MiB into an untouched thin LV: 128 more 64 KiB pool blocks, mapped up to 24 MiB. */
    static void thinUsage() throws Exception {
        ThinPoolStatus.Working before = poolStatus();
        assertThat(thinStatus(WRITTEN)).isEqualTo(new ThinStatus.Working(0, OptionalLong.empty()));

        byte[] mib = new byte[(int) MIB];
        Arrays.fill(mib, (byte) 0x5a);
        try (FileChannel device = FileChannel.open(Path.of("/dev/mapper", WRITTEN), StandardOpenOption.WRITE)) {
            for (long offset = 16 * MIB; offset < 24 * MIB; offset += MIB) {
                ByteBuffer buffer = ByteBuffer.wrap(mib);
                while (buffer.hasRemaining()) {
                    device.write(buffer, offset + buffer.position());
                }
            }
            device.force(true);
        }

        ThinPoolStatus.Working after = poolStatus();
        assertThat(after.usedDataBlocks()).isEqualTo(before.usedDataBlocks() + 8 * MIB / (64 << 10));
        assertThat(after.totalDataBlocks()).isEqualTo(before.totalDataBlocks());
        assertThat(thinStatus(WRITTEN)).isEqualTo(new ThinStatus.Working(8 * MIB / 512,
                OptionalLong.of(24 * MIB / 512 - 1)));
        assertThat(DeviceMapper.tableStatus(TPOOL)).contains(dmsetupStatus(TPOOL));
        assertThat(DeviceMapper.tableStatus(WRITTEN)).contains(dmsetupStatus(WRITTEN));
    }

    static void flags() throws Exception {
        try (Cleanup cleanup = new Cleanup()) {
            dmsetup("suspend", GAP);
            cleanup.add(() -> dmsetup("resume", GAP));
            DeviceStatus suspended = DeviceMapper.status(GAP).orElseThrow();
            assertThat(suspended.suspended()).isTrue();
            assertThat(suspended).isEqualTo(dmsetupInfo(GAP));
        }
        assertThat(DeviceMapper.status(GAP).orElseThrow().suspended()).isFalse();

        try (Cleanup cleanup = new Cleanup()) {
            lvm("lvchange", "-p", "r", VG + "/gap");
            cleanup.add(() -> lvm("lvchange", "-p", "rw", VG + "/gap"));
            DeviceStatus readOnly = DeviceMapper.status(GAP).orElseThrow();
            assertThat(readOnly.readOnly()).isTrue();
            assertThat(readOnly).isEqualTo(dmsetupInfo(GAP));
        }
        assertThat(DeviceMapper.status(GAP).orElseThrow().readOnly()).isFalse();

        try (Cleanup cleanup = new Cleanup()) {
            dmsetup("load", GAP, "--table", "0 8192 error");
            cleanup.add(() -> dmsetup("clear", GAP));
            DeviceStatus loaded = DeviceMapper.status(GAP).orElseThrow();
            assertThat(loaded.inactiveTable()).isTrue();
            assertThat(loaded.liveTable()).isTrue();
            assertThat(loaded).isEqualTo(dmsetupInfo(GAP));
            assertThat(DeviceMapper.tableStatus(GAP).orElseThrow()).as("the live table's, not the loaded one's")
                    .containsExactly(new TargetStatus(0, 8192, "linear", ""));
        }
        assertThat(DeviceMapper.status(GAP).orElseThrow().inactiveTable()).isFalse();

        String empty = "hearth-dm-empty";
        try (Cleanup cleanup = new Cleanup()) {
            dmsetup("create", "--notable", empty);
            cleanup.add(() -> dmsetup("remove", empty));
            DeviceStatus noTable = DeviceMapper.status(empty).orElseThrow();
            assertThat(noTable).isEqualTo(dmsetupInfo(empty));
            assertThat(noTable.liveTable()).isFalse();
            assertThat(noTable.targetCount()).isZero();
            assertThat(noTable.uuid()).isEmpty();
            assertThat(DeviceMapper.tableStatus(empty)).contains(List.of());
        }
        assertThat(DeviceMapper.status(empty)).isEmpty();
    }

    static void missing() throws Exception {
        for (String name : List.of("hearth--dm-nope", "x".repeat(127))) {
            assertThat(DeviceMapper.status(name)).as(name).isEmpty();
            assertThat(DeviceMapper.tableStatus(name)).as(name).isEmpty();
        }
    }

    /** 1000 targets take 48 000 bytes of answer: the 16 KiB buffer comes back full, twice. */
    static void largeTable(Path dir) throws Exception {
        int count = 1000;
        StringBuilder table = new StringBuilder();
        for (int i = 0; i < count; i++) {
            table.append(i * 8).append(" 8 error\n");
        }
        Path file = Files.writeString(dir.resolve("many.table"), table);
        String many = "hearth-dm-many";
        try (Cleanup cleanup = new Cleanup()) {
            dmsetup("create", many, file.toString());
            cleanup.add(() -> dmsetup("remove", many));
            List<TargetStatus> targets = DeviceMapper.tableStatus(many).orElseThrow();
            assertThat(targets).hasSize(count).isEqualTo(dmsetupStatus(many));
            assertThat(targets.getLast()).isEqualTo(new TargetStatus((count - 1) * 8, 8, "error", ""));
            assertThat(count * DeviceMapper.DM_TARGET_SPEC.byteSize()).isGreaterThan(2 * DeviceMapper.TABLE_BUFFER);
            assertThat(DeviceMapper.status(many).orElseThrow().targetCount()).isEqualTo(count);
        }
    }

    /**
     * The point of it all: LvmPool's lvs costs 150-350 ms. Timed and printed for the report (not
     * asserted: a timing assert fails on a busy machine), and checked not to leak descriptors.
     */
    static void cost() throws Exception {
        Path fds = Path.of("/proc/self/fd");
        long openBefore;
        try (Stream<Path> list = Files.list(fds)) {
            openBefore = list.count();
        }
        int rounds = 200;
        for (int i = 0; i < 20; i++) { // warm up: class loading, the linker's stubs, C1
            DeviceMapper.status(TPOOL);
            DeviceMapper.tableStatus(TPOOL);
        }
        long statusStart = System.nanoTime();
        for (int i = 0; i < rounds; i++) {
            DeviceMapper.status(TPOOL).orElseThrow();
        }
        long statusNanos = (System.nanoTime() - statusStart) / rounds;
        long tableStart = System.nanoTime();
        for (int i = 0; i < rounds; i++) {
            DeviceMapper.tableStatus(TPOOL).orElseThrow();
        }
        long tableNanos = (System.nanoTime() - tableStart) / rounds;
        long openAfter;
        try (Stream<Path> list = Files.list(fds)) {
            openAfter = list.count();
        }
        // A leak would be one descriptor per query, hundreds; the JVM itself may open or close one
        // or two meanwhile (a lazily opened file, a finalised stream), so the bound is loose.
        assertThat(openAfter - openBefore).as("descriptors opened and kept by " + (2 * rounds + 40) + " queries")
                .isLessThan(10);

        long lvsStart = System.nanoTime();
        lvm("lvs", "--noheadings", "-o", "lv_name,data_percent,metadata_percent", VG + "/pool");
        long lvsNanos = System.nanoTime() - lvsStart;
        long dmsetupStart = System.nanoTime();
        dmsetup("status", TPOOL);
        long dmsetupNanos = System.nanoTime() - dmsetupStart;
        System.out.printf("cost in the guest: status %d us, tableStatus %d us (mean of %d); one lvs %d ms,"
                        + " one dmsetup status %d ms%n", statusNanos / 1000, tableNanos / 1000, rounds,
                lvsNanos / 1_000_000, dmsetupNanos / 1_000_000);
    }

    // ---- what dmsetup says

    /** {@code dmsetup info} of one device, as a DeviceStatus. */
    static DeviceStatus dmsetupInfo(String name) throws IOException {
        String line = dmsetup("info", "-c", "--noheadings", "--separator", "|",
                "-o", "name,uuid,major,minor,attr,open,segments,events", name).strip();
        String[] f = line.split("\\|", -1);
        assertThat(f).as(line).hasSize(8);
        String attr = f[4]; // (L)ive (I)nactive (s)uspended (r)ead-only|(w)ritable
        return new DeviceStatus(f[0], f[1], Integer.parseInt(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[5]),
                f[6].isEmpty() ? 0 : Integer.parseInt(f[6]), Long.parseLong(f[7]), attr.charAt(2) == 's',
                attr.charAt(3) == 'r', attr.charAt(0) == 'L', attr.charAt(1) == 'I');
    }

    /** {@code dmsetup status} of one device: {@code <start> <length> <type> <status>} a line. */
    static List<TargetStatus> dmsetupStatus(String name) throws IOException {
        List<TargetStatus> targets = new ArrayList<>();
        for (String line : dmsetup("status", name).split("\n")) {
            if (line.isBlank()) {
                continue; // a device without a live table
            }
            String[] f = line.split(" ", 4);
            targets.add(new TargetStatus(Long.parseLong(f[0]), Long.parseLong(f[1]), f[2], f.length > 3 ? f[3] : ""));
        }
        return targets;
    }

    static void assertOpenCount(String name, int expected) throws IOException {
        DeviceStatus status = DeviceMapper.status(name).orElseThrow();
        assertThat(status.openCount()).as("open count of " + name).isEqualTo(expected);
        assertThat(status).isEqualTo(dmsetupInfo(name));
    }

    static ThinPoolStatus.Working poolStatus() throws IOException {
        return (ThinPoolStatus.Working) ThinPoolStatus.parse(DeviceMapper.tableStatus(TPOOL).orElseThrow()
                .getFirst().status());
    }

    static ThinStatus thinStatus(String name) throws IOException {
        return ThinStatus.parse(DeviceMapper.tableStatus(name).orElseThrow().getFirst().status());
    }

    // ---- tools

    static String lvm(String command, String... args) throws IOException {
        List<String> argv = new ArrayList<>(List.of("lvm", command, "--config", WITHOUT_UDEV));
        argv.addAll(List.of(args));
        return run(argv.toArray(String[]::new));
    }

    static String dmsetup(String... args) throws IOException {
        List<String> argv = new ArrayList<>(List.of("dmsetup"));
        argv.addAll(List.of(args));
        return run(argv.toArray(String[]::new));
    }

    /** Runs a tool; returns its stdout, or fails with its stderr unless it exits 0 within a minute. */
    static String run(String... argv) throws IOException {
        Path err = Files.createTempFile(Path.of("/run"), "tool", ".err");
        try {
            Process process = new ProcessBuilder(argv).redirectError(err.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(List.of(argv) + " did not finish within a minute");
            }
            if (process.exitValue() != 0) {
                throw new IOException(List.of(argv) + " exited " + process.exitValue() + ": " + out
                        + Files.readString(err));
            }
            return out;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(List.of(argv) + " interrupted", e);
        } finally {
            Files.deleteIfExists(err);
        }
    }
}
