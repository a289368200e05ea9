package dev.hearth.driver;

import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.LogFormat;
import dev.hearth.driver.server.ShutdownSignal;
import dev.hearth.linux.Loop;
import dev.hearth.linux.LoopAttachment;
import dev.hearth.linux.MountEntry;
import dev.hearth.linux.MountInfo;
import dev.hearth.linux.Mounts;
import dev.hearth.linux.Posix;
import dev.hearth.storage.Provisioning;
import dev.hearth.storage.Quantity;
import dev.hearth.storage.file.FilePoolConfig;
import dev.hearth.storage.fs.FilesystemType;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Starts a driver on a temporary socket with a small file pool and walks volumes through their
 * life against it; then proves that nothing (loop device, mount, file) is left behind. It cleans
 * up the same way when it fails and when SIGTERM or SIGINT (Ctrl-C) stops it half way; it then
 * exits 1, or 128 + the signal's number (143, 130) as a shell expects of a program a signal stopped.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Start hearth on a temporary socket with a file pool in a temporary directory, and make the "
                + "calls the external-provisioner, csi-snapshotter and kubelet would: an ext4 volume and a raw block "
                + "volume through their whole life, then an xfs volume that is snapshotted, restored into a larger "
                + "volume, cloned and expanded while mounted. Every step is printed with its duration; everything "
                + "is cleaned up at the end, also when interrupted. Needs root.")
