# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 10. On the real node: a claim in use by a running pod is grown; the resizer records the new
#     size and the node's kubelet calls NodeExpandVolume on the mounted filesystem, which the pod
#     sees grow with its data intact, and the kubelet reports the claim's new capacity.
E2E_TITLES[10]="real node: a claim in use grows through the kubelet's NodeExpandVolume, online"
scenario_10() {
  needs_real_node
  local pv before after sum
  claim s10-data 512Mi --class hearth-xfs
  real_pod s10-app s10-data --sh 'head -c 1M /dev/urandom > /data/f && sleep infinity'
  running s10-app
  until_eq 30 yes file_in_pod s10-app /data/f || fail "the pod did not write /data/f"
  pv=$(kc get pvc s10-data -o 'jsonpath={.spec.volumeName}')
  sum=$(in_pod s10-app 'sha256sum < /data/f')
  before=$(in_pod s10-app 'df -B1 --output=size /data | tail -n 1 | tr -d " "')
  echo "in the pod: $(in_pod s10-app 'findmnt -n -o FSTYPE /data') of $before bytes"
  kc patch pvc s10-data --type=merge -p '{"spec": {"resources": {"requests": {"storage": "1Gi"}}}}' >/dev/null
  until_eq 90 1Gi kc get pvc s10-data -o 'jsonpath={.status.capacity.storage}' ||
    { kc describe pvc s10-data | tail -n 20; fail "the claim's capacity did not become 1Gi"; }
  after=$(in_pod s10-app 'df -B1 --output=size /data | tail -n 1 | tr -d " "')
  echo "the claim's capacity: 1Gi; the filesystem in the pod: $before -> $after bytes"
  echo "events: $(kc get events --field-selector involvedObject.name=s10-data -o 'jsonpath={range .items[*]}{.reason}/{.source.component}{.reportingComponent} {end}')"
  [ "$after" -gt $((before + 400 * 2**20)) ] || fail "the mounted filesystem did not grow"
  [ -n "$(has_event s10-data FileSystemResizeSuccessful)$(has_event s10-app FileSystemResizeSuccessful)" ] ||
    fail "no FileSystemResizeSuccessful event from the kubelet"
  [ "$(in_pod s10-app 'sha256sum < /data/f')" = "$sum" ] || fail "the data changed"
  gone pod s10-app
  gone pvc s10-data
  released "$pv"
}
