# Sourced by test/e2e/build and test/e2e/cluster: versions, cache paths and the Go environment.
# shellcheck shell=bash disable=SC2034  # (variables used by the scripts that source this)
e2e_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$e2e_dir/../.." && pwd)
# shellcheck source=versions.env
source "$e2e_dir/versions.env"

E2E_CACHE=${HEARTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hearth}/e2e

# Kubernetes release v1.X.Y publishes its staging modules (k8s.io/api, ...) as v0.X.Y.
KUBE_STAGING_VERSION=v0.${KUBERNETES_VERSION#v1.}

# component name -> "<main module> <version>"
declare -A E2E_MODULE=(
  [etcd]="go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  [kubernetes]="k8s.io/kubernetes $KUBERNETES_VERSION"
  [external-provisioner]="github.com/kubernetes-csi/external-provisioner/v6 $PROVISIONER_VERSION"
  [external-resizer]="github.com/kubernetes-csi/external-resizer/v2 $RESIZER_VERSION"
  [external-snapshotter]="github.com/kubernetes-csi/external-snapshotter/v8 $SNAPSHOTTER_VERSION"
  [node-driver-registrar]="github.com/kubernetes-csi/node-driver-registrar $REGISTRAR_VERSION"
  [livenessprobe]="github.com/kubernetes-csi/livenessprobe $LIVENESSPROBE_VERSION"
  [containerd]="github.com/containerd/containerd/v2 $CONTAINERD_VERSION"
  [cni-plugins]="github.com/containernetworking/plugins $CNI_PLUGINS_VERSION"
)
# Components the proxy does not serve (versions.env says why), built from a copy of their source
# at the release's tag in this repository instead of from a wrapper module: component -> directory.
declare -A E2E_SOURCE=(
  [node-driver-registrar]="test/image/sidecars-src/node-driver-registrar-$REGISTRAR_VERSION"
  [livenessprobe]="test/image/sidecars-src/livenessprobe-$LIVENESSPROBE_VERSION"
)
# component -> binaries, each "<name>=<package>" (the package relative to the main module)
declare -A E2E_BINARIES=(
  [etcd]="etcd=."
  [kubernetes]="kube-apiserver=cmd/kube-apiserver kube-controller-manager=cmd/kube-controller-manager kube-scheduler=cmd/kube-scheduler kubectl=cmd/kubectl kubelet=cmd/kubelet kube-proxy=cmd/kube-proxy"
  [external-provisioner]="csi-provisioner=cmd/csi-provisioner"
  [external-resizer]="csi-resizer=cmd/csi-resizer"
  [external-snapshotter]="csi-snapshotter=cmd/csi-snapshotter snapshot-controller=cmd/snapshot-controller"
  [node-driver-registrar]="csi-node-driver-registrar=cmd/csi-node-driver-registrar"
  [livenessprobe]="livenessprobe=cmd/livenessprobe"
  [containerd]="containerd=cmd/containerd containerd-shim-runc-v2=cmd/containerd-shim-runc-v2 ctr=cmd/ctr"
  [cni-plugins]="bridge=plugins/main/bridge host-local=plugins/ipam/host-local loopback=plugins/main/loopback portmap=plugins/meta/portmap"
)
# The e2e runs all of them: the control plane and the simulated nodes' sidecars as processes, the
# real node's kubelet, kube-proxy, containerd and CNI plugins as processes, and the sidecars in
# that node's pod from the images test/image/sidecars makes of them (test/e2e/build COMPONENT...).
E2E_COMPONENTS=(etcd kubernetes external-provisioner external-resizer external-snapshotter node-driver-registrar livenessprobe containerd cni-plugins)

# The directory of one component's build: its wrapper module (src/) and binaries (bin/).
e2e_component_dir() { local v; read -r _ v <<<"${E2E_MODULE[$1]}"; echo "$E2E_CACHE/$1-$v"; }
# The component that builds a binary, by the binary's name.
e2e_component_of() {
  local c b
  for c in "${E2E_COMPONENTS[@]}"; do
    for b in ${E2E_BINARIES[$c]}; do [ "${b%%=*}" = "$1" ] && { echo "$c"; return 0; }; done
  done
  echo "e2e_component_of: unknown binary $1" >&2; return 1
}
# The path of a built binary, by its name (etcd, kube-apiserver, csi-provisioner, ...).
e2e_bin() {
  local c b
  # Our own tool (test/e2e/csi-kubelet), built by test/e2e/build on every run (Go's cache makes
  # that a second).
  [ "$1" = csi-kubelet ] && { echo "$E2E_CACHE/tools/csi-kubelet"; return 0; }
  for c in "${E2E_COMPONENTS[@]}"; do
    for b in ${E2E_BINARIES[$c]}; do
      if [ "${b%%=*}" = "$1" ]; then echo "$(e2e_component_dir "$c")/bin/$1"; return 0; fi
    done
  done
  echo "e2e_bin: unknown binary $1" >&2; return 1
}
# The VolumeSnapshot and VolumeGroupSnapshot CRDs (github.com/kubernetes-csi/external-snapshotter/client/v8).
e2e_crd_dir() { echo "$(e2e_component_dir external-snapshotter)/crd"; }

# Go: the toolchain of the machine (never a downloaded one), caches under E2E_CACHE.
e2e_go_env() {
  export PATH="$PATH:/usr/local/go/bin"
  export GOCACHE="$E2E_CACHE/go/cache" GOMODCACHE="$E2E_CACHE/go/mod"
  export GOTOOLCHAIN=local GOFLAGS="-modcacherw -buildvcs=false" CGO_ENABLED=0
  export GOWORK=off
}
