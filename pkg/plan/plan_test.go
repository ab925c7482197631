package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/plan"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/builders"
)

// lister gives the fake catalogue, or fails for a provisioner with a requirement on key "fail".
type lister struct{}

func (l lister) InstanceTypes(_ context.Context, c cloudprovider.Constraints) ([]*cloudprovider.InstanceType, error) {
	for _, r := range c.Requirements {
		if r.Key == "fail" {
			return nil, errors.New("no subnets")
		}
	}
	return fake.DefaultInstanceTypes(), nil
}

func onDemand(name string, mutate ...func(*v1alpha5.Provisioner)) v1alpha5.Provisioner {
	p := builders.Provisioner(builders.ProvisionerOptions{Name: name, Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}},
		{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64"}},
	}})
	for _, m := range mutate {
		m(p)
	}
	return *p
}

func TestProvisioningReport(t *testing.T) {
	existing := builders.Node(builders.NodeOptions{Name: "existing", Ready: corev1.ConditionTrue, Allocatable: builders.Resources("cpu", "2", "memory", "4Gi", "pods", "10"),
		Labels: map[string]string{corev1.LabelHostname: "existing"}})
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}},
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.xlarge", corev1.LabelHostname: "launching",
			corev1.LabelTopologyZone: "us-west-2a", v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}})
	launching.Status = corev1.NodeStatus{}
	pending := func(name, cpu string, selector map[string]string) corev1.Pod {
		return *builders.Pod(builders.PodOptions{Name: name, Requests: builders.Resources("cpu", cpu), NodeSelector: selector, Unschedulable: true})
	}
	snapshot := &state.Snapshot{
		Nodes: []corev1.Node{*existing, *launching},
		Pods: []corev1.Pod{
			pending("a-small", "1500m", map[string]string{corev1.LabelHostname: "existing"}),
			pending("b-launching", "3", map[string]string{corev1.LabelHostname: "launching"}),
			pending("c-big", "6", nil),
			pending("d-nowhere", "1", map[string]string{"team": "none"}),
			pending("e-small", "100m", map[string]string{corev1.LabelHostname: "launching"}),
		},
		InstanceTypes: map[string]*cloudprovider.InstanceType{},
	}
	broken := onDemand("broken", func(p *v1alpha5.Provisioner) {
		p.Spec.Requirements = append(p.Spec.Requirements, v1alpha5.NodeSelectorRequirement{Key: "fail", Operator: "Exists"})
	})
	report := plan.Provisioning(context.Background(), snapshot, plan.Pools{Provisioners: []v1alpha5.Provisioner{onDemand("default"), broken}}, lister{})

	if len(report.NewNodes) != 1 || !slices.Equal(report.NewNodes[0].Pods, []string{"default/c-big"}) {
		t.Fatalf("new nodes %+v, want one for c-big", report.NewNodes)
	}
	n := report.NewNodes[0]
	if n.Pool != "provisioner/default" || n.CapacityType != v1alpha5.CapacityTypeOnDemand || n.InstanceType != n.InstanceTypes[0] || n.Zone == "" || n.PricePerHour <= 0 {
		t.Errorf("new node %+v, want the cheapest on-demand offering of the first candidate", n)
	}
	if report.PricePerHour != n.PricePerHour {
		t.Errorf("total $%.4f/h, want the one node's $%.4f/h", report.PricePerHour, n.PricePerHour)
	}
	wantExisting := []plan.ExistingNode{{Name: "existing", Pods: []string{"default/a-small"}}, {Name: "launching", Launching: true, Pods: []string{"default/b-launching", "default/e-small"}}}
	if got, _ := json.Marshal(report.ExistingNodes); string(got) != mustJSON(t, wantExisting) {
		t.Errorf("existing room %s, want %s", got, mustJSON(t, wantExisting))
	}
	if len(report.Unschedulable) != 1 || report.Unschedulable[0].Pod != "default/d-nowhere" || report.Unschedulable[0].Reason == "" {
		t.Errorf("unschedulable %+v, want d-nowhere with a reason", report.Unschedulable)
	}
	if len(report.SkippedPools) != 1 || report.SkippedPools[0] != (plan.SkippedPool{Kind: "Provisioner", Name: "broken", Reason: report.SkippedPools[0].Reason}) || !strings.Contains(report.SkippedPools[0].Reason, "no subnets") {
		t.Errorf("skipped %+v, want Provisioner broken with the cloud's error", report.SkippedPools)
	}
}

