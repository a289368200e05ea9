package dev.hearth.linux;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What hearth needs of the machine under it: the privileges to attach loop devices and mount,
 * the loop driver, a kernel with LOOP_CONFIGURE, and the host tools it runs. Each answer says
 * what to do about a lack. Everything is looked at anew on every question, so a module loaded or
 * a package installed while the driver runs is seen without a restart.
 *
 * @param root where the machine's {@code /dev} and {@code /proc} are: {@code /}, or a fake tree
 *     in a test
 * @param toolDirectories where the host tools are looked for (what the tool runner searches)
 */
public record Host(Path root, List<Path> toolDirectories) {

    /** LOOP_CONFIGURE, which attaches a loop device in one ioctl, came with Linux 5.8. */
    public static final int MIN_KERNEL_MAJOR = 5;
    public static final int MIN_KERNEL_MINOR = 8;

    private static final Pattern RELEASE = Pattern.compile("^(\\d+)\\.(\\d+)");

    public Host {
        toolDirectories = List.copyOf(toolDirectories);
    }

    /** This machine, with tools looked for in {@code toolDirectories}. */
    public static Host local(List<Path> toolDirectories) {
        return new Host(Path.of("/"), toolDirectories);
    }

    /** What keeps this machine from attaching any volume, each with its remedy; empty when nothing does. */
    public List<String> problems() {
        List<String> problems = new ArrayList<>();
        privilegeProblem().ifPresent(problems::add);
        loopControlProblem().ifPresent(problems::add);
        kernelProblem().ifPresent(problems::add);
        return problems;
    }

    /** Mounting, loop ioctls and FIFREEZE all need CAP_SYS_ADMIN: in practice, root. */
    public Optional<String> privilegeProblem() {
        Path status = root.resolve("proc/self/status");
        String text;
        try {
            text = Files.readString(status);
        } catch (IOException e) {
            return Optional.of("cannot read " + status + " to check privileges: " + e.getMessage());
        }
        if (Capabilities.has(text, Capabilities.CAP_SYS_ADMIN)) {
            return Optional.empty();
        }
        String uid = text.lines().filter(l -> l.startsWith("Uid:")).map(l -> l.split("\\s+"))
                .filter(f -> f.length > 2).map(f -> f[2]).findFirst().orElse("?");
        return Optional.of("not running as root (uid " + uid + ", no CAP_SYS_ADMIN): hearth cannot attach loop "
                + "devices or mount; run it as root (in Kubernetes, a privileged container)");
    }

    /** Loop devices are found and made through {@code /dev/loop-control}, which the loop driver provides. */
    public Optional<String> loopControlProblem() {
        Path control = root.resolve("dev/loop-control");
        if (!Files.exists(control, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.of(control + " is missing: load the loop driver (modprobe loop); in a container, "
                    + "mount the host's /dev");
        }
        try (Arena arena = Arena.ofConfined(); Fd fd = Fd.open(arena, control, Libc.O_RDWR)) {
            return Optional.empty();
        } catch (LinuxException e) {
            String hint = e.is(Errno.EACCES) || e.is(Errno.EPERM)
                    ? ": run hearth as root (in Kubernetes, a privileged container, whose device cgroup allows it)"
                    : "";
            return Optional.of("cannot open " + control + ": " + e.errnoName() + " (" + Errno.description(e.errno())
                    + ")" + hint);
        }
    }

    /** The running kernel's release, e.g. {@code 6.1.0-18-amd64}; empty if it cannot be read. */
    public Optional<String> kernelRelease() {
        try {
            return Optional.of(Files.readString(root.resolve("proc/sys/kernel/osrelease")).strip());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** A release that does not start with major.minor is not judged: nothing is known against it. */
    public Optional<String> kernelProblem() {
        Optional<String> release = kernelRelease();
        if (release.isEmpty()) {
            return Optional.empty();
        }
        Matcher m = RELEASE.matcher(release.get());
        if (!m.find()) {
            return Optional.empty();
        }
        int major = Integer.parseInt(m.group(1));
        int minor = Integer.parseInt(m.group(2));
        if (major > MIN_KERNEL_MAJOR || (major == MIN_KERNEL_MAJOR && minor >= MIN_KERNEL_MINOR)) {
            return Optional.empty();
        }
        return Optional.of("kernel " + release.get() + " is too old: hearth attaches loop devices with "
                + "LOOP_CONFIGURE, which needs Linux " + MIN_KERNEL_MAJOR + "." + MIN_KERNEL_MINOR + " or newer");
    }

    /** Whether an executable of that name is in one of the tool directories. */
    public boolean hasTool(String name) {
        return toolDirectories.stream().map(dir -> dir.resolve(name))
                .anyMatch(file -> Files.isRegularFile(file) && Files.isExecutable(file));
    }
}
