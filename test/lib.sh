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
