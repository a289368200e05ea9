package dev.hearth.storage.file;

import dev.hearth.linux.FileSystems;
import dev.hearth.linux.FsStats;
import dev.hearth.linux.LinuxException;
import dev.hearth.storage.Capacity;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * A file pool's space: what its images hold (their full length, thin or not) plus what the
 * operations in flight have claimed for images they are still writing. A claim is checked against
 * the space left and recorded in one step, so two creates can never both take the last GiB.
 * Claims live in memory only for as long as their operation runs; what a crash leaves on disk is
 * counted from the files themselves.
 *
 * <p>Two limits apply: the pool's capacity (or, without one, its filesystem's size less the
 * reserve), and the filesystem's free space less the reserve, so that the pool never takes the
 * last of a disk that the node needs for itself. A claim's growth counts against that free space
 * from the moment it is made, before its blocks are written.
 */
final class Allocation {

    static final long GRANULARITY = 1L << 20;

    private final FilePoolConfig config;
    private final List<Path> directories;
    private final Map<Path, Claim> claims = new ConcurrentHashMap<>();
    /** Claims begun or ended so far: a listing made before the last of them is out of date. */
    private final java.util.concurrent.atomic.AtomicLong changes = new java.util.concurrent.atomic.AtomicLong();
    private volatile ImageBytes lastListing;
    /**
     * The images and their lengths as last read under the lock, so that a claim stats only what is
     * new or claimed since, and lists the directories only when inotify cannot say what changed:
     * an image's length changes only under a claim, which marks its file to be read again when it
     * begins and when it ends.
     */
    private final ImageCensus census;

    /**
     * How long after a directory's last change a listing of it may be kept: longer than the
     * filesystem's timestamp granularity. ext4, xfs, btrfs and tmpfs stamp with the kernel's coarse
     * clock, one tick (at most 10 ms); others may be far coarser (NFS servers, FAT: up to 2 s).
     */
    static final java.time.Duration RACY_FINE = java.time.Duration.ofMillis(50);
    static final java.time.Duration RACY_COARSE = java.time.Duration.ofSeconds(2);
    private static final java.util.Set<String> FINE_TIMESTAMPS = java.util.Set.of("ext4", "ext3", "ext2", "xfs",
            "btrfs", "tmpfs");
    /** {@link #RACY_FINE} or {@link #RACY_COARSE}, by the pool filesystem's type; read on first use. */
    private volatile java.time.Duration racy;

    /** A file that is to be {@code size} bytes long, {@code growth} more than it was when claimed. */
    private record Claim(long size, long growth) {}

    Allocation(FilePoolConfig config, List<Path> directories) {
        this.config = config;
        this.directories = List.copyOf(directories);
        this.census = new ImageCensus(this.directories);
    }

    /** Ends the watch on the directories; a later count lists them. */
    synchronized void close() {
        census.close();
    }

    /** How many times the exact count has listed the directories (tests: once, while the watch holds). */
    synchronized long listings() {
        return census.listings();
    }

    /** The exact count, under the lock that claims take: what a claim is checked against. */
    synchronized Capacity capacity() {
        return capacity(allocatedBytes());
    }

    /**
     * The capacity to report (GetCapacity, metrics), without the claims' lock and, while the pool
     * directories are unchanged, without listing them: their images' lengths summed at the last
     * listing, with the claims in flight counted as {@link #capacity()} counts them. A report can
     * be a claim behind the exact count for as long as a create takes; a claim is never checked
     * against it.
     */
    Capacity reported() {
        return capacity(Math.max(0, imageBytes().excluding(claims.keySet()) + claimedBytes()));
    }

    private Capacity capacity(long allocated) {
        FsStats fs = statvfs();
        long reserve = config.reserve().bytesOf(fs.totalBytes());
        long total = config.capacityBytes() > 0 ? config.capacityBytes() : Math.max(0, fs.totalBytes() - reserve);
        long pending = claims.values().stream().mapToLong(Claim::growth).sum();
        long free = fs.availableBytes() - reserve - pending;
        long available = Math.max(0, Math.min(total - allocated, free));
        available = available / GRANULARITY * GRANULARITY;
        return new Capacity(total, allocated, available, available, GRANULARITY);
    }

    /**
     * Claims room for {@code file} to be (or grow to) {@code size} bytes, or says there is none.
     * The claim holds until {@link #release}.
     */
    synchronized void claim(Path file, long size, String purpose) {
        long current = lengthOf(file);
        long needed = size - current;
        long available = capacity().availableBytes();
        if (needed > available) {
            throw new StorageException.Exhausted("pool '" + config.name() + "' has " + available
                    + " bytes available; " + purpose + " needs " + needed + " more");
        }
        claims.put(file, new Claim(size, Math.max(0, needed)));
        census.forget(file);
        changes.incrementAndGet();
    }

