package dev.hearth.storage;

/** The part of a pool whose kind can grow its volumes in place (see {@link Pool#expansion()}). */
@FunctionalInterface
public interface Expansion {

    /**
     * Grows the volume to at least the range's required bytes; a volume already that large is
     * returned unchanged. A volume attached as a block device sees its new size at once.
     */
    Volume expand(VolumeId id, CapacityRange range);
}
