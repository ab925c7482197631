package aws_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"slices"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/test/awsemulator"
)

// nodeConfig is nodeadm's NodeConfig as the AL2023 AMI reads it, written out here rather than
// shared with the code under test so that a field misnamed there fails here.
type nodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Name                 string `json:"name"`
			APIServerEndpoint    string `json:"apiServerEndpoint"`
			CertificateAuthority string `json:"certificateAuthority"`
			CIDR                 string `json:"cidr"`
		} `json:"cluster"`
		Kubelet struct {
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// parseUserData decodes a launch template's user data (base64) as cloud-init and nodeadm do: a
// MIME multi-part document whose application/node.eks.aws part is a NodeConfig.
func parseUserData(t *testing.T, encoded string) nodeConfig {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("user data is not a MIME document, %v:\n%s", err, raw)
	}
	if msg.Header.Get("MIME-Version") != "1.0" {
		t.Errorf("MIME-Version = %q", msg.Header.Get("MIME-Version"))
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/mixed" {
		t.Fatalf("Content-Type = %q (%v), want multipart/mixed", msg.Header.Get("Content-Type"), err)
	}
	parts := multipart.NewReader(msg.Body, params["boundary"])
	var configs []nodeConfig
	for {
		part, err := parts.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the user data's parts, %v:\n%s", err, raw)
		}
		if part.Header.Get("Content-Type") != "application/node.eks.aws" {
			t.Errorf("unexpected part %q", part.Header.Get("Content-Type"))
			continue
		}
		body, err := io.ReadAll(part)
		if err != nil {
			t.Fatal(err)
		}
		var config nodeConfig
		if err := yaml.UnmarshalStrict(body, &config); err != nil {
			t.Fatalf("the NodeConfig part is not a NodeConfig, %v:\n%s", err, body)
		}
		configs = append(configs, config)
	}
	if len(configs) != 1 {
		t.Fatalf("%d NodeConfig parts, want 1:\n%s", len(configs), raw)
	}
	return configs[0]
}

// ssmParameter reads a parameter from the emulator with the SSM client.
func ssmParameter(t *testing.T, e *instancesEnv, name string) string {
	t.Helper()
	client := ssm.NewFromConfig(sdkaws.Config{
		Region:       "us-west-2",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: sdkaws.String(e.server.URL),
	})
	out, err := client.GetParameter(context.Background(), &ssm.GetParameterInput{Name: sdkaws.String(name)})
	if err != nil {
		t.Fatalf("reading %s, %v", name, err)
	}
	return sdkaws.ToString(out.Parameter.Value)
}

// templateOf is the launch template the fleet request's config for the instance type used.
func templateOf(t *testing.T, e *instancesEnv, instanceType string) awsemulator.LaunchTemplate {
	t.Helper()
	requests := e.emulator.FleetRequests()
	for _, config := range requests[len(requests)-1].LaunchTemplateConfigs {
		if !slices.ContainsFunc(config.Overrides, func(o awsemulator.FleetOverride) bool { return o.InstanceType == instanceType }) {
			continue
		}
		for _, lt := range e.emulator.LaunchTemplates() {
			if lt.LaunchTemplateName == config.LaunchTemplateName {
				return lt
			}
		}
	}
	t.Fatalf("the last fleet request has no template for %s", instanceType)
	return awsemulator.LaunchTemplate{}
}

