# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 3. Deleting the claim removes the volume from its node's pool, and the space comes back.
E2E_TITLES[3]="deleting the PVC removes the volume from its node's pool"
scenario_3() {
  local node pv handle n
  declare -A before
  for n in "${E2E_NODES[@]}"; do before[$n]=$(published_capacity "$n"); done
  claim_with_pod s3-data s3-app 512Mi
  bound s3-data s3-app
  node=$(kc get pod s3-app -o 'jsonpath={.spec.nodeName}')
  pv=$(kc get pvc s3-data -o 'jsonpath={.spec.volumeName}')
  handle=$(kc get pv "$pv" -o 'jsonpath={.spec.csi.volumeHandle}')
  echo "PVC s3-data: PV $pv, volume $handle on $node"
  [ -f "$E2E_WORK/nodes/$node/pool/$handle.img" ] || fail "no $handle.img in $node's pool"
  until_eq 30 $((before[$node] - 512 * 2**20)) published_capacity "$node" ||
    fail "$node's capacity did not drop by 512Mi"
  kc delete pod s3-app --grace-period=0 --force >/dev/null 2>&1
  kc delete pvc s3-data --wait=false >/dev/null
  until_eq 60 "" kc get pv "$pv" -o name --ignore-not-found || fail "PV $pv not deleted"
  [ -z "$(find "$E2E_WORK/nodes/$node/pool" -name "$handle*")" ] ||
    fail "left in $node's pool: $(find "$E2E_WORK/nodes/$node/pool" -name "$handle*")"
  until_eq 30 "${before[$node]}" published_capacity "$node" || fail "$node's capacity did not come back"
  echo "$node's pool holds no $handle.* any more; its capacity is back to $(published_capacity "$node")"
}
