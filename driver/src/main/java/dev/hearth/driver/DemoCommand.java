package dev.hearth.driver;

import dev.hearth.driver.server.Channels;
import dev.hearth.driver.server.Endpoint;
import dev.hearth.driver.server.LogFormat;
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
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Starts a driver on a temporary socket with a small file pool and walks volumes through their
 * life against it; then proves that nothing (loop device, mount, file) is left behind.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Start hearth on a temporary socket with a file pool in a temporary directory, walk a "
                + "filesystem volume and a raw block volume through their whole life, and clean up. Needs root.")
final class DemoCommand implements Callable<Integer> {

    @Option(names = "--capacity", defaultValue = "4Gi", paramLabel = "SIZE",
            description = "The demo pool's capacity. Default: ${DEFAULT-VALUE}.")
    String capacity;

    @Option(names = "--verbose", description = "Also print the driver's per-call log lines.")
    boolean verbose;

    @Override
    public Integer call() throws Exception {
        PrintStream out = System.out;
        if (Posix.geteuid() != 0) {
            System.err.println("hearth demo needs root: it attaches loop devices and mounts filesystems. "
                    + "Run: sudo ./hearth demo");
            return 1;
        }
        LogFormat.install(verbose ? Level.INFO : Level.WARNING);
        Path work = Files.createTempDirectory("hearth-demo-");
        Path pool = work.resolve("pool");
        Endpoint endpoint = Endpoint.parse("unix://" + work.resolve("csi.sock"));
        long start = System.nanoTime();
        FilePoolConfig config = new FilePoolConfig("demo", pool, Quantity.parse(capacity), Provisioning.THICK, true,
                FilePoolConfig.DEFAULT_VOLUME_BYTES);
        Driver driver = Driver.start(new Driver.Settings(endpoint, "demo-node", "csi.hearth.dev",
                work.resolve("state"), List.of(config), null, 100, Optional.empty(), FilesystemType.EXT4));
        out.printf(Locale.ROOT, "hearth %s serving %s (file pool in %s, %s); started in %.0f ms%n%n",
                Driver.version(), endpoint, pool, Quantity.format(config.capacityBytes()),
                (System.nanoTime() - start) / 1e6);
        ManagedChannel channel = Channels.channelTo(endpoint);
        boolean ok = false;
        try {
            new Demo(channel, work, out).run();
            ok = true;
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            driver.shutdown(Duration.ofSeconds(5));
            List<String> leftovers = cleanUp(work);
            out.println();
            if (leftovers.isEmpty()) {
                out.println("Left behind: nothing (no loop device, no mount, " + work + " removed).");
            } else {
                out.println("Cleaned up after a failure: " + leftovers);
            }
            if (ok && !leftovers.isEmpty()) {
                return 1;
            }
        }
        return 0;
    }

    /** Removes whatever the demo left under its directory and says what it found. */
    private static List<String> cleanUp(Path work) throws IOException {
        List<String> found = new ArrayList<>();
        List<MountEntry> mounts = MountInfo.read().stream().filter(m -> m.mountPoint().startsWith(work)).toList();
        for (MountEntry mount : mounts.reversed()) {
            found.add("mount " + mount.mountPoint());
            Mounts.unmount(mount.mountPoint());
        }
        for (LoopAttachment loop : Loop.list()) {
            if (loop.backingFile().startsWith(work)) {
                found.add("loop device " + loop.device().path());
                Loop.detach(loop.device());
            }
        }
        try (Stream<Path> files = Files.walk(work)) {
            List<Path> all = files.sorted(Comparator.reverseOrder()).toList();
            for (Path file : all) {
                if (file.getFileName().toString().endsWith(".img")) {
                    found.add("file " + file);
                }
                Files.delete(file);
            }
        }
        return found;
    }
}
