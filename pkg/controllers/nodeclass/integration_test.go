package nodeclass_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis"
	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/nodeclass"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/instanceprofile"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/events"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
	"karpenter.sh/karpenter/test/awsemulator"
)

// The account as the getting-started guide leaves it: subnets and the node security group
// tagged for discovery, and the node role.
const sandboxSeed = `
subnets:
- {id: subnet-0a1, availabilityZone: us-west-2a, tags: {karpenter.sh/discovery: sandbox}}
- {id: subnet-0b1, availabilityZone: us-west-2b, availabilityZoneId: usw2-az2, tags: {karpenter.sh/discovery: sandbox}}
- {id: subnet-0c1, availabilityZone: us-west-2c, tags: {team: other}}
securityGroups:
- {id: sg-0a1, name: sandbox-nodes, tags: {karpenter.sh/discovery: sandbox}}
iamRoles:
- {name: KarpenterNodeRole-sandbox}
- {name: KarpenterGPUNodeRole-sandbox}
`

// The getting-started guide's EC2NodeClass, as users apply it.
const gettingStartedClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-sandbox
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: sandbox
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: sandbox
  tags:
    team: platform
`

const clusterName = "sandbox"

// TestGettingStartedEC2NodeClassIsResolvedAndItsProfileRemovedWithIt on a real apiserver and
// the emulator: the guide's class resolves into status and is Ready, with the instance profile
// Karpenter created for its role; a class whose subnet selector matches nothing says so on
// SubnetsReady with a Warning Event, and one with a field not acted on yet on
// ValidationSucceeded; a new role replaces the profile's; a class that a NodeClaim names is kept until the NodeClaim
// is gone, and deleting it removes its instance profile.
func TestGettingStartedEC2NodeClassIsResolvedAndItsProfileRemovedWithIt(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	_, server := awstest.Serve(t, awsemulator.Options{}, sandboxSeed)
	clients := awstest.Clients(t, server.URL, clock.RealClock{})
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled: []string{nodeclass.Name}, CloudProvider: cloudprovider.NewRegistry(),
		AWSClients: clients, AWSRegion: awstest.Region, ClusterName: clusterName, KubernetesVersion: "1.34",
	}})
	aws, err := clients()
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{env: env, iam: aws.IAM}

	class := &awsv1.EC2NodeClass{}
	if err := yaml.UnmarshalStrict([]byte(gettingStartedClass), class); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), class); err != nil {
		t.Fatal(err)
	}
	profileName := instanceprofile.Name(clusterName, awstest.Region, class.Name)
	s.expectResolved(t, class, profileName)
	s.expectProfile(t, profileName)

	lost := class.DeepCopy()
	lost.ObjectMeta = metav1.ObjectMeta{Name: "lost"}
	lost.Status = awsv1.EC2NodeClassStatus{}
	lost.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "nothing"}}}
	if err := env.Client.Create(t.Context(), lost); err != nil {
		t.Fatal(err)
	}
	s.expectSubnetsNotFound(t, lost)

	placed := class.DeepCopy()
	placed.ObjectMeta = metav1.ObjectMeta{Name: "placed"}
	placed.Status = awsv1.EC2NodeClassStatus{}
	placed.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To("analytics")}
	if err := env.Client.Create(t.Context(), placed); err != nil {
		t.Fatal(err)
	}
	s.expectCondition(t, placed, awsv1.ConditionTypeValidationSucceeded, nodeclass.ReasonFieldsNotActedOn, "spec.placementGroupSelector")
	events.Wait(t, s.env.Client, placed.Name, nodeclass.ReasonFieldsNotActedOn, "spec.placementGroupSelector")

	stored := class.DeepCopy()
	class.Spec.Role = "KarpenterGPUNodeRole-sandbox"
	if err := env.Client.Patch(t.Context(), class, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the profile holds the class's new role", func() (bool, string, error) {
		profile, err := s.iam.GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(profileName)})
		if err != nil {
			return false, "", err
		}
		roles := profile.InstanceProfile.Roles
		return len(roles) == 1 && sdkaws.ToString(roles[0].RoleName) == class.Spec.Role, fmt.Sprintf("%+v", roles), nil
	})

	s.expectDeletionWaitsForNodeClaims(t, class, profileName)
}

type suite struct {
	env *environment.Environment
	iam *iam.Client
}

// expectResolved waits for the class to be Ready with the seed's subnets, security group, an
// AMI per architecture and variant (AL2023: amd64 and arm64, standard and NVIDIA, and amd64's
// Neuron) and the instance profile, and its finalizer.
func (s *suite) expectResolved(t *testing.T, class *awsv1.EC2NodeClass, profileName string) {
	t.Helper()
	eventually.Holds(t, "the class is resolved and Ready", func() (bool, string, error) {
		if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(class), class); err != nil {
			return false, "", err
		}
		st := class.Status
		return meta.IsStatusConditionTrue(st.Conditions, awsv1.ConditionTypeReady) &&
			slices.Equal(subnetIDs(st.Subnets), []string{"subnet-0a1", "subnet-0b1"}) && st.Subnets[1].ZoneID == "usw2-az2" &&
			len(st.SecurityGroups) == 1 && st.SecurityGroups[0] == awsv1.SecurityGroup{ID: "sg-0a1", Name: "sandbox-nodes"} &&
			len(st.AMIs) == 5 && st.InstanceProfile == profileName, fmt.Sprintf("%+v", st), nil
	})
	if !slices.Contains(class.Finalizers, awsv1.TerminationFinalizer) {
		t.Errorf("finalizers = %v, want %s", class.Finalizers, awsv1.TerminationFinalizer)
	}
	for _, ami := range class.Status.AMIs {
		if ami.ID == "" || ami.Name == "" || len(ami.Requirements) == 0 || ami.Requirements[0].Key != corev1.LabelArchStable {
			t.Errorf("AMI %+v, want an id, a name and its architecture", ami)
		}
	}
}

// expectProfile checks the instance profile holds the class's role and the cluster's, class's
// and user's tags.
func (s *suite) expectProfile(t *testing.T, profileName string) {
	t.Helper()
	profile, err := s.iam.GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(profileName)})
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{}
	for _, tag := range profile.InstanceProfile.Tags {
		tags[sdkaws.ToString(tag.Key)] = sdkaws.ToString(tag.Value)
	}
	if len(profile.InstanceProfile.Roles) != 1 || sdkaws.ToString(profile.InstanceProfile.Roles[0].RoleName) != "KarpenterNodeRole-sandbox" ||
		tags["kubernetes.io/cluster/sandbox"] != "owned" || tags[awsv1.LabelNodeClass] != "default" || tags["team"] != "platform" {
		t.Errorf("instance profile %s holds %v with tags %v, want the role and the cluster's, class's and user's tags", profileName, profile.InstanceProfile.Roles, tags)
	}
}

// expectSubnetsNotFound waits for SubnetsReady False naming the selector, Ready False, and a
// Warning Event.
func (s *suite) expectSubnetsNotFound(t *testing.T, class *awsv1.EC2NodeClass) {
	t.Helper()
	s.expectCondition(t, class, awsv1.ConditionTypeSubnetsReady, nodeclass.ReasonSubnetsNotFound, `"karpenter.sh/discovery"="nothing"`)
	events.Wait(t, s.env.Client, class.Name, nodeclass.ReasonSubnetsNotFound, "")
}

// expectCondition waits for the class's condition to be False with the reason, its message
// holding message, and Ready False.
func (s *suite) expectCondition(t *testing.T, class *awsv1.EC2NodeClass, conditionType, reason, message string) {
	t.Helper()
	eventually.Holds(t, conditionType+" False "+reason, func() (bool, string, error) {
		if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(class), class); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(class.Status.Conditions, conditionType)
		ready := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionTypeReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && strings.Contains(c.Message, message) &&
			ready != nil && ready.Status == metav1.ConditionFalse, fmt.Sprintf("%+v", class.Status.Conditions), nil
	})
}

// expectDeletionWaitsForNodeClaims deletes the class while a NodeClaim names it: the class and
// its profile stay, with an Event, until the NodeClaim is gone; then both go.
func (s *suite) expectDeletionWaitsForNodeClaims(t *testing.T, class *awsv1.EC2NodeClass, profileName string) {
	t.Helper()
	ctx := t.Context()
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"},
		Spec: v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: class.Name},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}
	if err := s.env.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := s.env.Client.Delete(ctx, class); err != nil {
		t.Fatal(err)
	}
	events.Wait(t, s.env.Client, class.Name, "WaitingOnNodeClaimTermination", claim.Name)
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
		t.Fatalf("the class named by a NodeClaim is gone: %v", err)
	}
	if _, err := s.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(profileName)}); err != nil {
		t.Errorf("the instance profile of a class still in use: %v", err)
	}
	if err := s.env.Client.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	eventually.Holds(t, "the class is gone once its NodeClaim is", func() (bool, string, error) {
		err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(class), &awsv1.EC2NodeClass{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), client.IgnoreNotFound(err)
	})
	_, err := s.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: sdkaws.String(profileName)})
	if awsapi.ErrorCode(err) != "NoSuchEntity" {
		t.Errorf("GetInstanceProfile after the class was deleted = %v, want NoSuchEntity", err)
	}
}

func subnetIDs(subnets []awsv1.Subnet) []string {
	var ids []string
	for _, s := range subnets {
		ids = append(ids, s.ID)
	}
	return ids
}
