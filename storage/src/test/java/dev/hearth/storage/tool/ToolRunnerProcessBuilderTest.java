package dev.hearth.storage.tool;

/** Every case of {@link ToolRunnerTest} again, on the ProcessBuilder that a libc before glibc 2.34 gets. */
class ToolRunnerProcessBuilderTest extends ToolRunnerTest {

    @Override
    ToolRunner runner(int limit) {
        return new ToolRunner(limit, false);
    }
}
