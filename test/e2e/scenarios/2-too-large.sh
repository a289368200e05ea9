# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 2. A pod whose claim fits no node stays Pending, says why, and leaves no PV and no volume.
E2E_TITLES[2]="a pod too large for every node stays Pending, says why, leaves no PV or volume"
scenario_2() {
  local n msg size=8Gi
  claim_with_pod s2-huge s2-app "$size"
  until_eq 30 yes has_event s2-app FailedScheduling || fail "no FailedScheduling event for s2-app"
  msg=$(kc get events --field-selector involvedObject.name=s2-app,reason=FailedScheduling -o 'jsonpath={.items[-1:].message}')
  echo "event: $msg"
  case $msg in
    *"did not have enough free storage"*) ;;
    *) fail "the event does not say that no node has the storage" ;;
  esac
  # Give the scheduler and the provisioners time to do something wrong.
  sleep 10
  [ "$(kc get pod s2-app -o 'jsonpath={.status.phase}/{.spec.nodeName}')" = Pending/ ] || fail "pod s2-app is not Pending and unbound"
  [ "$(kc get pvc s2-huge -o 'jsonpath={.status.phase}')" = Pending ] || fail "PVC s2-huge is not Pending"
  [ -z "$(kc get pvc s2-huge -o 'jsonpath={.metadata.annotations.volume\.kubernetes\.io/selected-node}')" ] ||
    fail "PVC s2-huge has a selected node"
  [ -z "$(kc get pv -o name)" ] || fail "a PV exists: $(kc get pv -o name)"
  for n in "${E2E_NODES[@]}"; do
    [ -z "$(find "$E2E_WORK/nodes/$n/pool" -name '*.img')" ] || fail "a volume appeared in $n's pool"
  done
  kc delete pod s2-app --wait=true >/dev/null
  kc delete pvc s2-huge --wait=true >/dev/null
}
