package dev.hearth.storage;

/**
 * A pool's space as a new volume sees it. {@code availableBytes} is what one more volume can
 * really get; {@code allocatedBytes} is what existing volumes hold (their full size, thin or not).
 */
public record Capacity(long totalBytes, long allocatedBytes, long availableBytes, long maximumVolumeBytes,
        long minimumVolumeBytes) {}
