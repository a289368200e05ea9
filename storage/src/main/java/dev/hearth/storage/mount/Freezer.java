package dev.hearth.storage.mount;

import dev.hearth.linux.Errno;
import dev.hearth.linux.Freeze;
import dev.hearth.linux.LinuxException;
import dev.hearth.storage.AtomicFiles;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Freezes a mounted filesystem for a piece of work (a consistent copy of the volume under it), so
 * that no crash and no slow copy can leave it frozen. The kernel never thaws on its own: a driver
 * killed between FIFREEZE and FITHAW would leave the pod's writes hanging for good. Hence:
 *
 * <ul>
 *   <li>a record, written before the freeze, names the mount point; a driver that starts finds the
 *       records its predecessor left and thaws them ({@link #thawLeftovers()}), and a freeze that
 *       meets EBUSY with a stale record thaws that first;
 *   <li>a watchdog process, started before the freeze, thaws after the limit even if this whole
 *       JVM is gone by then (kill -9); it acts only while the record still carries its own token, so
 *       it never thaws a later freeze. A copy that outlives the limit fails instead of passing off
 *       a crash-consistent copy as a frozen one.
 * </ul>
 *
 * Records live in one directory per pool and are written atomically.
 */
public final class Freezer {

    /** How long a pod's writes may be held for one copy, unless the pool says otherwise. */
    public static final Duration DEFAULT_LIMIT = Duration.ofSeconds(60);

    private static final System.Logger LOG = System.getLogger(Freezer.class.getName());
    private static final String SUFFIX = ".frozen";

    /** What the copy under the freeze does. */
    @FunctionalInterface
    public interface Work<T> {
        T run() throws IOException;
    }

    private final Path records;
    private final Duration limit;
    /** Mount points this process holds frozen right now. */
    private final Set<Path> active = ConcurrentHashMap.newKeySet();

    /** @param records where freezes are recorded; made when the first freeze happens, removed when none is left */
    public Freezer(Path records, Duration limit) {
        if (limit.isNegative() || limit.isZero()) {
            throw new IllegalArgumentException("freeze limit must be positive, got " + limit);
        }
        this.records = records;
        this.limit = limit;
    }

    public Duration limit() {
        return limit;
    }

    /**
     * Runs {@code work} with the filesystem at {@code mountPoint} frozen, and thaws it afterwards
     * however the work ends.
     *
     * @throws StorageException.Busy if this driver is copying from that filesystem already, or
     *     something other than hearth holds it frozen
     * @throws StorageException.Precondition if the work outlived the freeze limit (the watchdog thawed
     *     the filesystem under it, so its result is not a consistent copy)
     */
    public <T> T whileFrozen(Path mountPoint, Work<T> work) throws IOException {
        if (!active.add(mountPoint)) {
            throw new StorageException.Busy("the filesystem at " + mountPoint
                    + " is frozen for another copy right now; retry when it is done");
        }
        try {
            thawLeftover(record(mountPoint)); // a crashed predecessor's freeze of this filesystem
            return frozen(mountPoint, work);
        } finally {
            active.remove(mountPoint);
        }
    }

    private <T> T frozen(Path mountPoint, Work<T> work) throws IOException {
        Path record = record(mountPoint);
        String token = UUID.randomUUID().toString();
        long started = System.nanoTime();
        Process watchdog = startWatchdog(mountPoint, record, token);
        try {
            writeRecord(record, encode(mountPoint, token, watchdog.pid()));
            Freeze.Frozen frozen;
            try {
                frozen = Freeze.freeze(mountPoint);
            } catch (LinuxException e) {
                if (e.errno() == Errno.EBUSY) {
                    throw new StorageException.Busy("the filesystem at " + mountPoint + " is frozen by something "
                            + "other than hearth (fsfreeze?); thaw it (fsfreeze -u " + mountPoint + ") or retry later");
                }
                throw e;
            }
            T result;
            boolean thawedByUs;
            try {
                result = work.run();
            } finally {
                thawedByUs = thaw(frozen);
            }
            Duration held = Duration.ofNanos(System.nanoTime() - started);
            if (!thawedByUs || held.compareTo(limit) >= 0) {
                throw new StorageException.Precondition("the copy held the filesystem at " + mountPoint
                        + " frozen past the limit of " + limit.toSeconds() + "s, so it was thawed and the copy is "
                        + "not consistent; put the pool on a filesystem with reflinks (xfs, btrfs) or raise the limit");
            }
            return result;
        } finally {
            watchdog.destroyForcibly();
            removeRecord(record);
        }
    }

    /**
     * Makes the records' directory and writes the record in it. Under the same lock as
     * {@link #removeRecord}: a freeze of another filesystem ending meanwhile would otherwise remove
     * the directory, empty for that moment, between the two, and this record's write would fail.
     */
    private synchronized void writeRecord(Path record, String content) throws IOException {
        Files.createDirectories(records);
        AtomicFiles.write(record, content);
    }

    /** Removes the record, and the directory with it when no other freeze has one there. */
    private synchronized void removeRecord(Path record) throws IOException {
        Files.deleteIfExists(record);
        removeIfEmpty();
    }

    private void removeIfEmpty() {
        try {
            Files.deleteIfExists(records);
        } catch (IOException e) {
            // Another freeze's record is in there, or it is gone already: either is fine.
        }
    }

    /** Thaws; false if it was thawed already (the watchdog acted). */
    private static boolean thaw(Freeze.Frozen frozen) throws LinuxException {
        try {
            frozen.close();
            return true;
        } catch (LinuxException e) {
            if (e.errno() == Errno.EINVAL) {
                return false;
            }
            throw e;
        }
    }

    /**
     * Thaws every filesystem a previous driver recorded as frozen and did not thaw (it was killed in
     * the middle), stops its watchdogs and removes the records, and a record's temporary file left
     * by a kill in its write. Run at start-up, before any request.
     *
     * @return the mount points that were still frozen and are thawed now
     */
    public List<Path> thawLeftovers() throws IOException {
        List<Path> thawed = new ArrayList<>();
        if (!Files.isDirectory(records)) {
            return thawed;
        }
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(records, "*" + SUFFIX)) {
            for (Path record : stream) {
                thawLeftover(record).ifPresent(thawed::add);
            }
        }
        // A record whose atomic write a kill cut short: the freeze comes after the record, so it never happened.
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(records, "*" + SUFFIX + ".tmp")) {
            for (Path partial : stream) {
                Files.deleteIfExists(partial);
            }
        }
        removeIfEmpty();
        return thawed;
    }

    private Optional<Path> thawLeftover(Path record) throws IOException {
        if (!Files.exists(record)) {
            return Optional.empty();
        }
        Map<String, String> fields = decode(Files.readString(record));
        Optional<Path> thawed = Optional.empty();
        String mount = fields.get("mount");
        if (mount != null) {
            Path mountPoint = Path.of(mount);
            try {
                if (Freeze.thaw(mountPoint)) {
                    LOG.log(System.Logger.Level.WARNING, "thawed " + mountPoint
                            + ": a driver froze it for a copy and stopped before thawing it");
                    thawed = Optional.of(mountPoint);
                }
            } catch (IllegalArgumentException | IOException e) {
                // Unmounted since: nothing left to thaw through this path.
                LOG.log(System.Logger.Level.DEBUG, () -> "left-over freeze of " + mountPoint + ": " + e.getMessage());
            }
        }
        stopWatchdog(fields.get("watchdog"));
        Files.deleteIfExists(record);
        return thawed;
    }

    /**
     * A process outside this JVM that thaws the filesystem after the limit, if the record still
     * carries this token then: the guarantee that holds even when this JVM is killed.
     */
    private Process startWatchdog(Path mountPoint, Path record, String token) throws IOException {
        String seconds = String.valueOf(Math.max(1, limit.toMillis()) / 1000.0);
        String script = "sleep \"$1\"; grep -qxF \"token=$2\" \"$3\" 2>/dev/null && mountpoint -q \"$4\" "
                + "&& exec fsfreeze --unfreeze \"$4\"";
        return new ProcessBuilder("/bin/sh", "-c", script, "hearth-thaw-watchdog", seconds, token,
                record.toString(), mountPoint.toString())
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
    }

    /** Kills a dead driver's watchdog, if that PID still runs our watchdog script. */
    private static void stopWatchdog(String pid) {
        if (pid == null || !pid.matches("[0-9]{1,10}")) {
            return;
        }
        ProcessHandle.of(Long.parseLong(pid))
                .filter(p -> p.info().arguments().map(args -> List.of(args).contains("hearth-thaw-watchdog"))
                        .orElse(false))
                .ifPresent(ProcessHandle::destroyForcibly);
    }

    private Path record(Path mountPoint) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest(mountPoint.toString().getBytes(StandardCharsets.UTF_8));
            return records.resolve(HexFormat.of().formatHex(digest, 0, 16) + SUFFIX);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    private static String encode(Path mountPoint, String token, long watchdogPid) {
        return "mount=" + mountPoint + "\ntoken=" + token + "\nwatchdog=" + watchdogPid + "\n";
    }

    private static Map<String, String> decode(String text) {
        return text.lines()
                .filter(line -> line.indexOf('=') > 0)
                .collect(Collectors.toMap(line -> line.substring(0, line.indexOf('=')),
                        line -> line.substring(line.indexOf('=') + 1), (a, b) -> b));
    }
}
