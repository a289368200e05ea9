# shellcheck shell=bash
# The scenarios' helpers (test/e2e/scenarios/*.sh), sourced by test/e2e/run.

fail() { echo "FAILED: $*"; exit 1; }
skip() { echo "$*"; exit 77; }

# Waits until "$@" prints EXPECTED: until_eq SECONDS EXPECTED CMD...
until_eq() {
  local limit=$1 want=$2 got="" i; shift 2
  for ((i = 0; i < limit * 2; i++)); do
    got=$("$@" 2>/dev/null || true)
    [ "$got" = "$want" ] && return 0
    sleep 0.5
  done
  echo "after ${limit}s: '$*' gives '$got', want '$want'"
  return 1
}

# The capacity a node's provisioner published for the hearth StorageClass, in bytes.
published_capacity() {
  kc get csistoragecapacities -n "$E2E_SYSTEM_NS" -o json | python3 -c '
import json, sys
node, sc = sys.argv[1], sys.argv[2]
units = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
for c in json.load(sys.stdin)["items"]:
    labels = (c.get("nodeTopology") or {}).get("matchLabels") or {}
    if c["storageClassName"] == sc and labels.get("topology.hearth.dev/node") == node:
        q = c.get("capacity", "0")
        num = q.rstrip("kMGTi")
        print(int(float(num) * units[q[len(num):]]))
' "$1" "$E2E_STORAGE_CLASS"
}

# has_event OBJECT REASON: "yes" once an event of that reason names the object.
has_event() {
  [ -n "$(kc get events --field-selector "involvedObject.name=$1,reason=$2" -o name)" ] && echo yes
}
pod_bound() { [ -n "$(kc get pod "$1" -o 'jsonpath={.spec.nodeName}')" ] && echo yes; }
has_capacity() { [ -n "$(published_capacity "$1")" ] && echo yes; }

# The kubelet's part, for the scenarios that need a volume mounted: csi-kubelet
# (test/e2e/csi-kubelet) makes the node calls on the node's socket, on the kubelet's paths under
# the node's directory.
kubelet() { local node=$1; shift; "$(e2e_bin csi-kubelet)" -endpoint "unix://$E2E_WORK/nodes/$node/csi.sock" "$@"; }

# kubelet_mount POD PVC: stages the claim's volume on the pod's node and publishes it into the
# pod's volume directory, as the kubelet does when it starts the pod. Sets MOUNT_NODE,
# MOUNT_HANDLE, MOUNT_STAGING and MOUNT_TARGET.
kubelet_mount() {
  local pod=$1 pvc=$2 pv uid fs ctx root
  MOUNT_NODE=$(kc get pod "$pod" -o 'jsonpath={.spec.nodeName}')
  pv=$(kc get pvc "$pvc" -o 'jsonpath={.spec.volumeName}')
  uid=$(kc get pod "$pod" -o 'jsonpath={.metadata.uid}')
  MOUNT_HANDLE=$(kc get pv "$pv" -o 'jsonpath={.spec.csi.volumeHandle}')
  fs=$(kc get pv "$pv" -o 'jsonpath={.spec.csi.fsType}')
  ctx=$(kc get pv "$pv" -o json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["spec"]["csi"].get("volumeAttributes") or {}))')
  [ -n "$MOUNT_NODE" ] && [ -n "$MOUNT_HANDLE" ] && [ -n "$uid" ] || fail "pod $pod or claim $pvc is not bound"
  root=$E2E_WORK/nodes/$MOUNT_NODE/kubelet
  # The kubelet makes the staging directory and the target's parent; the driver the target.
  MOUNT_STAGING=$root/plugins/kubernetes.io/csi/csi.hearth.dev/$(printf %s "$MOUNT_HANDLE" | sha256sum | cut -c1-64)/globalmount
  MOUNT_TARGET=$root/pods/$uid/volumes/kubernetes.io~csi/$pv/mount
  mkdir -p "$MOUNT_STAGING" "$(dirname "$MOUNT_TARGET")"
  echo "kubelet on $MOUNT_NODE: stage and publish $MOUNT_HANDLE (fsType '$fs', context $ctx)"
  kubelet "$MOUNT_NODE" stage -volume "$MOUNT_HANDLE" -staging "$MOUNT_STAGING" -fs-type "$fs" -context "$ctx" >/dev/null
  kubelet "$MOUNT_NODE" publish -volume "$MOUNT_HANDLE" -staging "$MOUNT_STAGING" -target "$MOUNT_TARGET" \
    -fs-type "$fs" -context "$ctx" >/dev/null
  mountpoint -q "$MOUNT_TARGET" || fail "$MOUNT_TARGET is not a mount point after NodePublishVolume"
}
# kubelet_unmount NODE HANDLE STAGING TARGET: the pod is gone; unpublish, then unstage.
kubelet_unmount() {
  kubelet "$1" unpublish -volume "$2" -target "$4" >/dev/null
  kubelet "$1" unstage -volume "$2" -staging "$3" >/dev/null
  ! mountpoint -q "$3" || fail "$3 is still mounted after NodeUnstageVolume"
}
# Bytes in a quantity such as 512Mi or 1Gi.
bytes_of() {
  python3 -c 'import sys; q=sys.argv[1]; u={"Ki":2**10,"Mi":2**20,"Gi":2**30,"Ti":2**40}
n=q.rstrip("KMGTi"); print(int(n) * u.get(q[len(n):], 1))' "$1"
}
# The size of the filesystem mounted at a path, in bytes.
fs_size() { df -B1 --output=size "$1" | tail -n 1 | tr -d ' '; }

