package dev.hearth.storage.device;

import dev.hearth.linux.Disk;
import dev.hearth.storage.Orphan;
import dev.hearth.storage.StorageException;
import dev.hearth.storage.VolumeId;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What a device pool's records and the node's disk claims say that belongs to no volume of the
 * pool, or a volume without its disk: read from the files and one scan of the disks, changing
 * nothing. The pool itself repairs the first two kinds when it next opens (see {@link DevicePool}).
 */
final class DeviceOrphans {

    private DeviceOrphans() {}

    static List<Orphan> of(String pool, VolumeRecords records, DiskClaims claims, List<Disk> disks) {
        List<Orphan> found = new ArrayList<>();
        Map<String, VolumeRecord> byId = new HashMap<>();
        records.all(pool).forEach(r -> byId.put(r.volume().id().toString(), r));
        Set<VolumeId> withFile = new HashSet<>(records.ids(pool)); // malformed records too
        List<DiskClaims.Claim> all;
        try {
            all = claims.all();
        } catch (IOException e) {
            throw new StorageException.Failed("reading the disk claims in " + claims.directory() + ": "
                    + e.getMessage(), e);
        }
        for (DiskClaims.Claim claim : all) {
            Optional<VolumeId> volume = VolumeId.parse(claim.holder()).filter(id -> id.pool().equals(pool));
            if (claim.pool().equals(pool) && volume.isPresent() && !byId.containsKey(claim.holder())) {
                found.add(new Orphan(pool, Orphan.Kind.BACKING_WITHOUT_RECORD, claimFile(claims, claim.disk()), volume,
                        "disk " + claim.disk() + " is claimed for a volume that has " + (withFile.contains(volume.get())
                                ? "a malformed record (changed or damaged on the node; the disk stays claimed until "
                                        + "the record is restored)"
                                : "no record: a create cut short between the claim and the record (the driver gives"
                                        + " the disk back when it next starts, or when the create is retried)")));
            }
        }
        for (VolumeRecord record : byId.values()) {
            VolumeId id = record.volume().id();
            String file = records.directory().resolve(id.toString()).toString();
            Optional<DiskClaims.Claim> claim = all.stream().filter(c -> c.disk().equals(record.disk())).findFirst();
            if (record.releasing()) {
                found.add(new Orphan(pool, Orphan.Kind.UNFINISHED, file, Optional.of(id), "a delete in progress, or "
                        + "one cut short: disk " + record.disk() + " is to be wiped before it is given back ("
                        + (Located.find(record.disk(), disks) instanceof Located.Missing
                                ? "the disk is gone; it is wiped when it comes back"
                                : "the driver finishes it when it next starts, or when the delete is retried") + ")"));
            } else if (claim.isEmpty() || !claim.get().holder().equals(id.toString())) {
                found.add(new Orphan(pool, Orphan.Kind.RECORD_WITHOUT_BACKING, file, Optional.of(id), "the volume's "
                        + "disk " + record.disk() + " is " + claim.map(c -> "claimed by " + c.describe())
                                .orElse("claimed by nothing, so another pool could take it (the driver claims it "
                                        + "again when it next starts)")));
            } else if (Located.find(record.disk(), disks) instanceof Located.Missing missing) {
                found.add(new Orphan(pool, Orphan.Kind.RECORD_WITHOUT_BACKING, file, Optional.of(id),
                        missing.problem()));
            }
        }
        temporaryFiles(pool, records.directory(), found);
        found.sort(Comparator.comparing(Orphan::subject));
        return found;
    }

    /** A record being written, or one a crash left half-written beside the old one. */
    private static void temporaryFiles(String pool, Path directory, List<Orphan> found) {
        if (!Files.isDirectory(directory)) {
            return;
        }
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory, "*.tmp")) {
            for (Path file : stream) {
                String name = file.getFileName().toString();
                found.add(new Orphan(pool, Orphan.Kind.UNFINISHED, file.toString(),
                        VolumeId.parse(name.substring(0, name.length() - ".tmp".length())),
                        "a volume record being written, or left by a crash (the record beside it, if any, holds)"));
            }
        } catch (IOException e) {
            throw new StorageException.Failed("listing " + directory + ": " + e.getMessage(), e);
        }
    }

    private static String claimFile(DiskClaims claims, DiskIdentity disk) {
        return claims.directory().resolve(disk.key() + ".claim").toString();
    }
}
