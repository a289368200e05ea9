package dev.hearth.storage.file;

import java.util.HashMap;
import java.util.Map;

/**
 * The pool's records (volumes and snapshots) as last decoded, kept while the pool's inotify watch
 * says their files are unchanged: a ListVolumes of 1,000 volumes read and decoded 1,000 files on
 * every walk through its pages, about 35 us each. {@link ImageCensus} drops a record the moment
 * its file comes, goes or is rewritten, and drops them all when it must list the directories again
 * (lost events, a replaced directory, no inotify); a reader catches the census up first, so what it
 * gets is what the file held when its call began.
 *
 * <p>A record read while a change was being told is not kept ({@link #put} with the count of changes
 * seen before the read): the change may be newer than what was read.
 */
final class RecordCache implements ImageCensus.RecordWatcher {

    /** More records than any pool holds (its volumes are capped far below): past it, nothing more is kept. */
    static final int LIMIT = 1 << 14;

    private final Map<String, Object> records = new HashMap<>();
    /** Bumped by every record dropped, so that a read overtaken by a change is not kept. */
    private long changes;

    /** The record kept for this file (its path as a string), or null. */
    synchronized Object get(String path) {
        return records.get(path);
    }

    /** The count of changes so far: pass it to {@link #put} with what is read after it. */
    synchronized long changes() {
        return changes;
    }

    /** Keeps what was read from this file, unless a change was told since {@code changesBefore}. */
    synchronized void put(String path, Object record, long changesBefore) {
        if (changes == changesBefore && records.size() < LIMIT) {
            records.put(path, record);
        }
    }

    synchronized int size() {
        return records.size();
    }

    @Override
    public synchronized void changed(String record) {
        changes++;
        records.remove(record);
    }

    @Override
    public synchronized void unknown() {
        changes++;
        records.clear();
    }
}
