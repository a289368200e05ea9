# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 12. On the real node: deploy/'s DaemonSet pod is deleted and the DaemonSet makes a new one, as a
#     rolling update does node by node, while a pod writes to its volume without pause. The
#     volume stays mounted and the writes go on through the restart (no write fails, no gap
#     longer than 2 s); once the new driver is ready, a new claim and pod on the node work, and
#     the volume the old driver staged is unpublished, unstaged and detached by the new one.
E2E_TITLES[12]="real node: the DaemonSet pod restarts under a writing pod; I/O goes on, new volumes work"
scenario_12() {
  needs_real_node
  local old new pv t_delete t_ready out
  claim s12-data 256Mi
  # One line per 100 ms, each written and fsynced; a failed write ends the loop (and the pod).
  real_pod s12-writer s12-data --sh 'while date +%s%N >> /data/log && sync /data/log; do sleep 0.1; done; echo write failed; exit 1'
  running s12-writer
  pv=$(kc get pvc s12-data -o 'jsonpath={.spec.volumeName}')
  old=$(node_hearth_pod)
  sleep 2
  t_delete=$(date +%s%N)
  kc -n "$E2E_SYSTEM_NS" delete pod "$old" --wait=true --timeout=120s >/dev/null
  echo "deleted $old after $((($(date +%s%N) - t_delete) / 1000000)) ms (the driver drains and exits on SIGTERM)"
  until_eq 120 True hearth_pod_ready ||
    { kc -n "$E2E_SYSTEM_NS" get pods -o wide; fail "no new DaemonSet pod became ready on $E2E_REAL_NODE"; }
  t_ready=$(date +%s%N)
  new=$(node_hearth_pod)
  [ "$new" != "$old" ] || fail "the DaemonSet pod was not replaced"
  echo "new DaemonSet pod $new ready $(((t_ready - t_delete) / 1000000)) ms after the delete began"
  sleep 2
  [ "$(kc get pod s12-writer -o 'jsonpath={.status.phase}')" = Running ] || fail "the writing pod is no longer running"
  [ "$(kc get pod s12-writer -o 'jsonpath={.status.containerStatuses[0].restartCount}')" = 0 ] || fail "the writing pod's container restarted"
  [ -n "$(mounts_of "$pv")" ] || fail "the volume is no longer mounted on the node"
  out=$(in_pod s12-writer "awk -v a=$t_delete -v b=$t_ready '
    NR > 1 && \$1 - p > gap { gap = \$1 - p }
    { p = \$1 } \$1 >= a && \$1 <= b { during++ } \$1 > b { after++ }
    END { printf \"%d lines, %d while the driver restarted, %d since; longest gap %d ms\", NR, during, after, gap / 1000000 }' /data/log")
  echo "the writer's log: $out"
  local during after gap
  read -r _ _ during _ _ _ _ after _ _ _ gap _ <<<"$out"
  [ "$during" -gt 0 ] && [ "$after" -gt 0 ] || fail "the writes did not go on through the restart"
  [ "$gap" -lt 2000 ] || fail "the writes paused for $gap ms"
  new_volume_works s12-new
  # The volume staged by the old driver is unpublished and unstaged by the new one: its mounts
  # and its loop device go with its pod.
  local handle
  handle=$(kc get pv "$pv" -o 'jsonpath={.spec.csi.volumeHandle}')
  gone pod s12-writer
  until_eq 30 "" mounts_of "$pv" || fail "the volume staged before the restart is still mounted after its pod went"
  [ -z "$(losetup -l -n -O NAME,BACK-FILE | grep -F "/$handle.img")" ] ||
    fail "the volume's loop device is still attached: $(losetup -l -n -O NAME,BACK-FILE | grep -F "/$handle.img")"
  echo "the volume staged before the restart: unpublished, unstaged and detached by the new driver"
  gone pvc s12-data
  released "$pv"
}
