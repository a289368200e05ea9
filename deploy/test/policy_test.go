package deploytest

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

const (
	nodeSA   = "system:serviceaccount:hearth-system:hearth-node"
	topology = "topology.hearth.dev/node"
)

var (
	pvResource = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	pvKind     = corev1.SchemeGroupVersion.WithKind("PersistentVolume")
)

// The policy in the build must compile the way the API server compiles a new policy: with the
// CEL environment of the release it is compatible with (n-1), as new expressions.
func TestAdmissionPolicyCompilesAsANewPolicy(t *testing.T) {
	policy := admissionPolicy(t)
	compiler, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	decls := cel.OptionalVariableDeclarations{HasAuthorizer: true}
	for _, v := range policy.Spec.Variables {
		if r := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, decls, environment.NewExpressions); r.Error != nil {
			t.Errorf("variable %s: %v", v.Name, r.Error)
		}
	}
	var expressions []cel.ExpressionAccessor
	for _, m := range policy.Spec.MatchConditions {
		expressions = append(expressions, (*matchconditions.MatchCondition)(&m))
	}
	for _, v := range policy.Spec.Validations {
		expressions = append(expressions, &validating.ValidationCondition{Expression: v.Expression})
		if v.MessageExpression != "" {
			expressions = append(expressions, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
		}
	}
	for _, e := range expressions {
		if r := compiler.CompileCELExpression(e, decls, environment.NewExpressions); r.Error != nil {
			t.Errorf("%q: %v", e.GetExpression(), r.Error)
		}
	}
}

func TestAdmissionPolicyKeepsEachNodeToItsOwnVolumes(t *testing.T) {
	validator := compile(t, admissionPolicy(t))
	mine := pv("pvc-1", csiVolume("csi.hearth.dev"), pinned("node-a"))
	theirs := pv("pvc-2", csiVolume("csi.hearth.dev"), pinned("node-b"))

	cases := []struct {
		name      string
		user      user.Info
		op        admission.Operation
		old, obj  *corev1.PersistentVolume
		wantAllow bool
	}{
		{"create a volume on its own node", node("node-a"), admission.Create, nil, mine, true},
		{"create a volume on another node", node("node-a"), admission.Create, nil, theirs, false},
		{"create a volume with no node affinity", node("node-a"), admission.Create, nil,
			pv("pvc-3", csiVolume("csi.hearth.dev")), false},
		{"create a volume pinned to its node in one term and open in another", node("node-a"), admission.Create, nil,
			pv("pvc-4", csiVolume("csi.hearth.dev"), pinned("node-a"), orTerm("kubernetes.io/hostname", "node-b")), false},
		{"create a volume pinned to its node and another", node("node-a"), admission.Create, nil,
			pv("pvc-5", csiVolume("csi.hearth.dev"), pinnedTo("node-a", "node-b")), false},
		{"create a volume that only keeps off its node", node("node-a"), admission.Create, nil,
			pv("pvc-8", csiVolume("csi.hearth.dev"), pinned("node-a"), operator(corev1.NodeSelectorOpNotIn)), false},
		{"create another driver's volume on its own node", node("node-a"), admission.Create, nil,
			pv("pvc-6", csiVolume("other.example.com"), pinned("node-a")), false},
		{"create a hostPath volume on its own node", node("node-a"), admission.Create, nil,
			pv("pvc-7", hostPath("/"), pinned("node-a")), false},
		{"create with a token bound to no node", sa(nil), admission.Create, nil, mine, false},

		{"delete a volume of its own node", node("node-a"), admission.Delete, mine, nil, true},
		{"delete a volume of another node", node("node-a"), admission.Delete, theirs, nil, false},

		{"drop the provisioner's finalizer from its own volume", node("node-a"), admission.Update,
			with(mine, finalizers("external-provisioner.volume.kubernetes.io/finalizer")), mine, true},
		{"drop the provisioner's finalizer from another node's volume", node("node-a"), admission.Update,
			with(theirs, finalizers("external-provisioner.volume.kubernetes.io/finalizer")), theirs, false},
		{"record a new size of another node's volume (csi-resizer)", node("node-a"), admission.Update,
			theirs, with(theirs, size("2Gi"), annotation("volume.alpha.kubernetes.io/pre-resize-capacity", "1Gi")), true},
		{"rebind another node's volume to another claim", node("node-a"), admission.Update,
			theirs, with(theirs, claim("attacker", "loot")), false},
		{"switch another node's volume to reclaim policy Delete", node("node-a"), admission.Update,
			with(theirs, reclaim(corev1.PersistentVolumeReclaimRetain)), theirs, false},
		{"re-pin another node's volume to its own node", node("node-a"), admission.Update,
			theirs, with(theirs, pinned("node-a")), false},
		{"re-pin its own volume to another node", node("node-a"), admission.Update,
			mine, with(mine, pinned("node-b")), false},

		{"anyone else is not this policy's business", other("system:kube-controller-manager"), admission.Delete, theirs, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allowed, message := validate(t, validator, c.user, c.op, c.old, c.obj)
			if allowed != c.wantAllow {
				t.Errorf("allowed=%v, want %v (%s)", allowed, c.wantAllow, message)
			}
			if !allowed && !strings.Contains(message, "hearth-node") {
				t.Errorf("the refusal does not say why: %q", message)
			}
		})
	}
}

