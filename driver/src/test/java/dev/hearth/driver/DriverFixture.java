package dev.hearth.driver;

import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the tests of a running driver share: a {@link TestDriver} started on each test's temporary
 * directory and a {@link Kubelet} to call its node. The driver is closed after each test, passed or
 * failed, and closing it undoes what the test left mounted or attached. A test may close the driver
 * and start another in its place (other pools, a fresh start); the last one is closed.
 */
abstract class DriverFixture {

    @TempDir
    Path dir;

    TestDriver driver;
    Kubelet kubelet;

    @BeforeEach
    void startDriver() throws IOException {
        driver = TestDriver.start(dir);
        kubelet = new Kubelet(driver);
    }

    @AfterEach
    void stopDriver() throws IOException {
        driver.close();
    }
}
