package dev.hearth.storage.lvm;

import dev.hearth.storage.tool.ToolException;
import dev.hearth.storage.tool.ToolResult;
import dev.hearth.storage.tool.ToolRunner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The lvm commands a pool runs, through the one {@link ToolRunner}: reports come back as JSON
 * ({@code --reportformat json}, sizes in bytes) and are parsed, never scraped. Where no udev
 * daemon runs (a container without the host's udev, a test host), LVM is told to make its device
 * nodes itself instead of waiting for udev events that never come.
 */
final class Lvm {

    static final Duration TIMEOUT = Duration.ofMinutes(2);
    /** LVM's activation settings when no udev daemon answers. */
    static final String WITHOUT_UDEV = "activation{udev_sync=0 udev_rules=0} devices{obtain_device_list_from_udev=0}";

    private final ToolRunner tools;
    private final List<String> config;

    Lvm(ToolRunner tools) {
        this(tools, !Files.exists(Path.of("/run/udev/control")));
    }

    Lvm(ToolRunner tools, boolean withoutUdev) {
        this.tools = tools;
        this.config = withoutUdev ? List.of("--config", WITHOUT_UDEV) : List.of();
    }

    /** The facts of a volume group, or empty if this node has no such group. */
    Optional<VolumeGroup> volumeGroup(String vg) {
        ToolResult result = report("vgs", List.of("-o", "vg_name,vg_size,vg_free,vg_extent_size,vg_attr", vg));
        if (!result.succeeded()) {
            if (missingGroup(result.stderr())) {
                return Optional.empty();
            }
            throw ToolException.exited(command("vgs", List.of(vg)), result);
        }
        return ReportJson.rows(result.stdout(), "vg").stream().findFirst().map(VolumeGroup::of);
    }

    /**
     * The logical volumes of the group, all of them or those {@code select} picks (LVM's -S
     * syntax); empty if the group does not exist.
     */
    Optional<List<LogicalVolume>> logicalVolumes(String vg, Optional<String> select) {
        List<String> args = new ArrayList<>(List.of("-o", LogicalVolume.FIELDS));
        select.ifPresent(s -> args.addAll(List.of("-S", s)));
        args.add(vg);
        ToolResult result = report("lvs", args);
        if (!result.succeeded()) {
            if (missingGroup(result.stderr())) {
                return Optional.empty();
            }
            throw ToolException.exited(command("lvs", args), result);
        }
        return Optional.of(ReportJson.rows(result.stdout(), "lv").stream().map(LogicalVolume::of).toList());
    }

    /** Every PV LVM sees on this node, with the group it belongs to ("" for none) and its UUID. */
    List<PhysicalVolume> physicalVolumes() {
        List<String> args = List.of("-o", "pv_name,vg_name,pv_uuid");
        ToolResult result = report("pvs", args);
        if (!result.succeeded()) {
            throw ToolException.exited(command("pvs", args), result);
        }
        return ReportJson.rows(result.stdout(), "pv").stream().map(PhysicalVolume::of).toList();
    }

    /** Runs an lvm command that changes something; throws {@link ToolException} when it refuses. */
    ToolResult change(String verb, List<String> args) {
        return tools.run(command(verb, args), TIMEOUT);
    }

    /** Runs an lvm command and returns how it ended, refusal included. */
    ToolResult tryChange(String verb, List<String> args) {
        return tools.runAllowingFailure(command(verb, args), TIMEOUT);
    }

    private ToolResult report(String verb, List<String> args) {
        List<String> all = new ArrayList<>(List.of("--reportformat", "json", "--units", "b", "--nosuffix",
                "--noheadings"));
        all.addAll(args);
        return tools.runAllowingFailure(command(verb, all), TIMEOUT);
    }

    private List<String> command(String verb, List<String> args) {
        List<String> argv = new ArrayList<>();
        argv.add("lvm");
        argv.add(verb);
        argv.addAll(config);
        argv.addAll(args);
        return argv;
    }

    static boolean missingGroup(String stderr) {
        return stderr.contains("Volume group") && stderr.contains("not found");
    }

    /** One row of {@code pvs}; the UUID without dashes, as a PV's label holds it. */
    record PhysicalVolume(Path device, String group, String uuid) {

        static PhysicalVolume of(Map<String, String> row) {
            return new PhysicalVolume(Path.of(row.getOrDefault("pv_name", "")), row.getOrDefault("vg_name", ""),
                    row.getOrDefault("pv_uuid", "").replace("-", ""));
        }
    }

    /** One row of {@code vgs}. */
    record VolumeGroup(String name, long sizeBytes, long freeBytes, long extentBytes, String attr) {

        static VolumeGroup of(Map<String, String> row) {
            return new VolumeGroup(row.getOrDefault("vg_name", ""), LogicalVolume.bytes(row.get("vg_size")),
                    LogicalVolume.bytes(row.get("vg_free")), LogicalVolume.bytes(row.get("vg_extent_size")),
                    row.getOrDefault("vg_attr", ""));
        }

        /** A group missing one of its physical volumes (the 'p' in its attributes). */
        boolean partial() {
            return attr.length() > 3 && attr.charAt(3) == 'p';
        }
    }
}
