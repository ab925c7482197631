package scheduling

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/scheduling"
)

// zoneLabelAliases are labels that name a node's zone under another key: the deprecated beta
// label, which kube-scheduler's VolumeZone translates the same way, and the EBS CSI driver's,
// which its node plugin sets to the node's zone once it runs there.
var zoneLabelAliases = map[string]bool{
	corev1.LabelFailureDomainBetaZone: true,
	"topology.ebs.csi.aws.com/zone":   true,
}

// volumeIndex resolves the claims pending pods mount to the node labels their volumes need.
type volumeIndex struct {
	claims  map[string]*corev1.PersistentVolumeClaim // by namespace/name
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
	// holders are, by claim, the pod a ReadWriteOncePod claim is for: one already on a node,
	// or else the first pending pod that mounts it. As kube-scheduler's VolumeRestrictions,
	// no other pod may use it.
	holders map[string]string
}

func newVolumeIndex(in Input) *volumeIndex {
	vi := &volumeIndex{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{}, classes: map[string]*storagev1.StorageClass{}, holders: map[string]string{}}
	for _, c := range in.PersistentVolumeClaims {
		vi.claims[c.Namespace+"/"+c.Name] = c
	}
	hold := func(pod *corev1.Pod) {
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			key := pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
			if c, ok := vi.claims[key]; ok && slices.Contains(c.Spec.AccessModes, corev1.ReadWriteOncePod) && vi.holders[key] == "" {
				vi.holders[key] = pod.Namespace + "/" + pod.Name
			}
		}
	}
	for _, n := range in.Nodes {
		for _, pod := range n.Pods {
			if !pods.IsTerminal(pod) {
				hold(pod)
			}
		}
	}
	for _, pod := range in.Pods {
		hold(pod)
	}
	for _, v := range in.PersistentVolumes {
		vi.volumes[v.Name] = v
	}
	for _, c := range in.StorageClasses {
		vi.classes[c.Name] = c
	}
	return vi
}

// requirements are the alternatives, any one of which the pod's node must meet for all its
// persistent volumes: nil when the volumes constrain nothing. For a node Karpenter launches
// (launched), the zone's aliases are its zone label; an existing node must carry the keys the
// volumes name, as kube-scheduler's VolumeBinding reads them.
func (vi *volumeIndex) requirements(pod *corev1.Pod, launched bool) ([]scheduling.Requirements, error) {
	var alternatives []scheduling.Requirements
	for _, v := range pod.Spec.Volumes {
		var terms []scheduling.Requirements
		var err error
		switch {
		case v.PersistentVolumeClaim != nil:
			name := v.PersistentVolumeClaim.ClaimName
			if holder := vi.holders[pod.Namespace+"/"+name]; holder != "" && holder != pod.Namespace+"/"+pod.Name {
				return nil, fmt.Errorf("volume %q, persistentvolumeclaim %q is ReadWriteOncePod and pod %s uses it", v.Name, name, holder)
			}
			terms, err = vi.claimRequirements(pod.Namespace, name, nil, launched)
		case v.Ephemeral != nil:
			// The ephemeral volume controller names the claim after the pod and volume, and may
			// not have created it yet: then the template says how it will be provisioned.
			var template *corev1.PersistentVolumeClaimSpec
			if v.Ephemeral.VolumeClaimTemplate != nil {
				template = &v.Ephemeral.VolumeClaimTemplate.Spec
			}
			terms, err = vi.claimRequirements(pod.Namespace, pod.Name+"-"+v.Name, template, launched)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("volume %q, %w", v.Name, err)
		}
		if terms == nil {
			continue
		}
		if alternatives == nil {
			alternatives = terms
			continue
		}
		var next []scheduling.Requirements
		for _, a := range alternatives {
			for _, t := range terms {
				if r, _ := a.Intersect(t); r != nil {
					next = append(next, r)
				}
			}
		}
		if len(next) == 0 {
			return nil, fmt.Errorf("volume %q, its node constraints and those of the pod's other volumes cannot all hold", v.Name)
		}
		alternatives = next
	}
	return alternatives, nil
}

