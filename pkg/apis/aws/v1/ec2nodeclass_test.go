package v1_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/test/admission"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/manifests"
)

const validEC2NodeClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{alias: al2023@latest}]
  role: role-1
  securityGroupSelectorTerms: [{tags: {"*": "*"}}]
  subnetSelectorTerms: [{tags: {"*": "*"}}]
`

// TestEC2NodeClassAdmission applies the EC2NodeClass CRD's schema and CEL rules on a real
// apiserver: what upstream's provider admits is admitted, with its defaults, and what it
// refuses is refused with a message saying what to write.
func TestEC2NodeClassAdmission(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
	admission.Run(t, env.Client, manifests.Decode(t, validEC2NodeClass), admission.ReadCases(t, "testdata/ec2nodeclass-cases.yaml"))

	t.Run("status and kubectl's columns", func(t *testing.T) {
		ctx := context.Background()
		if err := env.Client.Create(ctx, manifests.Decode(t, validEC2NodeClass)); err != nil {
			t.Fatal(err)
		}
		nodeClass := &v1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "default"}, nodeClass); err != nil {
			t.Fatal(err)
		}
		nodeClass.Status = v1.EC2NodeClassStatus{
			Subnets:        []v1.Subnet{{ID: "subnet-0a462d98193ff9fac", Zone: "us-west-2a", ZoneID: "usw2-az1"}},
			SecurityGroups: []v1.SecurityGroup{{ID: "sg-041513b454818610b", Name: "ClusterSharedNodeSecurityGroup"}},
			AMIs: []v1.AMI{{ID: "ami-01234567890123456", Name: "al2023-amd64", Requirements: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
			}}},
			CapacityReservations: []v1.CapacityReservation{{AvailabilityZone: "us-west-2a", ID: "cr-01234567890123456",
				InstanceMatchCriteria: "targeted", InstanceType: "g6.48xlarge", OwnerID: "012345678901"}},
			InstanceProfile: "sandbox_1234567890",
			Conditions:      []metav1.Condition{{Type: v1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}},
		}
		if err := env.Client.Status().Update(ctx, nodeClass); err != nil {
			t.Fatalf("writing the status, %v", err)
		}
		read := &v1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "default"}, read); err != nil {
			t.Fatal(err)
		}
		reservation := read.Status.CapacityReservations[0]
		if reservation.ReservationType != v1.CapacityReservationTypeDefault || reservation.State != v1.CapacityReservationStateActive {
			t.Errorf("a capacity reservation read back as %+v, want upstream's defaults: type default, state active", reservation)
		}
		if read.Status.Subnets[0].ZoneID != "usw2-az1" || read.Status.AMIs[0].Requirements[0].Values[0] != "amd64" || read.Status.InstanceProfile != "sandbox_1234567890" {
			t.Errorf("status read back as %+v", read.Status)
		}

		out, err := exec.Command("kubectl", "--kubeconfig", env.KubeconfigPath, "get", "ec2nc", "-o", "wide").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get ec2nc: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME READY AGE ROLE" {
			t.Fatalf("kubectl get ec2nc -o wide printed\n%s\nwant upstream's columns NAME READY AGE ROLE and one row", out)
		}
		if row := strings.Fields(lines[1]); row[0] != "default" || row[1] != "True" || row[3] != "role-1" {
			t.Errorf("kubectl get ec2nc -o wide printed the row %q, want default, True, its age and role-1", lines[1])
		}
	})
}
