package dev.hearth.storage.tool;

/** Every case of {@link ToolRunnerTest} again, on the ProcessBuilder that a libc before glibc 2.34 gets. */
class ToolRunnerProcessBuilderTest extends ToolRunnerTest {

    @Override
    ToolRunner runner(int limit) {
        return new ToolRunner(limit, false);
    }

    /**
     * The JDK's launcher resets the signals the JVM handles, not those it inherited ignored: a JVM
     * started in a script's background passes SIGINT and SIGQUIT on ignored. The spawn path resets all.
     */
    @Override
    long ignoredByTheJvm() {
        return jvmIgnoredSignals();
    }
}
