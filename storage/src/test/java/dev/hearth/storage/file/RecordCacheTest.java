package dev.hearth.storage.file;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RecordCacheTest {

    private final RecordCache cache = new RecordCache();

    @Test
    void keepsWhatWasReadUntilItsFileChanges() {
        cache.put("/pool/a.meta", "a", cache.changes());
        cache.put("/pool/b.meta", "b", cache.changes());

        cache.changed("/pool/a.meta");

        assertThat(cache.get("/pool/a.meta")).isNull();
        assertThat(cache.get("/pool/b.meta")).isEqualTo("b");
    }

    @Test
    void aReadOvertakenByAChangeIsNotKept() {
        long before = cache.changes();
        cache.changed("/pool/other.meta"); // told while the read was under way: it may be about this file

        cache.put("/pool/a.meta", "stale", before);

        assertThat(cache.get("/pool/a.meta")).isNull();
        cache.put("/pool/a.meta", "fresh", cache.changes());
        assertThat(cache.get("/pool/a.meta")).isEqualTo("fresh");
    }

    @Test
    void anUnknownChangeDropsEverything() {
        cache.put("/pool/a.meta", "a", cache.changes());
        long before = cache.changes();

        cache.unknown();
        cache.put("/pool/b.meta", "b", before);

        assertThat(cache.size()).isZero();
    }

    @Test
    void keepsNoMoreThanItsLimit() {
        for (int i = 0; i <= RecordCache.LIMIT; i++) {
            cache.put("/pool/" + i + ".meta", i, cache.changes());
        }

        assertThat(cache.size()).isEqualTo(RecordCache.LIMIT);
        assertThat(cache.get("/pool/" + RecordCache.LIMIT + ".meta")).isNull();
    }
}