# claim_with_pod CLAIM POD SIZE [--class SC] [--node NODE] [--from-snapshot SNAPSHOT]: a
# ReadWriteOnce claim (of the e2e's StorageClass unless --class) and a pod that mounts it, in the
# default namespace; --node pins the pod to a node's topology, --from-snapshot restores the claim
# from a VolumeSnapshot.
claim_with_pod() {
  local claim=$1 pod=$2 size=$3 node="" claim_args=(); shift 3
  while [ $# -gt 0 ]; do
    case $1 in
      --class|--from-snapshot) claim_args+=("$1" "$2") ;;
      --node) node=$2 ;;
      *) fail "claim_with_pod: unknown option $1" ;;
    esac
    shift 2
  done
  claim "$claim" "$size" "${claim_args[@]}"
  kc apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $pod, namespace: default}
spec:
  automountServiceAccountToken: false
$([ -z "$node" ] || echo "  nodeSelector: {$E2E_TOPOLOGY_KEY: $node}")
  containers: [{name: app, image: registry.k8s.io/pause:3.10, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: $claim}}]
YAML
}
# bound CLAIM POD: waits until the claim is Bound and the scheduler has bound the pod to a node.
bound() {
  until_eq 90 Bound kc get pvc "$1" -o 'jsonpath={.status.phase}' || { kc describe pvc "$1"; fail "PVC $1 not bound"; }
  until_eq 30 yes pod_bound "$2" || { kc describe pod "$2"; fail "pod $2 not bound to a node"; }
}

# The real node's scenarios (test/e2e/node): a kubelet with containerd runs their pods.
needs_real_node() {
  $E2E_REAL_NODE_UP || skip "no real node: this machine lacks ${real_node_missing:-what test/e2e/node needs}"
}
# real_pod POD CLAIM [--block] [--fs-group GID] [--user UID] [--sh COMMAND]: a pod on the real node
# (its name and its taint) running COMMAND (default: sleep) in the pods' image, with CLAIM mounted
# at /data, or with --block as the raw device /dev/xvda.
real_pod() {
  local pod=$1 claim=$2 block=false fs_group="" user="" cmd="sleep infinity"; shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --block) block=true; shift; continue ;;
      --fs-group) fs_group=$2 ;;
      --user) user=$2 ;;
      --sh) cmd=$2 ;;
      *) fail "real_pod: unknown option $1" ;;
    esac
    shift 2
  done
  local volume="volumeMounts: [{name: data, mountPath: /data}]"
  $block && volume="volumeDevices: [{name: data, devicePath: /dev/xvda}]"
  kc apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $pod, namespace: default}
spec:
  automountServiceAccountToken: false
  nodeSelector: {kubernetes.io/hostname: $E2E_REAL_NODE}
  tolerations: [{key: $E2E_REAL_NODE_TAINT, operator: Exists, effect: NoSchedule}]
  terminationGracePeriodSeconds: 2
  securityContext: {$(printf '%s' "${fs_group:+fsGroup: $fs_group}${fs_group:+${user:+, }}${user:+runAsUser: $user, runAsGroup: $user}")}
  containers:
  - name: app
    image: $E2E_POD_IMAGE
    imagePullPolicy: Never
    command: [sh, -c, $(printf '%s' "$cmd" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')]
    $volume
  volumes: [{name: data, persistentVolumeClaim: {claimName: $claim}}]
YAML
}
# claim CLAIM SIZE [--class SC] [--block] [--from-snapshot SNAPSHOT]: a ReadWriteOnce claim in the
# default namespace, of the e2e's StorageClass unless --class; --from-snapshot restores it from a
# VolumeSnapshot.
claim() {
  local claim=$1 size=$2 class=$E2E_STORAGE_CLASS mode=Filesystem snapshot=""; shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --class) class=$2 ;;
      --block) mode=Block; shift; continue ;;
      --from-snapshot) snapshot=$2 ;;
      *) fail "claim: unknown option $1" ;;
    esac
    shift 2
  done
  kc apply -f - <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $claim, namespace: default}
