package dev.hearth.linux;

import java.nio.file.Path;

/**
 * A child process for {@link ReadOnlyBindInterruptedTest}: binds {@code source} read-only on
 * {@code target} and unmounts it again, over and over until it is killed. With {@code legacy} it
 * takes the bind and remount of kernels before 5.12.
 */
public final class BindLoop {

    private BindLoop() {}

    public static void main(String[] args) throws LinuxException {
        Path source = Path.of(args[0]);
        Path target = Path.of(args[1]);
        Mounts.useMountApi(!(args.length > 2 && args[2].equals("legacy")));
        Mounts.bind(source, target, true);
        Mounts.unmount(target);
        System.out.println("looping");
        System.out.flush();
        while (true) {
            Mounts.bind(source, target, true);
            Mounts.unmount(target);
        }
    }
}
