# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 1. A pod with a WaitForFirstConsumer PVC lands on the node that has the space; its PV carries
#    that node's affinity; each node's CSIStorageCapacity follows its pool.
E2E_TITLES[1]="a WaitForFirstConsumer PVC is provisioned on the node with room; PV affinity; capacity follows"
scenario_1() {
  local n pv node size=3Gi
  for n in "${E2E_NODES[@]}"; do
    until_eq 60 yes has_capacity "$n" || fail "no CSIStorageCapacity for $n"
  done
  for n in "${E2E_NODES[@]}"; do echo "capacity before: $n $(published_capacity "$n")"; done
  # --capacity-ownerref-level=1, as in deploy/: the DaemonSet owns them (uninstalling removes them).
  local owners
  owners=$(kc get csistoragecapacities -n "$E2E_SYSTEM_NS" -o 'jsonpath={range .items[*]}{.metadata.ownerReferences[*].kind}/{.metadata.ownerReferences[*].name}{"\n"}{end}' | sort -u)
  echo "CSIStorageCapacity owners: $owners"
  [ "$owners" = DaemonSet/hearth-node ] || fail "the CSIStorageCapacity objects are not all owned by the hearth-node DaemonSet"
  local before_b; before_b=$(published_capacity node-b)
  [ "$before_b" -ge $((3 * 2**30)) ] || fail "node-b publishes $before_b bytes, less than its 4Gi pool can hold for 3Gi"
  [ "$(published_capacity node-a)" -lt $((3 * 2**30)) ] || fail "node-a publishes room for 3Gi in a 2Gi pool"

  claim_with_pod s1-data s1-app "$size"
  # The scheduler binds the pod once its volume is bound.
  bound s1-data s1-app
  node=$(kc get pod s1-app -o 'jsonpath={.spec.nodeName}')
  echo "pod s1-app scheduled to ${node:-nowhere}"
  [ "$node" = node-b ] || fail "pod on '$node', want node-b (the only node with room for $size)"
  pv=$(kc get pvc s1-data -o 'jsonpath={.spec.volumeName}')
  local affinity
  affinity=$(kc get pv "$pv" -o 'jsonpath={range .spec.nodeAffinity.required.nodeSelectorTerms[*].matchExpressions[*]}{.key}={.values}{end}')
  echo "PV $pv: driver $(kc get pv "$pv" -o 'jsonpath={.spec.csi.driver}'), handle $(kc get pv "$pv" -o 'jsonpath={.spec.csi.volumeHandle}'), affinity $affinity"
  [ "$affinity" = 'topology.hearth.dev/node=["node-b"]' ] || fail "PV affinity $affinity, want node-b"
  [ "$(kc get pvc s1-data -o 'jsonpath={.metadata.annotations.volume\.kubernetes\.io/selected-node}')" = node-b ] ||
    fail "PVC's selected-node is not node-b"
  local handle; handle=$(kc get pv "$pv" -o 'jsonpath={.spec.csi.volumeHandle}')
  [ -f "$E2E_WORK/nodes/node-b/pool/$handle.img" ] || fail "no $handle.img in node-b's pool"
  for n in node-a node-c; do
    [ -z "$(find "$E2E_WORK/nodes/$n/pool" -name '*.img')" ] || fail "a volume appeared in $n's pool"
  done
  # The capacity node-b publishes drops by the volume (the provisioner polls every 5 s).
  local want=$((before_b - 3 * 2**30))
  until_eq 30 "$want" published_capacity node-b ||
    fail "node-b's CSIStorageCapacity did not drop from $before_b by $size"
  for n in "${E2E_NODES[@]}"; do echo "capacity after: $n $(published_capacity "$n")"; done
  # Leave nothing for the next scenario: no kubelet confirms the pod's end, so force it.
  kc delete pod s1-app --grace-period=0 --force >/dev/null 2>&1
  kc delete pvc s1-data --wait=false >/dev/null
  until_eq 60 "" kc get pv "$pv" -o name --ignore-not-found || fail "PV $pv not deleted"
  until_eq 30 "$before_b" published_capacity node-b || fail "node-b's capacity did not come back"
}
