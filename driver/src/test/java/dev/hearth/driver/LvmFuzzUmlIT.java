package dev.hearth.driver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.hearth.linux.testing.RequiresTools;
import dev.hearth.linux.testing.Scratch;
import dev.hearth.linux.testing.UserModeLinux;
import dev.hearth.storage.PoolConfig;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CsiFuzzTest}'s random requests with an lvm pool as the second pool, thin and then thick,
 * in a user-mode Linux guest (this kernel has no device-mapper): the same rule (no INTERNAL or
 * UNKNOWN, a bounded message, the driver still ready, no path mounted twice, nothing left mounted
 * or attached), and then nothing half-made in the volume group: once every volume and snapshot
 * the API lists is deleted through it, the group holds its thin pool and nothing else.
 *
 * <p>{@code -Dhearth.fuzz.seed=N}, {@code -Dhearth.fuzz.requests=N} (per pool),
 * {@code -Dhearth.fuzz.seconds=S} (per pool) and {@code -Dhearth.fuzz.clients=N} as for
 * {@link CsiFuzzTest}; the seed is printed.
 */
@RequiresTools({"lvm", "thin_check", "mkfs.ext4", "mkfs.xfs", "mknod", "mkfifo"})
class LvmFuzzUmlIT {

    private static final String VG = "fuzzvg";
    private static final String THIN_POOL = "tp";
    /** The guest has no network interface: netty's warnings about it would bury the output. */
    private static final Logger NETTY = Logger.getLogger("io.grpc.netty.shaded.io.netty");

    @TempDir
    Path dir;

    @Test
    void randomRequestsWithAnLvmPoolGetAnAnswerThatIsNeverInternalAndLeaveNoLv() throws IOException {
        UserModeLinux.assumeAvailable("LVM needs device-mapper, which this kernel lacks");
        Path disk = Scratch.sparseFile(dir.resolve("disk.img"), 3L << 30);
        Properties settings = new Properties();
        settings.setProperty("seed", Long.toString(Long.getLong("hearth.fuzz.seed", 20261130L)));
        settings.setProperty("requests", Integer.toString(Integer.getInteger("hearth.fuzz.requests", 800)));
        settings.setProperty("seconds", Long.toString(Long.getLong("hearth.fuzz.seconds", 150)));
        settings.setProperty("clients", Integer.toString(Integer.getInteger("hearth.fuzz.clients", 1)));
        try (Writer out = Files.newBufferedWriter(dir.resolve("fuzz.properties"))) {
            settings.store(out, null);
        }
        UserModeLinux.Result guest = UserModeLinux.runInGuest(LvmFuzzUmlIT.class, "inGuest", dir,
                Duration.ofMinutes(12), List.of("-m", "2048M", "-k", "dm-thin-pool", "-k", "dm-snapshot", "-d",
                        disk.toString()));
        System.out.println(guest.describe());
    }

    // ---- in the guest

    static void inGuest(Path dir) throws Exception {
        NETTY.setLevel(Level.SEVERE);
        Properties settings = new Properties();
        try (Reader in = Files.newBufferedReader(dir.resolve("fuzz.properties"))) {
            settings.load(in);
        }
        long seed = Long.parseLong(settings.getProperty("seed"));
        int requests = Integer.parseInt(settings.getProperty("requests"));
        Duration budget = Duration.ofSeconds(Long.parseLong(settings.getProperty("seconds")));
        int clients = Integer.parseInt(settings.getProperty("clients"));
        GuestLvm lvm = GuestLvm.create(VG, Path.of("/dev/ubda"), 1L << 30);
        // The guest's own tmpfs: the driver's socket, the file pool's images and the kubelet's paths.
        Path run = Files.createDirectories(Path.of("/run/hearth"));
        for (String kind : List.of("thin", "thick")) {
            Path work = Files.createDirectories(run.resolve(kind));
            String spec = "name=second,kind=lvm,vg=" + VG + (kind.equals("thin") ? ",thinpool=" + THIN_POOL
                    + ",overprovision=4" : "");
            PoolConfig second = PoolSpec.parse(spec, work.resolve("state")).config();
            System.out.println("guest: " + kind + " lvm pool, seed " + seed);
            CsiFuzzTest.fuzzWith(work, second, seed, requests, budget, clients);

            try (TestDriver driver = TestDriver.start(work, CsiFuzzTest.defaultPool(work), second)) {
                System.out.println("guest: " + kind + ": deleted the " + TestDriver.deleteAllListed(driver.controller())
                        + " left");
                assertThat(TestDriver.volumeIds(driver.controller())).as("volumes listed after all were deleted").isEmpty();
            }
            assertThat(lvm.lvs().keySet()).as("the group's LVs after every volume and snapshot was deleted (%s)", kind)
                    .containsExactly(THIN_POOL);
        }
    }


}
