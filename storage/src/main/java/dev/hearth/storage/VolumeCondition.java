package dev.hearth.storage;

/** Whether a volume is as it should be, and if not, what is wrong, in words an operator can act on. */
public record VolumeCondition(boolean abnormal, String message) {

    public static final VolumeCondition NORMAL = new VolumeCondition(false, "volume is healthy");

    public static VolumeCondition abnormal(String message) {
        return new VolumeCondition(true, message);
    }
}
