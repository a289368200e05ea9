package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import dev.hearth.storage.Quantity;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Which of the node's disks a pool may take: path globs matched against every name of a disk
 * ({@code /dev/NAME} and its {@code /dev/disk/by-id} and {@code by-path} links), a minimum size,
 * a model pattern and whether it spins. All given conditions must hold.
 *
 * @param paths globs such as {@code /dev/disk/by-id/nvme-*} (at least one)
 * @param minSizeBytes the smallest disk taken (0: any size)
 * @param model a regular expression the whole model string must match, if given
 * @param rotational whether the disk must spin (true) or must not (false), if given
 */
public record DiskSelector(List<String> paths, long minSizeBytes, Optional<Pattern> model,
        Optional<Boolean> rotational) {

    public DiskSelector {
        paths = List.copyOf(paths);
        if (paths.isEmpty()) {
            throw new IllegalArgumentException("a disk selector needs at least one path glob, e.g. /dev/disk/by-id/nvme-*");
        }
        for (String glob : paths) {
            if (!glob.startsWith("/dev/")) {
                throw new IllegalArgumentException("disk path glob '" + glob + "' must start with /dev/");
            }
            matcher(glob);
        }
        if (minSizeBytes < 0) {
            throw new IllegalArgumentException("min-size must not be negative");
        }
    }

    /**
     * The selector a pool spec's keys give: {@code disks} (globs separated by {@code |}),
     * {@code min-size}, {@code model}, {@code rotational}.
     */
    public static DiskSelector parse(String disks, String minSize, String model, String rotational) {
        List<String> globs = new ArrayList<>();
        for (String glob : disks.split("\\|")) {
            if (!glob.isBlank()) {
                globs.add(glob.strip());
            }
        }
        Optional<Pattern> modelPattern = Optional.empty();
        if (model != null) {
            try {
                modelPattern = Optional.of(Pattern.compile(model));
            } catch (PatternSyntaxException e) {
                throw new IllegalArgumentException("model=" + model + " is not a regular expression: "
                        + e.getDescription());
            }
        }
        Optional<Boolean> spins = Optional.empty();
        if (rotational != null) {
            spins = Optional.of(switch (rotational.toLowerCase(Locale.ROOT)) {
                case "true" -> true;
                case "false" -> false;
                default -> throw new IllegalArgumentException("rotational=" + rotational + " must be true or false");
            });
        }
        return new DiskSelector(globs, minSize == null ? 0 : Quantity.parse(minSize), modelPattern, spins);
    }

    /** Empty if the disk is selected, else why not (the first condition it fails). */
    public Optional<String> refuses(Disk disk) {
        if (!matchesPath(disk)) {
            return Optional.of("no name of it matches " + String.join(" | ", paths));
        }
        if (model.isPresent() && !model.get().matcher(disk.model()).matches()) {
            return Optional.of("model '" + disk.model() + "' does not match " + model.get().pattern());
        }
        if (rotational.isPresent() && rotational.get() != disk.rotational()) {
            return Optional.of(disk.rotational() ? "rotational, and the pool takes only non-rotational disks"
                    : "non-rotational, and the pool takes only rotational disks");
        }
        return Optional.empty();
    }

    /** Whether the disk is below the minimum size (a separate verdict: the disk is selected, but too small). */
    public boolean tooSmall(Disk disk) {
        return disk.sizeBytes() < minSizeBytes;
    }

    private boolean matchesPath(Disk disk) {
        for (Path path : disk.paths()) {
            if (matches(path.toString())) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether a device of these names may be selected: one of them matches a glob (the model, the
     * spin and the size are then to be read). What a scan asks of every block device of the node
     * before it reads one, so a name that cannot match is told by its glob's literal start alone.
     */
    public boolean mayTake(String device, List<Path> links) {
        if (matches(device)) {
            return true;
        }
        for (Path link : links) {
            if (matches(link.toString())) {
                return true;
            }
        }
        return false;
    }

    private boolean matches(String path) {
        for (String glob : paths) {
            if (Glob.of(glob).matches(path)) {
                return true;
            }
        }
        return false;
    }

    /** A glob made once: its literal start (every match begins with it), and a matcher if it has wildcards. */
    private record Glob(String start, Optional<PathMatcher> matcher) {

        private static final Map<String, Glob> MADE = new ConcurrentHashMap<>();

        static Glob of(String glob) {
            Glob made = MADE.get(glob);
            if (made == null) {
                int wild = 0;
                while (wild < glob.length() && "*?[{\\".indexOf(glob.charAt(wild)) < 0) {
                    wild++;
                }
                made = new Glob(glob.substring(0, wild), wild == glob.length() ? Optional.empty()
                        : Optional.of(DiskSelector.matcher(glob)));
                MADE.put(glob, made);
            }
            return made;
        }

        boolean matches(String path) {
            if (!path.startsWith(start)) {
                return false;
            }
            return matcher.isEmpty() ? path.length() == start.length() : matcher.get().matches(Path.of(path));
        }
    }

    private static PathMatcher matcher(String glob) {
        try {
            return FileSystems.getDefault().getPathMatcher("glob:" + glob);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("disk path glob '" + glob + "' is not a glob: " + e.getMessage());
        }
    }

    /** A size as a pool spec takes it and exactly: {@code 100Gi}, {@code 1536Mi}, {@code 1000000000}. */
    private static String spell(long bytes) {
        String[] units = {"Pi", "Ti", "Gi", "Mi", "Ki"};
        for (int i = 0; i < units.length; i++) {
            long unit = 1L << (10 * (units.length - i));
            if (bytes % unit == 0) {
                return bytes / unit + units[i];
            }
        }
        return Long.toString(bytes);
    }

    /** The selector as the pool spec spells it, for logs and {@code hearth disks}. */
    public String describe() {
        StringBuilder out = new StringBuilder("disks=").append(String.join("|", paths));
        if (minSizeBytes > 0) {
            out.append(",min-size=").append(spell(minSizeBytes));
        }
        model.ifPresent(m -> out.append(",model=").append(m.pattern()));
        rotational.ifPresent(r -> out.append(",rotational=").append(r));
        return out.toString();
    }
}
