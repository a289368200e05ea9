package dev.hearth.storage.file;

import java.nio.file.Path;
import java.util.Optional;

/**
 * Where a restore's, clone's or snapshot's bytes come from: an image, how many bytes of it count,
 * and the block device it is attached as, if any (so a mounted filesystem is frozen for the copy);
 * {@code what} names the source in messages ("source volume ...").
 */
record Content(String what, Path image, long sizeBytes, Optional<Path> device) {}
