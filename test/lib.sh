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
# under $HEARTH_CACHE or ~/.cache/hearth), building it first when it is missing. The build's output
# goes to stderr.
#
# It is csi-test's own source from the Go module proxy, built with the versions its go.sum pins (as
# go install built it before), with one
# change outside the conformance checks: utils.Connect, which each spec's setup calls, races. It
# reads the state once, then waits for it to change; a connection already READY at that read never
# changes, and the spec fails "Connection timed out" after a minute (seen once in CI, on LVM thin
# mount, the specs before and after it connecting at once). The fix waits from each state read until
# READY, so a driver that really does not answer still times out.
CSI_SANITY_VERSION=v5.4.0
csi_sanity() {
  local root=$1 cache=${HEARTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hearth}
  local bin="$cache/bin/csi-sanity-$CSI_SANITY_VERSION-connect-fix" src work
  if [ ! -x "$bin" ]; then
    echo "building csi-sanity $CSI_SANITY_VERSION (with the utils.Connect fix) ..." >&2
    command -v go >/dev/null || source "$root/.ci/go.sh" >&2
    mkdir -p "$cache/bin"
    # Command substitution does not inherit errexit: each step says itself when it fails.
    src=$(cd / && GOFLAGS=-mod=mod go mod download -json "github.com/kubernetes-csi/csi-test/v5@$CSI_SANITY_VERSION" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])') && [ -d "$src/utils" ] ||
      { echo "csi_sanity: go mod download of csi-test $CSI_SANITY_VERSION failed" >&2; return 1; }
    work=$(mktemp -d) || return 1
    cp -r "$src"/. "$work" && chmod -R u+w "$work" || { rm -rf "$work"; return 1; }
    python3 - "$work/utils/grpcutil.go" <<'PY' || { rm -rf "$work"; return 1; }
import sys
path = sys.argv[1]
text = open(path).read()
old = """	for {
		if !conn.WaitForStateChange(ctx, conn.GetState()) {
			return conn, fmt.Errorf("Connection timed out")
		}
		if conn.GetState() == connectivity.Ready {
			return conn, nil
		}
	}"""
new = """	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		if !conn.WaitForStateChange(ctx, state) {
			return conn, fmt.Errorf("Connection timed out")
		}
	}
	return conn, nil"""
if text.count(old) != 1:
    sys.exit(f"{path}: utils.Connect is not as expected; the fix does not apply")
open(path, "w").write(text.replace(old, new))
PY
    (cd "$work" && GOFLAGS=-mod=mod go build -trimpath -o "$bin.tmp" ./cmd/csi-sanity) >&2 ||
      { echo "csi_sanity: building csi-sanity failed" >&2; rm -rf "$work"; return 1; }
    rm -rf "$work"
    mv "$bin.tmp" "$bin" || return 1
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
