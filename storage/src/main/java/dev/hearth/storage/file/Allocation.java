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
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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
 *
 * <p>Every count is exact and cheap: {@link ImageCensus} lists the directories once and then
 * follows them by inotify, so a claim or a report reads a few events, not 1,000 directory entries.
 */
final class Allocation {

    static final long GRANULARITY = 1L << 20;

    private final FilePoolConfig config;
    private final Map<Path, Claim> claims = new ConcurrentHashMap<>();
    /**
     * The images and their lengths as last read under the lock, so that a count stats only what is
     * new or claimed since, and lists the directories only when inotify cannot say what changed:
     * an image's length changes only under a claim, which marks its file to be read again when it
     * begins and when it ends.
     */
    private final ImageCensus census;
    /** The records kept while the census's watch says their files are unchanged. */
    private final RecordCache records;

    /** A file that is to be {@code size} bytes long, {@code growth} more than it was when claimed. */
    private record Claim(long size, long growth) {}

    Allocation(FilePoolConfig config, List<Path> directories) {
        this(config, directories, new RecordCache());
    }

    /** Tells {@code records} of every record ({@code .meta}) that comes, goes or changes in the directories. */
    Allocation(FilePoolConfig config, List<Path> directories, RecordCache records) {
        this.config = config;
        this.records = records;
        this.census = new ImageCensus(directories, records);
    }

    /** Ends the watch on the directories; a later count lists them. */
    synchronized void close() {
        census.close();
    }

    /** How many times the directories have been listed (tests: once, while the watch holds). */
    synchronized long listings() {
        return census.listings();
    }

    /**
     * The records' count of changes once the census has caught up (so the cache has been told of
     * every change made before): unchanged while no record has come, gone or changed; -1 when the
     * watch cannot say, and nothing kept may be used.
     */
    synchronized long records() {
        return census.watching() ? records.changes() : -1;
    }

    /**
     * The exact count, under the lock that claims take: what a claim is checked against, and what
     * GetCapacity and the metrics report. A claim holds the lock only to count and record itself,
     * never while its image is written.
     */
    synchronized Capacity capacity() {
        return capacity(allocatedBytes());
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
    }

    /**
     * Which of {@code images} (paths as strings) exist, from the census's watch: one read of its
     * events for them all, where asking each file is a syscall apiece. Empty when the watch cannot say.
     */
    synchronized Optional<Set<String>> existing(Collection<String> images) {
        return census.existing(images);
    }

    /** Ends a claim whose operation failed or has completed; ending one twice is harmless. */
    synchronized void release(Path file) {
        claims.remove(file);
        census.forget(file);
    }

    /** Under the lock: every image's length (remembered, or read and remembered) and the claims'. */
    private long allocatedBytes() {
        Set<String> claimed = new HashSet<>();
        claims.keySet().forEach(file -> claimed.add(file.toString()));
        long total = census.total(claimed);
        for (var claim : claims.entrySet()) {
            total += Math.max(claim.getValue().size(), lengthOf(claim.getKey()));
        }
        return total;
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

    private FsStats statvfs() {
        try {
            return FileSystems.statvfs(config.directory());
        } catch (LinuxException e) {
            throw new StorageException.Failed("statvfs of pool '" + config.name() + "': " + e.getMessage(), e);
        }
    }
}