// TestLimitsCountTheNodes: a provisioner whose nodes (one still launching, counted as its
// instance type) use its limit plans nothing more.
func TestLimitsCountTheNodes(t *testing.T) {
	launching := builders.Node(builders.NodeOptions{Name: "launching", Taints: []corev1.Taint{{Key: v1alpha5.NotReadyTaintKey, Effect: corev1.TaintEffectNoSchedule}},
		Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelInstanceTypeStable: "m5.xlarge"}})
	launching.Status = corev1.NodeStatus{}
	snapshot := &state.Snapshot{
		Nodes:         []corev1.Node{*launching},
		Pods:          []corev1.Pod{*builders.Pod(builders.PodOptions{Name: "big", Requests: builders.Resources("cpu", "6"), Unschedulable: true})},
		InstanceTypes: map[string]*cloudprovider.InstanceType{},
	}
	limited := onDemand("default", func(p *v1alpha5.Provisioner) {
		p.Spec.Limits = &v1alpha5.Limits{Resources: builders.Resources("cpu", "8")}
	})
	report := plan.Provisioning(context.Background(), snapshot, plan.Pools{Provisioners: []v1alpha5.Provisioner{limited}}, lister{})
	if len(report.NewNodes) != 0 || len(report.Unschedulable) != 1 {
		t.Errorf("report %+v, want no new node and big unschedulable under the limit", report)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestInstanceTypesRoundTrip(t *testing.T) {
	types := fake.DefaultInstanceTypes()
	types[0].Offerings[0].Available = false
	data, err := yaml.Marshal(plan.DumpInstanceTypes(types))
	if err != nil {
		t.Fatal(err)
	}
	read, err := plan.ReadInstanceTypes("it.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != len(types) {
		t.Fatalf("%d instance types read back, want %d", len(read), len(types))
	}
	for i := range types {
		if read[i].Name != types[i].Name || len(read[i].Offerings) != len(types[i].Offerings) || !builders.EqualResources(read[i].Capacity, types[i].Capacity) ||
			!builders.EqualResources(read[i].Overhead, types[i].Overhead) || !slices.Equal(read[i].Offerings, types[i].Offerings) {
			t.Errorf("instance type %d read back as %+v, want %+v", i, read[i], types[i])
		}
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"empty", "instanceTypes: []\n", "lists no instanceTypes"},
		{"unknown field", "instanceTypes:\n- name: a\n  cpus: 2\n", `unknown field "cpus"`},
		{"no capacity", "instanceTypes:\n- name: a\n  offerings: [{zone: z, capacityType: spot, price: 1}]\n", "instanceTypes[0] a: needs a capacity"},
		{"twice", "instanceTypes:\n- {name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, offerings: [{zone: z, capacityType: spot, price: 1}]}\n- {name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, offerings: [{zone: z, capacityType: spot, price: 1}]}\n", "a is listed twice"},
		{"an offering without a zone", "instanceTypes:\n- {name: a, capacity: {cpu: 1, memory: 1Gi, pods: 1}, offerings: [{capacityType: spot, price: 1}]}\n", "offerings[0]: needs a zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plan.ReadInstanceTypes("it.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "it.yaml") {
				t.Errorf("error %v, want it.yaml: … %s", err, tc.want)
			}
		})
	}
}

