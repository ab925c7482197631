package check

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// zoneKey is the label the checker reads on node n for a volume's zone constraints. The beta
// zone label and the EBS CSI driver's zone label name the same zone on a launched node; an
// existing node is read as it is labelled.
func zoneKey(n *node, key string) string {
	if n.existing {
		return key
	}
	switch key {
	case "failure-domain.beta.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone":
		return corev1.LabelTopologyZone
	}
	return key
}

// verifyVolumes checks that every bound pod's node meets, in every realization, what its
// persistent volumes need: a bound volume's node affinity and zone label, or an unbound
// WaitForFirstConsumer claim's allowedTopologies.
func (c *checker) verifyVolumes() {
	for _, b := range c.r.Bindings {
		n := c.nodes[b.NodeName]
		if n == nil {
			continue
		}
		for _, v := range b.Pod.Spec.Volumes {
			if err := c.verifyVolume(n, b.Pod, &v); err != nil {
				c.fail("pod %s/%s on node %s: volume %s, %v", b.Pod.Namespace, b.Pod.Name, n.name, v.Name, err)
			}
		}
	}
}

// verifyReadWriteOncePod checks that a ReadWriteOncePod claim is used by one pod at most, of
// those on existing nodes and those the plan binds.
func (c *checker) verifyReadWriteOncePod() {
	once := map[string]bool{}
	for _, claim := range c.in.PersistentVolumeClaims {
		for _, mode := range claim.Spec.AccessModes {
			if mode == corev1.ReadWriteOncePod {
				once[claim.Namespace+"/"+claim.Name] = true
			}
		}
	}
	users := map[string][]string{}
	use := func(pod *corev1.Pod) {
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			if key := pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName; once[key] {
				users[key] = append(users[key], pod.Namespace+"/"+pod.Name)
			}
		}
	}
	for _, n := range c.order {
		if n.existing {
			for _, pod := range n.pods {
				use(pod)
			}
		}
	}
	for _, b := range c.r.Bindings {
		use(b.Pod)
	}
	for key, pods := range users {
		if len(pods) > 1 {
			c.fail("persistentvolumeclaim %s is ReadWriteOncePod and pods %v use it", key, pods)
		}
	}
}

func (c *checker) verifyVolume(n *node, pod *corev1.Pod, v *corev1.Volume) error {
	name, spec, ok := c.claim(pod, v)
	if !ok {
		return nil
	}
	if spec == nil {
		return fmt.Errorf("claim %s not found, yet the pod is bound", name)
	}
	if spec.VolumeName != "" {
		for _, pv := range c.in.PersistentVolumes {
			if pv.Name == spec.VolumeName {
				return verifyPersistentVolume(n, pv)
			}
		}
		return fmt.Errorf("persistent volume %s not found, yet the pod is bound", spec.VolumeName)
	}
	var class *storagev1.StorageClass
	for _, sc := range c.in.StorageClasses {
		if spec.StorageClassName != nil && sc.Name == *spec.StorageClassName {
			class = sc
		}
	}
	if class == nil || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return fmt.Errorf("claim %s is unbound and not provisioned for its first consumer, yet the pod is bound", name)
	}
	if len(class.AllowedTopologies) == 0 {
		return nil
	}
	for _, term := range class.AllowedTopologies {
		selector := labels.NewSelector()
		for _, e := range term.MatchLabelExpressions {
			r, err := labels.NewRequirement(zoneKey(n, e.Key), selection.In, e.Values)
			if err != nil {
				return err
			}
			selector = selector.Add(*r)
		}
		if n.meets(selector) {
			return nil
		}
	}
	return fmt.Errorf("node is outside storage class %s's allowed topologies", class.Name)
}

func verifyPersistentVolume(n *node, pv *corev1.PersistentVolume) error {
	for _, key := range []string{corev1.LabelTopologyZone, "failure-domain.beta.kubernetes.io/zone"} {
		if v, ok := pv.Labels[key]; ok {
			r, err := labels.NewRequirement(corev1.LabelTopologyZone, selection.In, strings.Split(v, "__"))
			if err != nil {
				return err
			}
			if !n.meets(labels.NewSelector().Add(*r)) {
				return fmt.Errorf("node is outside persistent volume %s's zones %s", pv.Name, v)
			}
		}
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		exprs := make([]corev1.NodeSelectorRequirement, len(term.MatchExpressions))
		for i, e := range term.MatchExpressions {
			exprs[i] = e
			exprs[i].Key = zoneKey(n, e.Key)
		}
		selector, err := requirementsSelector(exprs)
		if err == nil && len(exprs) > 0 && len(term.MatchFields) == 0 && n.meets(selector) {
			return nil
		}
	}
	return fmt.Errorf("node does not meet persistent volume %s's node affinity", pv.Name)
}

