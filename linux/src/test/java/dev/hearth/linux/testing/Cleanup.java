package dev.hearth.linux.testing;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Undo actions for a test that changes the host (mounts, loop devices), run newest first so a
 * mount is gone before the loop device under it is detached. Every action runs even if an earlier
 * one fails; the first failure is rethrown with the rest suppressed.
 *
 * <p>A test class holds one in a {@code @RegisterExtension} field; it then runs after each test,
 * however the test ended, and before the test's {@code @TempDir} is deleted.
 */
public final class Cleanup implements AutoCloseable, AfterEachCallback {

    @FunctionalInterface
    public interface Action {
        void run() throws IOException;
    }

    private final Deque<Action> actions = new ArrayDeque<>();

    public void add(Action action) {
        actions.push(action);
    }

    @Override
    public void close() throws IOException {
        IOException first = null;
        while (!actions.isEmpty()) {
            try {
                actions.pop().run();
            } catch (IOException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public void afterEach(ExtensionContext context) throws IOException {
        close();
    }
}