func TestConsolidate(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := onDemand("default", func(p *v1alpha5.Provisioner) { p.Spec.Consolidation = &v1alpha5.Consolidation{Enabled: ptr.To(true)} })
	manual := onDemand("manual")
	node := func(name, provisioner string, bound ...*corev1.Pod) scheduling.Node {
		var it *cloudprovider.InstanceType
		for _, t := range fake.DefaultInstanceTypes() {
			if t.Name == "m5.xlarge" {
				it = t
			}
		}
		n := builders.Node(builders.NodeOptions{Name: name, Ready: corev1.ConditionTrue, Allocatable: it.Allocatable(), Capacity: it.Capacity,
			Labels: map[string]string{v1alpha5.ProvisionerNameLabelKey: provisioner, corev1.LabelInstanceTypeStable: it.Name, corev1.LabelTopologyZone: "us-west-2a",
				v1alpha5.CapacityTypeLabelKey: v1alpha5.CapacityTypeOnDemand, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelHostname: name},
			Finalizers: []string{v1alpha5.TerminationFinalizer}})
		n.CreationTimestamp = metav1.Time{Time: now.Add(-time.Hour)}
		for _, pod := range bound {
			pod.Spec.NodeName = name
		}
		return scheduling.Node{Node: n, Pods: bound}
	}
	owned := func(name string) *corev1.Pod {
		pod := builders.Pod(builders.PodOptions{Name: name, Requests: builders.Resources("cpu", "500m", "memory", "256Mi"),
			Owners: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)}}})
		pod.Status.Phase = corev1.PodRunning
		return pod
	}
	unowned := owned("bare")
	unowned.OwnerReferences = nil
	// Finding 34.7: deleted without its termination finalizer, a node would go undrained.
	unfinalized := node("unfinalized", "default", owned("u1"))
	unfinalized.Node.Finalizers = nil
	snapshot := consolidation.Snapshot{
		Now: now,
		Provisioners: []consolidation.Provisioner{
			{Provisioner: &p, InstanceTypes: fake.DefaultInstanceTypes()},
			{Provisioner: &manual, InstanceTypes: fake.DefaultInstanceTypes()},
		},
		Nodes: []scheduling.Node{
			node("a", "default", owned("a1")),
			node("b", "default", owned("b1"), unowned),
			node("m", "manual", owned("m1")),
			unfinalized,
			{Node: builders.Node(builders.NodeOptions{Name: "static", Ready: corev1.ConditionTrue})},
		},
	}
	got := plan.Consolidate(snapshot, consolidation.Settings{MinNodeAge: time.Minute, Threshold: 0.1, MinSpotTypes: 1})
	if got.Action != string(consolidation.Delete) || !slices.Equal(got.Nodes, []string{"a"}) || got.SavingPerHour <= 0 {
		t.Fatalf("consolidation %+v, want node a deleted with a saving", got)
	}
	reasons := map[string]string{}
	for _, k := range got.Kept {
		reasons[k.Name] = k.Reason
	}
	want := map[string]string{"b": consolidation.ReasonNoController, "m": plan.ReasonConsolidationDisabled, "static": plan.ReasonNotKarpenter,
		"unfinalized": plan.ReasonNoFinalizer}
	if mustJSON(t, reasons) != mustJSON(t, want) {
		t.Errorf("kept %v, want %v", reasons, want)
	}
	var table bytes.Buffer
	if err := plan.Write(&table, &plan.Report{Consolidation: got}, plan.FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Consolidation: delete a, saving $", "ConsolidationPodWithoutController  pod default/bare has no controller", "NotLaunchedByKarpenter             no Provisioner or NodePool launched the node"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table\n%s\ndoes not say %q", table.String(), want)
		}
	}
}

