package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// PodOptions describe a pod; zero fields are left out.
type PodOptions struct {
	// Name defaults to a unique pod-N, Namespace to "default".
	Name, Namespace     string
	Labels, Annotations map[string]string
	// Owners are the pod's owner references, such as DaemonSetOwner's.
	Owners []metav1.OwnerReference
	// Requests are those of the pod's one container, named app and running PauseImage.
	Requests corev1.ResourceList
	// Containers, when given, replace that one container.
	Containers     []corev1.Container
	InitContainers []corev1.Container
	NodeSelector   map[string]string
	// NodeRequirements is the required node affinity: one term, its requirements ANDed.
	NodeRequirements []corev1.NodeSelectorRequirement
	// NodePreferences is the preferred node affinity, such as Preferred's.
	NodePreferences []corev1.PreferredSchedulingTerm
	// PodAffinity and PodAntiAffinity are required terms, such as AffinityTerm's.
	PodAffinity, PodAntiAffinity []corev1.PodAffinityTerm
	// TopologySpread constraints, such as Spread's.
	TopologySpread []corev1.TopologySpreadConstraint
	Tolerations    []corev1.Toleration
	// NodeName binds the pod to a node.
	NodeName string
	Phase    corev1.PodPhase
	// Unschedulable adds the scheduler's verdict, PodScheduled=False for reason Unschedulable,
	// and makes the phase Pending unless Phase says otherwise.
	Unschedulable bool
}

// Pod is a pod as options describe it.
func Pod(o PodOptions) *corev1.Pod {
	containers := o.Containers
	if len(containers) == 0 {
		containers = []corev1.Container{{
			Name:      "app",
			Image:     PauseImage,
			Resources: corev1.ResourceRequirements{Requests: o.Requests},
		}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name(o.Name, "pod"),
			Namespace:       namespace(o.Namespace),
			Labels:          o.Labels,
			Annotations:     o.Annotations,
			OwnerReferences: o.Owners,
		},
		Spec: corev1.PodSpec{
			Containers:                containers,
			InitContainers:            o.InitContainers,
			NodeSelector:              o.NodeSelector,
			Affinity:                  affinity(o),
			TopologySpreadConstraints: o.TopologySpread,
			Tolerations:               o.Tolerations,
			NodeName:                  o.NodeName,
		},
		Status: corev1.PodStatus{Phase: o.Phase},
	}
	if o.Unschedulable {
		pod.Status.Conditions = []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}
		if pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodPending
		}
	}
	return pod
}

// affinity is the pod's affinity, nil when options ask for none.
func affinity(o PodOptions) *corev1.Affinity {
	if len(o.NodeRequirements) == 0 && len(o.NodePreferences) == 0 && len(o.PodAffinity) == 0 && len(o.PodAntiAffinity) == 0 {
		return nil
	}
	a := &corev1.Affinity{}
	if len(o.NodeRequirements) > 0 || len(o.NodePreferences) > 0 {
		a.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: o.NodePreferences}
		if len(o.NodeRequirements) > 0 {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: o.NodeRequirements}},
			}
		}
	}
	if len(o.PodAffinity) > 0 {
		a.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: o.PodAffinity}
	}
	if len(o.PodAntiAffinity) > 0 {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: o.PodAntiAffinity}
	}
	return a
}

// Pods are n pods as options describe them, each with its own generated name when options
// name none, and its own copies of the options' maps and slices.
func Pods(n int, o PodOptions) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, n)
	for range n {
		pods = append(pods, Pod(o).DeepCopy())
	}
	return pods
}

// Preferred is a preferred node affinity term of weight, its requirements ANDed.
func Preferred(weight int32, requirements ...corev1.NodeSelectorRequirement) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: requirements}}
}

// AffinityTerm selects the pods labelled matchLabels in the same topologyKey domain.
func AffinityTerm(topologyKey string, matchLabels map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: matchLabels}}
}

// Spread keeps the pods labelled matchLabels within a skew of one across topologyKey domains.
func Spread(topologyKey string, whenUnsatisfiable corev1.UnsatisfiableConstraintAction, matchLabels map[string]string) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{
		MaxSkew: 1, TopologyKey: topologyKey, WhenUnsatisfiable: whenUnsatisfiable,
		LabelSelector: &metav1.LabelSelector{MatchLabels: matchLabels},
	}
}

// DaemonSetOwner is the controller reference of a pod the DaemonSet name runs.
func DaemonSetOwner(name string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: types.UID("daemonset-" + name), Controller: ptr.To(true),
	}
}
