package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/test/sandbox"
)

// TestGettingStartedGuidesProvisionersLaunchInTheSandbox (issue 36, section 2): the sandbox's
// account is what the getting-started guides leave, so their Provisioners launch there as
// written: v0.5's names the instance profile KarpenterNodeInstanceProfile-<cluster> and finds
// the subnets and security group by kubernetes.io/cluster/<cluster>; one selecting them by v1's
// karpenter.sh/discovery tag finds them too. Each launches the node its pod needs, from a launch
// template naming the profile it asked for.
func TestGettingStartedGuidesProvisionersLaunchInTheSandbox(t *testing.T) {
	t.Parallel()
	for _, row := range []struct {
		name, provider, wantProfile string
	}{
		{"v05-guide", `{"instanceProfile": "KarpenterNodeInstanceProfile-sandbox"}`, "KarpenterNodeInstanceProfile-sandbox"},
		{"discovery-tags", `{"subnetSelector": {"karpenter.sh/discovery": "sandbox"}, "securityGroupSelector": {"karpenter.sh/discovery": "sandbox"}}`, sandbox.InstanceProfile},
	} {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			p := builders.Provisioner(builders.ProvisionerOptions{Name: row.name})
			p.Spec.Provider = &runtime.RawExtension{Raw: []byte(row.provider)}
			createProvisionerObject(t, p)
			pod := builders.Pod(builders.PodOptions{Name: row.name + "-pod", Namespace: sandbox.Namespace,
				NodeSelector: map[string]string{v1alpha5.ProvisionerNameLabelKey: row.name}, Requests: builders.Resources("cpu", "1")})
			createPods(t, pod)
			waitRunning(t, pod)

			instances := liveInstances(row.name)
			if len(instances) != 1 {
				t.Fatalf("%d instances for one pod", len(instances))
			}
			template, ok := stack.Emulator.LaunchTemplate(instances[0].LaunchTemplateName)
			if !ok || template.Data.IAMInstanceProfileName != row.wantProfile || len(template.Data.SecurityGroupIDs) != 1 {
				t.Errorf("the instance's launch template %q (found %t) = %+v, want the profile %s and the nodes' security group",
					instances[0].LaunchTemplateName, ok, template.Data, row.wantProfile)
			}
		})
	}
}
