# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 3. Deleting the claim removes the volume from its node's pool, and the space comes back.
E2E_TITLES[3]="deleting the PVC removes the volume from its node's pool"
scenario_3() {
  local node pv handle n
  declare -A before
  for n in "${E2E_NODES[@]}"; do before[$n]=$(published_capacity "$n"); done
  kc apply -f - <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: s3-data, namespace: default}
spec:
  storageClassName: $E2E_STORAGE_CLASS
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 512Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: s3-app, namespace: default}
spec:
  automountServiceAccountToken: false
  containers: [{name: app, image: registry.k8s.io/pause:3.10, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: s3-data}}]
EOF
  until_eq 90 Bound kc get pvc s3-data -o 'jsonpath={.status.phase}' || fail "PVC s3-data not bound"
  until_eq 30 yes pod_bound s3-app || fail "pod s3-app not bound to a node"
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
