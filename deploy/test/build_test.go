package deploytest

import (
	"fmt"
	"path/filepath"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// overlays are the directories under deploy/ that users apply, with the objects each makes.
var overlays = map[string]int{
	"overlays/default":      21,
	"overlays/custom-pools": 22,
	// default, the two LVM StorageClasses.
	"overlays/lvm": 23,
	// default and the whole-disk StorageClass.
	"overlays/disks": 22,
	// default and components/monitoring: a PodMonitor, a PrometheusRule, the dashboard's ConfigMap.
	"overlays/monitoring": 24,
}

// built is one overlay's output, each object decoded into its Go type.
type built struct {
	objects []runtime.Object
}

// strict decodes YAML into the Kubernetes Go types and fails on unknown or duplicate fields,
// the way `kubectl apply --validate=strict` does: a misspelt field is an error, not a no-op.
var strict = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := snapshotv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true, Strict: true})
}()

// build runs kustomize on a directory of deploy/ as `kubectl apply -k` would.
func build(t *testing.T, dir string) built {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("..", dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out built
	for _, r := range resources.Resources() {
		yaml, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s: %s: %v", dir, r.CurId(), err)
		}
		obj, _, err := strict.Decode(yaml, nil, nil)
		if err != nil {
			t.Errorf("%s: %s does not decode strictly: %v", dir, r.CurId(), err)
			continue
		}
		out.objects = append(out.objects, obj)
	}
	return out
}

// one returns the only object of type T named name, failing the test if there is not exactly one.
func one[T runtime.Object](t *testing.T, b built, name string) T {
	t.Helper()
	var found []T
	for _, o := range b.objects {
		if typed, ok := o.(T); ok && nameOf(o) == name {
			found = append(found, typed)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want one %T named %q, found %d", zero, name, len(found))
	}
	return found[0]
}

// all returns every object of type T.
func all[T runtime.Object](b built) []T {
	var found []T
	for _, o := range b.objects {
		if typed, ok := o.(T); ok {
			found = append(found, typed)
		}
	}
	return found
}

func nameOf(o runtime.Object) string {
	type named interface{ GetName() string }
	if n, ok := o.(named); ok {
		return n.GetName()
	}
	return fmt.Sprintf("%T", o)
}

func TestOverlaysBuildIntoValidObjects(t *testing.T) {
	for dir, want := range overlays {
		t.Run(dir, func(t *testing.T) {
			b := build(t, dir)
			if len(b.objects) != want {
				t.Errorf("%s builds %d objects, want %d", dir, len(b.objects), want)
			}
		})
	}
}
