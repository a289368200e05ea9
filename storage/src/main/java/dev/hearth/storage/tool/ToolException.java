package dev.hearth.storage.tool;

import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.stream.Collectors;

/** An external tool could not be run, ran too long, or reported failure. */
public final class ToolException extends RuntimeException {

    /** Why the run failed; callers branch on this rather than on the message. */
    public enum Reason {
        NOT_FOUND,
        START_FAILED,
        EXITED_NON_ZERO,
        TIMED_OUT,
        OUTPUT_TOO_LARGE,
        INTERRUPTED
    }

    // Long enough for any mkfs complaint, short enough to keep log lines and gRPC messages sane.
    private static final int MESSAGE_OUTPUT_LIMIT = 2000;

    private final Reason reason;
    private final List<String> command;
    private final Integer exitCode;
    private final String stdout;
    private final String stderr;

    private ToolException(Reason reason, List<String> command, String message, Integer exitCode,
            String stdout, String stderr, Throwable cause) {
        super(message, cause);
        this.reason = reason;
        this.command = List.copyOf(command);
        this.exitCode = exitCode;
        this.stdout = stdout;
        this.stderr = stderr;
    }

    /** The tool ran and exited non-zero; also for callers that judge a result themselves. */
    public static ToolException exited(List<String> command, ToolResult result) {
        String output = result.stderr().isBlank() ? result.stdout() : result.stderr();
        String detail = output.isBlank() ? "(no output)" : cap(output.strip());
        return new ToolException(Reason.EXITED_NON_ZERO, command,
                render(command) + " exited with status " + result.exitCode() + ": " + detail,
                result.exitCode(), result.stdout(), result.stderr(), null);
    }

    static ToolException notFound(List<String> command, String message) {
        return new ToolException(Reason.NOT_FOUND, command, message, null, "", "", null);
    }

    static ToolException startFailed(List<String> command, Throwable cause) {
        return new ToolException(Reason.START_FAILED, command,
                render(command) + ": could not start: " + cause.getMessage(), null, "", "", cause);
    }

    /** Its output or its exit could not be read (poll or waitpid failed); it has been killed. */
    static ToolException lost(List<String> command, Throwable cause) {
        return new ToolException(Reason.START_FAILED, command,
                render(command) + ": lost track of it while it ran: " + cause.getMessage(), null, "", "", cause);
    }

    static ToolException timedOut(List<String> command, Duration timeout, String stderr) {
        String tail = stderr.isBlank() ? "" : ": " + cap(stderr.strip());
        return new ToolException(Reason.TIMED_OUT, command,
                render(command) + " timed out after " + timeout + " and was killed" + tail,
                null, "", stderr, null);
    }

    static ToolException outputTooLarge(List<String> command, int exitCode, int limit, String stderr) {
        return new ToolException(Reason.OUTPUT_TOO_LARGE, command,
                render(command) + " wrote more than " + limit + " bytes to stdout; refusing a cut-off result",
                exitCode, "", stderr, null);
    }

    static ToolException interrupted(List<String> command, InterruptedException cause) {
        return new ToolException(Reason.INTERRUPTED, command,
                render(command) + " was killed because the caller was interrupted", null, "", "", cause);
    }

    public Reason reason() {
        return reason;
    }

    public List<String> command() {
        return command;
    }

    /** Present only when the tool ran to completion. */
    public OptionalInt exitCode() {
        return exitCode == null ? OptionalInt.empty() : OptionalInt.of(exitCode);
    }

    public String stdout() {
        return stdout;
    }

    public String stderr() {
        return stderr;
    }

    /** Arguments quoted only where needed, so a message can be pasted into a shell to retry. */
    static String render(List<String> command) {
        return command.stream()
                .map(a -> a.isEmpty() || a.chars().anyMatch(c -> Character.isWhitespace(c) || "'\"\\$`;&|<>*?".indexOf(c) >= 0)
                        ? "'" + a.replace("'", "'\\''") + "'"
                        : a)
                .collect(Collectors.joining(" "));
    }

    private static String cap(String text) {
        return text.length() <= MESSAGE_OUTPUT_LIMIT ? text : text.substring(0, MESSAGE_OUTPUT_LIMIT) + "...";
    }
}
