package fake_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
)

func TestDefaultInstanceTypes(t *testing.T) {
	types := fake.DefaultInstanceTypes()
	if len(types) < 5 {
		t.Fatalf("%d instance types, want a handful", len(types))
	}
	for _, it := range types {
		allocatable := it.Allocatable()
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			if q := allocatable[name]; q.Sign() <= 0 {
				t.Errorf("%s: allocatable %s = %s", it.Name, name, q.String())
			}
		}
		prices := map[string]map[string]float64{}
		for _, o := range it.Offerings {
			if !o.Available || o.Price <= 0 {
				t.Errorf("%s: offering %+v", it.Name, o)
			}
			if prices[o.Zone] == nil {
				prices[o.Zone] = map[string]float64{}
			}
			prices[o.Zone][o.CapacityType] = o.Price
		}
		for zone, p := range prices {
			if p[v1alpha5.CapacityTypeSpot] >= p[v1alpha5.CapacityTypeOnDemand] {
				t.Errorf("%s in %s: spot %v not cheaper than on-demand %v", it.Name, zone, p[v1alpha5.CapacityTypeSpot], p[v1alpha5.CapacityTypeOnDemand])
			}
		}
	}
	// A fresh copy each call: a test changing its catalogue changes no other's.
	types[0].Offerings[0].Price = 1000
	if fake.DefaultInstanceTypes()[0].Offerings[0].Price == 1000 {
		t.Error("DefaultInstanceTypes shares its catalogue")
	}
}

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestInstanceTypesMeetConstraints(t *testing.T) {
	all := []string{"c5.large", "c5.xlarge", "m5.large", "m5.xlarge", "m5.2xlarge", "m6g.large", "r5.large", "t3.medium"}
	tests := []struct {
		name         string
		requirements []corev1.NodeSelectorRequirement
		want         []string
		// offerings is the number of offerings per type, when the test checks it.
		offerings map[string]int
	}{
		{name: "no requirements", want: all, offerings: map[string]int{"m5.large": 6, "t3.medium": 4}},
		{name: "architecture", requirements: []corev1.NodeSelectorRequirement{requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")}, want: []string{"m6g.large"}},
		{
			name:         "zone leaves out the types not offered there",
			requirements: []corev1.NodeSelectorRequirement{requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2c")},
			want:         slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == "t3.medium" }),
			offerings:    map[string]int{"m5.large": 2},
		},
		{
			name: "capacity type and instance types",
			requirements: []corev1.NodeSelectorRequirement{
				requirement(v1alpha5.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1alpha5.CapacityTypeSpot),
				requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "t3.medium"),
			},
			want:      []string{"m5.large", "t3.medium"},
			offerings: map[string]int{"m5.large": 3, "t3.medium": 2},
		},
		{name: "not in", requirements: []corev1.NodeSelectorRequirement{requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpNotIn, all[1:]...)}, want: all[:1]},
		{name: "exists", requirements: []corev1.NodeSelectorRequirement{requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpExists)}, want: all},
		{name: "does not exist", requirements: []corev1.NodeSelectorRequirement{requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpDoesNotExist)}},
		{name: "labels the provisioner sets do not select", requirements: []corev1.NodeSelectorRequirement{requirement("team", corev1.NodeSelectorOpIn, "a")}, want: all},
		{name: "contradiction", requirements: []corev1.NodeSelectorRequirement{
			requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"),
			requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
			types, err := p.InstanceTypes(context.Background(), cloudprovider.Constraints{Requirements: tt.requirements})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range types {
				got = append(got, it.Name)
				if n, ok := tt.offerings[it.Name]; ok && len(it.Offerings) != n {
					t.Errorf("%s: %d offerings, want %d: %+v", it.Name, len(it.Offerings), n, it.Offerings)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("instance types %v, want %v", got, tt.want)
			}
		})
	}
}

func TestInstanceTypesWithCustomCatalogue(t *testing.T) {
	catalogue := []*cloudprovider.InstanceType{{
		Name:      "tiny",
		Labels:    map[string]string{"example.com/generation": "3"},
		Offerings: []cloudprovider.Offering{{Zone: "z", CapacityType: v1alpha5.CapacityTypeOnDemand, Price: 0.01, Available: true}},
	}}
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{InstanceTypes: catalogue})
	for _, tt := range []struct {
		op   corev1.NodeSelectorOperator
		rhs  string
		want int
	}{{corev1.NodeSelectorOpGt, "2", 1}, {corev1.NodeSelectorOpGt, "3", 0}, {corev1.NodeSelectorOpLt, "4", 1}, {corev1.NodeSelectorOpLt, "3", 0}} {
		types, err := p.InstanceTypes(context.Background(), cloudprovider.Constraints{
			Requirements: []corev1.NodeSelectorRequirement{requirement("example.com/generation", tt.op, tt.rhs)},
		})
		if err != nil || len(types) != tt.want {
			t.Errorf("generation %s %s: %d types, %v; want %d", tt.op, tt.rhs, len(types), err, tt.want)
		}
	}
}

