# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 9. On the real node, through its kubelet: a pod with a raw block claim sees a device of the
#    claim's size at its devicePath, writes to it and reads back the same bytes, bypassing the
#    page cache; after the pod goes, nothing of the volume is mapped on the node.
E2E_TITLES[9]="real node: a raw block claim is a device in the pod that writes and reads back"
scenario_9() {
  needs_real_node
  local pv out
  claim s9-raw 64Mi --block
  real_pod s9-app s9-raw --block
  running s9-app
  pv=$(kc get pvc s9-raw -o 'jsonpath={.spec.volumeName}')
  out=$(in_pod s9-app '
    set -e
    test -b /dev/xvda
    echo "size $(blockdev --getsize64 /dev/xvda)"
    head -c 8M /dev/urandom > /tmp/pattern
    dd if=/tmp/pattern of=/dev/xvda bs=1M seek=3 oflag=direct conv=fsync status=none
    dd if=/dev/xvda of=/tmp/back bs=1M skip=3 count=8 iflag=direct status=none
    echo "wrote $(sha256sum < /tmp/pattern | cut -c1-16) read $(sha256sum < /tmp/back | cut -c1-16)"
    ls -l /dev/xvda')
  echo "in the pod: $out"
  grep -qx "size $((64 * 2**20))" <<<"$out" || fail "the device is not 64Mi"
  grep -Eq '^wrote ([0-9a-f]{16}) read \1$' <<<"$out" || fail "the bytes read back differ from those written"
  echo "the kubelet's mappings of $pv: $(mounts_of "$pv" | tr '\n' ' ')"
  [ -n "$(mounts_of "$pv")" ] || fail "the kubelet mapped nothing for $pv"
  gone pod s9-app
  until_eq 30 "" mounts_of "$pv" || fail "the volume is still mapped after its pod went"
  gone pvc s9-raw
  released "$pv"
}
