# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 5. A snapshot is taken and restored into a new PVC on the same node: the snapshot-controller
#    (--enable-distributed-snapshotting) hands the VolumeSnapshotContent to the source volume's
#    node, whose csi-snapshotter cuts it (CreateSnapshot, the source mounted and written to); the
#    restored claim, pinned to that node, is provisioned there from the snapshot and holds the
#    data the source had when the snapshot was taken. A restore pinned to another node stays
#    Pending, its events naming the reason, and leaves nothing there.
E2E_TITLES[5]="a snapshot is taken on the volume's node and restored into a new PVC there"
scenario_5() {
  local node handle staging target sum pv content snap_handle restored_pv n
  declare -A capacity
  for n in "${E2E_NODES[@]}"; do capacity[$n]=$(published_capacity "$n"); done
  kc apply --server-side -f "$repo_root/deploy/base/volumesnapshotclass.yaml" >/dev/null
  claim_with_pod s5-source s5-app 256Mi
  bound s5-source s5-app
  pv=$(kc get pvc s5-source -o 'jsonpath={.spec.volumeName}')
  kubelet_mount s5-app s5-source
  node=$MOUNT_NODE handle=$MOUNT_HANDLE staging=$MOUNT_STAGING target=$MOUNT_TARGET
  # shellcheck disable=SC2064
  trap "kubelet_unmount '$node' '$handle' '$staging' '$target' 2>/dev/null || true" EXIT
  head -c 4M /dev/urandom >"$target/data"
  sum=$(sha256sum <"$target/data")
  echo "source: $handle on $node ($(findmnt -n -o FSTYPE "$target")), 4 MiB written, sha256 ${sum%% *}"

  snapshot s5-snap s5-source
  content=$(kc get volumesnapshot s5-snap -o 'jsonpath={.status.boundVolumeSnapshotContentName}')
  snap_handle=$(kc get volumesnapshotcontent "$content" -o 'jsonpath={.status.snapshotHandle}')
  local managed_by
  managed_by=$(kc get volumesnapshotcontent "$content" -o 'jsonpath={.metadata.labels.snapshot\.storage\.kubernetes\.io/managed-by}')
  echo "snapshot s5-snap: content $content, handle $snap_handle, size $(kc get volumesnapshot s5-snap -o 'jsonpath={.status.restoreSize}'), managed by ${managed_by:-?}"
  [ "$managed_by" = "$node" ] || fail "the content is managed by '$managed_by', not by the source's node $node"
  [ -f "$E2E_WORK/nodes/$node/pool/snapshots/$snap_handle.img" ] ||
    fail "no snapshot image $snap_handle.img in $node's pool: $(ls "$E2E_WORK/nodes/$node/pool/snapshots" 2>&1)"
  # Only the source's node was asked (each driver logs one line per RPC).
  local asked
  asked=$(grep -l "method=CreateSnapshot .*code=OK" "$E2E_WORK"/logs/hearth-*.log | xargs -r -n1 basename || true)
  echo "drivers that took a snapshot: $asked"
  [ "$asked" = "hearth-$node.log" ] || fail "drivers other than $node's were asked for the snapshot"
  # The source moves on; the snapshot must not.
  head -c 1M /dev/urandom >"$target/data"

  # A snapshot stays on its node: the pod that wants it goes there.
  claim_with_pod s5-restored s5-restore-app 256Mi --from-snapshot s5-snap --node "$node"
  bound s5-restored s5-restore-app
  restored_pv=$(kc get pvc s5-restored -o 'jsonpath={.spec.volumeName}')
  local affinity
  affinity=$(kc get pv "$restored_pv" -o 'jsonpath={range .spec.nodeAffinity.required.nodeSelectorTerms[*].matchExpressions[*]}{.key}={.values}{end}')
  echo "restored: PV $restored_pv, handle $(kc get pv "$restored_pv" -o 'jsonpath={.spec.csi.volumeHandle}'), affinity $affinity"
  [ "$affinity" = "topology.hearth.dev/node=[\"$node\"]" ] || fail "the restored PV is not pinned to $node"
  kubelet_mount s5-restore-app s5-restored
  local r_handle=$MOUNT_HANDLE r_staging=$MOUNT_STAGING r_target=$MOUNT_TARGET
  # shellcheck disable=SC2064
  trap "kubelet_unmount '$node' '$r_handle' '$r_staging' '$r_target' 2>/dev/null || true; kubelet_unmount '$node' '$handle' '$staging' '$target' 2>/dev/null || true" EXIT
  [ "$MOUNT_NODE" = "$node" ] || fail "the restored volume is on $MOUNT_NODE, not $node"
  local got; got=$(sha256sum <"$r_target/data")
  echo "restored data: sha256 ${got%% *}"
  [ "$got" = "$sum" ] || fail "the restored volume does not hold what the source held at the snapshot"
  # The source and its restored copy are independent.
  echo new >"$r_target/only-in-restored"
  [ ! -e "$target/only-in-restored" ] || fail "a write to the restored volume shows in the source"

  # A restore pinned to another node cannot be made there: it stays Pending, the claim's events
  # say why, and that node's pool gets nothing.
  local other msg
  for other in "${E2E_NODES[@]}"; do [ "$other" != "$node" ] && break; done
  claim_with_pod s5-elsewhere s5-elsewhere-app 256Mi --from-snapshot s5-snap --node "$other"
  until_eq 60 yes has_event s5-elsewhere ProvisioningFailed || fail "no ProvisioningFailed event for s5-elsewhere"
  msg=$(kc get events --field-selector involvedObject.name=s5-elsewhere,reason=ProvisioningFailed -o 'jsonpath={.items[-1:].message}')
  echo "a restore pinned to $other: $msg"
  [[ $msg = *"does not exist on node $other"*"restore it there"* ]] || fail "the event does not say the snapshot is on another node"
  [ "$(kc get pvc s5-elsewhere -o 'jsonpath={.status.phase}')" = Pending ] || fail "s5-elsewhere is not Pending"
  [ -z "$(find "$E2E_WORK/nodes/$other/pool" -name '*.img')" ] || fail "something was made in $other's pool"
  kc delete pod s5-elsewhere-app --grace-period=0 --force >/dev/null 2>&1
  kc delete pvc s5-elsewhere --wait=true >/dev/null

  kubelet_unmount "$node" "$r_handle" "$r_staging" "$r_target"
  kubelet_unmount "$node" "$handle" "$staging" "$target"
  trap - EXIT
  kc delete pod s5-app s5-restore-app --grace-period=0 --force >/dev/null 2>&1
  kc delete volumesnapshot s5-snap --wait=false >/dev/null
  kc delete pvc s5-restored s5-source --wait=false >/dev/null
  until_eq 60 "" kc get volumesnapshotcontent "$content" -o name --ignore-not-found || fail "content $content not deleted"
  until_eq 60 "" kc get pv "$pv" "$restored_pv" -o name --ignore-not-found || fail "PVs not deleted"
  [ -z "$(find "$E2E_WORK/nodes/$node/pool" -name '*.img')" ] ||
    fail "left in $node's pool: $(find "$E2E_WORK/nodes/$node/pool" -name '*.img')"
  until_eq 30 "${capacity[$node]}" published_capacity "$node" || fail "$node's capacity did not come back"
  echo "snapshot, both volumes and their images are gone from $node; its capacity is back to ${capacity[$node]}"
}