// claimRequirements are the alternatives a claim's volume needs, nil for none. template stands
// for a claim not yet created.
func (vi *volumeIndex) claimRequirements(namespace, name string, template *corev1.PersistentVolumeClaimSpec, launched bool) ([]scheduling.Requirements, error) {
	claim, ok := vi.claims[namespace+"/"+name]
	var spec *corev1.PersistentVolumeClaimSpec
	switch {
	case ok:
		spec = &claim.Spec
	case template != nil:
		spec = template
	default:
		return nil, fmt.Errorf("persistentvolumeclaim %q not found", name)
	}
	if spec.VolumeName != "" {
		pv, ok := vi.volumes[spec.VolumeName]
		if !ok {
			return nil, fmt.Errorf("persistentvolumeclaim %q is bound to persistentvolume %q, which is not found", name, spec.VolumeName)
		}
		return volumeRequirements(pv, launched)
	}
	className := ""
	if spec.StorageClassName != nil {
		className = *spec.StorageClassName
	}
	if className == "" {
		return nil, fmt.Errorf("persistentvolumeclaim %q is unbound and has no storage class to provision it", name)
	}
	class, ok := vi.classes[className]
	if !ok {
		return nil, fmt.Errorf("persistentvolumeclaim %q: storageclass %q not found", name, className)
	}
	if class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil, fmt.Errorf("persistentvolumeclaim %q is unbound and its storageclass %q binds immediately, so it waits for a volume before a node", name, className)
	}
	if len(class.AllowedTopologies) == 0 {
		return nil, nil
	}
	var out []scheduling.Requirements
	for _, term := range class.AllowedTopologies {
		rs := scheduling.Requirements{}
		for _, e := range term.MatchLabelExpressions {
			if err := rs.Add(nodeLabelKey(e.Key, launched), corev1.NodeSelectorOpIn, e.Values...); err != nil {
				return nil, fmt.Errorf("storageclass %q allowedTopologies, %w", className, err)
			}
		}
		out = append(out, rs)
	}
	return out, nil
}

// volumeRequirements are the alternatives a persistent volume's node affinity allows, ANDed with
// the zones its zone label names (kube-scheduler's VolumeZone); nil for none.
func volumeRequirements(pv *corev1.PersistentVolume, launched bool) ([]scheduling.Requirements, error) {
	zones := scheduling.Requirements{}
	for _, key := range []string{corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone} {
		if v, ok := pv.Labels[key]; ok {
			// A volume in several zones lists them separated by "__".
			if err := zones.Add(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, strings.Split(v, "__")...); err != nil {
				return nil, fmt.Errorf("persistentvolume %q zone label, %w", pv.Name, err)
			}
		}
	}
	var out []scheduling.Requirements
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
		for i := range a.Required.NodeSelectorTerms {
			term := a.Required.NodeSelectorTerms[i].DeepCopy()
			for j := range term.MatchExpressions {
				term.MatchExpressions[j].Key = nodeLabelKey(term.MatchExpressions[j].Key, launched)
			}
			rs, err := scheduling.RequirementsFromRequiredTerm(nil, term)
			if err != nil {
				return nil, fmt.Errorf("persistentvolume %q node affinity, %w", pv.Name, err)
			}
			if rs, _ = rs.Intersect(zones); rs != nil {
				out = append(out, rs)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("persistentvolume %q: no node affinity term agrees with its zone label", pv.Name)
		}
		return out, nil
	}
	if len(zones) == 0 {
		return nil, nil
	}
	return []scheduling.Requirements{zones}, nil
}

// nodeLabelKey is the label a node carries for key: on a launched node, aliases of the zone are
// the zone.
func nodeLabelKey(key string, launched bool) string {
	if launched && zoneLabelAliases[key] {
		return corev1.LabelTopologyZone
	}
	return key
}

// migratedPlugins are the in-tree volume plugins whose volumes a CSI driver attaches once
// migrated, so they count against its limit, as kube-scheduler's NodeVolumeLimits counts them.
var migratedPlugins = map[string]string{"kubernetes.io/aws-ebs": cloudprovider.EBSCSIDriver}