// candidates are the offerings of the named instance types, cheapest first, as a
// provisioner would order them.
func candidates(t *testing.T, p *fake.InstanceProvider, names ...string) []cloudprovider.Candidate {
	t.Helper()
	types, err := p.InstanceTypes(context.Background(), cloudprovider.Constraints{
		Requirements: []corev1.NodeSelectorRequirement{requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var cs []cloudprovider.Candidate
	for _, it := range types {
		for _, o := range it.Offerings {
			cs = append(cs, cloudprovider.Candidate{InstanceType: it, Offering: o})
		}
	}
	slices.SortStableFunc(cs, func(a, b cloudprovider.Candidate) int {
		switch {
		case a.Offering.Price < b.Offering.Price:
			return -1
		case a.Offering.Price > b.Offering.Price:
			return 1
		}
		return 0
	})
	return cs
}

func TestCreateFallsThroughOfferingsWithoutCapacity(t *testing.T) {
	ctx := context.Background()
	launchTime := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{Clock: clocktesting.NewFakePassiveClock(launchTime)})
	cs := candidates(t, p, "t3.medium", "m5.large")
	cheapest := cs[0].Key()
	if want := (cloudprovider.OfferingKey{InstanceType: "t3.medium", Zone: "us-west-2a", CapacityType: v1alpha5.CapacityTypeSpot}); cheapest != want {
		t.Fatalf("cheapest %+v, want %+v", cheapest, want)
	}
	p.SetInsufficientCapacity(cheapest)

	request := cloudprovider.LaunchRequest{
		Candidates:      cs,
		ProvisionerName: "default",
		Labels:          map[string]string{v1alpha5.ProvisionerNameLabelKey: "default", "team": "a"},
		Taints:          []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}},
	}
	launched, err := p.Create(ctx, request)
	if err != nil {
		t.Fatal(err)
	}
	instance := launched[0]
	want := cloudprovider.Instance{
		ProviderID:   "fake:///us-west-2b/i-00000000000000001",
		ID:           "i-00000000000000001",
		InstanceType: "t3.medium",
		Zone:         "us-west-2b",
		CapacityType: v1alpha5.CapacityTypeSpot,
		NodeName:     "ip-10-0-0-1.us-west-2.compute.internal",
		ImageID:      "fake-image-amd64",
		LaunchTime:   launchTime,
		State:        cloudprovider.InstanceStateRunning,
	}
	got := *instance
	got.Labels = nil
	if got.FellBackFrom == nil || !slices.Equal(got.FellBackFrom.Offerings, []cloudprovider.OfferingKey{cheapest}) {
		t.Errorf("the launch fell back from %+v, want the cheapest offering %+v", got.FellBackFrom, cheapest)
	}
	got.FellBackFrom = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instance\n got %+v\nwant %+v", got, want)
	}
	for key, value := range map[string]string{
		corev1.LabelInstanceTypeStable:   "t3.medium",
		corev1.LabelTopologyZone:         "us-west-2b",
		v1alpha5.CapacityTypeLabelKey:    v1alpha5.CapacityTypeSpot,
		corev1.LabelArchStable:           "amd64",
		v1alpha5.ProvisionerNameLabelKey: "default",
		"team":                           "a",
	} {
		if instance.Labels[key] != value {
			t.Errorf("label %s = %q, want %q", key, instance.Labels[key], value)
		}
	}

	// The offering without capacity is reported unavailable until capacity returns.
	types, _ := p.InstanceTypes(ctx, cloudprovider.Constraints{})
	for _, it := range types {
		for _, o := range it.Offerings {
			key := cloudprovider.Candidate{InstanceType: it, Offering: o}.Key()
			if o.Available == (key == cheapest) {
				t.Errorf("%+v available = %v", key, o.Available)
			}
		}
	}
	p.ClearInsufficientCapacity()
	if second, err := p.Create(ctx, request); err != nil || second[0].Zone != "us-west-2a" || second[0].ID != "i-00000000000000002" {
		t.Errorf("after capacity returned: %+v, %v", second, err)
	}
	if calls := p.CreateCalls(); len(calls) != 2 || calls[0].ProvisionerName != "default" || len(calls[0].Taints) != 1 {
		t.Errorf("create calls %+v", calls)
	}
}

