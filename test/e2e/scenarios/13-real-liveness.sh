# shellcheck shell=bash
# Sourced by test/e2e/run, which defines E2E_WORK, kc, e2e_bin and the helpers of helpers.sh.

# 13. On the real node: the driver stops answering on its socket (its JVM stopped with SIGSTOP, as
#     a hung process would be); deploy/'s livenessprobe sidecar turns the failing CSI Probe into
#     a failing /healthz, and the kubelet, after the DaemonSet's livenessProbe threshold, kills
#     and restarts the driver's container; the new driver answers and serves a new volume.
E2E_TITLES[13]="real node: a driver that stops answering is restarted by the kubelet via livenessprobe"
scenario_13() {
  needs_real_node
  local pod cid pid before t0
  pod=$(node_hearth_pod)
  before=$(hearth_restarts)
  cid=$(kc -n "$E2E_SYSTEM_NS" get pod "$pod" -o 'jsonpath={.status.containerStatuses[?(@.name=="hearth")].containerID}')
  cid=${cid#containerd://}
  pid=$("$(e2e_bin ctr)" --address "$E2E_WORK/node/containerd.sock" --namespace k8s.io tasks ls | awk -v c="$cid" '$1 == c {print $2}')
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || fail "no process for the driver's container $cid"
  echo "the driver: container ${cid:0:12}, pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-60)...), restarts so far: $before"
  t0=$SECONDS
  kill -STOP "$pid"
  until_eq 240 $((before + 1)) hearth_restarts ||
    { kill -CONT "$pid" 2>/dev/null || true; kc -n "$E2E_SYSTEM_NS" describe pod "$pod" | tail -n 20; fail "the kubelet did not restart the stopped driver"; }
  echo "the kubelet restarted the driver's container $((SECONDS - t0)) s after it stopped answering"
  echo "events: $(kc -n "$E2E_SYSTEM_NS" get events --field-selector "involvedObject.name=$pod" -o 'jsonpath={range .items[?(@.reason=="Unhealthy")]}{.message}{"\n"}{end}' | sort | uniq -c | sed 's/^ *//' | tr '\n' ';')"
  [ ! -d "/proc/$pid" ] || fail "the stopped process $pid is still there"
  until_eq 60 True hearth_pod_ready || fail "the restarted driver did not become ready"
  new_volume_works s13-new
}
