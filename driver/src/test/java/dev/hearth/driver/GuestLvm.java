package dev.hearth.driver;

import dev.hearth.linux.Mounts;
import dev.hearth.storage.tool.ToolResult;
import dev.hearth.storage.tool.ToolRunner;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One volume group in a user-mode Linux guest, as a test inspects it from outside hearth: with
 * the lvm and dmsetup tools (no udev runs in the guest), and by reading and writing the LVs'
 * devices. Names follow hearth's documented scheme: {@code hearth.<pool>.<key>},
 * {@code hearth.<pool>.snap.<key>}, {@code hearth.<pool>.xfer.<key>}.
 */
final class GuestLvm {

    static final long MIB = 1L << 20;
    private static final String WITHOUT_UDEV =
            "activation{udev_sync=0 udev_rules=0} devices{obtain_device_list_from_udev=0}";
    private static final int BLOCK = 4096;
    private static final ToolRunner TOOLS = new ToolRunner();

    /** One row of {@code lvs}. */
    record Lv(String name, long sizeBytes, Set<String> tags) {}

    private final String vg;

    GuestLvm(String vg) {
        this.vg = vg;
    }

    /** A group on {@code disk} with a zeroing thin pool {@code tp} of {@code thinBytes}. */
    static GuestLvm create(String vg, Path disk, long thinBytes) throws IOException {
        // LVM keeps metadata backups under /etc/lvm: in the guest that is the host's, through hostfs.
        Files.createDirectories(Path.of("/etc/lvm"));
        Mounts.mount("tmpfs", Path.of("/etc/lvm"), "tmpfs", 0, null);
        GuestLvm lvm = new GuestLvm(vg);
        lvm.run("pvcreate", "-y", disk.toString());
        lvm.run("vgcreate", vg, disk.toString());
        lvm.run("lvcreate", "-L", thinBytes + "b", "-Zy", "-T", vg + "/tp");
        return lvm;
    }

    String run(String verb, String... args) {
        List<String> argv = new ArrayList<>(List.of("lvm", verb, "--config", WITHOUT_UDEV));
        argv.addAll(Arrays.asList(args));
        return TOOLS.run(argv, Duration.ofMinutes(2)).stdout();
    }

    /** Every LV of the group by name. */
    Map<String, Lv> lvs() {
        Map<String, Lv> lvs = new TreeMap<>();
        String out = run("lvs", "--noheadings", "--separator", "|", "--units", "b", "--nosuffix",
                "-o", "lv_name,lv_size,lv_tags", vg);
        for (String line : out.split("\n")) {
            String[] fields = line.strip().split("\\|", -1);
            if (fields.length == 3 && !fields[0].isEmpty()) {
                Set<String> tags = new TreeSet<>(Arrays.asList(fields[2].split(",")));
                tags.remove("");
                lvs.put(fields[0], new Lv(fields[0], Long.parseLong(fields[1]), tags));
            }
        }
        return lvs;
    }

    /** Transfer LVs (temporary copy-on-write snapshots) among {@code names}. */
    static List<String> transfers(Set<String> names) {
        return names.stream().filter(n -> n.contains(".xfer.")).toList();
    }

    static String volumeLv(String volumeId) {
        int dash = volumeId.lastIndexOf('-');
        return "hearth." + volumeId.substring(0, dash) + "." + volumeId.substring(dash + 1);
    }

    static String snapshotLv(String snapshotId) {
        int underscore = snapshotId.lastIndexOf('_');
        return "hearth." + snapshotId.substring(0, underscore) + ".snap." + snapshotId.substring(underscore + 1);
    }

    Path device(String lv) {
        return Path.of("/dev/mapper", vg.replace("-", "--") + "-" + lv.replace("-", "--"));
    }

    /** Device-mapper devices left suspended (their I/O would hang), as {@code dmsetup} lists them. */
    List<String> suspendedDevices() {
        ToolResult result = TOOLS.run(List.of("dmsetup", "info", "-c", "--noheadings", "--noudevsync",
                "-o", "name,suspended", "--separator", "|"), Duration.ofMinutes(1));
        return result.stdout().lines().map(String::strip).filter(l -> l.endsWith("|Suspended"))
                .map(l -> l.substring(0, l.indexOf('|'))).toList();
    }

    /** Mounts of this group's devices in the guest. */
    List<String> mounts() throws IOException {
        String prefix = "/dev/mapper/" + vg.replace("-", "--") + "-";
        return Files.readAllLines(Path.of("/proc/self/mounts")).stream().filter(l -> l.startsWith(prefix)).toList();
    }

    /** Every 4 KiB block of the first {@code length} bytes stamped with {@code tag} and its offset. */
    static void writePattern(Path device, long length, long tag) throws IOException {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
            ByteBuffer chunk = ByteBuffer.allocate((int) MIB);
            for (long offset = 0; offset < length; offset += MIB) {
                chunk.clear();
                for (int block = 0; block < MIB; block += BLOCK) {
                    stamp(chunk, block, tag, offset + block);
                }
                channel.write(chunk, offset);
            }
            channel.force(true);
        }
    }

    /**
     * How many 4 KiB blocks of the device differ from what it should hold: the pattern of
     * {@code tag} up to {@code patterned}, zeros from there to {@code length}.
     */
    static long wrongBlocks(Path device, long patterned, long length, long tag) throws IOException {
        long wrong = 0;
        ByteBuffer expected = ByteBuffer.allocate(BLOCK);
        ByteBuffer chunk = ByteBuffer.allocate((int) MIB);
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.READ)) {
            for (long offset = 0; offset < length; offset += MIB) {
                chunk.clear();
                while (chunk.hasRemaining() && channel.read(chunk, offset + chunk.position()) > 0) {
                    // fill the chunk
                }
                for (int block = 0; block < MIB && offset + block < length; block += BLOCK) {
                    expected.clear();
                    Arrays.fill(expected.array(), (byte) 0);
                    if (offset + block < patterned) {
                        stamp(expected, 0, tag, offset + block);
                    }
                    if (!Arrays.equals(chunk.array(), block, block + BLOCK, expected.array(), 0, BLOCK)) {
                        wrong++;
                    }
                }
            }
        }
        return wrong;
    }

    private static void stamp(ByteBuffer buffer, int at, long tag, long offset) {
        buffer.putLong(at, tag);
        buffer.putLong(at + 8, offset);
        for (int i = 16; i < BLOCK; i += 8) {
            buffer.putLong(at + i, tag * 31 + offset + i);
        }
    }
}