func TestCreateWithoutCapacityNamesTheOfferings(t *testing.T) {
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	cs := candidates(t, p, "t3.medium")
	var keys []cloudprovider.OfferingKey
	for _, c := range cs {
		keys = append(keys, c.Key())
	}
	p.SetInsufficientCapacity(keys[1:]...)
	// An offering the catalogue does not have fails like one without capacity.
	unknown := cloudprovider.Candidate{InstanceType: cs[0].InstanceType, Offering: cloudprovider.Offering{Zone: "us-west-2c", CapacityType: v1alpha5.CapacityTypeSpot}}
	request := cloudprovider.LaunchRequest{Candidates: append([]cloudprovider.Candidate{unknown}, cs[1:]...)}

	_, err := p.Create(context.Background(), request)
	var insufficient *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &insufficient) {
		t.Fatalf("Create = %v, want *InsufficientCapacityError", err)
	}
	if want := append([]cloudprovider.OfferingKey{unknown.Key()}, keys[1:]...); !slices.Equal(insufficient.Offerings, want) {
		t.Errorf("offerings %v, want %v", insufficient.Offerings, want)
	}
	for _, key := range insufficient.Offerings {
		if insufficient.Reasons[key] == "" {
			t.Errorf("offering %v has no reason", key)
		}
	}
	if _, err := p.Create(context.Background(), cloudprovider.LaunchRequest{}); err == nil {
		t.Error("Create without candidates succeeded")
	}
	if instances, _ := p.List(context.Background()); len(instances) != 0 {
		t.Errorf("failed launches left %d instances", len(instances))
	}
}

func TestCreateWithAnIdempotencyKeyLaunchesOnce(t *testing.T) {
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	request := cloudprovider.LaunchRequest{Candidates: candidates(t, p, "t3.medium"), IdempotencyKey: "launch-1"}
	launched, err := p.Create(context.Background(), request)
	if err != nil {
		t.Fatal(err)
	}
	first := launched[0]
	again, err := p.Create(context.Background(), request)
	if err != nil || len(again) != 1 || again[0].ID != first.ID {
		t.Errorf("retried Create = %v, %v; want the first instance %s", again, err, first.ID)
	}
	request.IdempotencyKey = "launch-2"
	if other, err := p.Create(context.Background(), request); err != nil || other[0].ID == first.ID {
		t.Errorf("Create with another key = %v, %v; want a new instance", other, err)
	}
	// As EC2 keeps a client token's answer past its instances' end: the key's instance again,
	// terminated, and nothing launched.
	if err := p.Delete(context.Background(), first.ProviderID); err != nil {
		t.Fatal(err)
	}
	request.IdempotencyKey = "launch-1"
	again, err = p.Create(context.Background(), request)
	if err != nil || len(again) != 1 || again[0].ID != first.ID || again[0].State != cloudprovider.InstanceStateTerminated {
		t.Errorf("Create retried after its instance was deleted = %+v, %v; want %s terminated", again, err, first.ID)
	}
	if list, _ := p.List(context.Background()); len(list) != 1 {
		t.Errorf("%d instances, want the second key's only", len(list))
	}
}

func TestCreateLaunchesCountInstances(t *testing.T) {
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	request := cloudprovider.LaunchRequest{Count: 3, Candidates: candidates(t, p, "t3.medium"), IdempotencyKey: "group-1"}
	launched, err := p.Create(context.Background(), request)
	if err != nil || len(launched) != 3 {
		t.Fatalf("Create of 3 = %v, %v", launched, err)
	}
	again, err := p.Create(context.Background(), request)
	if err != nil || len(again) != 3 || again[2].ID != launched[2].ID {
		t.Errorf("retried Create = %v, %v; want the same 3 instances", again, err)
	}
	if list, _ := p.List(context.Background()); len(list) != 3 {
		t.Errorf("instances = %d, want 3", len(list))
	}
}

// TestCreateFillsUpToTheCapacityPerCall: with a cap per call, a Create asking for more
// launches the cap without an error, as a partially filled fleet; lifting it launches all.
func TestCreateFillsUpToTheCapacityPerCall(t *testing.T) {
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	p.SetCapacityPerCall(2)
	launched, err := p.Create(context.Background(), cloudprovider.LaunchRequest{Count: 3, Candidates: candidates(t, p, "t3.medium")})
	if err != nil || len(launched) != 2 {
		t.Fatalf("Create of 3 with 2 a call = %d instances, %v; want 2 and no error", len(launched), err)
	}
	p.SetCapacityPerCall(0)
	if launched, err := p.Create(context.Background(), cloudprovider.LaunchRequest{Count: 3, Candidates: candidates(t, p, "t3.medium")}); err != nil || len(launched) != 3 {
		t.Errorf("Create of 3 without a cap = %d instances, %v; want 3", len(launched), err)
	}
}

func TestStalePrices(t *testing.T) {
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	if err := p.StalePrices(); err != nil {
		t.Errorf("StalePrices = %v at first", err)
	}
	stale := &cloudprovider.StalePricesError{Err: errors.New("denied")}
	p.SetStalePrices(stale)
	if err := p.StalePrices(); !errors.Is(err, stale) {
		t.Errorf("StalePrices = %v, want %v", err, stale)
	}
}

