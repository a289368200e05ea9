package dev.hearth.storage.lvm;

import dev.hearth.storage.Claim;
import dev.hearth.storage.Snapshot;
import dev.hearth.storage.SnapshotId;
import dev.hearth.storage.Volume;
import dev.hearth.storage.VolumeId;
import dev.hearth.storage.VolumeSource;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * What hearth writes on a logical volume, as LVM tags given in the same {@code lvcreate} that
 * makes it, so the volume and its record can never exist one without the other. LVM allows tags
 * of {@code [A-Za-z0-9_+.-/=!:&#]} up to 1,024 bytes: free text (a CSI name, parameters) is
 * base64url.
 *
 * <ul>
 *   <li>{@code hearth.kind=volume|snapshot|transfer}: what the LV is to hearth;
 *   <li>{@code hearth.name=<b64>}: the CSI name it was made for;
 *   <li>{@code hearth.requested=<bytes>}: the size asked for (the LV's size is rounded to extents);
 *   <li>{@code hearth.source=snapshot:<id>|volume:<id>}: a restore's or clone's source;
 *   <li>{@code hearth.of=<volume id>}: a snapshot's source volume;
 *   <li>{@code hearth.params=<b64>}: the pool parameters it was made with, if any;
 *   <li>{@code hearth.created=<epoch ms>};
 *   <li>{@code hearth.pvc=<namespace>/<name>} and {@code hearth.pv=<pv name>}: the Kubernetes claim
 *       it was made for, if the request named one ({@link Claim}). As they are, not base64: Kubernetes
 *       names are lowercase letters, digits, '-' and '.', all in LVM's tag alphabet, and at most
 *       11 + 63 + 1 + 253 bytes, so {@code lvs -o tags} shows them readably;
 *   <li>{@code hearth.copying}: its content is still being copied in (a thick snapshot, restore
 *       or clone); it is not to be used until the tag is gone.
 * </ul>
 */
final class LvTags {

    static final String KIND = "hearth.kind=";
    static final String VOLUME = KIND + "volume";
    static final String SNAPSHOT = KIND + "snapshot";
    /** A temporary copy-on-write snapshot a thick copy reads from. */
    static final String TRANSFER = KIND + "transfer";
    static final String NAME = "hearth.name=";
    static final String REQUESTED = "hearth.requested=";
    static final String SOURCE = "hearth.source=";
    static final String OF = "hearth.of=";
    static final String PARAMS = "hearth.params=";
    static final String CREATED = "hearth.created=";
    static final String COPYING = "hearth.copying";
    static final String PVC = "hearth.pvc=";
    static final String PV = "hearth.pv=";

    private LvTags() {}

    static List<String> volume(String name, long requested, Map<String, String> parameters,
            Optional<VolumeSource> source, Optional<Claim> claim, Instant created, boolean copying) {
        List<String> tags = new ArrayList<>(List.of(VOLUME, NAME + encode(name), REQUESTED + requested,
                CREATED + created.toEpochMilli()));
        source.ifPresent(s -> tags.add(SOURCE + s));
        claim.ifPresent(c -> {
            tags.add(PVC + c.namespace() + "/" + c.name());
            if (!c.pvName().isEmpty()) {
                tags.add(PV + c.pvName());
            }
        });
        if (!parameters.isEmpty()) {
            StringBuilder text = new StringBuilder();
            new TreeMap<>(parameters).forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
            tags.add(PARAMS + encode(text.toString()));
        }
        if (copying) {
            tags.add(COPYING);
        }
        return tags;
    }

    static List<String> snapshot(String name, VolumeId source, Instant created, boolean copying) {
        List<String> tags = new ArrayList<>(List.of(SNAPSHOT, NAME + encode(name), OF + source,
                CREATED + created.toEpochMilli()));
        if (copying) {
            tags.add(COPYING);
        }
        return tags;
    }

    /** {@code --addtag T} for each tag. */
    static List<String> addTags(List<String> tags) {
        List<String> args = new ArrayList<>();
        for (String tag : tags) {
            args.add("--addtag");
            args.add(tag);
        }
        return args;
    }

    /** The volume an LV records, if it is a complete volume record of hearth's. */
    static Optional<Volume> toVolume(VolumeId id, LogicalVolume lv) {
        if (!lv.tags().contains(VOLUME)) {
            return Optional.empty();
        }
        Optional<String> name = value(lv.tags(), NAME).flatMap(LvTags::decode);
        Optional<Instant> created = value(lv.tags(), CREATED).flatMap(LvTags::millis);
        if (name.isEmpty() || created.isEmpty()) {
            return Optional.empty();
        }
        Optional<VolumeSource> source = value(lv.tags(), SOURCE).flatMap(VolumeSource::parse);
        Map<String, String> parameters = new TreeMap<>();
        value(lv.tags(), PARAMS).flatMap(LvTags::decode).ifPresent(text -> {
            for (String line : text.split("\n")) {
                int eq = line.indexOf('=');
                if (eq > 0) {
                    parameters.put(line.substring(0, eq), line.substring(eq + 1));
                }
            }
        });
        return Optional.of(new Volume(id, name.get(), lv.sizeBytes(), parameters, source, created.get(),
                claim(lv.tags())));
    }

    /** The claim the tags record; none if they record none, or one Kubernetes could not have made. */
    static Optional<Claim> claim(Set<String> tags) {
        Optional<String> pvc = value(tags, PVC);
        int slash = pvc.map(text -> text.indexOf('/')).orElse(-1);
        if (slash < 0) {
            return Optional.empty();
        }
        try {
            return Optional.of(new Claim(pvc.get().substring(0, slash), pvc.get().substring(slash + 1),
                    value(tags, PV).orElse("")));
        } catch (IllegalArgumentException e) {
            return Optional.empty(); // a label only: a tag changed by hand must not make the volume unreadable
        }
    }

    /** The snapshot an LV records, if it is a snapshot record of hearth's. */
    static Optional<Snapshot> toSnapshot(SnapshotId id, LogicalVolume lv) {
        if (!lv.tags().contains(SNAPSHOT)) {
            return Optional.empty();
        }
        Optional<String> name = value(lv.tags(), NAME).flatMap(LvTags::decode);
        Optional<VolumeId> of = value(lv.tags(), OF).flatMap(VolumeId::parse);
        Optional<Instant> created = value(lv.tags(), CREATED).flatMap(LvTags::millis);
        if (name.isEmpty() || of.isEmpty() || created.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new Snapshot(id, name.get(), of.get(), lv.sizeBytes(), created.get(),
                !lv.tags().contains(COPYING)));
    }

    static Optional<String> value(Set<String> tags, String prefix) {
        return tags.stream().filter(t -> t.startsWith(prefix)).map(t -> t.substring(prefix.length())).findFirst();
    }

    static String encode(String text) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    static Optional<String> decode(String text) {
        try {
            return Optional.of(new String(Base64.getUrlDecoder().decode(text), StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    private static Optional<Instant> millis(String text) {
        try {
            return Optional.of(Instant.ofEpochMilli(Long.parseLong(text)));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }
}
