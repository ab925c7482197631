package disruption_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/disruption"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/launcher"
	"karpenter.sh/karpenter/pkg/state"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// recordedMethod is a Provisioner method that records the passes it ran in and the snapshot it
// read, and acts in the passes listed.
type recordedMethod struct {
	name      string
	period    time.Duration
	actsIn    []int
	failsIn   []int
	pass      *int
	ran       []int
	snapshots []*state.Snapshot
}

func (m *recordedMethod) Name() string          { return m.name }
func (m *recordedMethod) Period() time.Duration { return m.period }
func (m *recordedMethod) Act(_ context.Context, snapshot func() (*state.Snapshot, error)) (bool, error) {
	m.ran = append(m.ran, *m.pass)
	s, err := snapshot()
	m.snapshots = append(m.snapshots, s)
	if slices.Contains(m.failsIn, *m.pass) {
		return false, errors.New("failed")
	}
	return slices.Contains(m.actsIn, *m.pass), err
}

// TestProvisionerMethodsRunOnThePass: Provisioners' expiry and consolidation run on the
// disruption pass, in order, each at most every its period, reading the pass's one snapshot; a
// method after one that acted waits for the next pass, and so do both after a NodePool method
// acted; one that fails keeps none from running.
func TestProvisionerMethodsRunOnThePass(t *testing.T) {
	t.Run("periods and order", func(t *testing.T) {
		pass := 0
		expiry := &recordedMethod{name: "expiry", period: 30 * time.Second, actsIn: []int{3}, failsIn: []int{6}, pass: &pass}
		consolidation := &recordedMethod{name: "consolidation", period: 10 * time.Second, pass: &pass}
		h := newHarness(t)
		c := kubefake.NewClientBuilder().Build()
		controller, err := disruption.New(disruption.Options{Client: c, Instances: h.cloud, Recorder: h.recorder, Clock: h.clock,
			Ledger: provisioning.NewLedger(), Launcher: launcher.New(c, nil, h.cloud, 0), Cluster: state.Live(c),
			Provisioners: []disruption.ProvisionerMethod{expiry, consolidation}})
		if err != nil {
			t.Fatal(err)
		}
		for pass = range 7 {
			if err := controller.Pass(t.Context()); (err != nil) != (pass == 6) {
				t.Fatalf("pass %d: %v", pass, err)
			}
			h.clock.Step(disruption.DefaultPeriod)
		}
		// Expiry at 0 s, 30 s (pass 3, when it acts) and 60 s (pass 6, when it fails: the pass
		// fails, consolidation runs all the same); consolidation at every pass but the one expiry
		// acted in.
		if want := []int{0, 3, 6}; !slices.Equal(expiry.ran, want) {
			t.Errorf("expiry ran in passes %v, want %v", expiry.ran, want)
		}
		if want := []int{0, 1, 2, 4, 5, 6}; !slices.Equal(consolidation.ran, want) {
			t.Errorf("consolidation ran in passes %v, want %v", consolidation.ran, want)
		}
		if expiry.snapshots[0] != consolidation.snapshots[0] {
			t.Error("the methods of one pass read two snapshots")
		}
	})
	t.Run("after a NodePool method acted", func(t *testing.T) {
		pass := 0
		consolidation := &recordedMethod{name: "consolidation", period: time.Second, pass: &pass}
		objects := underutilizedFleet("40%")
		c := kubefake.NewClientBuilder().WithObjects(objects...).Build()
		h := newHarness(t)
		cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
		controller, err := disruption.New(disruption.Options{Client: c, Instances: cloud, Recorder: h.recorder, Clock: h.clock,
			Ledger: provisioning.NewLedger(), Launcher: launcher.New(c, nil, cloud, 0), Cluster: state.Live(c),
			Provisioners: []disruption.ProvisionerMethod{consolidation}})
		if err != nil {
			t.Fatal(err)
		}
		launchedIn := -1
		for pass = range 4 {
			before := len(cloud.CreateCalls())
			if err := controller.Pass(t.Context()); err != nil {
				t.Fatal(err)
			}
			if len(cloud.CreateCalls()) > before {
				launchedIn = pass
			}
			h.clock.Step(disruption.DefaultValidationDelay + time.Second)
		}
		if launchedIn < 0 {
			t.Fatal("the NodePool's underutilized node was never replaced")
		}
		if slices.Contains(consolidation.ran, launchedIn) {
			t.Errorf("Provisioner consolidation ran in pass %d, after the NodePool's launched a replacement", launchedIn)
		}
		if len(consolidation.ran) == 0 {
			t.Error("Provisioner consolidation never ran")
		}
	})
}
