# shellcheck shell=bash
# Sourced by test/image/stand-ins, build and run: what they share about the image and podman.

# The image deploy/ runs, read from the DaemonSet: the build tags what it builds with this name,
# so that a node that runs deploy/ unchanged finds it.
image_ref() {
  awk '/- name: hearth$/ {f=1} f && $1 == "image:" {print $2; exit}' "$1/deploy/base/daemonset.yaml"
}

# dockerfile_arg ROOT NAME: the default of the Dockerfile's `ARG NAME=...`.
dockerfile_arg() {
  sed -n "s/^ARG $2=\(.*\)$/\1/p" "$1/Dockerfile" | head -n 1
}

# The name a registry client resolves a Docker Hub short name to (debian:bookworm-slim ->
# docker.io/library/debian:bookworm-slim). A stand-in is tagged with it, so that the Dockerfile's
# short name finds it in podman's local storage.
qualified() {
  case $1 in
    */*/*|localhost/*) echo "$1" ;;
    */*) case ${1%%/*} in *.*|*:*) echo "$1" ;; *) echo "docker.io/$1" ;; esac ;;
    *) echo "docker.io/library/$1" ;;
  esac
}

# What the test needs of the host, said once and, under CI=true, fatal: a missing tool is
# installed by .ci/run, never skipped there.
#   image_tools_missing: prints what is missing (nothing when all is there).
image_tools_missing() {
  local t missing=()
  for t in podman runc mmdebstrap; do command -v "$t" >/dev/null || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] || { echo "${missing[*]}"; return; }
  # .ci/run writes both settings to /etc/containers/containers.conf.d/50-hearth.conf.
  if [ "$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null)" != runc ]; then
    missing+=("podman's runtime set to runc (runtime = \"runc\" in containers.conf; crun refuses a hybrid cgroup layout)")
  fi
  # Without CAP_SYS_RESOURCE, runc cannot raise RLIMIT_NOFILE to podman's default.
  local caps
  caps=$(awk '/^CapEff/ {print $2}' /proc/self/status)
  if (( (0x$caps >> 24 & 1) == 0 )) && ! grep -qs '^ *default_ulimits *= *\[ *\]' \
      /etc/containers/containers.conf /etc/containers/containers.conf.d/*.conf; then
    missing+=("default_ulimits = [] in containers.conf (this process lacks CAP_SYS_RESOURCE)")
  fi
  [ ${#missing[@]} -eq 0 ] || echo "${missing[*]}"
}

# image_skip_or_fail SCRIPT SUMMARY_LINE: when the tools are missing, exits: 0 with a skip (and
# SUMMARY_LINE, which counts it) on a developer's machine, 1 in CI.
image_skip_or_fail() {
  local missing
  missing=$(image_tools_missing)
  [ -z "$missing" ] && return 0
  if [ "${CI:-}" = true ]; then
    echo "$1: missing $missing (CI=true: .ci/run installs them; nothing is skipped in CI)" >&2
    exit 1
  fi
  echo "$1: skipped, missing $missing (apt-get install podman runc mmdebstrap, and see .ci/run for the containers.conf setting)"
  echo "$2"
  exit 0
}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }
