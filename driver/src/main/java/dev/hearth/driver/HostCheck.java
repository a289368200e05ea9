package dev.hearth.driver;

import dev.hearth.linux.Host;
import dev.hearth.storage.fs.FilesystemType;
import dev.hearth.storage.tool.ToolRunner;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Whether this node can serve volumes, and if not, what to install or load. Two levels:
 * <ul>
 *   <li>the node: root, the loop driver, a kernel with LOOP_CONFIGURE, blkid, and the tools of
 *       the default filesystem. Without any of them the driver is not healthy: Probe answers
 *       FAILED_PRECONDITION and /healthz 503, each with the reasons;
 *   <li>one filesystem type: a node without xfsprogs still serves ext4 volumes, but a request for
 *       an xfs volume is refused with FAILED_PRECONDITION naming the package.
 * </ul>
 * What can change while the driver runs is looked at on every call: a package installed or a
 * module loaded counts at once. Its own privileges and the kernel release cannot change under a
 * running process, so they are read once, not on every Probe and every call that sets something up.
 */
public final class HostCheck {

    /** The programs hearth runs for a filesystem (make, check, grow, relabel), and their package. */
    record Tools(String packageName, List<String> programs) {}

    /** Every format is preceded by {@code blkid -p}, whatever the filesystem. */
    static final Tools PROBE = new Tools("util-linux", List.of("blkid"));

    private final Host host;
    private final FilesystemType defaultType;
    /** The privilege and kernel problems, read on first use; null until then. */
    private volatile Fixed fixed;

    /** What cannot change while this process runs. */
    private record Fixed(Optional<String> privilege, Optional<String> kernel) {}

    public HostCheck(Host host, FilesystemType defaultType) {
        this.host = host;
        this.defaultType = defaultType;
    }

    FilesystemType defaultType() {
        return defaultType;
    }

    /** This machine, with tools where the tool runner looks for them. */
    public static Host localHost() {
        return Host.local(ToolRunner.SEARCH_PATH.stream().map(Path::of).toList());
    }

    static Tools toolsOf(FilesystemType type) {
        return switch (type) {
            case EXT4 -> new Tools("e2fsprogs", List.of("mkfs.ext4", "e2fsck", "resize2fs"));
            case XFS -> new Tools("xfsprogs", List.of("mkfs.xfs", "xfs_growfs", "xfs_admin"));
            case BTRFS -> new Tools("btrfs-progs", List.of("mkfs.btrfs", "btrfs"));
        };
    }

    /** What keeps the driver from serving at all, each with its remedy; empty when the node is fit. */
    public List<String> problems() {
        List<String> problems = new ArrayList<>(machineProblems());
        missing(PROBE, "formatting any volume").ifPresent(problems::add);
        missing(toolsOf(defaultType), defaultType.kernelName() + " volumes (--default-fs-type)").ifPresent(problems::add);
        return problems;
    }

    /** Problems of the machine itself (privileges, loop driver, kernel), which no call can work around. */
    List<String> machineProblems() {
        Fixed known = fixed;
        if (known == null) {
            known = new Fixed(host.privilegeProblem(), host.kernelProblem());
            fixed = known;
        }
        List<String> problems = new ArrayList<>(3);
        known.privilege().ifPresent(problems::add);
        host.loopControlProblem().ifPresent(problems::add);
        known.kernel().ifPresent(problems::add);
        return problems;
    }

    /** Why volumes of {@code type} cannot be made here, if they cannot. */
    public Optional<String> unavailable(FilesystemType type) {
        return unavailable(type, "");
    }

    private Optional<String> unavailable(FilesystemType type, String note) {
        Optional<String> probe = missing(PROBE, "formatting any volume");
        if (probe.isPresent()) {
            return probe;
        }
        return missing(toolsOf(type), type.kernelName() + " volumes" + note);
    }

    /** The filesystem types other than the default that cannot be made here, for a warning at start. */
    List<String> unavailableOtherTypes() {
        List<String> unavailable = new ArrayList<>();
        for (FilesystemType type : FilesystemType.values()) {
            if (type != defaultType) {
                missing(toolsOf(type), type.kernelName() + " volumes").ifPresent(unavailable::add);
            }
        }
        return unavailable;
    }

    private Optional<String> missing(Tools tools, String neededFor) {
        List<String> absent = tools.programs().stream().filter(p -> !host.hasTool(p)).toList();
        if (absent.isEmpty()) {
            return Optional.empty();
        }
        String where = host.toolDirectories().stream().map(Path::toString).collect(Collectors.joining(":"));
        return Optional.of(String.join(", ", absent) + " not found in " + where + ", needed for " + neededFor
                + ": install " + tools.packageName() + " (e.g. apt-get install " + tools.packageName() + ")");
    }
}