// unlimitedVolumes stands for a driver without a declared limit; sums of real counts stay far
// below it.
const unlimitedVolumes = math.MaxInt64 / 4

// volumeResource is the resource a CSI driver's attached volumes are counted as, so the
// scheduler's resource vectors enforce the limits as they do allocatable.
func volumeResource(driver string) corev1.ResourceName {
	return corev1.ResourceName("attachable-volumes-csi-" + driver)
}

// withAttachments is requests plus, per CSI driver, the distinct volumes the pod attaches,
// in a copy when there are any (requests may be shared by a RequestCache). A
// volume whose claim, volume or class is missing counts for none: a pending pod with one is
// unschedulable anyway.
func (vi *volumeIndex) withAttachments(pod *corev1.Pod, requests corev1.ResourceList) corev1.ResourceList {
	if len(pod.Spec.Volumes) == 0 {
		return requests
	}
	seen := sets.New[string]()
	counts := map[string]int64{}
	for _, v := range pod.Spec.Volumes {
		var driver, id string
		switch {
		case v.AWSElasticBlockStore != nil:
			driver, id = cloudprovider.EBSCSIDriver, "aws-ebs/"+v.AWSElasticBlockStore.VolumeID
		case v.PersistentVolumeClaim != nil:
			id = pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
			driver = vi.claimDriver(id, nil)
		case v.Ephemeral != nil:
			var template *corev1.PersistentVolumeClaimSpec
			if v.Ephemeral.VolumeClaimTemplate != nil {
				template = &v.Ephemeral.VolumeClaimTemplate.Spec
			}
			id = pod.Namespace + "/" + pod.Name + "-" + v.Name
			driver = vi.claimDriver(id, template)
		}
		if driver == "" || seen.Has(id) {
			continue
		}
		seen.Insert(id)
		counts[driver]++
	}
	if len(counts) == 0 {
		return requests
	}
	out := make(corev1.ResourceList, len(requests)+len(counts))
	maps.Copy(out, requests)
	for driver, n := range counts {
		out[volumeResource(driver)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return out
}

// claimDriver is the CSI driver that attaches the claim's volume (by namespace/name; template
// stands for a claim not yet created), or "" if none does or it is unknown.
func (vi *volumeIndex) claimDriver(key string, template *corev1.PersistentVolumeClaimSpec) string {
	spec := template
	if claim, ok := vi.claims[key]; ok {
		spec = &claim.Spec
	}
	if spec == nil {
		return ""
	}
	if spec.VolumeName != "" {
		pv, ok := vi.volumes[spec.VolumeName]
		switch {
		case !ok:
			return ""
		case pv.Spec.CSI != nil:
			return pv.Spec.CSI.Driver
		case pv.Spec.AWSElasticBlockStore != nil:
			return cloudprovider.EBSCSIDriver
		}
		return ""
	}
	if spec.StorageClassName == nil {
		return ""
	}
	class, ok := vi.classes[*spec.StorageClassName]
	if !ok {
		return ""
	}
	if driver, ok := migratedPlugins[class.Provisioner]; ok {
		return driver
	}
	return class.Provisioner
}

// volumeLimits sets, in a vector of allocatable resources, each counted driver's limit from
// limits, or unlimitedVolumes where it declares none.
func (s *scheduler) volumeLimits(alloc resources, limits map[string]int64) {
	for driver, i := range s.volumeDrivers {
		if n, ok := limits[driver]; ok {
			alloc[i] = n * 1000 // resource vectors hold milli-units
		} else {
			alloc[i] = unlimitedVolumes
		}
	}
}

// csiNodeLimits are the volume counts a CSINode declares, by driver.
func csiNodeLimits(csiNode *storagev1.CSINode) map[string]int64 {
	if csiNode == nil {
		return nil
	}
	limits := map[string]int64{}
	for _, d := range csiNode.Spec.Drivers {
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			limits[d.Name] = int64(*d.Allocatable.Count)
		}
	}
	return limits
}
