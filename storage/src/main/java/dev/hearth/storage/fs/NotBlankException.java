package dev.hearth.storage.fs;

import dev.hearth.storage.probe.ProbeResult;
import java.nio.file.Path;

/** Formatting was refused because the device holds (or may hold) someone's data. */
public final class NotBlankException extends IllegalStateException {

    private final Path device;
    private final ProbeResult found;

    public NotBlankException(Path device, ProbeResult found) {
        super("refusing to format " + device + ": " + found.describe());
        this.device = device;
        this.found = found;
    }

    public Path device() {
        return device;
    }

    public ProbeResult found() {
        return found;
    }
}