func admissionPolicy(t *testing.T) *admissionv1.ValidatingAdmissionPolicy {
	t.Helper()
	b := build(t, "overlays/default")
	policy := one[*admissionv1.ValidatingAdmissionPolicy](t, b, "hearth-node-persistentvolumes")
	binding := one[*admissionv1.ValidatingAdmissionPolicyBinding](t, b, "hearth-node-persistentvolumes")
	if binding.Spec.PolicyName != policy.Name || len(binding.Spec.ValidationActions) != 1 ||
		binding.Spec.ValidationActions[0] != admissionv1.Deny {
		t.Fatalf("the binding does not enforce the policy: %+v", binding.Spec)
	}
	return policy
}

// compile does what the API server's ValidatingAdmissionPolicy plugin does with a policy.
func compile(t *testing.T, policy *admissionv1.ValidatingAdmissionPolicy) validating.Validator {
	t.Helper()
	compiler, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	decls := cel.OptionalVariableDeclarations{HasAuthorizer: true}
	var variables []cel.NamedExpressionAccessor
	for _, v := range policy.Spec.Variables {
		variables = append(variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(variables, decls, environment.StoredExpressions)
	var conditions, validations, messages []cel.ExpressionAccessor
	for i := range policy.Spec.MatchConditions {
		conditions = append(conditions, (*matchconditions.MatchCondition)(&policy.Spec.MatchConditions[i]))
	}
	for _, v := range policy.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		var message cel.ExpressionAccessor
		if v.MessageExpression != "" {
			message = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
		messages = append(messages, message)
	}
	matcher := matchconditions.NewMatcher(compiler.CompileCondition(conditions, decls, environment.StoredExpressions),
		policy.Spec.FailurePolicy, "policy", "validate", policy.Name)
	return validating.NewValidator(
		compiler.CompileCondition(validations, decls, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(nil, decls, environment.StoredExpressions),
		compiler.CompileCondition(messages, cel.OptionalVariableDeclarations{}, environment.StoredExpressions),
		policy.Spec.FailurePolicy, nil)
}

func validate(t *testing.T, v validating.Validator, u user.Info, op admission.Operation, old, obj *corev1.PersistentVolume) (bool, string) {
	t.Helper()
	var oldObject, object runtime.Object
	name := ""
	if old != nil {
		oldObject, name = old, old.Name
	}
	if obj != nil {
		object, name = obj, obj.Name
	}
	var options runtime.Object = &metav1.CreateOptions{}
	switch op {
	case admission.Update:
		options = &metav1.UpdateOptions{}
	case admission.Delete:
		options = &metav1.DeleteOptions{}
	}
	attributes := admission.NewAttributesRecord(object, oldObject, pvKind, "", name, pvResource, "", op, options, false, u)
	versioned := &admission.VersionedAttributes{Attributes: attributes, VersionedKind: pvKind}
	if object != nil {
		versioned.VersionedObject = admission.NewLazyObject(object)
	}
	if oldObject != nil {
		versioned.VersionedOldObject = admission.NewLazyObject(oldObject)
	}
	result := v.Validate(context.Background(), pvResource, versioned, nil, nil, celconfig.RuntimeCELCostBudget, nil)
	for _, d := range result.Decisions {
		if d.Evaluation == validating.EvalError {
			t.Fatalf("the policy failed to evaluate: %s", d.Message)
		}
		if d.Action == validating.ActionDeny {
			return false, d.Message
		}
	}
	return true, ""
}

// Users, as the API server's authenticators describe them.

func node(name string) user.Info {
	return sa(map[string][]string{serviceaccount.NodeNameKey: {name}, serviceaccount.PodNameKey: {"hearth-node-x1"}})
}

func sa(extra map[string][]string) user.Info {
	return &user.DefaultInfo{Name: nodeSA, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:hearth-system"}, Extra: extra}
}

func other(name string) user.Info { return &user.DefaultInfo{Name: name} }

// PersistentVolumes as the external-provisioner makes them, and changes to them.

type change func(*corev1.PersistentVolume)

func pv(name string, changes ...change) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "csi.hearth.dev"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              "hearth-thick",
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "app", Name: "data"},
		},
	}
	for _, c := range changes {
		c(v)
	}
	return v
}

func with(v *corev1.PersistentVolume, changes ...change) *corev1.PersistentVolume {
	copied := v.DeepCopy()
	for _, c := range changes {
		c(copied)
	}
	return copied
}

func csiVolume(driver string) change {
	return func(v *corev1.PersistentVolume) {
		v.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "default-abc", FSType: "ext4"}
	}
}

func hostPath(path string) change {
	return func(v *corev1.PersistentVolume) { v.Spec.HostPath = &corev1.HostPathVolumeSource{Path: path} }
}

func pinned(node string) change { return pinnedTo(node) }

func pinnedTo(nodes ...string) change {
	return func(v *corev1.PersistentVolume) {
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: topology, Operator: corev1.NodeSelectorOpIn, Values: nodes}},
		}}}}
	}
}

func operator(op corev1.NodeSelectorOperator) change {
	return func(v *corev1.PersistentVolume) {
		v.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Operator = op
	}
}

func orTerm(key, value string) change {
	return func(v *corev1.PersistentVolume) {
		v.Spec.NodeAffinity.Required.NodeSelectorTerms = append(v.Spec.NodeAffinity.Required.NodeSelectorTerms, corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}},
		})
	}
}

func finalizers(f ...string) change {
	return func(v *corev1.PersistentVolume) { v.Finalizers = f }
}

func size(q string) change {
	return func(v *corev1.PersistentVolume) { v.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse(q) }
}

func annotation(key, value string) change {
	return func(v *corev1.PersistentVolume) { v.Annotations[key] = value }
}

func claim(namespace, name string) change {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: name}
	}
}

func reclaim(policy corev1.PersistentVolumeReclaimPolicy) change {
	return func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = policy }
}
