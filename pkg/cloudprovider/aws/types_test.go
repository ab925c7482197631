package aws_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
)

// TestRegisteredTypesAreTheCRDEnums fails when the type strings the API server accepts (the
// enums generated into config/crd from the markers in pkg/apis/autoscaling/v1alpha1) and
// those AWS registers, for the webhook or for the controllers, disagree.
func TestRegisteredTypesAreTheCRDEnums(t *testing.T) {
	nodeGroupEnum := crdEnum(t, "autoscaling.karpenter.sh_scalablenodegroups.yaml", "type")
	queueEnum := crdEnum(t, "autoscaling.karpenter.sh_metricsproducers.yaml", "queue", "type")

	ids := cloudprovider.NewRegistry()
	aws.RegisterIDs(ids)
	isolateFromHost(t)
	p, err := aws.New(context.Background(), aws.Options{Region: "us-west-2"},
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	full := cloudprovider.NewRegistry()
	p.Register(full)

	for name, r := range map[string]*cloudprovider.Registry{"RegisterIDs": ids, "Provider.Register": full} {
		if got := r.NodeGroupTypes(); !slices.Equal(got, nodeGroupEnum) {
			t.Errorf("%s: node group types %v, the ScalableNodeGroup CRD's spec.type enum %v", name, got, nodeGroupEnum)
		}
		if got := r.QueueTypes(); !slices.Equal(got, queueEnum) {
			t.Errorf("%s: queue types %v, the MetricsProducer CRD's spec.queue.type enum %v", name, got, queueEnum)
		}
	}
	for _, typ := range nodeGroupEnum {
		if _, err := full.NodeGroupFor(typ, "x"); errors.As(err, new(*cloudprovider.UnsupportedTypeError)) {
			t.Errorf("Provider.Register builds no %s", typ)
		}
	}
	for _, typ := range queueEnum {
		if _, err := full.QueueFor(typ, "arn:aws:sqs:us-west-2:123456789012:q"); errors.As(err, new(*cloudprovider.UnsupportedTypeError)) {
			t.Errorf("Provider.Register builds no %s", typ)
		}
	}
}

func TestRegisterIDsValidatesWithTheParsers(t *testing.T) {
	r := cloudprovider.NewRegistry()
	aws.RegisterIDs(r)
	tests := []struct {
		validate func(typ, id string) error
		typ, id  string
		valid    bool
	}{
		{r.ValidateNodeGroupID, string(v1alpha1.AWSEC2AutoScalingGroup), "workers", true},
		{r.ValidateNodeGroupID, string(v1alpha1.AWSEC2AutoScalingGroup), "", false},
		{r.ValidateNodeGroupID, string(v1alpha1.AWSEKSNodeGroup), "sandbox/general", true},
		{r.ValidateNodeGroupID, string(v1alpha1.AWSEKSNodeGroup), "general", false},
		{r.ValidateQueueID, string(v1alpha1.AWSSQSQueueType), "arn:aws:sqs:us-west-2:123456789012:jobs", true},
		{r.ValidateQueueID, string(v1alpha1.AWSSQSQueueType), "jobs", false},
	}
	for _, tt := range tests {
		err := tt.validate(tt.typ, tt.id)
		if tt.valid && err != nil {
			t.Errorf("%s %q: %v", tt.typ, tt.id, err)
		}
		var invalid *cloudprovider.InvalidIDError
		if !tt.valid && (!errors.As(err, &invalid) || invalid.Type != tt.typ) {
			t.Errorf("%s %q: %v, want *InvalidIDError for the type", tt.typ, tt.id, err)
		}
	}
}

// crdEnum reads the enum of a field under spec in a generated CRD.
func crdEnum(t *testing.T, file string, path ...string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "crd", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%s: %d versions, want 1", file, len(crd.Spec.Versions))
	}
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, field := range path {
		schema = schema.Properties[field]
	}
	var enum []string
	for _, value := range schema.Enum {
		var s string
		if err := yaml.Unmarshal(value.Raw, &s); err != nil {
			t.Fatalf("%s: enum value %s, %v", file, value.Raw, err)
		}
		enum = append(enum, s)
	}
	if len(enum) == 0 {
		t.Fatalf("%s: no enum at spec.%v", file, path)
	}
	slices.Sort(enum)
	return enum
}
