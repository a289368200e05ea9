# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 6. The admission policy (deploy/base/admission-policy.yaml), applied for real: with a hearth-node
#    token bound to a pod on node-a, a PV pinned to node-b is refused and one pinned to node-a is
#    allowed. No kubelet runs the pod; its binding to node-a is what the token carries.
E2E_TITLES[6]="the admission policy: node-a's bound token may create PVs for node-a, not node-b"
scenario_6() {
  local base=$repo_root/deploy/base token kcfg out
  kc apply --server-side -f "$base/namespace.yaml" -f "$base/rbac.yaml" -f "$base/admission-policy.yaml" >/dev/null
  kc -n hearth-system apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: e2e-token-holder}
spec:
  serviceAccountName: hearth-node
  nodeName: node-a
  containers: [{name: pause, image: registry.k8s.io/pause:3.10}]
YAML
  token=$(kc -n hearth-system create token hearth-node --bound-object-kind Pod \
    --bound-object-name e2e-token-holder --duration 10m)
  kcfg=$E2E_WORK/hearth-node.kubeconfig
  token_kubeconfig "$token" "$kcfg"
  as_node() { "$(e2e_bin kubectl)" --kubeconfig "$kcfg" "$@"; }
  pv() {
    cat <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: e2e-policy-$1}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: $E2E_STORAGE_CLASS
  csi: {driver: csi.hearth.dev, volumeHandle: default-e2epolicy$1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: topology.hearth.dev/node, operator: In, values: [$1]}]
YAML
  }
  # The API server loads a new policy within a few seconds; until then a create may still pass.
  local deadline=$((SECONDS + 30))
  while true; do
    out=$(pv node-b | as_node create -f - 2>&1 >/dev/null) || true
    if grep -q "hearth-node-persistentvolumes" <<<"$out"; then break; fi
    kc delete pv e2e-policy-node-b --ignore-not-found >/dev/null
    [ $SECONDS -lt $deadline ] || fail "a PV for node-b was not refused: $out"
    sleep 1
  done
  echo "node-a's token creating a PV pinned to node-b: refused: ${out#*: }"
  [ -z "$(kc get pv e2e-policy-node-b --ignore-not-found -o name)" ] || fail "the refused PV exists"
  pv node-a | as_node create -f - >/dev/null || fail "node-a's token could not create a PV pinned to node-a"
  echo "node-a's token creating a PV pinned to node-a: allowed"
  as_node delete pv e2e-policy-node-a >/dev/null || fail "node-a's token could not delete its own PV"
  # The sidecars ran as hearth-node through every scenario before this one: nothing they did
  # was refused by deploy/'s RBAC or by the policy.
  local refused
  refused=$(grep -h -E 'is forbidden|denied request' "$E2E_WORK"/logs/{provisioner,snapshotter,resizer}-*.log | head -n 5 || true)
  [ -z "$refused" ] || fail "a sidecar was refused: $refused"
  echo "the sidecars (as hearth-node, with tokens bound to the DaemonSet's pods) were never refused"
  kc -n hearth-system delete pod e2e-token-holder --grace-period=0 --force >/dev/null 2>&1 || true
}