func TestWrite(t *testing.T) {
	report := &plan.Report{
		NewNodes: []plan.NewNode{{Pool: "provisioner/default", InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "on-demand", PricePerHour: 0.096,
			InstanceTypes: []string{"m5.large", "c5.xlarge", "m5.xlarge", "r5.large", "m5.2xlarge"}, Pods: []string{"shop/web-0"}}},
		ExistingNodes: []plan.ExistingNode{{Name: "ip-10-0-1-4", Launching: true, Pods: []string{"shop/web-1"}}},
		Unschedulable: []plan.UnschedulablePod{{Pod: "shop/gpu", Reason: "no instance type has nvidia.com/gpu"}},
		SkippedPools:  []plan.SkippedPool{{Kind: "NodePool", Name: "gpu", Reason: "EC2NodeClass gpu does not exist"}},
		PricePerHour:  0.096,
	}
	var table bytes.Buffer
	if err := plan.Write(&table, report, plan.FormatTable); err != nil {
		t.Fatal(err)
	}
	want := `NEW NODE  POOL                 INSTANCE TYPE  ZONE        CAPACITY TYPE  $/H     PODS  ALSO FITS
1         provisioner/default  m5.large       us-west-2a  on-demand      0.0960  1     c5.xlarge,m5.xlarge,r5.large +1

POD         GOES TO
shop/web-0  new node 1 (m5.large)
shop/web-1  launching node ip-10-0-1-4

UNSCHEDULABLE POD  REASON
shop/gpu           no instance type has nvidia.com/gpu

NodePool gpu plans no node: EC2NodeClass gpu does not exist
1 new nodes add $0.0960/h; 1 pods go to existing or launching nodes; 1 pods cannot be placed.
`
	if table.String() != want {
		t.Errorf("table\n%s\nwant\n%s", table.String(), want)
	}
	for _, format := range []string{plan.FormatJSON, plan.FormatYAML} {
		var out bytes.Buffer
		if err := plan.Write(&out, report, format); err != nil {
			t.Fatal(err)
		}
		var back plan.Report
		if err := yaml.Unmarshal(out.Bytes(), &back); err != nil {
			t.Fatalf("%s output does not parse, %v", format, err)
		}
		if mustJSON(t, back) != mustJSON(t, report) {
			t.Errorf("%s output reads back as %+v, want %+v", format, back, report)
		}
	}
	if err := plan.Write(&bytes.Buffer{}, report, "xml"); err == nil {
		t.Error("format xml written, want an error")
	}
}

// A table with spot nodes says that EC2 picks among their candidates by spare capacity first
// (finding 34.17): the offering shown is a prediction only while its capacity is ample.
func TestWriteSaysHowSpotIsChosen(t *testing.T) {
	report := &plan.Report{NewNodes: []plan.NewNode{{Pool: "provisioner/spot", InstanceType: "t3.small", Zone: "us-west-2a", CapacityType: "spot", PricePerHour: 0.0064,
		InstanceTypes: []string{"t3.small", "t3a.small"}, Pods: []string{"default/web-0"}}}, PricePerHour: 0.0064}
	var table bytes.Buffer
	if err := plan.Write(&table, report, plan.FormatTable); err != nil {
		t.Fatal(err)
	}
	note := "Spot nodes: EC2 weighs the candidates' spare capacity, then their price: it launches the offering shown\n" +
		"while its capacity is ample, else another candidate.\n"
	if !strings.Contains(table.String(), note) {
		t.Errorf("table\n%s\nlacks the spot note\n%s", table.String(), note)
	}
}

