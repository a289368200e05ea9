package dev.hearth.driver;

import dev.hearth.storage.Provisioning;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.file.FilePoolConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * One {@code --pool} flag: {@code name=fast,kind=file,dir=/var/lib/hearth/fast,capacity=100Gi,
 * provisioning=thick,direct-io=true}. Only the file kind exists so far.
 */
public final class PoolSpec {

    private static final Set<String> FILE_KEYS = Set.of("name", "kind", "dir", "capacity", "provisioning",
            "direct-io", "default-size");

    private PoolSpec() {}

    /** Parses a pool flag; {@code stateDir} places a pool that names no directory of its own. */
    public static FilePoolConfig parse(String spec, Path stateDir) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String part : spec.split(",")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("pool spec '" + spec + "': '" + part + "' is not key=value");
            }
            String key = part.substring(0, eq).trim();
            if (fields.put(key, part.substring(eq + 1).trim()) != null) {
                throw new IllegalArgumentException("pool spec '" + spec + "': '" + key + "' is given twice");
            }
        }
        String kind = fields.getOrDefault("kind", "file");
        if (!kind.equals("file")) {
            throw new IllegalArgumentException("pool spec '" + spec + "': kind '" + kind
                    + "' is not available yet; kinds: file");
        }
        for (String key : fields.keySet()) {
            if (!FILE_KEYS.contains(key)) {
                throw new IllegalArgumentException("pool spec '" + spec + "': unknown key '" + key + "'; keys: "
                        + FILE_KEYS);
            }
        }
        String name = fields.getOrDefault("name", "default");
        Path dir = fields.containsKey("dir") ? Path.of(fields.get("dir")) : stateDir.resolve("pools").resolve(name);
        long capacity = fields.containsKey("capacity") ? Quantity.parse(fields.get("capacity")) : 0;
        Provisioning provisioning = Provisioning.parse(fields.getOrDefault("provisioning", "thick"));
        boolean directIo = Boolean.parseBoolean(fields.getOrDefault("direct-io", "true"));
        long defaultSize = fields.containsKey("default-size") ? Quantity.parse(fields.get("default-size"))
                : FilePoolConfig.DEFAULT_VOLUME_BYTES;
        return new FilePoolConfig(name, dir, capacity, provisioning, directIo, defaultSize);
    }
}
