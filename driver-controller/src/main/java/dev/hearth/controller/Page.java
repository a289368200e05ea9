package dev.hearth.controller;

import dev.hearth.storage.Quoted;
import dev.hearth.storage.StorageException;
import java.util.List;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * One page of a listing ordered by ID. The token is the ID of the first entry of the next page:
 * entries deleted or added between pages never make a page repeat or skip what is still there.
 */
record Page<T>(List<T> entries, String nextToken) {

    /**
     * @param sorted the full listing, ordered by {@code idOf}
     * @param isOurs whether a token has the form of an ID this driver issues
     */
    static <T> Page<T> of(List<T> sorted, Function<T, String> idOf, String token, int maxEntries,
            Predicate<String> isOurs) {
        if (maxEntries < 0) {
            throw new StorageException.InvalidArgument("max_entries must not be negative: " + maxEntries);
        }
        if (!token.isEmpty() && !isOurs.test(token)) {
            throw new StorageException.UnknownToken("starting_token " + Quoted.of(token)
                    + " was not issued by this driver");
        }
        List<T> rest = sorted.stream().filter(t -> token.isEmpty() || idOf.apply(t).compareTo(token) >= 0).toList();
        int count = maxEntries == 0 ? rest.size() : Math.min(maxEntries, rest.size());
        String next = count < rest.size() ? idOf.apply(rest.get(count)) : "";
        return new Page<>(rest.subList(0, count), next);
    }
}
