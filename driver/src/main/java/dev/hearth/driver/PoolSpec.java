package dev.hearth.driver;

import dev.hearth.storage.PoolConfig;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.device.DevicePoolConfig;
import dev.hearth.storage.device.DiskSelector;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.lvm.LvmPoolConfig;
import dev.hearth.storage.probe.SignatureProbe.ZeroCheck;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * One {@code --pool} flag, as comma-separated key=value:
 * <ul>
 *   <li>{@code name=fast,kind=file,dir=/mnt/nvme0/hearth,capacity=800Gi,reserve=0,provisioning=thick,direct-io=true}
 *   <li>{@code name=lvm,kind=lvm,vg=vg0,wipe=zero} (thick) or {@code name=thin,kind=lvm,vg=vg0,thinpool=tp,
 *       overprovision=3} (thin)
 *   <li>{@code name=nvme,kind=device,disks=/dev/disk/by-id/nvme-*|/dev/sd[b-e],min-size=100Gi,rotational=false,
 *       wipe=zero,check=sampled} (whole disks)
 *   <li>{@code name=lvm,kind=lvm,vg=vg0,disks=/dev/disk/by-id/nvme-*,min-size=100Gi,check=sampled}: an lvm pool
 *       that grows its group onto the empty disks selected, with the keys a device pool selects its disks by
 * </ul>
 *
 * @param create whether {@code create=true} lets hearth make a file pool's directory that does not exist
 */
public record PoolSpec(PoolConfig config, boolean create) {

    static final SortedSet<String> FILE_KEYS = new TreeSet<>(java.util.List.of("name", "kind", "dir", "create",
            "capacity", "reserve", "provisioning", "direct-io", "default-size"));
    static final SortedSet<String> LVM_KEYS = new TreeSet<>(java.util.List.of("name", "kind", "vg", "thinpool",
            "overprovision", "wipe", "default-size", "disks", "min-size", "model", "rotational", "check"));
    /** The keys that choose whole disks; all but {@code disks} refine it and mean nothing without it. */
    static final java.util.List<String> DISK_KEYS = java.util.List.of("disks", "min-size", "model", "rotational",
            "check");
    static final SortedSet<String> DEVICE_KEYS = new TreeSet<>(java.util.List.of("name", "kind", "disks", "min-size",
            "model", "rotational", "wipe", "check"));

    /** A file pool's config; only file pools have a directory of their own. */
    public java.util.Optional<FilePoolConfig> file() {
        return config instanceof FilePoolConfig file ? java.util.Optional.of(file) : java.util.Optional.empty();
    }

