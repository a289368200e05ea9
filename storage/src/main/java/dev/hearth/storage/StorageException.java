package dev.hearth.storage;

import dev.hearth.storage.tool.ToolException;

/**
 * A pool operation that could not be done, with its meaning carried by its type. The driver
 * maps each kind to one gRPC status in one place; storage itself knows nothing of gRPC.
 */
public abstract sealed class StorageException extends RuntimeException
        permits StorageException.NotFound,
                StorageException.Exhausted,
                StorageException.Conflict,
                StorageException.InvalidArgument,
                StorageException.OutOfRange,
                StorageException.Precondition,
                StorageException.Busy,
                StorageException.UnknownToken,
                StorageException.Failed {

    private StorageException(String message, Throwable cause) {
        super(message, cause);
    }

    /** The volume, snapshot or pool named does not exist. */
    public static final class NotFound extends StorageException {
        public NotFound(String message) {
            super(message, null);
        }
    }

    /** Not enough space (or devices) left to satisfy the request. */
    public static final class Exhausted extends StorageException {
        public Exhausted(String message) {
            super(message, null);
        }
    }

    /** Something with this identity exists already and is incompatible with the request. */
    public static final class Conflict extends StorageException {
        public Conflict(String message) {
            super(message, null);
        }
    }

    /** The request itself is malformed or names something unsupported. */
    public static final class InvalidArgument extends StorageException {
        public InvalidArgument(String message) {
            super(message, null);
        }
    }

    /** A size outside what the pool can make. */
    public static final class OutOfRange extends StorageException {
        public OutOfRange(String message) {
            super(message, null);
        }
    }

    /** The state on the node does not allow the operation (in use, not staged, foreign data). */
    public static final class Precondition extends StorageException {
        public Precondition(String message) {
            super(message, null);
        }

        public Precondition(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Another operation holds the volume; the caller should retry later. */
    public static final class Busy extends StorageException {
        public Busy(String message) {
            super(message, null);
        }
    }

    /**
     * A listing's starting token that this driver did not issue: the caller should start the
     * listing again (CSI answers ABORTED, as for a cursor that lost its place).
     */
    public static final class UnknownToken extends StorageException {
        public UnknownToken(String message) {
            super(message, null);
        }
    }

    /** The node failed to do what it should have been able to do (I/O error, tool failure). */
    public static final class Failed extends StorageException {

        private final boolean explainedByTool;
        private final boolean interrupted;

        public Failed(String message, Throwable cause) {
            this(message, cause, false, false);
        }

        public Failed(String message) {
            this(message, null, false, false);
        }

        private Failed(String message, Throwable cause, boolean explainedByTool, boolean interrupted) {
            super(message, cause);
            this.explainedByTool = explainedByTool;
            this.interrupted = interrupted;
        }

        /**
         * A tool that failed at its job: {@code message} should carry the tool's own words ({@code
         * cause.getMessage()} holds the command, its exit status and its stderr). When the tool ran
         * and said no, that is all there is to know, and {@link #explainedByTool} says so.
         */
        public static Failed byTool(String message, ToolException cause) {
            return new Failed(message, cause, cause.reason() == ToolException.Reason.EXITED_NON_ZERO,
                    cause.reason() == ToolException.Reason.INTERRUPTED);
        }

        /**
         * Whether the tool was killed because the thread running it was interrupted: the driver is
         * stopping and does not wait for it (a call past the shutdown grace). Nothing failed that a
         * retry on a running driver would not do again.
         */
        public boolean interrupted() {
            return interrupted;
        }

        /**
         * Whether the message tells the whole story: a tool ran and refused, and its stderr is in the
         * message. The Java stack would show only hearth's own way to the tool, so a log can leave it
         * out. False for a tool that could not be started, timed out or was interrupted, and for
         * every other failure.
         */
        public boolean explainedByTool() {
            return explainedByTool;
        }
    }
}
