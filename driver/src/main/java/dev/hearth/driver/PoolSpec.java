package dev.hearth.driver;

import dev.hearth.storage.Provisioning;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.file.FilePoolConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * One {@code --pool} flag: {@code name=fast,kind=file,dir=/mnt/nvme0/hearth,capacity=800Gi,
 * reserve=0,provisioning=thick,direct-io=true}. Only the file kind exists so far.
 *
 * @param create whether {@code create=true} lets hearth make a directory that does not exist
 */
public record PoolSpec(FilePoolConfig config, boolean create) {

    static final SortedSet<String> FILE_KEYS = new TreeSet<>(java.util.List.of("name", "kind", "dir", "create",
            "capacity", "reserve", "provisioning", "direct-io", "default-size"));

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
        if (!kind.equals("file")) {
            throw invalid(spec, "kind '" + kind + "' is not available yet; kinds: file");
        }
        for (String key : fields.keySet()) {
            if (!FILE_KEYS.contains(key)) {
                throw invalid(spec, "unknown key '" + key + "'; keys: " + String.join(", ", FILE_KEYS));
            }
        }
        String name = fields.getOrDefault("name", "default");
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
