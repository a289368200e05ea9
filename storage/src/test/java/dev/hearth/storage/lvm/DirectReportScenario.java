package dev.hearth.storage.lvm;

import static dev.hearth.storage.lvm.LvmPoolUmlTest.LvmHost.lvm;
import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.Mounts;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The proof behind {@link MetadataReader} and {@link DirectReport}, run in LvmPoolUmlTest's guest:
 * on live groups in the states a pool meets (thick, thin, thin snapshots that skip activation,
 * old-style snapshots, inactive, open, mounted LVs, a thin pool with data in it, a metadata area
 * whose ring has wrapped), reading the group from its disks and device-mapper gives exactly what
 * lvs and vgs print.
 */
final class DirectReportScenario {

    private static final ToolRunner TOOLS = new ToolRunner();

    private DirectReportScenario() {}

    static void run(Path state) throws Exception {
        LvmPool thick = LvmPoolUmlTest.thick(state, LvmPoolConfig.Wipe.ZERO);
        LvmPool thin = LvmPoolUmlTest.thin(state);
        String vg = LvmPoolUmlTest.VG;
        assertAgrees(vg, "the thin pool alone");

        Volume a = thick.create(request("direct-a"));
        Volume b = thin.create(request("direct-b"));
        assertAgrees(vg, "a thick and a thin volume");

        Path thinDevice = thin.attach(b.id()).device();
        try (FileChannel channel = FileChannel.open(thinDevice, StandardOpenOption.WRITE)) {
            channel.write(java.nio.ByteBuffer.wrap(new byte[4 << 20]), 0); // maps chunks: the pool's data and the volume's fill grow
            channel.force(false);
            // The pool commits what was mapped at once here rather than at its next periodic commit, so
            // lvs and the reading (neither forces one) see the same numbers.
            dev.hearth.linux.DeviceMapper.tableStatus(Names.mapperName(vg, "tp") + "-tpool");
            assertAgrees(vg, "a thin volume held open and written to");
        }
        lvm("lvcreate", "-s", "-n", "direct-thin-snap", "-ky", "--addtag", "hearth.kind=snapshot",
                vg + "/" + Names.volume(b.id()));
        lvm("lvcreate", "-s", "-n", "direct-cow", "-L", "64m", "-y", vg + "/" + Names.volume(a.id()));
        assertAgrees(vg, "a thin snapshot (activation skipped) and an old-style snapshot");

        Path mount = Files.createTempDirectory(Path.of("/run"), "direct-mount");
        Path device = thick.attach(a.id()).device();
        TOOLS.run(List.of("mkfs.ext4", "-q", device.toString()), Duration.ofMinutes(1));
        Mounts.mount(device.toString(), mount, "ext4", 0, null);
        try {
            assertAgrees(vg, "a mounted thick volume");
        } finally {
            Mounts.unmount(mount);
        }
        lvm("lvremove", "-f", vg + "/direct-cow");
        lvm("lvchange", "-an", vg + "/" + Names.volume(a.id()));
        assertAgrees(vg, "an inactive volume");
        lvm("lvchange", "-ay", vg + "/" + Names.volume(a.id()));

        wrappedRing();
    }