    /** Parses a pool flag; {@code stateDir} places a pool that names no directory of its own. */
    public static PoolSpec parse(String spec, Path stateDir) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String part : spec.split(",")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw invalid(spec, "'" + part + "' is not key=value");
            }
            String key = part.substring(0, eq).trim();
            if (fields.put(key, part.substring(eq + 1).trim()) != null) {
                throw invalid(spec, "'" + key + "' is given twice");
            }
        }
        String kind = fields.getOrDefault("kind", "file");
        SortedSet<String> keys = switch (kind) {
            case "file" -> FILE_KEYS;
            case "lvm" -> LVM_KEYS;
            case "device" -> DEVICE_KEYS;
            default -> throw invalid(spec, "unknown kind '" + kind + "'; kinds: file, lvm, device");
        };
        for (String key : fields.keySet()) {
            if (!keys.contains(key)) {
                throw invalid(spec, "unknown key '" + key + "' for kind " + kind + "; keys: " + String.join(", ", keys));
            }
        }
        String name = fields.getOrDefault("name", "default");
        if (kind.equals("lvm")) {
            return lvm(spec, fields, name, stateDir);
        }
        if (kind.equals("device")) {
            return device(spec, fields, name, stateDir);
        }
        Path dir = fields.containsKey("dir") ? Path.of(fields.get("dir")) : stateDir.resolve("pools").resolve(name);
        long capacity = value(spec, fields, "capacity", Quantity::parse, 0L);
        FilePoolConfig.Reserve reserve = value(spec, fields, "reserve", FilePoolConfig.Reserve::parse,
                FilePoolConfig.Reserve.DEFAULT);
        Provisioning provisioning = value(spec, fields, "provisioning", Provisioning::parse, Provisioning.THICK);
        boolean directIo = value(spec, fields, "direct-io", PoolSpec::bool, true);
        boolean create = value(spec, fields, "create", PoolSpec::bool, false);
        long defaultSize = value(spec, fields, "default-size", Quantity::parse, FilePoolConfig.DEFAULT_VOLUME_BYTES);
        try {
            return new PoolSpec(new FilePoolConfig(name, dir, capacity, reserve, provisioning, directIo, defaultSize),
                    create);
        } catch (IllegalArgumentException e) {
            throw invalid(spec, e.getMessage());
        }
    }

    private static PoolSpec lvm(String spec, Map<String, String> fields, String name, Path stateDir) {
        String vg = fields.get("vg");
        if (vg == null || vg.isEmpty()) {
            throw invalid(spec, "an lvm pool needs vg=<volume group>");
        }
        java.util.Optional<String> thinPool = java.util.Optional.ofNullable(fields.get("thinpool"));
        double overprovision = value(spec, fields, "overprovision", PoolSpec::ratio, LvmPoolConfig.DEFAULT_OVERPROVISION);
        LvmPoolConfig.Wipe wipe = value(spec, fields, "wipe", LvmPoolConfig.Wipe::parse, LvmPoolConfig.Wipe.ZERO);
        long defaultSize = value(spec, fields, "default-size", Quantity::parse, LvmPoolConfig.DEFAULT_VOLUME_BYTES);
        java.util.Optional<LvmPoolConfig.Growth> growth = growth(spec, fields, stateDir);
        try {
            return new PoolSpec(new LvmPoolConfig(name, vg, thinPool, overprovision, wipe, defaultSize,
                    stateDir.resolve("pools").resolve(name), growth), false);
        } catch (IllegalArgumentException e) {
            throw invalid(spec, e.getMessage());
        }
    }

    /** A device pool: the selector's keys ({@code disks} is required), the wipe policy and the zero check. */
    private static PoolSpec device(String spec, Map<String, String> fields, String name, Path stateDir) {
        String disks = fields.get("disks");
        if (disks == null || disks.isBlank()) {
            throw invalid(spec, "a device pool needs disks=<path globs separated by |>, e.g. "
                    + "disks=/dev/disk/by-id/nvme-*");
        }
        DiskSelector selector;
        try {
            selector = DiskSelector.parse(disks, fields.get("min-size"), fields.get("model"), fields.get("rotational"));
        } catch (IllegalArgumentException | StorageException e) {
            throw invalid(spec, e.getMessage());
        }
        DevicePoolConfig.Wipe wipe = value(spec, fields, "wipe", DevicePoolConfig.Wipe::parse,
                DevicePoolConfig.Wipe.ZERO);
        ZeroCheck check = value(spec, fields, "check", DevicePoolConfig::parseCheck, ZeroCheck.SAMPLED);
        try {
            return new PoolSpec(DevicePoolConfig.under(stateDir, name, selector, wipe, check), false);
        } catch (IllegalArgumentException e) {
            throw invalid(spec, e.getMessage());
        }
    }

    /** An lvm pool's disks to grow onto: {@code disks} and what refines it, claimed under STATE_DIR/disks. */
    private static java.util.Optional<LvmPoolConfig.Growth> growth(String spec, Map<String, String> fields,
            Path stateDir) {
        if (!fields.containsKey("disks")) {
            for (String key : DISK_KEYS) {
                if (fields.containsKey(key)) {
                    throw invalid(spec, key + " refines disks=, which is not given (disks=/dev/disk/by-id/... "
                            + "names the disks the volume group may grow onto)");
                }
            }
            return java.util.Optional.empty();
        }
        ZeroCheck check = value(spec, fields, "check", DevicePoolConfig::parseCheck, ZeroCheck.SAMPLED);
        try {
            DiskSelector selector = DiskSelector.parse(fields.get("disks"), fields.get("min-size"), fields.get("model"),
                    fields.get("rotational"));
            return java.util.Optional.of(new LvmPoolConfig.Growth(selector, check, stateDir.resolve("disks")));
        } catch (IllegalArgumentException | StorageException e) {
            throw invalid(spec, e.getMessage());
        }
    }

    private static double ratio(String text) {
        try {
            return Double.parseDouble(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("must be a number such as 3 or 1.5");
        }
    }

    /** The key's value through {@code parser}, or {@code fallback} without the key; any refusal names the key. */
    private static <T> T value(String spec, Map<String, String> fields, String key, Function<String, T> parser,
            T fallback) {
        String text = fields.get(key);
        if (text == null) {
            return fallback;
        }
        try {
            return parser.apply(text);
        } catch (IllegalArgumentException | StorageException e) {
            throw invalid(spec, key + "=" + text + ": " + e.getMessage());
        } catch (ArithmeticException e) {
            throw invalid(spec, key + "=" + text + ": too large");
        }
    }

    /** {@code true} or {@code false}, and nothing else: a typo must not quietly mean false. */
    static boolean bool(String text) {
        return switch (text.toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("must be true or false");
        };
    }

    private static IllegalArgumentException invalid(String spec, String why) {
        return new IllegalArgumentException("pool spec '" + spec + "': " + why);
    }
}
