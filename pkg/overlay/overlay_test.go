package overlay

import (
	"fmt"
	"maps"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pools"
)

const gpu = corev1.ResourceName("example.com/gpu")

// catalogue is two instance types, each offered on-demand and spot in two zones at 1.00 and
// 0.40 (m5.large) or 2.00 and 0.80 (c5.xlarge).
func catalogue() []*cloudprovider.InstanceType {
	offerings := func(onDemand, spot float64) []cloudprovider.Offering {
		return []cloudprovider.Offering{
			{Zone: "zone-a", CapacityType: "on-demand", Price: onDemand, Available: true},
			{Zone: "zone-a", CapacityType: "spot", Price: spot, Available: true},
			{Zone: "zone-b", CapacityType: "on-demand", Price: onDemand, Available: true},
			{Zone: "zone-b", CapacityType: "spot", Price: spot, Available: true},
		}
	}
	return []*cloudprovider.InstanceType{
		{Name: "m5.large", Labels: map[string]string{"karpenter.k8s.aws/instance-family": "m5", "karpenter.k8s.aws/instance-cpu": "2"},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Offerings: offerings(1, 0.4)},
		{Name: "c5.xlarge", Labels: map[string]string{"karpenter.k8s.aws/instance-family": "c5", "karpenter.k8s.aws/instance-cpu": "4"},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), gpu: resource.MustParse("1")}, Offerings: offerings(2, 0.8)},
	}
}

type overlaySpec struct {
	name            string
	weight          int32
	requirements    []v1alpha1.NodeSelectorRequirement
	price           string
	priceAdjustment string
	capacity        corev1.ResourceList
}

func (s overlaySpec) build() v1alpha1.NodeOverlay {
	o := v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: s.name},
		Spec: v1alpha1.NodeOverlaySpec{Requirements: s.requirements, Capacity: s.capacity}}
	if s.weight != 0 {
		o.Spec.Weight = ptr.To(s.weight)
	}
	if s.price != "" {
		o.Spec.Price = ptr.To(s.price)
	}
	if s.priceAdjustment != "" {
		o.Spec.PriceAdjustment = ptr.To(s.priceAdjustment)
	}
	return o
}

