package cloudprovider_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
)

func TestRegistryDispatchesOnType(t *testing.T) {
	r := cloudprovider.NewRegistry()
	group := fake.NewNodeGroup(2, 0, 5)
	queue := fake.NewQueue(7, time.Minute)
	var gotGroupID, gotQueueID string
	r.RegisterNodeGroup(string(v1alpha1.AWSEC2AutoScalingGroup), func(id string) (cloudprovider.NodeGroup, error) {
		gotGroupID = id
		return group, nil
	})
	r.RegisterQueue(string(v1alpha1.AWSSQSQueueType), func(id string) (cloudprovider.Queue, error) {
		gotQueueID = id
		return queue, nil
	})

	g, err := r.NodeGroupFor(string(v1alpha1.AWSEC2AutoScalingGroup), "my-asg")
	if err != nil || g != group || gotGroupID != "my-asg" {
		t.Fatalf("NodeGroupFor = %v, %v (id %q)", g, err, gotGroupID)
	}
	q, err := r.QueueFor(string(v1alpha1.AWSSQSQueueType), "my-queue")
	if err != nil || q != queue || gotQueueID != "my-queue" {
		t.Fatalf("QueueFor = %v, %v (id %q)", q, err, gotQueueID)
	}
}

func TestRegistryRejectsUnknownTypes(t *testing.T) {
	r := cloudprovider.NewRegistry()
	r.RegisterNodeGroup(string(v1alpha1.AWSEKSNodeGroup), func(string) (cloudprovider.NodeGroup, error) { return nil, nil })
	r.RegisterNodeGroup(string(v1alpha1.AWSEC2AutoScalingGroup), func(string) (cloudprovider.NodeGroup, error) { return nil, nil })

	_, err := r.NodeGroupFor("GCPManagedInstanceGroup", "x")
	var unsupported *cloudprovider.UnsupportedTypeError
	if !errors.As(err, &unsupported) {
		t.Fatalf("NodeGroupFor(unknown) error = %v, want *UnsupportedTypeError", err)
	}
	want := []string{string(v1alpha1.AWSEC2AutoScalingGroup), string(v1alpha1.AWSEKSNodeGroup)}
	if len(unsupported.Supported) != 2 || unsupported.Supported[0] != want[0] || unsupported.Supported[1] != want[1] {
		t.Errorf("Supported = %v, want %v", unsupported.Supported, want)
	}
	if _, err := r.QueueFor(string(v1alpha1.AWSSQSQueueType), "q"); !errors.As(err, &unsupported) {
		t.Errorf("QueueFor(unregistered) error = %v, want *UnsupportedTypeError", err)
	}
}

func TestFakeNodeGroup(t *testing.T) {
	ctx := context.Background()
	f := fake.NewFactory()
	g := f.AddNodeGroup(string(v1alpha1.AWSEKSNodeGroup), "c/ng", fake.NewNodeGroup(1, 1, 3))

	tests := []struct {
		name    string
		set     int32
		wantErr any
		desired int32
	}{
		{name: "within bounds", set: 3, desired: 3},
		{name: "above max", set: 4, wantErr: new(*cloudprovider.OutOfBoundsError), desired: 3},
		{name: "below min", set: 0, wantErr: new(*cloudprovider.OutOfBoundsError), desired: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.SetDesiredReplicas(ctx, tt.set)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("SetDesiredReplicas(%d) = %v", tt.set, err)
			}
			if tt.wantErr != nil && !errors.As(err, tt.wantErr) {
				t.Fatalf("SetDesiredReplicas(%d) = %v, want %T", tt.set, err, tt.wantErr)
			}
			st, _ := g.Status(ctx)
			if st.DesiredReplicas != tt.desired {
				t.Errorf("desired = %d, want %d", st.DesiredReplicas, tt.desired)
			}
		})
	}

	st, _ := g.Status(ctx)
	if st.Stable || st.Replicas != 1 {
		t.Errorf("before converging: %+v, want not stable with 1 replica", st)
	}
	g.Converge()
	if st, _ = g.Status(ctx); !st.Stable || st.Replicas != 3 {
		t.Errorf("after converging: %+v, want stable with 3 replicas", st)
	}
	g.SetBusy("update abc in progress")
	var busy *cloudprovider.BusyError
	if err := g.SetDesiredReplicas(ctx, 2); !errors.As(err, &busy) {
		t.Errorf("SetDesiredReplicas while busy = %v, want *BusyError", err)
	}
	if _, err := f.NodeGroupFor(string(v1alpha1.AWSEKSNodeGroup), "other"); err == nil {
		t.Error("NodeGroupFor(unknown id) succeeded")
	}
}

