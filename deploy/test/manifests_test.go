package deploytest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
)

const namespace = "hearth-system"

// The objects whose kind is cluster-scoped; everything else of hearth's lives in hearth-system.
var clusterScoped = []string{"Namespace", "CSIDriver", "StorageClass", "ClusterRole", "ClusterRoleBinding",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "VolumeSnapshotClass"}

func forEachOverlay(t *testing.T, check func(t *testing.T, b built)) {
	for dir := range overlays {
		t.Run(dir, func(t *testing.T) { check(t, build(t, dir)) })
	}
}

func TestNamespacedObjectsLiveInHearthSystem(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, b built) {
		type meta interface{ GetNamespace() string }
		for _, o := range b.objects {
			kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*")
			kind = kind[strings.LastIndex(kind, ".")+1:]
			ns := o.(meta).GetNamespace()
			if slices.Contains(clusterScoped, kind) != (ns == "") || (ns != "" && ns != namespace) {
				t.Errorf("%s %s has namespace %q", kind, nameOf(o), ns)
			}
		}
	})
}

// The hearth container's args refer to environment variables, $(NAME), that the kubelet expands
// from the container's env and the hearth-node ConfigMap. A name it cannot resolve stays in the
// flag as written, and the driver refuses to start.
func TestEveryArgumentVariableResolves(t *testing.T) {
	reference := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	forEachOverlay(t, func(t *testing.T, b built) {
		ds := one[*appsv1.DaemonSet](t, b, "hearth-node")
		for _, c := range ds.Spec.Template.Spec.Containers {
			defined := envOf(t, b, c)
			for _, arg := range c.Args {
				for _, m := range reference.FindAllStringSubmatch(arg, -1) {
					if _, ok := defined[m[1]]; !ok {
						t.Errorf("container %s: %q refers to $(%s), which is not defined", c.Name, arg, m[1])
					}
				}
			}
		}
	})
}

// Each pool in the ConfigMap (HEARTH_POOL_*) is passed as a --pool flag, exactly once; a file
// pool's directory is on a hostPath mounted at the same path, so that the pool lives on the node and
// not in the container's throwaway filesystem; an lvm pool names its volume group, and LVM's lock
// and config directories are the node's.
func TestEveryPoolIsAFlagWithItsDirectoryFromTheHost(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, b built) {
		ds := one[*appsv1.DaemonSet](t, b, "hearth-node")
		hearth := ds.Spec.Template.Spec.Containers[0]
		if hearth.Name != "hearth" {
			t.Fatalf("the first container is %q; overlays patch the hearth container by index 0", hearth.Name)
		}
		env := envOf(t, b, hearth)
		var pools []string
		for name := range env {
			if strings.HasPrefix(name, "HEARTH_POOL_") {
				pools = append(pools, name)
			}
		}
		if len(pools) == 0 {
			t.Fatal("no HEARTH_POOL_* setting")
		}
		for _, pool := range pools {
			if n := count(hearth.Args, "--pool=$("+pool+")"); n != 1 {
				t.Errorf("--pool=$(%s) appears %d times in the hearth container's args", pool, n)
			}
			if specValue(env[pool], "kind") == "lvm" {
				if specValue(env[pool], "vg") == "" {
					t.Errorf("%s=%s: an lvm pool names its volume group (vg=)", pool, env[pool])
				}
				for _, shared := range []string{"/run/lock/lvm", "/etc/lvm"} {
					if !onHostPath(ds, hearth, shared) {
						t.Errorf("%s: %s is not the node's (a hostPath mounted at the same path)", pool, shared)
					}
				}
				continue
			}
			if specValue(env[pool], "kind") == "device" {
				// Whole disks are found by their names in the node's /dev, which base/ mounts.
				if specValue(env[pool], "disks") == "" {
					t.Errorf("%s=%s: a device pool names its disks (disks=)", pool, env[pool])
				}
				continue
			}
			dir := specValue(env[pool], "dir")
			if dir == "" {
				t.Errorf("%s=%s: give the pool a dir, so that its place on the node is explicit", pool, env[pool])
				continue
			}
			if !onHostPath(ds, hearth, dir) {
				t.Errorf("%s: %s is not under a hostPath volume mounted at the same path", pool, dir)
			}
		}
		if n := count(hearth.Args, "--pool="); n != len(pools) {
			t.Errorf("%d --pool flags for %d HEARTH_POOL_* settings", n, len(pools))
		}
	})
}

