package dev.hearth.storage.probe;

import static dev.hearth.storage.probe.Images.MIB;
import static dev.hearth.storage.probe.Images.sparse;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.UserModeLinux;
import dev.hearth.storage.probe.Signature.Kind;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Images whose tools need a kernel driver this host lacks, made by those tools in one user-mode
 * Linux guest on its ubd disks, then compared with {@code blkid -p} on the host
 * ({@link BlkidAgreement}): md members of every superblock format and so every place (0.90 and
 * 1.0 near an end that is not a multiple of their alignment, 1.1 at the start, 1.2 at 4 KiB) and
 * a DDF container, by {@code mdadm --create}; a dm-integrity device by {@code integritysetup
 * format}; and a thick LVM snapshot's copy-on-write store, copied out of the guest's device-mapper
 * onto a disk of its own. (mdadm's other external format, Intel's IMSM, wants a disk with a SCSI
 * serial, which a ubd disk lacks.)
 *
 * <p>mdadm is not installed from apt (its package pulls in udev and a systemd upgrade): .ci/run
 * unpacks its .deb into {@value #CACHED} under the home directory, or {@value #MDADM_ENV} names
 * the binary.
 */
@RequiresTools({"blkid", "wipefs", "integritysetup", "lvm"})
class GuestImagesAgreementUmlTest {

    static final String MDADM_ENV = "HEARTH_MDADM";
    /** Where .ci/run unpacks mdadm's .deb, under the home directory; the binary is in its sbin or usr/sbin. */
    static final String CACHED = ".cache/hearth/mdadm";

    private static final long SIZE = 64 * MIB;
    private static final long SIZE_090 = 64 * MIB + 100 * 1024; // not a multiple of 64 KiB
    private static final long SIZE_10 = 64 * MIB + 6 * 1024 + 512; // not a multiple of 4 KiB
    private static final String MIRROR = "--level=1 --raid-devices=2 --assume-clean %s missing";
    // No udev runs in the guest: LVM must not wait for it, nor ask it for the devices.
    private static final String LVM = "lvm %s -q --config 'activation{udev_sync=0 udev_rules=0}"
            + " devices{obtain_device_list_from_udev=0}' %s";

    @TempDir
    Path dir;

    /** One image the guest makes: what it is, the file, and the signature the probe must find in it. */
    record Made(String name, Path image, String type, long offset) {}

    /** The guest's disks and the shell script that fills them, built together. */
    private final class Guest {
        final List<String> options = new ArrayList<>();
        final StringBuilder script = new StringBuilder();
        final List<Made> made = new ArrayList<>();

        /** A new sparse image attached as the guest's next ubd disk; returns the guest's name for it. */
        String disk(String name, long size) {
            Path image = sparse(dir, name + ".img", size);
            options.addAll(List.of("-d", image.toString()));
            return "/dev/ubd" + (char) ('a' + options.size() / 2 - 1);
        }

        void run(String format, Object... args) {
            script.append(String.format(format, args)).append('\n');
        }

        void expect(String name, String disk, String type, long offset) {
            made.add(new Made(name, dir.resolve(disk + ".img"), type, offset));
        }
    }

    @TestFactory
    Stream<DynamicTest> imagesMadeInTheGuestAgreeWithBlkid() throws IOException {
        UserModeLinux.assumeAvailable("mdadm --create needs md and integritysetup device-mapper, which this kernel lacks");
        Path mdadm = mdadm();
        Guest guest = new Guest();
        mdMember(guest, mdadm, 0, "0.90", MIRROR, SIZE_090, "linux_raid_member", (SIZE_090 & ~0xFFFFL) - 0x10000);
        mdMember(guest, mdadm, 1, "1.0", MIRROR, SIZE_10, "linux_raid_member", (SIZE_10 & ~0xFFFL) - 0x2000);
        mdMember(guest, mdadm, 2, "1.1", MIRROR, SIZE, "linux_raid_member", 0);
        mdMember(guest, mdadm, 3, "1.2", MIRROR, SIZE, "linux_raid_member", 0x1000);
        // A SNIA DDF container, as hardware RAID controllers write them: its anchor is the last sector.
        mdMember(guest, mdadm, 4, "ddf", "--level=container --force --raid-devices=1 %s", SIZE_10, "ddf_raid_member",
                SIZE_10 - 512);

        guest.run("integritysetup format --batch-mode %s", guest.disk("integrity", SIZE));
        guest.expect("dm-integrity device", "integrity", "DM_integrity", 0);

        // LVM keeps metadata backups under /etc/lvm: in the guest that is the host's, through hostfs.
        guest.run("mount -t tmpfs tmpfs /etc/lvm");
        String pv = guest.disk("pv", SIZE);
        String cow = guest.disk("cow", 16 * MIB);
        guest.run(LVM, "pvcreate", pv);
        guest.run(LVM, "vgcreate", "probe " + pv);
        guest.run(LVM, "lvcreate", "-L 8M -n origin probe");
        guest.run(LVM, "lvcreate", "-s -L 8M -n snap probe/origin");
        guest.run("dd if=/dev/mapper/probe-snap-cow of=%s bs=1M status=none", cow);
        guest.run(LVM, "vgchange", "-an probe");
        guest.expect("LVM2 physical volume of a group", "pv", "LVM2_member", 0x218);
        guest.expect("LVM snapshot copy-on-write store", "cow", "DM_snapshot_cow", 0);
        guest.run("sync");

        List<String> options = new ArrayList<>(List.of("-m", "256M", "-k", "md-mod", "-k", "raid1",
                "-k", "dm-integrity", "-k", "dm-snapshot"));
        options.addAll(guest.options);
        // No udev runs in the guest: mdadm makes the /dev/md nodes itself instead of waiting for it.
        UserModeLinux.Result result = UserModeLinux.run(dir, Duration.ofMinutes(2),
                List.of("/bin/sh", "-ec", guest.script.toString()), Map.of("MDADM_NO_UDEV", "1"), options);
        assertThat(result.exitCode()).as(result.describe()).isZero();

        return guest.made.stream().map(made -> DynamicTest.dynamicTest(made.name(), () -> {
            BlkidAgreement.check(made.name(), made.image(), BlkidAgreement.agree());
            assertThat(SignatureProbe.probe(made.image())).isEqualTo(new ProbeResult.Signed(List.of(
                    new Signature(Kind.VOLUME_MANAGER, made.type(), made.offset()))));
        }));
    }

    /** An md array of {@code metadata} on a disk of its own (%s in {@code create}), made and stopped. */
    private static void mdMember(Guest guest, Path mdadm, int array, String metadata, String create, long size,
            String type, long superblock) {
        String name = "md-" + metadata;
        String disk = guest.disk(name, size);
        guest.run("%1$s --create /dev/md%2$d --run --metadata=%3$s %4$s && %1$s --stop /dev/md%2$d",
                mdadm, array, metadata, String.format(create, disk));
        guest.expect(metadata + " member, superblock at " + superblock, name, type, superblock);
    }

    /** mdadm from {@value #MDADM_ENV}, the cache .ci/run fills, or the usual places; skips (fails in CI) without one. */
    private static Path mdadm() {
        List<Path> candidates = new ArrayList<>();
        Optional.ofNullable(System.getenv(MDADM_ENV)).ifPresent(p -> candidates.add(Path.of(p)));
        Path cached = Path.of(System.getProperty("user.home"), CACHED);
        candidates.addAll(List.of(cached.resolve("sbin/mdadm"), cached.resolve("usr/sbin/mdadm")));
        ToolRunner.SEARCH_PATH.forEach(d -> candidates.add(Path.of(d, "mdadm")));
        Optional<Path> found = candidates.stream().filter(Files::isExecutable).findFirst();
        if (found.isPresent()) {
            return found.get();
        }
        String reason = "needs mdadm, in $" + MDADM_ENV + " or ~/" + CACHED + " (.ci/run unpacks it there)";
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new IllegalStateException("CI=true but the test environment lacks: " + reason);
        }
        Assumptions.abort("skipped: " + reason);
        throw new AssertionError("unreachable");
    }
}
