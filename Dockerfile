# syntax=docker/dockerfile:1
#
# The hearth image: the driver jar on a Java runtime made for it with jlink, on Debian slim with
# the filesystem and volume tools the driver runs. deploy/ runs it as the node plugin's "hearth"
# container.
#
#   docker build -t REGISTRY/hearth:0.1.0 .
#
# Docker's BuildKit (its default builder) and podman/buildah both build it; the Maven cache mount
# needs one of them. test/image/build builds this very file with podman on the test machines, where
# no image registry is reachable, on stand-ins of the two base images made there from Debian's
# packages (test/image/stand-ins): a Debian minbase slimmed as debian:bookworm-slim is, and a
# Debian minbase with the machine's Temurin JDK in place of Temurin's Ubuntu-based JDK image.
# test/image/run then runs the image it makes.
#
# Base images: the JDK by Temurin release (25.0.3+9, the JDK this project is built and tested
# with; only its jlink runtime and the jar leave that stage), the runtime by Debian suite (bookworm:
# the tool versions that test/run-all proves the driver with). For a reproducible build, pin their
# digests as well, e.g.
#   --build-arg RUNTIME_IMAGE=debian:bookworm-slim@sha256:<digest>
ARG JDK_IMAGE=eclipse-temurin:25.0.3_9-jdk-noble
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${JDK_IMAGE} AS build
WORKDIR /src
COPY . .
# The Maven wrapper fetches Maven 3.9.11 itself; the cache mount keeps it and the dependencies
# between builds. Tests need root, loop devices and Go: they run in CI (test/run-all), not here.
RUN --mount=type=cache,target=/root/.m2 \
    ./mvnw -B -ntp -DskipTests package \
 && cp driver/target/hearth.jar /hearth.jar \
 && cp driver/src/main/cds/hearth.classlist /hearth.classlist
# A Java runtime of the modules hearth uses and nothing else (89 MB instead of the JDK's 317):
# jdeps --print-module-deps on the jar names more, but java.desktop and java.sql serve only
# Micrometer binders hearth does not use, java.naming only gRPC's DNS-over-JNDI resolver (hearth
# serves a unix socket). java.management and jdk.management serve the JVM metrics and the
# process's descriptor count, jdk.httpserver /metrics and /healthz, jdk.unsupported O_DIRECT
# (ExtendedOpenOption) and protobuf's fast paths.
# test/image/run runs the image's driver through csi-sanity, the demo and a /metrics scrape.
# No default class-data archive (--generate-cds-archive): the archive below holds the JDK's classes
# too. --strip-debug needs objcopy (binutils, in Temurin's JDK image).
RUN jlink --add-modules java.base,java.logging,java.management,jdk.management,jdk.httpserver,jdk.unsupported \
      --strip-debug --no-header-files --no-man-pages --output /jre

FROM ${RUNTIME_IMAGE}
# The tools hearth runs (everything else goes through syscalls): mkfs, grow and check for ext4,
# xfs and btrfs; blkid (util-linux); LVM and its thin-pool checker (thin_check) for the lvm pool.
# Debian's xfsprogs depends on python3 (xfs_scrub_all) and libicu72: about 55 MB of the image.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      e2fsprogs xfsprogs btrfs-progs util-linux lvm2 thin-provisioning-tools \
 && rm -rf /var/lib/apt/lists/*

ENV JAVA_HOME=/opt/java/openjdk
ENV PATH=/opt/java/openjdk/bin:$PATH
COPY --from=build /jre /opt/java/openjdk
COPY --from=build /hearth.jar /opt/hearth/hearth.jar

# Class data sharing: an archive of the classes `hearth serve` loads from its start through every
# RPC of a volume's life (driver/src/main/cds/hearth.classlist, which test/bench/classlist writes
# from a real driver's run), the JDK's and hearth's, parsed and verified here once instead of at
# every start. The driver answers its first Probe sooner and its first requests find their classes
# ready (test/bench/ROUNDS.md). It must come from this very runtime and this very jar, hence here and
# not in the build stage. Classes the list names that this runtime leaves out (jdk.jfr's) are
# skipped with a warning.
COPY --from=build /hearth.classlist /opt/hearth/hearth.classlist
RUN java -Xshare:dump -XX:SharedClassListFile=/opt/hearth/hearth.classlist \
      -XX:SharedArchiveFile=/opt/hearth/hearth.jsa -cp /opt/hearth/hearth.jar \
 && rm /opt/hearth/hearth.classlist \
 && test -s /opt/hearth/hearth.jsa

# `hearth` on the PATH, for the commands an operator runs in the pod (`kubectl exec -n hearth-system
# ds/hearth-node -c hearth -- hearth volumes`): the same jar and archive with a small heap, because
# such a command runs beside the driver inside the container's memory limit (test/image/check runs
# it so: the two together peaked at about 110 MiB of the 256Mi there).
RUN printf '%s\n' '#!/bin/sh' \
      'exec java -XX:+UseSerialGC -Xmx32m -Xss512k -XX:TieredStopAtLevel=1 -XX:-UsePerfData \' \
      '  -XX:SharedArchiveFile=/opt/hearth/hearth.jsa -Xlog:cds=off -Xlog:cds+dynamic=off \' \
      '  -jar /opt/hearth/hearth.jar "$@"' \
      >/usr/local/bin/hearth \
 && chmod 0755 /usr/local/bin/hearth

# Root, on purpose: attaching loop devices, mounting, and making filesystems on block devices need
# uid 0 with CAP_SYS_ADMIN (the DaemonSet runs this container privileged). A non-root user could
# do none of it.
USER root

# A small, quick-starting daemon:
# - serial GC, the heap at most half the container's memory limit (the DaemonSet sets 256Mi);
#   -Xmx in JAVA_TOOL_OPTIONS overrides it;
# - C1 only: the driver waits on syscalls and tools, not on hot Java code, and C2's compiler
#   threads would cost more memory and CPU than they save;
# - C1 compiles a method after a fiftieth of the usual calls (4 instead of 200): each RPC runs its
#   own code once, so at the usual thresholds a driver's request paths stayed in the interpreter
#   for good (test/bench/csi: the filesystem lifecycle 36 -> 26 ms, raw block 20 -> 12 ms, for
#   some 40 ms more to start and 3 MiB more code);
# - the C library's free memory given back to the kernel every 5 s (malloc_trim): the compiler's
#   arenas of the start and a burst's buffers are freed to malloc, which keeps them otherwise
#   (idle RSS 12 s after start 87.9 -> 82.4 MiB; test/bench/ROUNDS.md);
# - no hsperfdata file (the DaemonSet's root filesystem is read-only);
# - exit on OutOfMemoryError, so that the kubelet restarts the driver rather than leave it half
#   alive;
# - the class-data archive above; a missing or stale archive is ignored quietly.
# --enable-native-access=ALL-UNNAMED for the FFM bindings comes from the jar's manifest.
ENTRYPOINT ["java", "-XX:+UseSerialGC", "-XX:MaxRAMPercentage=50", "-Xss512k", "-XX:TieredStopAtLevel=1", \
            "-XX:CompileThresholdScaling=0.02", "-XX:TrimNativeHeapInterval=5000", "-XX:-UsePerfData", "-XX:+ExitOnOutOfMemoryError", \
            "-XX:SharedArchiveFile=/opt/hearth/hearth.jsa", "-Xlog:cds=off", "-Xlog:cds+dynamic=off", \
            "-jar", "/opt/hearth/hearth.jar"]
CMD ["serve"]
