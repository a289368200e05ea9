package dev.hearth.linux;

import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code /dev/loopN}. */
public record LoopDevice(int number) {

    private static final Pattern NAME = Pattern.compile("loop(\\d+)");

    public LoopDevice {
        if (number < 0) {
            throw new IllegalArgumentException("loop device number must not be negative: " + number);
        }
    }

    public Path path() {
        return Path.of("/dev/loop" + number);
    }

    /** The device a path such as {@code /dev/loop3} names (e.g. a {@link MountEntry#source()}), if it is one. */
    public static Optional<LoopDevice> fromPath(Path path) {
        Path name = path.getFileName();
        Matcher m = name == null ? null : NAME.matcher(name.toString());
        if (m == null || !m.matches() || !"/dev".equals(String.valueOf(path.getParent()))) {
            return Optional.empty();
        }
        return Optional.of(new LoopDevice(Integer.parseInt(m.group(1))));
    }

    @Override
    public String toString() {
        return path().toString();
    }
}