func TestUserDataJoinsTheNodeWithNodeadm(t *testing.T) {
	e := newInstancesEnv(t, launchSeed, 0)
	e.refresh(t)
	types := e.instanceTypes(t, "")
	// Two amd64 types of different max pods and an arm64 one: a template each.
	e.create(t, request(e.candidates(t, "m5.large/us-west-2a/on-demand", "m5.4xlarge/us-west-2a/on-demand", "m6g.large/us-west-2a/on-demand")))

	for _, tt := range []struct {
		instanceType, parameter string
	}{
		{"m5.large", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"},
		{"m5.4xlarge", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"},
		{"m6g.large", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id"},
	} {
		lt := templateOf(t, e, tt.instanceType)
		if want := ssmParameter(t, e, tt.parameter); lt.Data.ImageID != want {
			t.Errorf("%s: AMI %s, want %s from %s", tt.instanceType, lt.Data.ImageID, want, tt.parameter)
		}
		config := parseUserData(t, lt.Data.UserData)
		if config.APIVersion != "node.eks.aws/v1alpha1" || config.Kind != "NodeConfig" {
			t.Errorf("%s: %s/%s, want node.eks.aws/v1alpha1 NodeConfig", tt.instanceType, config.APIVersion, config.Kind)
		}
		cluster := config.Spec.Cluster
		ca, err := base64.StdEncoding.DecodeString(cluster.CertificateAuthority)
		if err != nil || cluster.Name != "demo" || cluster.APIServerEndpoint != "https://demo.gr7.us-west-2.eks.amazonaws.com" ||
			string(ca) != "-----BEGIN CERTIFICATE-----\ndemo\n-----END CERTIFICATE-----\n" || cluster.CIDR != "10.100.0.0/16" {
			t.Errorf("%s: cluster = %+v (CA %q, %v)", tt.instanceType, cluster, ca, err)
		}
		// The node registers unregistered, until Karpenter has synced its NodeClaim onto it.
		wantFlags := []string{"--node-labels=karpenter.sh/provisioner-name=default,team=ml", "--register-with-taints=dedicated=ml:NoSchedule,karpenter.sh/unregistered:NoExecute"}
		if diff := cmp.Diff(wantFlags, config.Spec.Kubelet.Flags); diff != "" {
			t.Errorf("%s: kubelet flags (-want +got):\n%s", tt.instanceType, diff)
		}
		// The scheduler's pods capacity, so that allocatable is what it packed against.
		if got, want := config.Spec.Kubelet.Config["maxPods"], float64(types[tt.instanceType].Capacity.Pods().Value()); got != want {
			t.Errorf("%s: maxPods = %v, want %v", tt.instanceType, got, want)
		}
	}
	if n := len(e.emulator.LaunchTemplates()); n != 3 {
		t.Errorf("%d templates, want one per AMI and max pods: 3", n)
	}
}

func TestServiceCIDR(t *testing.T) {
	const clusterSeed = launchSeed + `
eksClusters: [{name: demo, serviceIpv4Cidr: 172.20.0.0/16}]
`
	cidrOf := func(t *testing.T, e *instancesEnv) string {
		t.Helper()
		return parseUserData(t, templateOf(t, e, "m5.large").Data.UserData).Spec.Cluster.CIDR
	}
	t.Run("from eks:DescribeCluster, read once", func(t *testing.T) {
		e := newInstancesEnv(t, clusterSeed, 0)
		e.refresh(t)
		e.create(t, request(e.candidates(t, "m5.large/us-west-2a/on-demand")))
		if got := cidrOf(t, e); got != "172.20.0.0/16" {
			t.Errorf("cidr = %q, want the cluster's 172.20.0.0/16", got)
		}
		// Kept: EKS may now deny the call without failing launches.
		if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "eks", Action: "DescribeCluster", Kind: awsemulator.FaultAccessDenied}); err != nil {
			t.Fatal(err)
		}
		relabelled := request(e.candidates(t, "m5.large/us-west-2a/on-demand"))
		relabelled.Labels = map[string]string{"team": "web"}
		e.create(t, relabelled)
	})
	t.Run("from the flag, without asking EKS", func(t *testing.T) {
		e := newInstancesEnv(t, clusterSeed, 0)
		e.instances = newInstances(t, e.server.URL, e.clock, 0, func(o *aws.InstancesOptions) { o.ClusterServiceCIDR = "10.96.0.0/12" })
		e.refresh(t)
		if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "eks", Kind: awsemulator.FaultAccessDenied}); err != nil {
			t.Fatal(err)
		}
		e.create(t, request(e.candidates(t, "m5.large/us-west-2a/on-demand")))
		if got := cidrOf(t, e); got != "10.96.0.0/12" {
			t.Errorf("cidr = %q, want the flag's 10.96.0.0/12", got)
		}
	})
	t.Run("neither says what to set", func(t *testing.T) {
		e := newInstancesEnv(t, clusterSeed, 0)
		e.refresh(t)
		if _, err := e.emulator.InjectFault(awsemulator.Fault{Service: "eks", Action: "DescribeCluster", Kind: awsemulator.FaultAccessDenied}); err != nil {
			t.Fatal(err)
		}
		_, err := e.instances.Create(context.Background(), request(e.candidates(t, "m5.large/us-west-2a/on-demand")))
		if err == nil || !strings.Contains(err.Error(), "set --cluster-service-cidr, or allow eks:DescribeCluster on cluster demo") || !strings.Contains(err.Error(), "AccessDenied") {
			t.Errorf("Create = %v, want an error naming the flag and the permission", err)
		}
		if n := len(e.emulator.FleetRequests()); n != 0 {
			t.Errorf("%d fleet requests without user data, want none", n)
		}
	})
	t.Run("an invalid flag is refused", func(t *testing.T) {
		p, err := aws.New(context.Background(), aws.Options{Region: "us-west-2"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Instances(aws.InstancesOptions{ClusterName: "demo", ClusterServiceCIDR: "10.96.0.0"}); err == nil || !strings.Contains(err.Error(), `"10.96.0.0" is not a CIDR`) {
			t.Errorf("Instances = %v, want the CIDR refused", err)
		}
	})
}
