/**
 * {@code hearth volumes}: what this node's pools hold, read from the node itself (the pools opened
 * read-only, /proc/self/mountinfo, sysfs) beside a driver that may be serving them, and shown as a
 * table or as JSON.
 */
package dev.hearth.driver.inspect;