    /** A PV with a small metadata area, changed until its ring has wrapped several times. */
    private static void wrappedRing() throws Exception {
        Path image = Files.createTempFile(Path.of("/run"), "direct-ring", ".img");
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(256L << 20);
        }
        String loop = TOOLS.run(List.of("losetup", "-f", "--show", image.toString()), Duration.ofMinutes(1))
                .stdout().strip();
        String vg = "hearth-ring";
        try {
            // Without a small data alignment LVM rounds the area up to fill the first MiB.
            lvm("pvcreate", "-y", "--metadatasize", "16k", "--dataalignment", "64k", loop);
            lvm("vgcreate", vg, loop);
            int wrapped = 0;
            for (int i = 0; i < 14; i++) {
                lvm("lvcreate", "-an", "-Zn", "-L", "4m", "-n", "ring-" + i, "--addtag", "hearth.kind=volume",
                        "--addtag", "hearth.name=" + "x".repeat(900) + i, vg);
                boolean wraps = textWraps(Path.of(loop));
                wrapped += wraps ? 1 : 0;
                assertAgrees(vg, "after metadata commit " + i + " on a small metadata area"
                        + (wraps ? ", the text wrapping round its end" : ""));
            }
            assertThat(wrapped).as("commits whose text wrapped round the ring").isPositive();
        } finally {
            try {
                lvm("vgremove", "-f", vg);
                lvm("pvremove", "-y", loop);
            } finally {
                TOOLS.run(List.of("losetup", "-d", loop), Duration.ofMinutes(1));
                Files.deleteIfExists(image);
            }
        }
    }

    /** Whether the committed text runs past the end of the first metadata area (at 4 KiB) and on after its header. */
    private static boolean textWraps(Path device) throws IOException {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
            java.nio.ByteBuffer header = java.nio.ByteBuffer.allocate(64).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            channel.read(header, 4096);
            return header.getLong(40) + header.getLong(48) > header.getLong(32);
        }
    }

    static void assertAgrees(String vg, String when) throws IOException {
        Lvm lvm = new Lvm(TOOLS);
        GroupMetadata group = new MetadataReader(lvm).read(vg).orElseThrow(() -> new AssertionError(
                "the group could not be read from its disks " + when));
        List<LogicalVolume> direct = DirectReport.logicalVolumes(group, new KernelDeviceMapper());
        List<LogicalVolume> reported = lvm.logicalVolumes(vg, Optional.empty()).orElseThrow();
        assertThat(direct).as(when).extracting(LogicalVolume::name)
                .containsExactlyInAnyOrderElementsOf(reported.stream().map(LogicalVolume::name).toList());
        for (LogicalVolume expected : reported) {
            LogicalVolume actual = direct.stream().filter(lv -> lv.name().equals(expected.name())).findFirst()
                    .orElseThrow();
            String what = expected.name() + " " + when + ": read " + actual + ", lvs " + expected;
            assertThat(actual.sizeBytes()).as(what).isEqualTo(expected.sizeBytes());
            assertThat(actual.tags()).as(what).isEqualTo(expected.tags());
            assertThat(actual.pool()).as(what).isEqualTo(expected.pool());
            assertThat(actual.origin()).as(what).isEqualTo(expected.origin());
            assertThat(actual.metadataBytes()).as(what).isEqualTo(expected.metadataBytes());
            assertThat(actual.health()).as(what).isEqualTo(expected.health());
            assertThat(actual.isThinPool()).as(what).isEqualTo(expected.isThinPool());
            assertThat(actual.isThin()).as(what).isEqualTo(expected.isThin());
            assertThat(actual.active()).as(what).isEqualTo(expected.active());
            if (!expected.isThinPool()) { // a pool's 'o' is its thin volumes' doing; the pool never asks
                assertThat(actual.open()).as(what).isEqualTo(expected.open());
            }
            assertThat(actual.zeroesNewBlocks()).as(what).isEqualTo(expected.zeroesNewBlocks());
            assertThat(actual.attr().charAt(9)).as(what).isEqualTo(expected.attr().charAt(9));
            if (!expected.attr().startsWith("s")) {
                assertThat(actual.dataPercent().isPresent()).as(what).isEqualTo(expected.dataPercent().isPresent());
                assertThat(actual.dataPercent().orElse(0)).as(what)
                        .isCloseTo(expected.dataPercent().orElse(0), org.assertj.core.data.Offset.offset(0.006));
            }
            assertThat(actual.metadataPercent().orElse(0)).as(what)
                    .isCloseTo(expected.metadataPercent().orElse(0), org.assertj.core.data.Offset.offset(0.006));
        }
        assertThat(DirectReport.volumeGroup(group)).as("the group " + when)
                .isEqualTo(lvm.volumeGroup(vg).orElseThrow());
        System.out.println("direct read agrees with lvs and vgs: " + when + " (" + direct.size() + " LVs, seqno "
                + group.seqno() + ")");
    }

    private static VolumeRequest request(String name) {
        return new VolumeRequest(name, new CapacityRange(64L << 20, 0), Map.of());
    }
}
