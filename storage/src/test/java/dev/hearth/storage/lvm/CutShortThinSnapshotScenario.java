package dev.hearth.storage.lvm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.DeviceMapper;
import dev.hearth.linux.DeviceStatus;
import dev.hearth.storage.CapacityRange;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeRequest;
import dev.hearth.storage.VolumeSource;
import dev.hearth.storage.tool.ToolRunner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A thin snapshot's lvcreate killed at the moment it sends the thin pool its message, made
 * exactly, not by chance: strace kills lvm at its first DM_TARGET_MSG ioctl. LVM has committed the
 * snapshot to its metadata by then and suspended the source: the pool does not have the snapshot
 * (activating it fails with ENODATA) and every I/O to the source waits. The retried CreateSnapshot
 * must resume the source and give a snapshot that restores to the source's content. Run in
 * LvmPoolUmlTest's guest.
 */
final class CutShortThinSnapshotScenario {

    private static final ToolRunner TOOLS = new ToolRunner();
    private static final long MIB = 1L << 20;

    private CutShortThinSnapshotScenario() {}

    static void run(Path state) throws Exception {
        try (LvmPool pool = LvmPoolUmlTest.thin(state)) {
            String vg = LvmPoolUmlTest.VG;
            Volume source = pool.create(LvmPoolUmlTest.request("cut-source", 64 * MIB));
            Path device = pool.attach(source.id()).device();
            pool.handedOut(source.id());
            LvmPoolUmlTest.writePattern(device, 8 * MIB);
            String sourceLv = Names.volume(source.id());

            int message = firstPoolMessage(vg + "/" + sourceLv);
            SnapshotId id = SnapshotId.mint(pool.name(), "cut-snap");
            List<String> lvcreate = new ArrayList<>(List.of("strace", "-f", "-o", "/dev/null", "-e", "trace=ioctl",
                    "-e", "inject=ioctl:signal=SIGKILL:when=" + message, "lvm", "lvcreate", "--config", Lvm.WITHOUT_UDEV,
                    "-s", "-n", Names.snapshot(id), "-ky"));
            lvcreate.addAll(LvTags.addTags(LvTags.snapshot("cut-snap", source.id(), LvmPool.now(), false)));
            lvcreate.add(vg + "/" + sourceLv);
            TOOLS.runAllowingFailure(lvcreate, Duration.ofMinutes(2));
            assertThat(pool.thinPoolLacks(Names.snapshot(id))).as("the crash is made: LVM has the snapshot, "
                    + "the thin pool does not").isTrue();
            assertThat(suspended(vg, sourceLv)).as("the crash is made: the source is left suspended").isTrue();

            Snapshot snapshot = pool.snapshots().orElseThrow().create("cut-snap", source.id());

            assertThat(suspended(vg, sourceLv)).as("the source is resumed").isFalse();
            assertThat(pool.thinPoolLacks(Names.snapshot(id))).as("the thin pool has the snapshot").isFalse();
            assertThat(snapshot.readyToUse()).isTrue();
            LvmPoolUmlTest.zero(device, 8 * MIB); // the source changes after the snapshot
            Volume restored = pool.create(new VolumeRequest("cut-restored", new CapacityRange(64 * MIB, 0), Map.of(),
                    Optional.of(new VolumeSource.FromSnapshot(snapshot.id()))));
            assertThat(LvmPoolUmlTest.patternBlocks(pool.attach(restored.id()).device(), 8 * MIB))
                    .as("the restore holds the source's content at the retried snapshot").isEqualTo(8 * MIB / 4096);
        }
    }

    /**
     * Where the first pool message falls among the ioctls of a thin lvcreate -s (strace's count
     * for its inject), from one that runs to the end; that snapshot is removed again.
     */
    private static int firstPoolMessage(String sourceLv) throws Exception {
        Path trace = Files.createTempFile(Path.of("/run"), "lvcreate", ".strace");
        try {
            String probe = LvmPoolUmlTest.VG + "/cut-probe";
            TOOLS.run(List.of("strace", "-f", "-o", trace.toString(), "-e", "trace=ioctl", "lvm", "lvcreate",
                    "--config", Lvm.WITHOUT_UDEV, "-s", "-n", "cut-probe", "-ky", sourceLv), Duration.ofMinutes(2));
            LvmPoolUmlTest.LvmHost.lvm("lvremove", "-f", probe);
            List<String> calls = Files.readAllLines(trace);
            for (int i = 0; i < calls.size(); i++) {
                if (calls.get(i).contains("DM_TARGET_MSG")) {
                    return i + 1;
                }
            }
            throw new AssertionError("lvcreate -s sent the thin pool no message:\n" + String.join("\n", calls));
        } finally {
            Files.deleteIfExists(trace);
        }
    }

    private static boolean suspended(String vg, String lv) throws Exception {
        return DeviceMapper.status(Names.mapperName(vg, lv)).map(DeviceStatus::suspended).orElse(false);
    }
}