func in(key string, values ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// offer names an offering's price in the result: "<type> <zone> <capacity type>".
func offer(it, zone, capacityType string) string { return it + " " + zone + " " + capacityType }

func TestApply(t *testing.T) {
	ondemand := in("karpenter.sh/capacity-type", "on-demand")
	m5 := in("node.kubernetes.io/instance-type", "m5.large")
	cases := []struct {
		name     string
		overlays []overlaySpec
		// prices are the offerings' prices that differ from the catalogue's.
		prices map[string]float64
		// capacity are the resources, per instance type, that differ from the catalogue's.
		capacity map[string]corev1.ResourceList
		outcomes map[string]Outcome
	}{
		{
			name:     "no overlay changes nothing",
			outcomes: map[string]Outcome{},
		},
		{
			name:     "price sets the price of the offerings matched by capacity type",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{m5, ondemand}, price: "0.25"}},
			prices:   map[string]float64{offer("m5.large", "zone-a", "on-demand"): 0.25, offer("m5.large", "zone-b", "on-demand"): 0.25},
			outcomes: map[string]Outcome{"a": {Matched: true}},
		},
		{
			name:     "an absolute increase",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{m5, in("topology.kubernetes.io/zone", "zone-a")}, priceAdjustment: "+0.5"}},
			prices:   map[string]float64{offer("m5.large", "zone-a", "on-demand"): 1.5, offer("m5.large", "zone-a", "spot"): 0.9},
			outcomes: map[string]Outcome{"a": {Matched: true}},
		},
		{
			name:     "an absolute decrease is never below zero",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{m5, in("topology.kubernetes.io/zone", "zone-b")}, priceAdjustment: "-0.5"}},
			prices:   map[string]float64{offer("m5.large", "zone-b", "on-demand"): 0.5, offer("m5.large", "zone-b", "spot"): 0},
			outcomes: map[string]Outcome{"a": {Matched: true}},
		},
		{
			name:     "percentages, by instance-type label",
			overlays: []overlaySpec{{name: "up", requirements: []v1alpha1.NodeSelectorRequirement{in("karpenter.k8s.aws/instance-family", "c5"), ondemand}, priceAdjustment: "+10%"}, {name: "down", requirements: []v1alpha1.NodeSelectorRequirement{in("karpenter.k8s.aws/instance-family", "c5"), in("karpenter.sh/capacity-type", "spot")}, priceAdjustment: "-100%"}},
			prices: map[string]float64{offer("c5.xlarge", "zone-a", "on-demand"): 2.2, offer("c5.xlarge", "zone-b", "on-demand"): 2.2,
				offer("c5.xlarge", "zone-a", "spot"): 0, offer("c5.xlarge", "zone-b", "spot"): 0},
			outcomes: map[string]Outcome{"up": {Matched: true}, "down": {Matched: true}},
		},
		{
			name:     "Gte on a numeric label",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-cpu", Operator: "Gte", Values: []string{"4"}}, ondemand, in("topology.kubernetes.io/zone", "zone-a")}, price: "3"}},
			prices:   map[string]float64{offer("c5.xlarge", "zone-a", "on-demand"): 3},
			outcomes: map[string]Outcome{"a": {Matched: true}},
		},
		{
			name:     "the pool's name and labels",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{in("karpenter.sh/nodepool", "default"), in("team", "web"), m5, ondemand}, price: "7"}, {name: "other-pool", requirements: []v1alpha1.NodeSelectorRequirement{in("karpenter.sh/nodepool", "batch")}, price: "9"}},
			prices:   map[string]float64{offer("m5.large", "zone-a", "on-demand"): 7, offer("m5.large", "zone-b", "on-demand"): 7},
			outcomes: map[string]Outcome{"a": {Matched: true}, "other-pool": {}},
		},
		{
			name:     "no match",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{in("node.kubernetes.io/instance-type", "p4d.24xlarge")}, price: "1"}, {name: "custom", requirements: []v1alpha1.NodeSelectorRequirement{in("example.com/absent", "x")}, price: "1"}},
			outcomes: map[string]Outcome{"a": {}, "custom": {}},
		},
		{
			name:     "capacity adds and overrides extended resources on every type matched",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpExists}}, capacity: corev1.ResourceList{gpu: resource.MustParse("8"), "hugepages-2Mi": resource.MustParse("100Mi")}}},
			capacity: map[string]corev1.ResourceList{"m5.large": {gpu: resource.MustParse("8"), "hugepages-2Mi": resource.MustParse("100Mi")}, "c5.xlarge": {gpu: resource.MustParse("8"), "hugepages-2Mi": resource.MustParse("100Mi")}},
			outcomes: map[string]Outcome{"a": {Matched: true}},
		},
		{
			name: "capacity is applied to the type when one of its offerings matches",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{m5, in("topology.kubernetes.io/zone", "zone-b"), in("karpenter.sh/capacity-type", "spot")},
				capacity: corev1.ResourceList{gpu: resource.MustParse("2")}}},
			capacity: map[string]corev1.ResourceList{"m5.large": {gpu: resource.MustParse("2")}},
			outcomes: map[string]Outcome{"a": {Matched: true}},
		},
		{
			name: "the higher weight wins the price, whatever the names",
			overlays: []overlaySpec{
				{name: "z-low", weight: 1, requirements: []v1alpha1.NodeSelectorRequirement{m5, ondemand}, price: "5"},
				{name: "a-high", weight: 10, requirements: []v1alpha1.NodeSelectorRequirement{m5, ondemand, in("topology.kubernetes.io/zone", "zone-a")}, priceAdjustment: "-50%"},
			},
			prices:   map[string]float64{offer("m5.large", "zone-a", "on-demand"): 0.5, offer("m5.large", "zone-b", "on-demand"): 5},
			outcomes: map[string]Outcome{"z-low": {Matched: true}, "a-high": {Matched: true}},
		},
		{
			name: "capacity merges per resource by weight",
			overlays: []overlaySpec{
				{name: "base", weight: 1, requirements: []v1alpha1.NodeSelectorRequirement{}, capacity: corev1.ResourceList{gpu: resource.MustParse("1"), "hugepages-2Mi": resource.MustParse("10Mi")}},
				{name: "specific", weight: 2, requirements: []v1alpha1.NodeSelectorRequirement{m5}, capacity: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("50Mi")}},
			},
			capacity: map[string]corev1.ResourceList{"m5.large": {gpu: resource.MustParse("1"), "hugepages-2Mi": resource.MustParse("50Mi")}, "c5.xlarge": {"hugepages-2Mi": resource.MustParse("10Mi")}},
			outcomes: map[string]Outcome{"base": {Matched: true}, "specific": {Matched: true}},
		},
		{
			name: "equal weights that price the same offering conflict: the later name applies, the earlier nowhere",
			overlays: []overlaySpec{
				{name: "a", weight: 5, requirements: []v1alpha1.NodeSelectorRequirement{ondemand}, price: "9", capacity: corev1.ResourceList{"hugepages-1Gi": resource.MustParse("1Gi")}},
				{name: "b", weight: 5, requirements: []v1alpha1.NodeSelectorRequirement{m5, ondemand, in("topology.kubernetes.io/zone", "zone-a")}, price: "3"},
			},
			prices:   map[string]float64{offer("m5.large", "zone-a", "on-demand"): 3},
			outcomes: map[string]Outcome{"a": {Matched: true, ConflictsWith: "b"}, "b": {Matched: true}},
		},
		{
			name: "equal weights that set the same resource conflict",
			overlays: []overlaySpec{
				{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{m5}, capacity: corev1.ResourceList{gpu: resource.MustParse("1")}},
				{name: "b", capacity: corev1.ResourceList{gpu: resource.MustParse("2")}},
			},
			capacity: map[string]corev1.ResourceList{"m5.large": {gpu: resource.MustParse("2")}, "c5.xlarge": {gpu: resource.MustParse("2")}},
			outcomes: map[string]Outcome{"a": {Matched: true, ConflictsWith: "b"}, "b": {Matched: true}},
		},
		{
			name: "equal weights that set different things, or different offerings, do not conflict",
			overlays: []overlaySpec{
				{name: "price", requirements: []v1alpha1.NodeSelectorRequirement{m5}, price: "0.1"},
				{name: "gpu", requirements: []v1alpha1.NodeSelectorRequirement{m5}, capacity: corev1.ResourceList{gpu: resource.MustParse("1")}},
				{name: "c5", requirements: []v1alpha1.NodeSelectorRequirement{in("node.kubernetes.io/instance-type", "c5.xlarge")}, price: "0.2"},
			},
			prices: map[string]float64{offer("m5.large", "zone-a", "on-demand"): 0.1, offer("m5.large", "zone-b", "on-demand"): 0.1, offer("m5.large", "zone-a", "spot"): 0.1, offer("m5.large", "zone-b", "spot"): 0.1,
				offer("c5.xlarge", "zone-a", "on-demand"): 0.2, offer("c5.xlarge", "zone-b", "on-demand"): 0.2, offer("c5.xlarge", "zone-a", "spot"): 0.2, offer("c5.xlarge", "zone-b", "spot"): 0.2},
			capacity: map[string]corev1.ResourceList{"m5.large": {gpu: resource.MustParse("1")}},
			outcomes: map[string]Outcome{"price": {Matched: true}, "gpu": {Matched: true}, "c5": {Matched: true}},
		},
		{
			name:     "an overlay that cannot be read applies nowhere",
			overlays: []overlaySpec{{name: "a", requirements: []v1alpha1.NodeSelectorRequirement{m5}, priceAdjustment: "10%"}},
			outcomes: map[string]Outcome{"a": {Invalid: fmt.Errorf(`spec.priceAdjustment "10%%" is not a signed amount or percentage`)}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			types := catalogue()
			pools := []Pool{{Key: poolKey("default"), Labels: map[string]string{"team": "web"}, InstanceTypes: types}}
			var overlays []v1alpha1.NodeOverlay
			for _, s := range tc.overlays {
				overlays = append(overlays, s.build())
			}
			got, outcomes := Apply(pools, overlays)

			want := catalogue()
			for i, it := range got[0].InstanceTypes {
				for _, o := range it.Offerings {
					price, changed := tc.prices[offer(it.Name, o.Zone, o.CapacityType)]
					if !changed {
						price = offeringPrice(want[i], o)
					}
					if math.Abs(o.Price-price) > 1e-9 {
						t.Errorf("%s: price %g, want %g", offer(it.Name, o.Zone, o.CapacityType), o.Price, price)
					}
				}
				wantCapacity := maps.Clone(want[i].Capacity)
				maps.Copy(wantCapacity, tc.capacity[it.Name])
				if !equalResources(it.Capacity, wantCapacity) {
					t.Errorf("%s: capacity %v, want %v", it.Name, it.Capacity, wantCapacity)
				}
				if len(tc.prices)+len(tc.capacity) == 0 && it != types[i] {
					t.Errorf("%s was copied, though no overlay changes it", it.Name)
				}
			}
			for i := range types {
				if !equalCatalogue(types[i], want[i]) {
					t.Errorf("the cached %s was changed: %+v", types[i].Name, types[i])
				}
			}
			if len(outcomes) != len(tc.outcomes) {
				t.Errorf("outcomes %+v, want %+v", outcomes, tc.outcomes)
			}
			for name, w := range tc.outcomes {
				g := outcomes[name]
				if g.Matched != w.Matched || g.ConflictsWith != w.ConflictsWith || fmt.Sprint(g.Invalid) != fmt.Sprint(w.Invalid) {
					t.Errorf("overlay %s: %+v, want %+v", name, g, w)
				}
			}
		})
	}
}

