package dev.hearth.storage;

import java.util.Locale;

/** Whether a volume's space is reserved when it is made (thick) or as it is written (thin). */
public enum Provisioning {
    THICK,
    THIN;

    public static Provisioning parse(String value) {
        try {
            return valueOf(value.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new StorageException.InvalidArgument(
                    "provisioning must be 'thick' or 'thin', not " + Quoted.of(value));
        }
    }

    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
