package plan

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/webhook"
)

// InputError is bad input: a file that does not parse, an object of a kind that is not
// planned for, a Provisioner the webhook would refuse. The command exits 2 on it.
type InputError struct {
	File string
	// Line is where the document starts, or where the YAML parser failed; 0 when unknown.
	Line int
	// Object names the object, "Kind namespace/name", when the document parsed that far.
	Object string
	Err    error
}

func (e *InputError) Error() string {
	where := e.File
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	if e.Object != "" {
		where += ": " + e.Object
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// object is one decoded document, or one item of a List, with where it came from.
type object struct {
	line   int
	name   string
	object runtime.Object
}

var scheme = apis.NewScheme()

// decode reads every object of a file of YAML or JSON documents: several separated by "---"
// lines, and the items of a `kind: List`. Each is decoded strictly into the type its
// apiVersion and kind name, so that a misspelt field is an error, as kubectl apply says.
func decode(file string, data []byte) ([]object, error) {
	var out []object
	for _, doc := range splitDocuments(data) {
		var typeMeta metav1.TypeMeta
		if err := yaml.Unmarshal(doc.text, &typeMeta); err != nil {
			return nil, &InputError{File: file, Line: doc.line + yamlErrorLine(err), Err: fmt.Errorf("malformed YAML, %w", err)}
		}
		if typeMeta.Kind == "" && typeMeta.APIVersion == "" && isBlank(doc.text) {
			continue
		}
		if typeMeta.Kind == "List" {
			var list metav1.List
			if err := yaml.Unmarshal(doc.text, &list); err != nil {
				return nil, &InputError{File: file, Line: doc.line + yamlErrorLine(err), Err: fmt.Errorf("malformed List, %w", err)}
			}
			for i, item := range list.Items {
				o, err := decodeObject(item.Raw)
				if err != nil {
					return nil, &InputError{File: file, Line: doc.line, Object: fmt.Sprintf("List item %d%s", i, describe(item.Raw)), Err: err}
				}
				out = append(out, object{line: doc.line, name: nameOf(o), object: o})
			}
			continue
		}
		o, err := decodeObject(doc.text)
		if err != nil {
			return nil, &InputError{File: file, Line: doc.line, Object: strings.TrimPrefix(describe(doc.text), " "), Err: err}
		}
		out = append(out, object{line: doc.line, name: nameOf(o), object: o})
	}
	return out, nil
}

func decodeObject(data []byte) (runtime.Object, error) {
	var typeMeta metav1.TypeMeta
	if err := yaml.Unmarshal(data, &typeMeta); err != nil {
		return nil, fmt.Errorf("malformed YAML, %w", err)
	}
	if typeMeta.Kind == "" || typeMeta.APIVersion == "" {
		return nil, fmt.Errorf("apiVersion and kind are required")
	}
	gvk := schema.FromAPIVersionAndKind(typeMeta.APIVersion, typeMeta.Kind)
	o, err := scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("unknown kind %s %s", typeMeta.APIVersion, typeMeta.Kind)
	}
	if err := yaml.UnmarshalStrict(data, o); err != nil {
		return nil, fmt.Errorf("decoding a %s, %w", typeMeta.Kind, err)
	}
	return o, nil
}

// describe is " Kind namespace/name" of a document that has them, for errors about it.
func describe(data []byte) string {
	var partial metav1.PartialObjectMetadata
	if yaml.Unmarshal(data, &partial) != nil || partial.Kind == "" {
		return ""
	}
	return " " + objectName(partial.Kind, partial.Namespace, partial.Name)
}

func nameOf(o runtime.Object) string {
	accessor, ok := o.(metav1.Object)
	if !ok {
		return o.GetObjectKind().GroupVersionKind().Kind
	}
	return objectName(o.GetObjectKind().GroupVersionKind().Kind, accessor.GetNamespace(), accessor.GetName())
}

func objectName(kind, namespace, name string) string {
	if namespace != "" {
		return fmt.Sprintf("%s %s/%s", kind, namespace, name)
	}
	return fmt.Sprintf("%s %s", kind, name)
}

type document struct {
	line int
	text []byte
}

var documentSeparator = regexp.MustCompile(`^---(\s.*)?$`)

// splitDocuments splits YAML at its "---" lines, keeping the line each document starts on.
func splitDocuments(data []byte) []document {
	var docs []document
	current := document{line: 1}
	// Errors name the document by its first line that is not blank or a comment.
	started := false
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(nil, len(data)+1)
	for line := 1; scanner.Scan(); line++ {
		if documentSeparator.Match(scanner.Bytes()) {
			docs = append(docs, current)
			current, started = document{line: line + 1}, false
			continue
		}
		if !started && !isBlank(scanner.Bytes()) {
			// The text starts there, so that the YAML parser's line numbers count from it.
			current.line, current.text, started = line, nil, true
		}
		if started {
			current.text = append(current.text, scanner.Bytes()...)
		}
		current.text = append(current.text, '\n')
	}
	return append(docs, current)
}

func isBlank(text []byte) bool {
	for _, line := range strings.Split(string(text), "\n") {
		if trimmed := strings.TrimSpace(line); trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			return false
		}
	}
	return true
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrorLine is the line within its document a YAML error names, counted from 0, or 0.
func yamlErrorLine(err error) int {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n - 1
}

// Workload is what a --pods file asks for: the pods it would run, and the DaemonSets whose
// pods would run on every new node.
type Workload struct {
	Pods       []corev1.Pod
	DaemonSets []appsv1.DaemonSet
}

// ReadWorkload reads the pods a file's manifests would run: Pods as they are; Deployments,
// ReplicaSets and StatefulSets as their replicas (1 when unset); Jobs as their parallelism,
// at most their completions; DaemonSets as overhead on every new node. Each pod is pending,
// as kube-scheduler marks a pod it cannot place. Any other kind is an error.
func ReadWorkload(file string, data []byte) (*Workload, error) {
	objects, err := decode(file, data)
	if err != nil {
		return nil, err
	}
	w := &Workload{}
	for _, o := range objects {
		switch typed := o.object.(type) {
		case *corev1.Pod:
			w.Pods = append(w.Pods, pending(typed.ObjectMeta, typed.Spec, "", 0, nil))
		case *appsv1.Deployment:
			w.Pods = append(w.Pods, replicas(typed, typed.Spec.Replicas, typed.Spec.Template)...)
		case *appsv1.ReplicaSet:
			w.Pods = append(w.Pods, replicas(typed, typed.Spec.Replicas, typed.Spec.Template)...)
		case *appsv1.StatefulSet:
			w.Pods = append(w.Pods, replicas(typed, typed.Spec.Replicas, typed.Spec.Template)...)
		case *batchv1.Job:
			parallelism := int32(1)
			if typed.Spec.Parallelism != nil {
				parallelism = *typed.Spec.Parallelism
			}
			if typed.Spec.Completions != nil {
				parallelism = min(parallelism, *typed.Spec.Completions)
			}
			w.Pods = append(w.Pods, replicas(typed, &parallelism, typed.Spec.Template)...)
		case *appsv1.DaemonSet:
			ds := typed.DeepCopy()
			if ds.Namespace == "" {
				ds.Namespace = metav1.NamespaceDefault
			}
			w.DaemonSets = append(w.DaemonSets, *ds)
		default:
			return nil, &InputError{File: file, Line: o.line, Object: o.name,
				Err: fmt.Errorf("is not a kind that runs pods: use Pods, Deployments, ReplicaSets, StatefulSets, Jobs or DaemonSets")}
		}
	}
	return w, nil
}

// replicas are the pods of a workload's template, named as a StatefulSet names its own.
func replicas(owner metav1.Object, count *int32, template corev1.PodTemplateSpec) []corev1.Pod {
	n := int32(1)
	if count != nil {
		n = *count
	}
	kind := owner.(runtime.Object).GetObjectKind().GroupVersionKind()
	ref := metav1.NewControllerRef(owner, kind)
	meta := template.ObjectMeta
	meta.Namespace = owner.GetNamespace()
	out := make([]corev1.Pod, 0, n)
	for i := range n {
		out = append(out, pending(meta, template.Spec, owner.GetName(), int(i), ref))
	}
	return out
}

// pending is a pod as kube-scheduler leaves one it cannot place: a controller's pod named
// <owner>-<ordinal>, in the default namespace when none is given.
func pending(meta metav1.ObjectMeta, spec corev1.PodSpec, owner string, ordinal int, ref *metav1.OwnerReference) corev1.Pod {
	pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: *meta.DeepCopy(), Spec: *spec.DeepCopy()}
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	if owner != "" {
		pod.Name = fmt.Sprintf("%s-%d", owner, ordinal)
		pod.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	pod.UID = types.UID("what-if/" + pod.Namespace + "/" + pod.Name)
	pod.Spec.NodeName = ""
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
	}}}
	return pod
}

