package dev.hearth.storage;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Optional;

/**
 * A volume's identity: {@code <pool>-<key>}, where the key is 26 base32 characters of the SHA-256
 * of the CSI request name. Deriving the ID from the name makes a CreateVolume retried after a
 * crash land on the volume it half-made. Only IDs of exactly this shape are accepted, so an ID
 * the driver did not mint never reaches a path or a command.
 */
public record VolumeId(String pool, String key) {

    public static final int KEY_LENGTH = 26;
    /** The longest pool name. */
    private static final int POOL_MAX = 32;
    private static final char[] BASE32 = "abcdefghijklmnopqrstuvwxyz234567".toCharArray();

    public VolumeId {
        if (!isPoolName(pool)) {
            throw new IllegalArgumentException("invalid pool name: " + pool);
        }
        if (!isKey(key)) {
            throw new IllegalArgumentException("invalid volume key: " + key);
        }
    }

    /** The ID a volume named {@code name} gets in {@code pool}. */
    public static VolumeId mint(String pool, String name) {
        return new VolumeId(pool, keyOf(name));
    }

    /** The pool-independent part of the ID: two requests with one name always share it. */
    public static String keyOf(String name) {
        byte[] digest = sha256(name);
        StringBuilder out = new StringBuilder(KEY_LENGTH);
        int buffer = 0;
        int bits = 0;
        for (int i = 0; out.length() < KEY_LENGTH; ) {
            if (bits < 5) {
                buffer = (buffer << 8) | (digest[i++] & 0xff);
                bits += 8;
            }
            out.append(BASE32[(buffer >>> (bits - 5)) & 31]);
            bits -= 5;
        }
        return out.toString();
    }

    /** Parses an ID this driver minted; anything else is empty. */
    public static Optional<VolumeId> parse(String id) {
        if (id == null || id.length() < KEY_LENGTH + 2 || id.length() > KEY_LENGTH + 33) {
            return Optional.empty();
        }
        int dash = id.length() - KEY_LENGTH - 1;
        if (id.charAt(dash) != '-') {
            return Optional.empty();
        }
        try {
            // The constructor checks both parts; checked here as well, they were checked twice for
            // every ID of a pool on every ListVolumes page.
            return Optional.of(new VolumeId(id.substring(0, dash), id.substring(dash + 1)));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    /**
     * {@code [a-z0-9]}, then up to 30 of {@code [a-z0-9-]}, ending with {@code [a-z0-9]} if longer
     * than one. Checked by hand, not by a regex: a listing of 1,000 volumes parses every ID in it.
     */
    public static boolean isPoolName(String name) {
        if (name == null || name.isEmpty() || name.length() > POOL_MAX) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
            if (!alnum && (c != '-' || i == 0 || i == name.length() - 1)) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code key} has the shape {@link #keyOf} gives ({@code [a-z2-7]{26}}); snapshot IDs share it. */
    static boolean isKey(String key) {
        if (key == null || key.length() != KEY_LENGTH) {
            return false;
        }
        for (int i = 0; i < KEY_LENGTH; i++) {
            char c = key.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= '2' && c <= '7'))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public String toString() {
        return pool + "-" + key;
    }

    private static byte[] sha256(String name) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every JDK has SHA-256", e);
        }
    }
}
