# shellcheck shell=bash
# Sourced by the test scripts (csi-sanity, e2e, bench): what they share about the host.

# mounts_under DIR: the mount points below DIR, deepest first.
mounts_under() { awk -v d="${1%/}/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r; }
# loops_under DIR: the loop devices whose backing files are below DIR.
loops_under() { losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v d="${1%/}/" 'index($2, d) == 1 {print $1}'; }
# release_under DIR: what a run left below DIR, undone: the mounts (lazily, deepest first), then
# the loop devices backed by files there.
release_under() {
  local m l
  mounts_under "$1" | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  loops_under "$1" | while read -r l; do losetup -d "$l" 2>/dev/null || true; done
}

# csi_sanity ROOT: prints the path of the csi-sanity binary (v5.4.0, cached outside the repository
# under $HEARTH_CACHE or ~/.cache/hearth), installing it with go install first when it is missing.
# The install's output goes to stderr.
CSI_SANITY_VERSION=v5.4.0
csi_sanity() {
  local root=$1 cache=${HEARTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hearth}
  local bin="$cache/bin/csi-sanity-$CSI_SANITY_VERSION" tmpbin
  if [ ! -x "$bin" ]; then
    echo "installing csi-sanity $CSI_SANITY_VERSION with go install ..." >&2
    command -v go >/dev/null || source "$root/.ci/go.sh" >&2
    mkdir -p "$cache/bin"
    tmpbin=$(mktemp -d)
    GOBIN=$tmpbin GOFLAGS=-mod=mod go install "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@$CSI_SANITY_VERSION" >&2
    mv "$tmpbin/csi-sanity" "$bin" && rmdir "$tmpbin"
  fi
  echo "$bin"
}

# bench_classpath ROOT: prints the class path of the driver module's test classes (the benchmark
# clients, CsiBench), compiling them first; offline when the local Maven repository allows it.
bench_classpath() {
  local root=$1
  (cd "$root" && { ./mvnw -q -B -o -pl driver test-compile dependency:build-classpath \
    -Dmdep.outputFile=target/bench.classpath >/dev/null 2>&1 || ./mvnw -q -B -pl driver test-compile \
    dependency:build-classpath -Dmdep.outputFile=target/bench.classpath >/dev/null; }) >&2
  echo "driver/target/test-classes:driver/target/classes:$(cat "$root/driver/target/bench.classpath")"
}