    /**
     * Renames a finished image into place and ends its claim in one step, so that no count sees
     * both the claim and the image (refusing room that exists) or neither (handing it out twice).
     */
    synchronized void complete(Path partial, Path image) throws IOException {
        Files.move(partial, image, StandardCopyOption.ATOMIC_MOVE);
        claims.remove(partial);
        census.forget(partial);
        census.forget(image);
        changes.incrementAndGet();
    }

    /** Ends a claim whose operation failed or has completed; ending one twice is harmless. */
    synchronized void release(Path file) {
        claims.remove(file);
        census.forget(file);
        changes.incrementAndGet();
    }

    /** Claimed files at their claimed size, or their length if already longer. */
    private long claimedBytes() {
        long total = 0;
        for (var claim : claims.entrySet()) {
            total += Math.max(claim.getValue().size(), lengthOf(claim.getKey()));
        }
        return total;
    }

    /**
     * The lengths of the pool's image files at one listing of its directories. An image's length
     * changes only under a claim (create, expand, snapshot) and an image comes or goes only by a
     * change to its directory: the sum stays good while no claim has begun or ended (the change
     * count) and the directories' modification times are what they were. A listing made within
     * {@link #racy} of a directory's last change is not kept, since a change in the same tick of
     * the filesystem's clock would leave the time as it was.
     */
    private ImageBytes imageBytes() {
        ImageBytes cached = lastListing;
        List<Long> stamps = directoryStamps();
        long change = changes.get();
        if (cached != null && cached.change() == change && cached.stamps().equals(stamps)) {
            return cached;
        }
        long started = System.currentTimeMillis();
        Map<Path, Long> lengths = new java.util.HashMap<>();
        long sum = 0;
        for (Path directory : directories) {
            for (Path file : list(directory)) {
                // Read, not remembered: this runs without the lock, and a claim may begin meanwhile.
                Long known = census.known(file);
                if (known != null || isImage(file)) {
                    long length = known != null ? known : lengthOf(file);
                    lengths.put(file, length);
                    sum += length;
                }
            }
        }
        ImageBytes listed = new ImageBytes(sum, lengths, stamps, change);
        long racyMillis = racy().toMillis();
        boolean settled = stamps.stream().allMatch(stamp -> stamp < started - racyMillis);
        if (settled && changes.get() == change && directoryStamps().equals(stamps)) {
            lastListing = listed;
        }
        return listed;
    }

    private java.time.Duration racy() {
        java.time.Duration known = racy;
        if (known == null) {
            String type;
            try {
                type = Files.getFileStore(config.directory()).type();
            } catch (IOException | RuntimeException e) {
                type = "unknown";
            }
            known = FINE_TIMESTAMPS.contains(type) ? RACY_FINE : RACY_COARSE;
            racy = known;
        }
        return known;
    }

    /** The directories' modification times in milliseconds; -1 for one that is gone. */
    private List<Long> directoryStamps() {
        List<Long> stamps = new java.util.ArrayList<>(directories.size());
        for (Path directory : directories) {
            try {
                stamps.add(Files.getLastModifiedTime(directory).toMillis());
            } catch (NoSuchFileException e) {
                stamps.add(-1L);
            } catch (IOException e) {
                throw new StorageException.Failed("reading pool directory " + directory + ": " + e.getMessage(), e);
            }
        }
        return List.copyOf(stamps);
    }

    /** The images' total length at one listing, and each one's, to take out those now claimed. */
    private record ImageBytes(long sum, Map<Path, Long> lengths, List<Long> stamps, long change) {

        long excluding(java.util.Set<Path> claimed) {
            long total = sum;
            for (Path file : claimed) {
                total -= lengths.getOrDefault(file, 0L);
            }
            return total;
        }
    }

    /** Under the lock: every image's length (remembered, or read and remembered) and the claims'. */
    private long allocatedBytes() {
        java.util.Set<String> claimed = new java.util.HashSet<>();
        claims.keySet().forEach(file -> claimed.add(file.toString()));
        long total = census.total(claimed);
        for (var claim : claims.entrySet()) {
            total += Math.max(claim.getValue().size(), lengthOf(claim.getKey()));
        }
        return total;
    }

    /** Whether a file of a pool directory holds an image's bytes: an image, or one being made, of ours. */
    private static boolean isImage(Path file) {
        String name = file.getFileName().toString();
        return (name.endsWith(ImageFiles.IMAGE) || name.endsWith(ImageFiles.PARTIAL)) && ImageFiles.ours(file);
    }

    private static long lengthOf(Path file) {
        try {
            return Files.size(file);
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw new StorageException.Failed("sizing " + file + ": " + e.getMessage(), e);
        }
    }

    private static List<Path> list(Path directory) {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new StorageException.Failed("listing pool directory " + directory + ": " + e.getMessage(), e);
        }
    }

    private FsStats statvfs() {
        try {
            return FileSystems.statvfs(config.directory());
        } catch (LinuxException e) {
            throw new StorageException.Failed("statvfs of pool '" + config.name() + "': " + e.getMessage(), e);
        }
    }
}