// A StorageClass may name only pools the nodes have, and only parameters the driver accepts.
func TestStorageClassesNameKnownPoolsAndParameters(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, b built) {
		ds := one[*appsv1.DaemonSet](t, b, "hearth-node")
		env := envOf(t, b, ds.Spec.Template.Spec.Containers[0])
		pools := map[string]bool{}
		grows := map[string]bool{} // whether the pool's volumes can expand: not a whole disk
		for name, value := range env {
			if strings.HasPrefix(name, "HEARTH_POOL_") {
				pools[specValue(value, "name")] = true
				grows[specValue(value, "name")] = specValue(value, "kind") != "device"
			}
		}
		for _, sc := range all[*storagev1.StorageClass](b) {
			if sc.Provisioner != "csi.hearth.dev" {
				t.Errorf("StorageClass %s: provisioner %q", sc.Name, sc.Provisioner)
			}
			if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
				t.Errorf("StorageClass %s: volumeBindingMode is not WaitForFirstConsumer", sc.Name)
			}
			pool, named := sc.Parameters["hearth.dev/pool"]
			expands := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
			if want := !named || grows[pool]; expands != want {
				t.Errorf("StorageClass %s: allowVolumeExpansion is %v; pool %q can expand: %v", sc.Name, expands, pool, want)
			}
			for key, value := range sc.Parameters {
				switch {
				case key == "hearth.dev/pool":
					if !pools[value] {
						t.Errorf("StorageClass %s: pool %q is not configured (pools: %v)", sc.Name, value, pools)
					}
				case key == "hearth.dev/provisioning":
					if value != "thick" && value != "thin" {
						t.Errorf("StorageClass %s: provisioning %q", sc.Name, value)
					}
				case key == "csi.storage.k8s.io/fstype":
					if !slices.Contains([]string{"ext4", "xfs", "btrfs"}, value) {
						t.Errorf("StorageClass %s: fstype %q", sc.Name, value)
					}
				default:
					t.Errorf("StorageClass %s: the driver refuses parameter %q", sc.Name, key)
				}
			}
		}
	})
}

// The containers of a pod share one network namespace: two of them on one port would not start.
// The probes name ports their container declares.
func TestPortsAreDistinctAndProbesNameThem(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, b built) {
		ds := one[*appsv1.DaemonSet](t, b, "hearth-node")
		seen := map[int32]string{}
		listen := regexp.MustCompile(`^--(http-endpoint|metrics-address)=:(\d+)$`)
		for _, c := range ds.Spec.Template.Spec.Containers {
			for _, arg := range c.Args {
				if m := listen.FindStringSubmatch(arg); m != nil {
					var port int32
					fmt.Sscan(m[2], &port)
					if other, taken := seen[port]; taken {
						t.Errorf("port %d: %s and %s", port, other, c.Name)
					}
					seen[port] = c.Name
				}
			}
			for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if probe == nil || probe.HTTPGet == nil {
					continue
				}
				name := probe.HTTPGet.Port.StrVal
				if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == name }) {
					t.Errorf("container %s: a probe names port %q, which it does not declare", c.Name, name)
				}
			}
		}
	})
}

