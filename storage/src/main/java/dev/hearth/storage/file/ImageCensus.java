package dev.hearth.storage.file;

import dev.hearth.linux.Inotify;
import dev.hearth.linux.LinuxException;
import dev.hearth.storage.StorageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The image files of a file pool's directories and their lengths, for {@link Allocation}'s exact
 * count. The directories are listed once; after that an inotify watch on each says which entries
 * came or went, so a count reads only the queued events and stats only new files. Listing the
 * directory on every claim made each CreateVolume cost about 3 ms more per 1,000 volumes.
 *
 * <p>It is exact: the kernel queues an event in the very call that adds, renames or removes an
 * entry, whoever makes it, so a count sees every change made before it. Lost events (the queue
 * overflowed), a watch gone (its directory removed or replaced), or no inotify at all (the user's
 * instances used up) make the next count list the directories again, as every count did before.
 * An image's length changes only under a claim: {@link #forget} marks it to be read again.
 *
 * <p>Not thread-safe: {@link Allocation} uses it only under its lock.
 */
final class ImageCensus implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(ImageCensus.class.getName());

    /**
     * What is watched. {@code IN_CLOSE_WRITE} is for records edited in place; {@code IN_MODIFY} is
     * not watched: writes through a loop device into an image would flood the queue.
     */
    private static final int EVENTS = Inotify.IN_CREATE | Inotify.IN_DELETE | Inotify.IN_MOVED_FROM
            | Inotify.IN_MOVED_TO | Inotify.IN_CLOSE_WRITE | Inotify.IN_DELETE_SELF | Inotify.IN_MOVE_SELF;
    /** A length not read yet (new, or changed under a claim). */
    private static final long UNKNOWN = -1;

    /** Told, under the same lock, of each record that came, went or changed. */
    interface RecordWatcher {
        /** The record at this path (as a string) came, went or was rewritten. */
        void changed(String record);

        /** Any record may have changed: the directories are being listed again. */
        void unknown();
    }

    private final List<Path> directories;
    private final RecordWatcher watcher;
    /** Each image's length (or {@link #UNKNOWN}), by its path as a string. */
    private final Map<String, Long> lengths = new HashMap<>();
    private final Map<Integer, Path> watches = new HashMap<>();
    private Inotify inotify;
    private boolean opened;
    /** Whether a failed watch was logged: once, not at every count. */
    private boolean warnedUnwatched;
    /** Whether {@link #lengths} holds every image, so that the events alone keep it current. */
    private boolean complete;
    private long listings;

    ImageCensus(List<Path> directories, RecordWatcher watcher) {
        this.directories = List.copyOf(directories);
        this.watcher = watcher;
    }

    /** The images' total length, those in {@code excluded} (paths as strings) left out. */
    long total(Set<String> excluded) {
        catchUp();
        long total = 0;
        for (var entries = lengths.entrySet().iterator(); entries.hasNext(); ) {
            var entry = entries.next();
            if (excluded.contains(entry.getKey())) {
                continue;
            }
            long length = entry.getValue();
            if (length == UNKNOWN) {
                length = existingLength(Path.of(entry.getKey()));
                if (length < 0) {
                    entries.remove();
                    continue;
                }
                entry.setValue(length);
            }
            total += length;
        }
        return total;
    }

    /**
     * Catches up with the events, so the watcher has been told of every record change made before;
     * false when the watch cannot say what changed (no inotify, or a directory that cannot be
     * watched), and so what is kept by it must not be used.
     */
    boolean watching() {
        catchUp();
        return complete;
    }

    /**
     * Which of {@code images} (paths as strings) exist, as the watch has seen the directories up to
     * now (their events read once); empty when the watch cannot say, and the files must be asked.
     */
    Optional<Set<String>> existing(Collection<String> images) {
        catchUp();
        if (!complete) {
            return Optional.empty();
        }
        Set<String> existing = new HashSet<>();
        for (String image : images) {
            if (lengths.containsKey(image)) {
                existing.add(image);
            }
        }
        return Optional.of(existing);
    }

    /** Applies the events queued since the last count; lists the directories where they cannot say what changed. */
    private void catchUp() {
        if (!opened) {
            opened = true;
            open();
        }
        if (complete) {
            applyEvents();
        }
        if (!complete) {
            relist();
        }
    }

    /** The file's length changes (a claim on it begins or ends): read it again at the next count. */
    void forget(Path file) {
        lengths.computeIfPresent(file.toString(), (key, length) -> UNKNOWN);
    }

    /** How many times the directories were listed: once, unless a watch could not say what changed. */
    long listings() {
        return listings;
    }

    private void open() {
        try {
            inotify = Inotify.open();
        } catch (LinuxException e) {
            inotify = null; // every count lists, as without the census
            // Most often EMFILE: the node's fs.inotify.max_user_instances (128 by default) used up.
            LOG.log(System.Logger.Level.WARNING, () -> "no inotify watch on " + directories + " (" + e.getMessage()
                    + "): each claim lists the pool's directories instead, which costs more on a full pool; "
                    + "raising the node's fs.inotify.max_user_instances lets the next start watch them");
        }
    }

    private void applyEvents() {
        List<Inotify.Event> events;
        try {
            events = inotify.drain();
        } catch (LinuxException e) {
            complete = false;
            return;
        }
        for (Inotify.Event event : events) {
            Path directory = watches.get(event.watch());
            if (event.is(Inotify.IN_Q_OVERFLOW | Inotify.IN_IGNORED | Inotify.IN_DELETE_SELF | Inotify.IN_MOVE_SELF)
                    || directory == null) {
                complete = false;
                return;
            }
            String name = event.name();
            if (name.endsWith(ImageFiles.METADATA)) {
                watcher.changed(directory.resolve(name).toString());
            }
            if (!holdsImageBytes(name)) {
                continue;
            }
            String key = directory.resolve(name).toString();
            if (event.is(Inotify.IN_DELETE | Inotify.IN_MOVED_FROM)) {
                lengths.remove(key);
            } else if (event.is(Inotify.IN_CREATE | Inotify.IN_MOVED_TO) && ImageFiles.ours(directory.resolve(name))) {
                lengths.put(key, UNKNOWN);
            }
        }
    }

    /**
     * Lists the directories, keeping the lengths already known of the files still there. The watches
     * are (re)made first, so a change during the listing is in both, which is harmless.
     */
    private void relist() {
        listings++;
        watcher.unknown();
        boolean watched = inotify != null;
        if (watched) {
            try {
                inotify.drain(); // what is queued is about to be listed
                watches.clear();
                for (Path directory : directories) {
                    watches.put(inotify.watch(directory, EVENTS), directory);
                }
            } catch (LinuxException e) {
                watched = false; // a directory missing or unwatchable: list at every count
                if (!warnedUnwatched) {
                    warnedUnwatched = true;
                    LOG.log(System.Logger.Level.WARNING, () -> "the pool's directories " + directories
                            + " cannot be watched (" + e.getMessage() + "): each claim lists them instead");
                }
            }
        }
        Map<String, Long> listed = new HashMap<>();
        for (Path directory : directories) {
            for (Path file : list(directory)) {
                String name = file.getFileName().toString();
                if (holdsImageBytes(name)) {
                    String key = file.toString();
                    Long known = lengths.get(key);
                    if (known != null || ImageFiles.ours(file)) {
                        listed.put(key, known != null ? known : UNKNOWN);
                    }
                }
            }
        }
        lengths.keySet().retainAll(listed.keySet());
        lengths.putAll(listed);
        complete = watched;
    }

    /** Whether a file of this name would hold an image's bytes, if ours: an image, or one being made. */
    private static boolean holdsImageBytes(String name) {
        return name.endsWith(ImageFiles.IMAGE) || name.endsWith(ImageFiles.PARTIAL);
    }

    /** The file's length, or -1 if it is gone. */
    private static long existingLength(Path file) {
        try {
            return Files.size(file);
        } catch (NoSuchFileException e) {
            return -1;
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

    @Override
    public void close() {
        if (inotify != null) {
            inotify.close();
            inotify = null;
        }
        complete = false;
        watcher.unknown();
    }
}