// verifyAttachLimits checks that no node attaches more of a CSI driver's volumes than it may:
// an existing node's CSINode count, and a new node's under every instance type it may launch
// as. A volume is counted once per node however many of its pods mount it; in-tree EBS volumes
// count as the EBS CSI driver's, which they are migrated to.
func (c *checker) verifyAttachLimits() {
	attached := map[string]map[string]sets.Set[string]{} // node → driver → volumes
	add := func(nodeName string, pod *corev1.Pod) {
		for driver, volumes := range c.attachedVolumes(pod) {
			if attached[nodeName] == nil {
				attached[nodeName] = map[string]sets.Set[string]{}
			}
			if attached[nodeName][driver] == nil {
				attached[nodeName][driver] = sets.New[string]()
			}
			attached[nodeName][driver].Insert(volumes...)
		}
	}
	for _, en := range c.in.Nodes {
		for _, pod := range c.nodes[en.Node.Name].pods {
			add(en.Node.Name, pod)
		}
	}
	for _, b := range c.r.Bindings {
		add(b.NodeName, b.Pod)
	}
	for _, en := range c.in.Nodes {
		if en.CSINode == nil {
			continue
		}
		for _, d := range en.CSINode.Spec.Drivers {
			if n := attached[en.Node.Name][d.Name].Len(); d.Allocatable != nil && d.Allocatable.Count != nil && int64(n) > int64(*d.Allocatable.Count) {
				c.fail("node %s: %d volumes of %s, its CSINode allows %d", en.Node.Name, n, d.Name, *d.Allocatable.Count)
			}
		}
	}
	for _, nn := range c.r.NewNodes {
		for _, it := range nn.InstanceTypes {
			for driver, volumes := range attached[nn.Hostname] {
				if limit, ok := it.VolumeLimits[driver]; ok && int64(volumes.Len()) > limit {
					c.fail("new node %s as %s: %d volumes of %s, the type attaches %d", nn.Hostname, it.Name, volumes.Len(), driver, limit)
				}
			}
		}
	}
}

// attachedVolumes names, per CSI driver, the volumes the pod attaches.
func (c *checker) attachedVolumes(pod *corev1.Pod) map[string][]string {
	out := map[string][]string{}
	for _, v := range pod.Spec.Volumes {
		if v.AWSElasticBlockStore != nil {
			out["ebs.csi.aws.com"] = append(out["ebs.csi.aws.com"], "aws-ebs:"+v.AWSElasticBlockStore.VolumeID)
			continue
		}
		name, spec, ok := c.claim(pod, &v)
		if !ok || spec == nil {
			continue
		}
		driver, id := "", "claim:"+pod.Namespace+"/"+name
		if spec.VolumeName != "" {
			id = "volume:" + spec.VolumeName
			for _, pv := range c.in.PersistentVolumes {
				switch {
				case pv.Name != spec.VolumeName:
				case pv.Spec.CSI != nil:
					driver = pv.Spec.CSI.Driver
				case pv.Spec.AWSElasticBlockStore != nil:
					driver = "ebs.csi.aws.com"
				}
			}
		} else if spec.StorageClassName != nil {
			for _, sc := range c.in.StorageClasses {
				if sc.Name == *spec.StorageClassName {
					driver = sc.Provisioner
				}
			}
			if driver == "kubernetes.io/aws-ebs" {
				driver = "ebs.csi.aws.com"
			}
		}
		if driver != "" {
			out[driver] = append(out[driver], id)
		}
	}
	return out
}

// claim is the name of the claim a volume of the pod uses and its spec: the claim's own
// when it exists, an ephemeral volume's template otherwise, nil when neither; false when the
// volume uses no claim.
func (c *checker) claim(pod *corev1.Pod, v *corev1.Volume) (string, *corev1.PersistentVolumeClaimSpec, bool) {
	var name string
	var spec *corev1.PersistentVolumeClaimSpec
	switch {
	case v.PersistentVolumeClaim != nil:
		name = v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		name = pod.Name + "-" + v.Name
		if v.Ephemeral.VolumeClaimTemplate != nil {
			spec = &v.Ephemeral.VolumeClaimTemplate.Spec
		}
	default:
		return "", nil, false
	}
	for _, claim := range c.in.PersistentVolumeClaims {
		if claim.Namespace == pod.Namespace && claim.Name == name {
			spec = &claim.Spec
		}
	}
	return name, spec, true
}