spec:
  storageClassName: $class
  accessModes: [ReadWriteOnce]
  volumeMode: $mode
  resources: {requests: {storage: $size}}
$([ -z "$snapshot" ] || echo "  dataSource: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: $snapshot}")
YAML
}
# running POD: waits until the pod runs (the kubelet staged and published its volume).
running() {
  until_eq 120 Running kc get pod "$1" -o 'jsonpath={.status.phase}' ||
    { kc describe pod "$1" | tail -n 25; fail "pod $1 is not running"; }
}
# in_pod POD COMMAND: sh -c COMMAND in the pod's container, through the API server and the kubelet.
in_pod() { kc exec "$1" -c app -- sh -c "$2"; }
# gone KIND NAME...: deletes and waits until they are gone (pods through the kubelet).
gone() {
  local kind=$1; shift
  kc delete "$kind" "$@" --ignore-not-found --wait=true --timeout=120s >/dev/null ||
    fail "$kind $* not deleted within 120 s"
}
# The host paths of a pod's volume: its publish target (filesystem) and the kubelet's pod dir.
pod_dir() { echo "/var/lib/kubelet/pods/$(kc get pod "$1" -o 'jsonpath={.metadata.uid}')"; }
# released PV: waits until the PV of a deleted claim is gone (the driver deleted the volume).
released() {
  until_eq 90 "" kc get pv "$1" -o name --ignore-not-found || fail "PV $1 not deleted"
}
# file_in_pod POD FILE: "yes" once FILE in the pod is not empty.
file_in_pod() { in_pod "$1" "test -s $2" >/dev/null 2>&1 && echo yes; }
# mounts_of PV: the node's mount points of a volume (the kubelet's paths name the PV or the
# staging directory's hash of its handle).
mounts_of() {
  local handle hash
  handle=$(kc get pv "$1" -o 'jsonpath={.spec.csi.volumeHandle}' 2>/dev/null)
  hash=$(printf %s "$handle" | sha256sum | cut -c1-64)
  findmnt -n -l -o TARGET | grep -E -e "/$1(/|$)" -e "/$hash(/|$)" || true
}
# hearth_pod_ready: the Ready condition of deploy/'s DaemonSet pod on the real node.
hearth_pod_ready() {
  kc -n "$E2E_SYSTEM_NS" get pod "$(node_hearth_pod)" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
}
# hearth_restarts: how often the kubelet restarted the driver's container on the real node.
hearth_restarts() {
  kc -n "$E2E_SYSTEM_NS" get pod "$(node_hearth_pod)" -o 'jsonpath={.status.containerStatuses[?(@.name=="hearth")].restartCount}'
}
# snapshot NAME CLAIM: a VolumeSnapshot of the claim (deploy/'s class), waited for until ready.
snapshot() {
  kc apply -f - <<YAML
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: $1, namespace: default}
spec:
  volumeSnapshotClassName: hearth
  source: {persistentVolumeClaimName: $2}
YAML
  until_eq 90 true kc get volumesnapshot "$1" -o 'jsonpath={.status.readyToUse}' ||
    { kc describe volumesnapshot "$1" | tail -n 20; fail "the snapshot did not become ready"; }
}
# new_volume_works NAME: a new 64Mi claim and a pod on the real node that writes to it; the pod
# and the claim are deleted again. Sets NEW_PV.
new_volume_works() {
  claim "$1" 64Mi
  real_pod "$1" "$1" --sh 'echo written > /data/f && sleep infinity'
  running "$1"
  until_eq 30 yes file_in_pod "$1" /data/f || fail "the new pod did not write"
  NEW_PV=$(kc get pvc "$1" -o 'jsonpath={.spec.volumeName}')
  echo "a new claim: $NEW_PV, mounted and written"
  gone pod "$1"
  gone pvc "$1"
  released "$NEW_PV"
}
