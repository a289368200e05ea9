package dev.hearth.driver.metrics;

import com.sun.management.UnixOperatingSystemMXBean;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The process metrics under the names every Prometheus client library uses
 * ({@code process_cpu_seconds_total}, {@code process_open_fds}, {@code process_max_fds},
 * {@code process_resident_memory_bytes}, {@code process_virtual_memory_bytes}), so that stock
 * dashboards and alerts work; {@code process_start_time_seconds} comes from micrometer's
 * UptimeMetrics. Each is read when scraped, and cheaply: CPU time and the file descriptor limit are
 * system calls, the open descriptors a listing of /proc/self/fd, the memory one read of
 * /proc/self/status (about 1.5 KiB) per gauge.
 */
final class ProcessMetrics implements MeterBinder {

    private static final Path STATUS = Path.of("/proc/self/status");

    @Override
    public void bindTo(MeterRegistry registry) {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof UnixOperatingSystemMXBean os) {
            FunctionCounter.builder("process.cpu", os, o -> o.getProcessCpuTime() / 1e9)
                    .baseUnit("seconds")
                    .description("CPU time the process has used, user and system")
                    .register(registry);
            Gauge.builder("process.open.fds", os, UnixOperatingSystemMXBean::getOpenFileDescriptorCount)
                    .description("File descriptors the process has open")
                    .register(registry);
            Gauge.builder("process.max.fds", os, UnixOperatingSystemMXBean::getMaxFileDescriptorCount)
                    .description("The most file descriptors the process may open")
                    .register(registry);
        }
        if (Files.isReadable(STATUS)) {
            Gauge.builder("process.resident.memory", () -> statusBytes("VmRSS:"))
                    .baseUnit("bytes")
                    .description("Resident memory of the process")
                    .register(registry);
            Gauge.builder("process.virtual.memory", () -> statusBytes("VmSize:"))
                    .baseUnit("bytes")
                    .description("Virtual memory of the process")
                    .register(registry);
        }
    }

    /** A {@code VmRSS:    123456 kB} line of /proc/self/status, in bytes. */
    static double statusBytes(String key) {
        try {
            for (String line : Files.readAllLines(STATUS)) {
                if (line.startsWith(key)) {
                    String kib = line.substring(key.length()).strip();
                    return Long.parseLong(kib.substring(0, kib.indexOf(' '))) * 1024.0;
                }
            }
            return Double.NaN;
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }
}