func TestRegistryValidatesIDsPerType(t *testing.T) {
	r := cloudprovider.NewRegistry()
	reject := func(typ string) cloudprovider.IDValidator {
		return func(id string) error {
			if id == "bad" {
				return &cloudprovider.InvalidIDError{Type: typ, ID: id, Reason: "bad"}
			}
			return nil
		}
	}
	nodeGroupType, queueType := string(v1alpha1.AWSEKSNodeGroup), string(v1alpha1.AWSSQSQueueType)
	r.RegisterNodeGroupID(nodeGroupType, reject(nodeGroupType))
	r.RegisterQueueID(queueType, reject(queueType))

	tests := []struct {
		name     string
		validate func(typ, id string) error
		typ, id  string
		wantErr  any
	}{
		{"node group ok", r.ValidateNodeGroupID, nodeGroupType, "good", nil},
		{"node group invalid", r.ValidateNodeGroupID, nodeGroupType, "bad", new(*cloudprovider.InvalidIDError)},
		{"node group type unknown", r.ValidateNodeGroupID, queueType, "good", new(*cloudprovider.UnsupportedTypeError)},
		{"queue ok", r.ValidateQueueID, queueType, "good", nil},
		{"queue invalid", r.ValidateQueueID, queueType, "bad", new(*cloudprovider.InvalidIDError)},
		{"queue type unknown", r.ValidateQueueID, nodeGroupType, "good", new(*cloudprovider.UnsupportedTypeError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.validate(tt.typ, tt.id)
			if tt.wantErr == nil && err != nil {
				t.Errorf("= %v", err)
			}
			if tt.wantErr != nil && !errors.As(err, tt.wantErr) {
				t.Errorf("= %v, want %T", err, tt.wantErr)
			}
		})
	}
	// Types registered for ids only are listed, though NodeGroupFor cannot build them.
	if got := r.NodeGroupTypes(); len(got) != 1 || got[0] != nodeGroupType {
		t.Errorf("NodeGroupTypes = %v", got)
	}
	r.RegisterQueue(queueType, func(string) (cloudprovider.Queue, error) { return nil, nil })
	if got := r.QueueTypes(); len(got) != 1 || got[0] != queueType {
		t.Errorf("QueueTypes = %v, want the type once", got)
	}
	if _, err := r.NodeGroupFor(nodeGroupType, "good"); !errors.As(err, new(*cloudprovider.UnsupportedTypeError)) {
		t.Errorf("NodeGroupFor(validated only) = %v, want *UnsupportedTypeError", err)
	}
}

func TestRegistryDelegatesProviderBlocks(t *testing.T) {
	ctx := context.Background()
	r := cloudprovider.NewRegistry()
	unknown := &runtime.RawExtension{Raw: []byte(`{"unknown":1}`)}
	// Without a cloud for Provisioners, any block goes, as the schemaless field accepts it.
	if got := r.DefaultProvider(ctx, unknown); got != unknown {
		t.Errorf("DefaultProvider = %v, want the block unchanged", got)
	}
	if err := r.ValidateProvider(ctx, unknown); err != nil {
		t.Errorf("ValidateProvider = %v", err)
	}
	r.RegisterProvider(fake.NewInstanceProvider(fake.InstanceProviderOptions{}))
	if got := r.DefaultProvider(ctx, nil); got == nil || string(got.Raw) != `{"instanceProfile":"`+fake.DefaultInstanceProfile+`"}` {
		t.Errorf("DefaultProvider(nil) = %v", got)
	}
	if err := r.ValidateProvider(ctx, unknown); err == nil || err.Error() != "must not set the field(s): unknown" {
		t.Errorf("ValidateProvider = %v", err)
	}
}