func TestInstanceLifecycle(t *testing.T) {
	ctx := context.Background()
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{LaunchPending: true})
	request := cloudprovider.LaunchRequest{Candidates: candidates(t, p, "m5.large", "c5.large")}
	var ids []string
	for range 3 {
		launched, err := p.Create(ctx, request)
		if err != nil {
			t.Fatal(err)
		}
		instance := launched[0]
		if instance.State != cloudprovider.InstanceStatePending {
			t.Errorf("launched %s", instance.State)
		}
		ids = append(ids, instance.ProviderID)
	}
	if err := p.MarkRunning(ids[1]); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Get(ctx, ids[1]); err != nil || got.State != cloudprovider.InstanceStateRunning {
		t.Errorf("Get after MarkRunning = %+v, %v", got, err)
	}
	// What Get returns is a copy.
	got, _ := p.Get(ctx, ids[0])
	got.Labels["x"] = "y"
	if again, _ := p.Get(ctx, ids[0]); again.Labels["x"] != "" {
		t.Error("Get shares the instance's labels")
	}

	for range 2 { // deleting is idempotent
		if err := p.Delete(ctx, ids[0]); err != nil {
			t.Errorf("Delete = %v", err)
		}
	}
	var notFound *cloudprovider.NotFoundError
	if _, err := p.Get(ctx, ids[0]); !errors.As(err, &notFound) {
		t.Errorf("Get after Delete = %v, want *NotFoundError", err)
	}
	if err := p.MarkRunning(ids[0]); !errors.As(err, &notFound) {
		t.Errorf("MarkRunning after Delete = %v, want *NotFoundError", err)
	}
	instances, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, i := range instances {
		listed = append(listed, i.ProviderID)
	}
	if !slices.Equal(listed, ids[1:]) {
		t.Errorf("List = %v, want %v", listed, ids[1:])
	}
	if calls := p.DeleteCalls(); !slices.Equal(calls, []string{ids[0], ids[0]}) {
		t.Errorf("delete calls %v", calls)
	}

	denied := &cloudprovider.AccessDeniedError{Action: "ec2:RunInstances", Resource: "instance", Err: errors.New("denied")}
	p.SetError(denied)
	if _, err := p.Create(ctx, request); !errors.Is(err, denied) {
		t.Errorf("Create with an error set = %v", err)
	}
	if _, err := p.List(ctx); !errors.Is(err, denied) {
		t.Errorf("List with an error set = %v", err)
	}
	p.SetError(nil)
	if _, err := p.List(ctx); err != nil {
		t.Errorf("List after clearing the error = %v", err)
	}
}

func TestConcurrentLaunchesGetDistinctIDs(t *testing.T) {
	ctx := context.Background()
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	request := cloudprovider.LaunchRequest{Candidates: candidates(t, p, "c5.large")}
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Create(ctx, request); err != nil {
				errs <- err
			}
			if _, err := p.InstanceTypes(ctx, cloudprovider.Constraints{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	instances, _ := p.List(ctx)
	seen := map[string]bool{}
	for _, i := range instances {
		seen[i.ProviderID] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct instances, want %d", len(seen), n)
	}
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestProviderBlock(t *testing.T) {
	ctx := context.Background()
	p := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
	defaults := []struct {
		in   *runtime.RawExtension
		want string
	}{
		{nil, `{"instanceProfile":"KarpenterNodeInstanceProfile"}`},
		{raw(`{"tags":{"a":"b"}}`), `{"instanceProfile":"KarpenterNodeInstanceProfile","tags":{"a":"b"}}`},
		{raw(`{"instanceProfile":"mine"}`), `{"instanceProfile":"mine"}`},
		{raw(`[1]`), `[1]`}, // left for validation to reject
	}
	for _, tt := range defaults {
		if got := p.DefaultProvider(ctx, tt.in); got == nil || string(got.Raw) != tt.want {
			t.Errorf("DefaultProvider(%v) = %v, want %s", tt.in, got, tt.want)
		}
	}

	validations := []struct {
		in   *runtime.RawExtension
		want string
	}{
		{nil, ""},
		{raw(`{"instanceProfile":"mine","tags":{"a":"b"}}`), ""},
		{raw(`{"instanceProfle":"mine"}`), "must not set the field(s): instanceProfle"},
		{raw(`{"instanceProfile":3}`), "invalid value: 3: instanceProfile"},
		{raw(`{"tags":{"":"b"}}`), "invalid key name \"\": tags"},
		{raw(`[1]`), "must be an object"},
	}
	for _, tt := range validations {
		err := p.ValidateProvider(ctx, tt.in)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidateProvider(%v) = %v", tt.in, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("ValidateProvider(%v) = %v, want %q", tt.in, err, tt.want)
		}
	}
}
