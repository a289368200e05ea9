package dev.hearth.storage.lvm;

import dev.hearth.storage.tool.ToolException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Reads a volume group's committed metadata straight from its physical volumes, so that listing
 * a pool's volumes, checking one's tags or a thin pool's room costs no lvm process (each costs
 * 50-350 ms to start, far more than the read). Which devices are the group's PVs is asked of
 * LVM once ({@code pvs}, which applies LVM's own device filters) and again whenever the disks
 * no longer vouch for that answer.
 *
 * <p>The reader only answers when everything agrees: every PV the metadata lists has a label
 * with its UUID on a device LVM named, none is recorded missing, every checksum matches, and the
 * copies with the highest sequence number are the same text. Otherwise it answers empty and the
 * pool asks LVM itself, which also handles what this reader does not (a partial group, repairs,
 * a group created since the last {@code pvs}).
 */
final class MetadataReader {

    private static final System.Logger LOG = System.getLogger(MetadataReader.class.getName());
    /** A checksum mismatch means LVM was writing at that moment; the next read sees its commit. */
    private static final int ATTEMPTS = 3;

    private final Lvm lvm;
    /** Group name to its PVs' devices, from the last {@code pvs}; null until asked. */
    private volatile Map<String, List<Path>> devices;

    MetadataReader(Lvm lvm) {
        this.lvm = lvm;
    }

    /** The group's metadata; empty when only LVM can say (unknown group, a PV that does not vouch, a parse refused). */
    Optional<GroupMetadata> read(String group) {
        String why = null;
        boolean askPvs = false;
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            List<Path> pvs = known(askPvs).get(group);
            if (pvs == null || pvs.isEmpty()) {
                return Optional.empty();
            }
            try {
                return Optional.of(readFrom(group, pvs));
            } catch (Disowned e) {
                why = e.getMessage();
                askPvs = true;
            } catch (IOException | IllegalArgumentException e) {
                why = e.getMessage();
                askPvs = false;
            }
        }
        LOG.log(System.Logger.Level.DEBUG, "reading volume group " + group + " from its PVs: " + why
                + "; asking lvm instead");
        return Optional.empty();
    }

    /**
     * LVM says the group exists: if the last {@code pvs} did not know it (it was made since, or
     * its disks appeared since), the next read asks again.
     */
    void groupExists(String group) {
        Map<String, List<Path>> current = devices;
        if (current != null && !current.containsKey(group)) {
            devices = null;
        }
    }

    private Map<String, List<Path>> known(boolean refresh) {
        Map<String, List<Path>> current = devices;
        if (current == null || refresh) {
            try {
                current = lvm.physicalVolumes().stream().filter(pv -> !pv.group().isEmpty())
                        .collect(Collectors.groupingBy(Lvm.PhysicalVolume::group,
                                Collectors.mapping(Lvm.PhysicalVolume::device, Collectors.toList())));
            } catch (ToolException | IllegalArgumentException e) {
                LOG.log(System.Logger.Level.DEBUG, "listing physical volumes: " + e.getMessage());
                current = Map.of();
            }
            devices = current;
        }
        return current;
    }

    private static GroupMetadata readFrom(String group, List<Path> pvs) throws IOException {
        Set<String> labelled = new HashSet<>();
        List<String> texts = new ArrayList<>();
        for (Path device : pvs) {
            PhysicalVolumeLabel.Contents contents;
            try {
                contents = PhysicalVolumeLabel.read(device);
            } catch (java.nio.file.NoSuchFileException e) {
                throw new Disowned(device + " is gone");
            } catch (PhysicalVolumeLabel.Torn e) {
                throw e; // read again, from the same devices
            } catch (PhysicalVolumeLabel.Unreadable e) {
                throw new Disowned(e.getMessage());
            }
            labelled.add(contents.pvUuid());
            texts.addAll(contents.texts());
        }
        GroupMetadata newest = null;
        String newestText = null;
        for (String text : texts) {
            GroupMetadata metadata = GroupMetadata.of(MetadataText.parse(text));
            if (!metadata.name().equals(group)) {
                throw new Disowned("a PV listed for " + group + " holds metadata of " + metadata.name());
            }
            if (newest == null || metadata.seqno() > newest.seqno()) {
                newest = metadata;
                newestText = text;
            } else if (metadata.seqno() == newest.seqno() && !text.equals(newestText)) {
                throw new IllegalArgumentException("two copies of sequence number " + metadata.seqno() + " differ");
            }
        }
        if (newest == null) {
            throw new Disowned("no PV of " + group + " holds a metadata copy");
        }
        for (GroupMetadata.Pv pv : newest.pvs()) {
            if (pv.missing()) {
                throw new IllegalArgumentException("PV " + pv.key() + " is recorded missing");
            }
            if (!labelled.contains(pv.uuid())) {
                throw new Disowned("PV " + pv.key() + " (" + pv.uuid() + ") is on no device pvs listed");
            }
        }
        return newest;
    }

    /** The devices named do not match the group's PVs: ask {@code pvs} again. */
    private static final class Disowned extends IOException {
        Disowned(String message) {
            super(message);
        }
    }
}
