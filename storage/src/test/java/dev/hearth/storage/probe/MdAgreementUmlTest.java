package dev.hearth.storage.probe;

import static dev.hearth.storage.probe.Images.MIB;
import static dev.hearth.storage.probe.Images.sparse;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.UserModeLinux;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * md members made by the real {@code mdadm --create}, one per superblock format and so one per
 * place a superblock can be (0.90 and 1.0 near the end, 1.1 at the start, 1.2 at 4 KiB), and a
 * DDF container, then compared with {@code blkid -p} on the host ({@link BlkidAgreement}). This
 * kernel has no md driver, so one user-mode Linux guest, with md-mod and raid1 loaded, makes them
 * on its ubd disks (degraded two-way mirrors, one image each) and stops them; the images stay on
 * the host. The end formats get sizes that are not multiples of their alignment, so the rounding
 * is tested. (mdadm's other external format, Intel's IMSM, wants a disk with a SCSI serial, which
 * a ubd disk lacks.)
 *
 * <p>mdadm is not installed from apt (its package pulls in udev and a systemd upgrade): .ci/run
 * unpacks its .deb into {@value #CACHED} under the home directory, or {@value #MDADM_ENV} names
 * the binary.
 */
@RequiresTools({"blkid", "wipefs"})
class MdAgreementUmlTest {

    static final String MDADM_ENV = "HEARTH_MDADM";
    /** Where .ci/run unpacks mdadm's .deb, under the home directory; the binary is in its sbin or usr/sbin. */
    static final String CACHED = ".cache/hearth/mdadm";

    /**
     * One member: its metadata format, mdadm's options for an array of it (%s is the disk), its
     * disk's size, the type blkid gives it, and where that format puts its superblock.
     */
    record Member(String metadata, String create, long size, String type, long superblock) {}

    private static final String MIRROR = "--level=1 --raid-devices=2 --assume-clean %s missing";
    private static final long SIZE_090 = 64 * MIB + 100 * 1024; // not a multiple of 64 KiB
    private static final long SIZE_10 = 64 * MIB + 6 * 1024 + 512; // not a multiple of 4 KiB
    private static final List<Member> MEMBERS = List.of(
            new Member("0.90", MIRROR, SIZE_090, "linux_raid_member", (SIZE_090 & ~0xFFFFL) - 0x10000),
            new Member("1.0", MIRROR, SIZE_10, "linux_raid_member", (SIZE_10 & ~0xFFFL) - 0x2000),
            new Member("1.1", MIRROR, 64 * MIB, "linux_raid_member", 0),
            new Member("1.2", MIRROR, 64 * MIB, "linux_raid_member", 0x1000),
            // A SNIA DDF container, as hardware RAID controllers write them: its anchor is the last sector.
            new Member("ddf", "--level=container --force --raid-devices=1 %s", SIZE_10, "ddf_raid_member",
                    SIZE_10 - 512));

    @TempDir
    Path dir;

    @TestFactory
    Stream<DynamicTest> mdadmMembersOfEveryFormatAgreeWithBlkid() throws IOException {
        UserModeLinux.assumeAvailable("mdadm --create needs the md driver, which this kernel lacks");
        Path mdadm = mdadm();
        List<String> options = new ArrayList<>(List.of("-m", "256M", "-k", "md-mod", "-k", "raid1"));
        StringBuilder script = new StringBuilder();
        List<Path> images = new ArrayList<>();
        for (int i = 0; i < MEMBERS.size(); i++) {
            Member member = MEMBERS.get(i);
            Path image = sparse(dir, "md-" + member.metadata() + ".img", member.size());
            images.add(image);
            options.addAll(List.of("-d", image.toString()));
            String disk = "/dev/ubd" + (char) ('a' + i);
            script.append(String.format("%1$s --create /dev/md%2$d --run --metadata=%3$s %4$s && %1$s --stop /dev/md%2$d%n",
                    mdadm, i, member.metadata(), String.format(member.create(), disk)));
        }
        script.append("sync\n");
        // No udev runs in the guest: mdadm makes the /dev/md nodes itself instead of waiting for it.
        UserModeLinux.Result guest = UserModeLinux.run(dir, Duration.ofMinutes(2),
                List.of("/bin/sh", "-ec", script.toString()), Map.of("MDADM_NO_UDEV", "1"), options);
        assertThat(guest.exitCode()).as(guest.describe()).isZero();

        return IntStream.range(0, MEMBERS.size()).mapToObj(i -> {
            Member member = MEMBERS.get(i);
            Path image = images.get(i);
            String name = member.metadata() + " member, superblock at " + member.superblock();
            return DynamicTest.dynamicTest(name, () -> {
                BlkidAgreement.check(name, image, BlkidAgreement.agree());
                assertThat(SignatureProbe.probe(image)).isEqualTo(new ProbeResult.Signed(List.of(new Signature(
                        Signature.Kind.VOLUME_MANAGER, member.type(), member.superblock()))));
            });
        });
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