func offeringPrice(it *cloudprovider.InstanceType, want cloudprovider.Offering) float64 {
	for _, o := range it.Offerings {
		if o.Zone == want.Zone && o.CapacityType == want.CapacityType {
			return o.Price
		}
	}
	return math.NaN()
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if other, ok := b[name]; !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

func equalCatalogue(a, b *cloudprovider.InstanceType) bool {
	if !equalResources(a.Capacity, b.Capacity) || len(a.Offerings) != len(b.Offerings) {
		return false
	}
	for i := range a.Offerings {
		if a.Offerings[i] != b.Offerings[i] {
			return false
		}
	}
	return true
}

// TestApplyAcrossPools: a conflict in one pool keeps the overlay out of every pool, as upstream
// validates an overlay against every NodePool before applying it anywhere.
func TestApplyAcrossPools(t *testing.T) {
	pools := []Pool{{Key: poolKey("a"), InstanceTypes: catalogue()}, {Key: poolKey("b"), InstanceTypes: catalogue()}}
	overlays := []v1alpha1.NodeOverlay{
		overlaySpec{name: "only-b", requirements: []v1alpha1.NodeSelectorRequirement{in("karpenter.sh/nodepool", "b")}, price: "0.3"}.build(),
		overlaySpec{name: "everywhere", price: "2"}.build(),
	}
	got, outcomes := Apply(pools, overlays)
	if o := outcomes["everywhere"]; o.ConflictsWith != "only-b" || o.Applied() {
		t.Errorf("everywhere: %+v, want a conflict with only-b", o)
	}
	if p := got[0].InstanceTypes[0].Offerings[0].Price; p != 1 {
		t.Errorf("pool a's m5.large costs %g, want the cloud's 1: the conflicting overlay applies nowhere", p)
	}
	if p := got[1].InstanceTypes[0].Offerings[0].Price; p != 0.3 {
		t.Errorf("pool b's m5.large costs %g, want only-b's 0.3", p)
	}
}

// poolKey is the key of the Provisioner named name: overlays match it by name alone.
func poolKey(name string) pools.Key { return pools.Provisioner(name) }