final class DemoCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--capacity", defaultValue = "4Gi", paramLabel = "SIZE",
            description = "The demo pool's capacity, at least 1920Mi (what its volumes take at once). "
                    + "Default: ${DEFAULT-VALUE}.")
    String capacity;

    @Option(names = "--verbose", description = "Also print the driver's per-call log lines, and a failure's stack trace.")
    boolean verbose;

    @Override
    public Integer call() throws Exception {
        long capacityBytes = capacityBytes();
        PrintStream out = System.out;
        if (Posix.geteuid() != 0) {
            System.err.println("hearth demo needs root: it attaches loop devices and mounts filesystems. "
                    + "Run: sudo ./hearth demo");
            return 1;
        }
        List<String> lacks = lacks();
        if (!lacks.isEmpty()) {
            lacks.forEach(lack -> System.err.println("hearth demo cannot run here: " + lack));
            return 1;
        }
        LogFormat.install(verbose ? Level.INFO : Level.WARNING);
        Interruption interruption = new Interruption(Thread.currentThread());
        try (ShutdownSignal signal = ShutdownSignal.install(interruption::signalled)) {
            Path work = null;
            int exit = 1;
            try {
                work = Files.createTempDirectory("hearth-demo-");
                exit = runIn(work, capacityBytes, interruption, out);
            } catch (IOException e) {
                System.err.println("hearth demo: cannot make its temporary directory: " + Directories.describe(e));
            } finally {
                interruption.stopInterrupting();
                if (work != null) {
                    exit = Math.max(exit, reportCleanUp(work, interruption.signal().isPresent(), out));
                }
            }
            Optional<String> stoppedBy = interruption.signal();
            if (stoppedBy.isPresent()) {
                System.err.println("hearth demo: stopped by SIG" + stoppedBy.get() + "; cleaned up");
                return 128 + (stoppedBy.get().equals("INT") ? 2 : 15);
            }
            return exit;
        }
    }

    /** What this node lacks for the demo, which makes ext4 and xfs volumes. */
    private static List<String> lacks() {
        HostCheck check = new HostCheck(HostCheck.localHost(), FilesystemType.EXT4);
        List<String> lacks = new ArrayList<>(check.problems());
        check.unavailable(FilesystemType.XFS).filter(lack -> !lacks.contains(lack)).ifPresent(lacks::add);
        return lacks;
    }

    /** The demo's need: its xfs volume grown to 640 MiB, its snapshot, a 640 MiB restore and a 320 MiB clone. */
    static final long PEAK_BYTES = 1920L << 20;

    private long capacityBytes() {
        long bytes;
        try {
            bytes = Quantity.parse(capacity);
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw new ParameterException(spec.commandLine(), "Invalid value for option '--capacity': "
                    + (e instanceof ArithmeticException ? "'" + capacity + "' is too large" : e.getMessage()));
        }
        if (bytes < PEAK_BYTES) {
            throw new ParameterException(spec.commandLine(), "--capacity " + capacity + " is too small: the demo's "
                    + "volumes and snapshot take up to " + Quantity.format(PEAK_BYTES) + " at once; give at least "
                    + "1920Mi (the default is 4Gi)");
        }
        return bytes;
    }

    /** Starts the driver, runs the demo, stops the driver: 0 when the demo ran to its end, else 1. */
    private int runIn(Path work, long capacityBytes, Interruption interruption, PrintStream out) {
        Path pool = work.resolve("pool");
        Endpoint endpoint = Endpoint.parse("unix://" + work.resolve("csi.sock"));
        long start = System.nanoTime();
        FilePoolConfig config = new FilePoolConfig("demo", pool, capacityBytes, FilePoolConfig.Reserve.DEFAULT,
                Provisioning.THICK, true, FilePoolConfig.DEFAULT_VOLUME_BYTES);
        Driver driver;
        try {
            driver = Driver.start(new Driver.Settings(endpoint, "demo-node", "csi.hearth.dev",
                    work.resolve("state"), List.of(config), null, 100, Optional.empty(), FilesystemType.EXT4));
        } catch (IOException | RuntimeException e) {
            System.err.println("hearth demo: cannot start the driver: " + (e instanceof IOException io
                    ? Directories.describe(io) : e.getMessage()));
            return 1;
        }
        ManagedChannel channel = Channels.channelTo(endpoint);
        try {
            out.printf(Locale.ROOT, "hearth %s serving %s (file pool in %s, %s, reserve %s); started in %.0f ms%n%n",
                    Driver.version(), endpoint, pool, Quantity.format(config.capacityBytes()), config.reserve(),
                    (System.nanoTime() - start) / 1e6);
            if (!interruption.startInterrupting(channel::shutdownNow)) {
                return 1;
            }
            new Demo(channel, work, PEAK_BYTES, out).run();
            return 0;
        } catch (Exception e) {
            interruption.stopInterrupting();
            if (interruption.signal().isEmpty()) {
                System.err.println("hearth demo failed: "
                        + (e instanceof IOException io ? Directories.describe(io) : e.getMessage()));
                if (verbose) {
                    e.printStackTrace();
                }
            }
            return 1;
        } finally {
            interruption.stopInterrupting();
            channel.shutdownNow();
            awaitQuietly(channel);
            driver.shutdown(Duration.ofSeconds(5));
        }
    }

    private static void awaitQuietly(ManagedChannel channel) {
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Cleans up and says so: 0 when there was nothing to clean, 1 when something was left (a
     * failure's or an interruption's remains, now removed) or stays.
     */
    private static int reportCleanUp(Path work, boolean interrupted, PrintStream out) {
        List<String> found = new ArrayList<>();
        List<String> stuck = cleanUp(work, found);
        out.println();
        if (found.isEmpty() && stuck.isEmpty()) {
            out.println("Left behind: nothing (no loop device, no mount, " + work + " removed).");
            return 0;
        }
        if (stuck.isEmpty()) {
            out.println("Cleaned up after " + (interrupted ? "the interruption" : "a failure") + ": " + found
                    + "; " + work + " removed.");
            return 1;
        }
        System.err.println("hearth demo: could not clean up " + stuck + "; remove them by hand");
        return 1;
    }

    /**
     * Removes whatever the demo left under its directory, noting in {@code found} what there was.
     * A call the driver was still finishing as it stopped may mount or attach just after a pass, so
     * passes repeat until one finds nothing. Returns what could not be removed.
     */
    private static List<String> cleanUp(Path work, List<String> found) {
        Set<String> stuck = new LinkedHashSet<>();
        for (int pass = 0; pass < 5; pass++) {
            stuck.clear();
            int before = found.size();
            sweep(work, found, stuck);
            if (found.size() == before && stuck.isEmpty()) {
                break;
            }
            sleep(Duration.ofMillis(200));
        }
        return List.copyOf(stuck);
    }

    private static void sweep(Path work, List<String> found, Set<String> stuck) {
        try {
            List<MountEntry> mounts = MountInfo.read().stream().filter(m -> m.mountPoint().startsWith(work)).toList();
            for (MountEntry mount : mounts.reversed()) {
                found.add("mount " + mount.mountPoint());
                attempt(stuck, "mount " + mount.mountPoint(), () -> Mounts.unmount(mount.mountPoint()));
            }
            for (LoopAttachment loop : Loop.list()) {
                if (loop.backingFile().startsWith(work)) {
                    found.add("loop device " + loop.device().path());
                    attempt(stuck, "loop device " + loop.device().path(), () -> Loop.detach(loop.device()));
                }
            }
        } catch (IOException e) {
            stuck.add("reading mounts and loop devices: " + e.getMessage());
        }
        if (!Files.exists(work)) {
            return;
        }
        try (Stream<Path> files = Files.walk(work)) {
            for (Path file : files.sorted(Comparator.reverseOrder()).toList()) {
                if (file.getFileName().toString().endsWith(".img")) {
                    found.add("file " + file);
                }
                attempt(stuck, file.toString(), () -> Files.deleteIfExists(file));
            }
        } catch (IOException | java.io.UncheckedIOException e) {
            stuck.add(work + ": " + e.getMessage());
        }
    }

    private interface Removal {
        void run() throws IOException;
    }

    private static void attempt(Set<String> stuck, String what, Removal removal) {
        try {
            removal.run();
        } catch (IOException e) {
            stuck.add(what + " (" + Directories.describe(e) + ")");
        }
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A signal's way into the demo: while the demo runs, the first SIGTERM or SIGINT interrupts
     * it (the blocking call in flight is cancelled, its channel shut). Before that, and once the
     * clean-up has begun, a signal is only noted: the clean-up must run to its end, and an
     * interrupt would abort the file reads it makes.
     */
    static final class Interruption {

        private final Thread demo;
        private String signal;
        private Runnable cancel;

        Interruption(Thread demo) {
            this.demo = demo;
        }

        synchronized void signalled(String name) {
            if (signal != null) {
                return;
            }
            signal = name;
            if (cancel != null) {
                demo.interrupt();
                cancel.run();
            }
        }

        /** From now on a signal interrupts; false if one came already, and the demo should not start. */
        synchronized boolean startInterrupting(Runnable cancelCalls) {
            if (signal != null) {
                return false;
            }
            cancel = cancelCalls;
            return true;
        }

        /** No more interrupts, and none pending on the demo's thread. */
        synchronized void stopInterrupting() {
            cancel = null;
            if (Thread.currentThread() == demo) {
                Thread.interrupted();
            }
        }

        synchronized Optional<String> signal() {
            return Optional.ofNullable(signal);
        }
    }
}
