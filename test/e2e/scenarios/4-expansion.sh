# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 4. A PVC expansion completes: the resizer (whichever holds the Lease) records the new size on
#    the PV and leaves the filesystem to the node; the node grows the image, the loop device and
#    the mounted xfs (NodeExpandVolume, called here as the kubelet would), and the claim reports
#    the new capacity.
E2E_TITLES[4]="a PVC expansion completes: the resizer, then the node grows the mounted volume"
scenario_4() {
  local from=512Mi to=1Gi pv before after size leader sum n
  declare -A capacity
  for n in "${E2E_NODES[@]}"; do capacity[$n]=$(published_capacity "$n"); done
  claim_with_pod s4-data s4-app "$from" --class hearth-xfs
  bound s4-data s4-app
  pv=$(kc get pvc s4-data -o 'jsonpath={.spec.volumeName}')
  kubelet_mount s4-app s4-data
  local node=$MOUNT_NODE handle=$MOUNT_HANDLE staging=$MOUNT_STAGING target=$MOUNT_TARGET
  # shellcheck disable=SC2064
  trap "kubelet_unmount '$node' '$handle' '$staging' '$target' 2>/dev/null || true" EXIT
  head -c 1M /dev/urandom >"$target/before-expansion"
  sum=$(sha256sum <"$target/before-expansion")
  before=$(fs_size "$target")
  until_eq 30 $((capacity[$node] - $(bytes_of "$from"))) published_capacity "$node" ||
    fail "$node's capacity did not drop by $from"
  echo "volume $handle on $node: $(findmnt -n -o FSTYPE "$target") of $before bytes at $target"

  kc patch pvc s4-data --type=merge -p "{\"spec\": {\"resources\": {\"requests\": {\"storage\": \"$to\"}}}}"
  # The resizer: the PV's capacity, then the claim waits for the node.
  until_eq 60 "$to" kc get pv "$pv" -o 'jsonpath={.spec.capacity.storage}' ||
    { kc describe pvc s4-data; fail "the resizer did not set the PV's capacity"; }
  until_eq 30 NodeResizePending kc get pvc s4-data -o 'jsonpath={.status.allocatedResourceStatuses.storage}' ||
    { kc get pvc s4-data -o yaml; fail "the claim is not waiting for the node"; }
  echo "resizer: PV $pv capacity $to; claim conditions: $(kc get pvc s4-data -o 'jsonpath={.status.conditions[*].type}')"
  leader=$(kc get lease -n "$E2E_SYSTEM_NS" external-resizer-csi-hearth-dev -o 'jsonpath={.spec.holderIdentity}')
  echo "the resizer's Lease is held by: ${leader:-nobody}"
  local leader_node acted
  leader_node=$(kc -n "$E2E_SYSTEM_NS" get pod "$leader" -o 'jsonpath={.spec.nodeName}' 2>/dev/null || true)
  [ -n "$leader_node" ] || fail "the Lease's holder '$leader' is not a hearth-node pod"
  acted=$(grep -l '"External resizer is resizing volume' "$E2E_WORK"/logs/resizer-*.log | xargs -r -n1 basename || true)
  echo "resizers that acted: $acted (the Lease's holder is the pod on $leader_node)"
  [ "$acted" = "resizer-$leader_node.log" ] || fail "resizers other than the Lease's holder acted"

  # The kubelet: NodeExpandVolume to the PV's capacity, then the claim's status.
  size=$(bytes_of "$to")
  echo "kubelet on $node: NodeExpandVolume to $size bytes: $(kubelet "$node" expand -volume "$handle" -path "$target" -staging "$staging" -bytes "$size" -fs-type xfs)"
  after=$(fs_size "$target")
  echo "filesystem size: $before -> $after bytes"
  [ "$after" -gt $((before + 400 * 2**20)) ] || fail "the mounted filesystem did not grow by the 512Mi"
  [ "$(stat -c %s "$E2E_WORK/nodes/$node/pool/$handle.img")" = "$size" ] || fail "the pool image is not $size bytes"
  [ "$(sha256sum <"$target/before-expansion")" = "$sum" ] || fail "the file written before the expansion changed"
  echo "NodeGetVolumeStats: $(kubelet "$node" stats -volume "$handle" -path "$target" -staging "$staging")"
  kc patch pvc s4-data --subresource=status --type=merge \
    -p "{\"status\": {\"capacity\": {\"storage\": \"$to\"}, \"conditions\": null, \"allocatedResourceStatuses\": null}}" >/dev/null
  [ "$(kc get pvc s4-data -o 'jsonpath={.status.capacity.storage}')" = "$to" ] || fail "the claim's capacity is not $to"
  # Thick: the pool gives the volume its extra 512Mi for good, and the node publishes that.
  until_eq 30 $((capacity[$node] - size)) published_capacity "$node" ||
    fail "$node's capacity did not drop by the growth"
  echo "PVC s4-data: status.capacity $(kc get pvc s4-data -o 'jsonpath={.status.capacity.storage}'); $node publishes $(published_capacity "$node") bytes"

  kubelet_unmount "$node" "$handle" "$staging" "$target"
  trap - EXIT
  kc delete pod s4-app --grace-period=0 --force >/dev/null 2>&1
  kc delete pvc s4-data --wait=false >/dev/null
  until_eq 60 "" kc get pv "$pv" -o name --ignore-not-found || fail "PV $pv not deleted"
  until_eq 30 "${capacity[$node]}" published_capacity "$node" || fail "$node's capacity did not come back"
}
