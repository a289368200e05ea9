/**
 * Prometheus metrics as adapters beside the driver: an interceptor for calls, gauges that read the
 * pools when scraped, and a small HTTP server for {@code /metrics} and {@code /healthz}. Nothing in
 * the services or pools knows about them; the driver's main wires them in.
 */
package dev.hearth.driver.metrics;