// ReadProvisioners reads a file of Provisioners, each defaulted and validated as the
// admission webhook does, with cloud's rules for spec.provider. Any other kind, or a
// Provisioner the webhook would refuse, is an error.
func ReadProvisioners(ctx context.Context, file string, data []byte, cloud cloudprovider.ProviderValidator) ([]v1alpha5.Provisioner, error) {
	objects, err := decode(file, data)
	if err != nil {
		return nil, err
	}
	var out []v1alpha5.Provisioner
	seen := map[string]bool{}
	for _, o := range objects {
		p, ok := o.object.(*v1alpha5.Provisioner)
		if !ok {
			return nil, &InputError{File: file, Line: o.line, Object: o.name, Err: fmt.Errorf("is not a Provisioner (%s)", v1alpha5.SchemeGroupVersion)}
		}
		if p.Name == "" || seen[p.Name] {
			return nil, &InputError{File: file, Line: o.line, Object: o.name, Err: fmt.Errorf("needs a name of its own")}
		}
		seen[p.Name] = true
		webhook.DefaultProvisioner(ctx, p, cloud)
		if refusal := webhook.ValidateProvisioner(ctx, p, cloud); refusal != nil {
			return nil, &InputError{File: file, Line: o.line, Object: o.name, Err: fmt.Errorf("the admission webhook would refuse it: %w", refusal)}
		}
		out = append(out, *p)
	}
	return out, nil
}

// ReadNodeOverlays reads a file of NodeOverlays (karpenter.sh/v1alpha1), to plan with as the
// controller does with its NodeOverlay feature gate on. Any other kind is an error; an overlay
// whose price or requirements cannot be read is planned without (overlay.Apply says why).
func ReadNodeOverlays(file string, data []byte) ([]v1alpha1.NodeOverlay, error) {
	objects, err := decode(file, data)
	if err != nil {
		return nil, err
	}
	var out []v1alpha1.NodeOverlay
	seen := map[string]bool{}
	for _, o := range objects {
		overlay, ok := o.object.(*v1alpha1.NodeOverlay)
		if !ok {
			return nil, &InputError{File: file, Line: o.line, Object: o.name, Err: fmt.Errorf("is not a NodeOverlay (%s)", v1alpha1.SchemeGroupVersion)}
		}
		if overlay.Name == "" || seen[overlay.Name] {
			return nil, &InputError{File: file, Line: o.line, Object: o.name, Err: fmt.Errorf("needs a name of its own")}
		}
		seen[overlay.Name] = true
		out = append(out, *overlay)
	}
	return out, nil
}