// TestNodeOverlaysChangeTheChoice: a NodeOverlay read from manifests that makes the dearest
// candidate the cheapest makes the plan launch it, at the overlay's price; the snapshot's
// instance types carry it too, and the cloud's are left as they were.
func TestNodeOverlaysChangeTheChoice(t *testing.T) {
	snapshotOf := func() *state.Snapshot {
		return &state.Snapshot{Pods: []corev1.Pod{*builders.Pod(builders.PodOptions{Name: "web", Requests: builders.Resources("cpu", "1"), Unschedulable: true})},
			InstanceTypes: map[string]*cloudprovider.InstanceType{}}
	}
	before := plan.Provisioning(context.Background(), snapshotOf(), plan.Pools{Provisioners: []v1alpha5.Provisioner{onDemand("default")}}, lister{})
	if len(before.NewNodes) != 1 || len(before.NewNodes[0].InstanceTypes) < 2 {
		t.Fatalf("new nodes %+v, want one with several candidates", before.NewNodes)
	}
	candidates := before.NewNodes[0].InstanceTypes
	dearest := candidates[len(candidates)-1]
	overlays, err := plan.ReadNodeOverlays("overlays.yaml", []byte(`apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: discount}
spec:
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [`+dearest+`]}
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  price: "0.001"
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: elsewhere}
spec:
  requirements:
    - {key: karpenter.sh/nodepool, operator: In, values: [other]}
  priceAdjustment: "-100%"
`))
	if err != nil {
		t.Fatal(err)
	}
	snapshot := snapshotOf()
	snapshot.Overlays = overlays
	after := plan.Provisioning(context.Background(), snapshot, plan.Pools{Provisioners: []v1alpha5.Provisioner{onDemand("default")}}, lister{})
	if len(after.NewNodes) != 1 || after.NewNodes[0].InstanceType != dearest || after.NewNodes[0].PricePerHour != 0.001 {
		t.Fatalf("new nodes %+v, want one %s at the overlay's $0.001/h (it was %s)", after.NewNodes, dearest, before.NewNodes[0].InstanceType)
	}
	if len(after.SkippedNodeOverlays) != 1 || after.SkippedNodeOverlays[0].Name != "elsewhere" || !strings.Contains(after.SkippedNodeOverlays[0].Reason, "match no offering") {
		t.Errorf("skipped overlays %+v, want elsewhere, which matches nothing", after.SkippedNodeOverlays)
	}
	var table bytes.Buffer
	if err := plan.Write(&table, after, plan.FormatTable); err != nil || !strings.Contains(table.String(), "NodeOverlay elsewhere applies nowhere") {
		t.Errorf("the table (%v) does not say elsewhere applies nowhere:\n%s", err, table.String())
	}
	for _, it := range fake.DefaultInstanceTypes() {
		if it.Name == dearest && it.Offerings[0].Price == 0.001 {
			t.Errorf("the catalogue's %s was changed", dearest)
		}
	}
	if it := snapshot.InstanceTypes[dearest]; it == nil || !slices.ContainsFunc(it.Offerings, func(o cloudprovider.Offering) bool { return o.Price == 0.001 }) {
		t.Errorf("the snapshot's %s is %+v, want the overlay's price", dearest, it)
	}
}

func TestReadNodeOverlaysRefusesOtherKinds(t *testing.T) {
	_, err := plan.ReadNodeOverlays("overlays.yaml", []byte("apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: default}\n"))
	var input *plan.InputError
	if !errors.As(err, &input) || !strings.Contains(err.Error(), "is not a NodeOverlay") {
		t.Errorf("err %v, want an InputError saying it is not a NodeOverlay", err)
	}
}

// TestPlannerReported: the report names the planner the controller's --batch-packer-budget
// gives, as the controller would plan (none when nothing is pending), and a table whose packer
// ran out of budget says so.
func TestPlannerReported(t *testing.T) {
	snapshot := &state.Snapshot{
		Pods:          []corev1.Pod{*builders.Pod(builders.PodOptions{Name: "web", Requests: builders.Resources("cpu", "1"), Unschedulable: true})},
		InstanceTypes: map[string]*cloudprovider.InstanceType{},
	}
	for _, tc := range []struct {
		budget time.Duration
		want   string
	}{{0, "greedy"}, {time.Hour, "packer"}} {
		report := plan.Provisioning(context.Background(), snapshot, plan.Pools{Provisioners: []v1alpha5.Provisioner{onDemand("default")}, PackBudget: tc.budget}, lister{})
		if report.Planner != tc.want || len(report.NewNodes) != 1 {
			t.Errorf("budget %s: planner %q, %d new nodes; want %q, 1", tc.budget, report.Planner, len(report.NewNodes), tc.want)
		}
	}
	idle := plan.Provisioning(context.Background(), &state.Snapshot{InstanceTypes: map[string]*cloudprovider.InstanceType{}},
		plan.Pools{Provisioners: []v1alpha5.Provisioner{onDemand("default")}, PackBudget: time.Hour}, lister{})
	if idle.Planner != "" {
		t.Errorf("nothing pending: planner %q, want none", idle.Planner)
	}
	var table bytes.Buffer
	if err := plan.Write(&table, &plan.Report{Planner: "packer-stopped"}, plan.FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "The batch packer ran out of its budget") {
		t.Errorf("table\n%s\ndoes not say the packer ran out of its budget", table.String())
	}
}
