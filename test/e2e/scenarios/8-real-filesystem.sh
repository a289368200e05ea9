# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 8. On the real node, through its kubelet: a pod with a filesystem claim and an fsGroup writes as
#    a user that only the fsGroup lets write (the kubelet applied the group: the volume's root is
#    group-owned, group-writable and setgid); the pod is deleted (the kubelet unpublishes and
#    unstages: no mount left) and a new pod on the node reads the same bytes.
E2E_TITLES[8]="real node: a filesystem claim's data outlives its pod; the kubelet applies fsGroup"
scenario_8() {
  needs_real_node
  local pv handle sum dir
  claim s8-data 256Mi
  real_pod s8-writer s8-data --fs-group 4321 --user 1000 --sh 'head -c 2M /dev/urandom > /data/f && sleep infinity'
  running s8-writer
  pv=$(kc get pvc s8-data -o 'jsonpath={.spec.volumeName}')
  handle=$(kc get pv "$pv" -o 'jsonpath={.spec.csi.volumeHandle}')
  [ "$(kc get pv "$pv" -o 'jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')" = "$E2E_REAL_NODE" ] ||
    fail "PV $pv is not on $E2E_REAL_NODE"
  until_eq 30 yes file_in_pod s8-writer /data/f ||
    fail "the pod did not write /data/f"
  echo "in the pod: $(in_pod s8-writer 'id; stat -c "root of the volume: %U:%G %A" /data; stat -c "its file: %U:%G %A %s bytes" /data/f; findmnt -n -o SOURCE,FSTYPE /data')"
  [ "$(in_pod s8-writer 'stat -c %g /data')" = 4321 ] || fail "the volume's root is not group 4321"
  [ "$(in_pod s8-writer 'stat -c %A /data' | cut -c6-7)" = ws ] || fail "the volume's root is not group-writable and setgid"
  [ "$(in_pod s8-writer 'stat -c %u:%g /data/f')" = 1000:4321 ] || fail "the file is not 1000:4321"
  sum=$(in_pod s8-writer 'sha256sum < /data/f')
  dir=$(pod_dir s8-writer)
  echo "the kubelet's mounts of $handle: $(mounts_of "$pv" | tr '\n' ' ')"
  mountpoint -q "$dir/volumes/kubernetes.io~csi/$pv/mount" || fail "no publish mount at $dir"

  gone pod s8-writer
  until_eq 30 "" mounts_of "$pv" || fail "the volume is still mounted after its pod went"
  echo "pod deleted: no mount of $pv left on the node"
  real_pod s8-reader s8-data --sh 'sleep infinity'
  running s8-reader
  [ "$(in_pod s8-reader 'sha256sum < /data/f')" = "$sum" ] || fail "the new pod does not read the bytes the first wrote"
  echo "a new pod reads the same 2 MiB (sha256 ${sum%% *})"
  gone pod s8-reader
  gone pvc s8-data
  released "$pv"
}
