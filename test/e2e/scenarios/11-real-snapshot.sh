# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 11. On the real node: a snapshot of a claim a running pod writes to is cut by the csi-snapshotter
#     in the node's DaemonSet pod, and restored into a new claim that a second pod on the node
#     mounts through the kubelet: it holds the data as it was when the snapshot was taken, not
#     what the first pod wrote afterwards.
E2E_TITLES[11]="real node: a snapshot restored into a new claim holds the data of its moment"
scenario_11() {
  needs_real_node
  local sum pv restored_pv
  kc apply --server-side -f "$repo_root/deploy/base/volumesnapshotclass.yaml" >/dev/null
  claim s11-source 256Mi
  real_pod s11-app s11-source --sh 'head -c 4M /dev/urandom > /data/f && sync && sleep infinity'
  running s11-app
  until_eq 30 yes file_in_pod s11-app /data/f || fail "the pod did not write /data/f"
  pv=$(kc get pvc s11-source -o 'jsonpath={.spec.volumeName}')
  sum=$(in_pod s11-app 'sync; sha256sum < /data/f')
  snapshot s11-snap s11-source
  echo "snapshot ready: $(kc get volumesnapshotcontent "$(kc get volumesnapshot s11-snap -o 'jsonpath={.status.boundVolumeSnapshotContentName}')" -o 'jsonpath={.status.snapshotHandle}, {.status.restoreSize} bytes')"
  in_pod s11-app 'head -c 4M /dev/urandom > /data/f && sync'
  claim s11-copy 256Mi --from-snapshot s11-snap
  real_pod s11-reader s11-copy
  running s11-reader
  restored_pv=$(kc get pvc s11-copy -o 'jsonpath={.spec.volumeName}')
  [ "$(in_pod s11-reader 'sha256sum < /data/f')" = "$sum" ] || fail "the restored claim does not hold the snapshot's data"
  [ "$(in_pod s11-app 'sha256sum < /data/f')" != "$sum" ] || fail "the source did not change after the snapshot"
  echo "restored claim on $(kc get pod s11-reader -o 'jsonpath={.spec.nodeName}'): the data of the snapshot's moment (sha256 ${sum%% *}), not the source's since"
  gone pod s11-reader s11-app
  gone pvc s11-copy
  gone volumesnapshot s11-snap
  gone pvc s11-source
  released "$pv"
  released "$restored_pv"
}
