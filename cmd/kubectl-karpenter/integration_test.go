package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpenterapis "karpenter.sh/karpenter/pkg/apis"
	karpenterv1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/plan"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
	"karpenter.sh/karpenter/test/awsemulator"
)

// vpc is cluster demo's VPC in the emulator: a subnet in each of three zones and the nodes'
// security group, and its nodes' instance profile.
const vpc = `
subnets:
- {id: subnet-a, availabilityZone: us-west-2a, tags: {kubernetes.io/cluster/demo: shared}}
- {id: subnet-b, availabilityZone: us-west-2b, tags: {kubernetes.io/cluster/demo: shared}}
- {id: subnet-c, availabilityZone: us-west-2c, tags: {kubernetes.io/cluster/demo: shared}}
securityGroups:
- {id: sg-nodes, name: demo-nodes, tags: {kubernetes.io/cluster/demo: owned}}
instanceProfiles: [KarpenterNodeInstanceProfile-demo]
`

// TestPlanIsWhatTheControllerLaunches: on a real control plane and the AWS emulator, the
// plan the command prints for a pending set names the instance types, and as many nodes, as
// the provisioning controller then launches for it.
func TestPlanIsWhatTheControllerLaunches(t *testing.T) {
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{karpenterapis.AddToScheme}, Scheduler: true})
	_, server := awstest.Serve(t, awsemulator.Options{}, vpc)
	// The command reads AWS as the controller does, through the SDK's configuration chain.
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE",
		"AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_SSM", "AWS_ENDPOINT_URL_PRICING", "AWS_ENDPOINT_URL_EKS"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", server.URL)
	t.Setenv("AWS_REGION", "us-west-2")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")

	ctx := context.Background()
	p := builders.Provisioner(builders.ProvisionerOptions{Name: "default", Requirements: []v1alpha5.NodeSelectorRequirement{
		{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{v1alpha5.CapacityTypeOnDemand}},
		{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64"}},
		// docs/plan.md's worked example; test/e2e's TestPlanNamesWhatTheControllerLaunches
		// allows every type, equal prices among them.
		{Key: corev1.LabelInstanceTypeStable, Operator: "In", Values: []string{"c5.large", "c5.xlarge", "c5.2xlarge", "m5.large", "m5.xlarge", "m5.2xlarge", "r5.large"}},
	}})
	p.Spec.Provider = &runtime.RawExtension{Raw: []byte(`{"instanceProfile": "KarpenterNodeInstanceProfile-demo"}`)}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	spread := map[string]string{"app": "spread"}
	apart := map[string]string{"app": "apart"}
	var pending []*corev1.Pod
	for i := range 3 {
		pending = append(pending, builders.Pod(builders.PodOptions{Name: fmt.Sprintf("spread-%d", i), Labels: spread, Requests: builders.Resources("cpu", "1", "memory", "1Gi"),
			TopologySpread: []corev1.TopologySpreadConstraint{builders.Spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, spread)}}))
	}
	for i := range 2 {
		pending = append(pending, builders.Pod(builders.PodOptions{Name: fmt.Sprintf("apart-%d", i), Labels: apart, Requests: builders.Resources("cpu", "500m"),
			PodAntiAffinity: []corev1.PodAffinityTerm{builders.AffinityTerm(corev1.LabelHostname, apart)}}))
	}
	pending = append(pending, builders.Pod(builders.PodOptions{Name: "large", Requests: builders.Resources("cpu", "6", "memory", "12Gi")}))
	for _, pod := range pending {
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	eventually.Holds(t, "kube-scheduler marking every pod Unschedulable", func() (bool, string, error) {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list); err != nil {
			return false, "", err
		}
		n := 0
		for i := range list.Items {
			if pods.IsProvisionable(&list.Items[i]) {
				n++
			}
		}
		return n == len(pending), fmt.Sprintf("%d of %d", n, len(pending)), nil
	})

	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"plan", "--kubeconfig", env.KubeconfigPath, "--cluster-name", "demo", "-o", "json"}, &stdout, &stderr); code != exitPlaced {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	var table bytes.Buffer
	if code := run(ctx, []string{"plan", "--kubeconfig", env.KubeconfigPath, "--cluster-name", "demo"}, &table, &stderr); code != exitPlaced {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	t.Logf("the plan:\n%s", table.String())
	var report plan.Report
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	var planned []string
	placed := 0
	for _, n := range report.NewNodes {
		planned = append(planned, n.InstanceType)
		placed += len(n.Pods)
	}
	slices.Sort(planned)
	if placed != len(pending) || len(planned) < 3 {
		t.Fatalf("plan %s places %d pods on %d nodes, want all %d on at least 3 (one per zone of the spread)", stdout.String(), placed, len(planned), len(pending))
	}

	instances := controllerInstances(t, env)
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		Enabled:           []string{provisioning.Name},
		CloudProvider:     cloudprovider.NewRegistry(),
		InstanceProvider:  instances,
		BatchIdleDuration: 200 * time.Millisecond,
		BatchMaxDuration:  2 * time.Second,
	}})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		stored := &v1alpha5.Provisioner{}
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(p), stored)
		t.Logf("provisioner status %+v", stored.Status)
		var podList corev1.PodList
		_ = env.Client.List(ctx, &podList)
		for _, pod := range podList.Items {
			t.Logf("pod %s on %q: %+v", pod.Name, pod.Spec.NodeName, pod.Status.Conditions)
		}
		var events corev1.EventList
		_ = env.Client.List(ctx, &events)
		for _, e := range events.Items {
			t.Logf("event on %s: %s %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	})
	var launched []string
	eventually.Holds(t, "the controller launching the plan's nodes", func() (bool, string, error) {
		var err error
		launched, err = launchedTypes(ctx, env.Client, p.Name)
		return len(launched) >= len(planned), fmt.Sprintf("launched %v", launched), err
	}, eventually.Timeout(2*time.Minute))
	if !slices.Equal(launched, planned) {
		t.Errorf("the controller launched %v, the plan said %v", launched, planned)
	}

	// The nodes launch (no kubelet joins them here): the pods wait for their room, so a plan
	// now launches nothing, and consolidation waits for the cluster to settle.
	stdout.Reset()
	if code := run(ctx, []string{"plan", "--kubeconfig", env.KubeconfigPath, "--cluster-name", "demo", "--consolidation", "-o", "json"}, &stdout, &stderr); code != exitPlaced {
		t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
	}
	var again plan.Report
	if err := json.Unmarshal(stdout.Bytes(), &again); err != nil {
		t.Fatal(err)
	}
	onLaunching := 0
	for _, n := range again.ExistingNodes {
		if n.Launching {
			onLaunching += len(n.Pods)
		}
	}
	if len(again.NewNodes) != 0 || onLaunching != len(pending) {
		t.Errorf("the plan once the nodes launch %s, want every pod on their room and no new node", stdout.String())
	}
	if again.Consolidation == nil || again.Consolidation.Unsettled == "" {
		t.Errorf("consolidation %+v while nodes launch, want it unsettled", again.Consolidation)
	}
}

// launchedTypes are the instance types, sorted, of the Provisioner's NodeClaims that got an
// instance: what the controller launched (no kubelet registers their Nodes here).
func launchedTypes(ctx context.Context, c client.Reader, provisioner string) ([]string, error) {
	var list karpenterv1.NodeClaimList
	if err := c.List(ctx, &list, client.MatchingLabels{v1alpha5.ProvisionerNameLabelKey: provisioner}); err != nil {
		return nil, err
	}
	var launched []string
	for _, nc := range list.Items {
		// The launcher records the instance in the status before it labels the NodeClaim with
		// its type: a NodeClaim counts once both are written.
		if it := nc.Labels[corev1.LabelInstanceTypeStable]; nc.Status.ProviderID != "" && it != "" {
			launched = append(launched, it)
		}
	}
	slices.Sort(launched)
	return launched, nil
}

// controllerInstances is the InstanceProvider the controller runs with: AWS through the same
// SDK chain, for cluster demo of the environment's API server.
func controllerInstances(t *testing.T, env *environment.Environment) *aws.Instances {
	t.Helper()
	provider, err := aws.New(context.Background(), aws.Options{})
	if err != nil {
		t.Fatal(err)
	}
	instances, err := provider.Instances(aws.InstancesOptions{ClusterName: "demo", ClusterEndpoint: env.Config.Host, ClusterCABundle: env.Config.CAData,
		KubernetesVersion: "1.34", ClusterServiceCIDR: "10.100.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	// Read at once, as the command reads them, so that the first pass does not plan on the
	// built-in prices while the background refresh is still under way.
	if err := instances.RefreshInstanceTypes(context.Background()); err != nil {
		t.Fatal(err)
	}
	instances.RefreshPrices(context.Background())
	if err := instances.StalePrices(); err != nil {
		t.Fatal(err)
	}
	return instances
}