// The driver gets SIGTERM, lets running calls finish for --shutdown-grace, and exits; the kubelet
// must not kill it before.
func TestTerminationGraceOutlastsTheDriversShutdownGrace(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, b built) {
		ds := one[*appsv1.DaemonSet](t, b, "hearth-node")
		var grace time.Duration
		for _, arg := range ds.Spec.Template.Spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(arg, "--shutdown-grace="); ok {
				d, err := time.ParseDuration(v)
				if err != nil {
					t.Fatalf("--shutdown-grace=%s: %v", v, err)
				}
				grace = d
			}
		}
		if grace == 0 {
			t.Fatal("no --shutdown-grace")
		}
		period := time.Duration(*ds.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
		if period <= grace+5*time.Second {
			t.Errorf("terminationGracePeriodSeconds %v leaves no margin over --shutdown-grace %v", period, grace)
		}
	})
}

// Every image is pinned to a release, and only the hearth container runs privileged.
func TestImagesArePinnedAndOnlyTheDriverIsPrivileged(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, b built) {
		ds := one[*appsv1.DaemonSet](t, b, "hearth-node")
		for _, c := range ds.Spec.Template.Spec.Containers {
			tag := c.Image[strings.LastIndex(c.Image, ":")+1:]
			if !strings.Contains(c.Image, ":") || tag == "latest" || tag == "canary" {
				t.Errorf("container %s: image %s is not pinned", c.Name, c.Image)
			}
			privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if privileged != (c.Name == "hearth") {
				t.Errorf("container %s: privileged=%v", c.Name, privileged)
			}
			for _, m := range c.VolumeMounts {
				if m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional && !privileged {
					t.Errorf("container %s: Bidirectional propagation needs a privileged container", c.Name)
				}
			}
		}
	})
}

// All bindings grant to the node plugin's ServiceAccount and name roles that exist.
func TestBindingsGrantRolesThatExistToTheNodeServiceAccount(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, b built) {
		sa := one[*corev1.ServiceAccount](t, b, "hearth-node")
		subjectsOK := func(subjects []rbacv1.Subject) bool {
			return len(subjects) == 1 && subjects[0].Kind == "ServiceAccount" &&
				subjects[0].Name == sa.Name && subjects[0].Namespace == sa.Namespace
		}
		for _, crb := range all[*rbacv1.ClusterRoleBinding](b) {
			one[*rbacv1.ClusterRole](t, b, crb.RoleRef.Name)
			if crb.RoleRef.Kind != "ClusterRole" || !subjectsOK(crb.Subjects) {
				t.Errorf("ClusterRoleBinding %s: %v -> %v", crb.Name, crb.Subjects, crb.RoleRef)
			}
		}
		for _, rb := range all[*rbacv1.RoleBinding](b) {
			role := one[*rbacv1.Role](t, b, rb.RoleRef.Name)
			if rb.RoleRef.Kind != "Role" || role.Namespace != rb.Namespace || !subjectsOK(rb.Subjects) {
				t.Errorf("RoleBinding %s: %v -> %v", rb.Name, rb.Subjects, rb.RoleRef)
			}
		}
		if ds := one[*appsv1.DaemonSet](t, b, "hearth-node"); ds.Spec.Template.Spec.ServiceAccountName != sa.Name {
			t.Errorf("the DaemonSet runs as %q", ds.Spec.Template.Spec.ServiceAccountName)
		}
	})
}

// envOf returns the environment of a container: its env and the keys of the ConfigMaps of its
// envFrom, as the build names them (kustomize appends a content hash).
func envOf(t *testing.T, b built, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		for k, v := range one[*corev1.ConfigMap](t, b, from.ConfigMapRef.Name).Data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// specValue reads key from a pool spec such as "name=fast,dir=/mnt/nvme0/hearth".
func specValue(spec, key string) string {
	for part := range strings.SplitSeq(spec, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func onHostPath(ds *appsv1.DaemonSet, c corev1.Container, dir string) bool {
	for _, m := range c.VolumeMounts {
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == m.MountPath &&
				(dir == m.MountPath || strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/")) {
				return true
			}
		}
	}
	return false
}

func count(args []string, prefix string) int {
	n := 0
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			n++
		}
	}
	return n
}
