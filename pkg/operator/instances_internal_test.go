package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
)

// The AWS InstanceProvider is built for the cluster the rest config reaches: its version from
// discovery, the operator's cluster name in the default selectors.
func TestAWSInstancesForTheCluster(t *testing.T) {
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"31+","gitVersion":"v1.31.2-eks-7f9249a"}`))
	}))
	t.Cleanup(apiServer.Close)
	// The developer's AWS configuration stays out: nothing here calls AWS.
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	provider, err := aws.New(context.Background(), aws.Options{Region: "us-west-2"})
	if err != nil {
		t.Fatal(err)
	}
	options := Options{ClusterName: "demo", AWSInstanceOptions: aws.InstancesOptions{DefaultInstanceProfile: "nodes"}}
	version, err := kubernetesVersion(&rest.Config{Host: apiServer.URL})
	if err != nil || version != "1.31" {
		t.Fatalf("kubernetesVersion = %q, %v; want 1.31", version, err)
	}
	instances, err := awsInstances(&rest.Config{Host: apiServer.URL}, provider, version, options)
	if err != nil {
		t.Fatal(err)
	}
	if raw := string(instances.DefaultProvider(context.Background(), nil).Raw); !strings.Contains(raw, `"kubernetes.io/cluster/demo":"*"`) || !strings.Contains(raw, `"instanceProfile":"nodes"`) {
		t.Errorf("defaulted block = %s, want the cluster's selectors and the default profile", raw)
	}

	apiServer.Close()
	if _, err := kubernetesVersion(&rest.Config{Host: apiServer.URL}); err == nil || !strings.Contains(err.Error(), "reading the cluster's Kubernetes version") {
		t.Errorf("without the API server = %v, want the version's error", err)
	}
}
