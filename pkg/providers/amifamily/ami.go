// Package amifamily is what nodes boot: the AMI (the EKS-optimized Amazon Linux 2023 AMI EKS
// recommends, or AMIs selected by terms) and the user data that joins them to the cluster
// (nodeadm's NodeConfig).
package amifamily

import (
	"context"
	"fmt"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// EKS publishes new AMIs weekly at most: a resolved AMI is kept for an hour. cacheSize bounds
// the AMIs kept.
const (
	cacheTTL  = time.Hour
	cacheSize = 1000
)

// Provider resolves AMIs for a cluster's Kubernetes version.
type Provider struct {
	clients           awsapi.ClientsFunc
	kubernetesVersion string
	cache             *cache.LRUExpireCache
}

// NewProvider builds the provider for a cluster of kubernetesVersion (major.minor, e.g. "1.29");
// it does no I/O.
func NewProvider(clients awsapi.ClientsFunc, kubernetesVersion string, clk clock.PassiveClock) *Provider {
	return &Provider{clients: clients, kubernetesVersion: kubernetesVersion, cache: cache.NewLRUExpireCacheWithClock(cacheSize, clk)}
}

// amiArchitectures maps a node's GOARCH to the architecture in the AL2023 parameter path.
var amiArchitectures = map[string]string{"amd64": "x86_64", "arm64": "arm64"}

// amiParameter is the public SSM parameter holding the recommended EKS-optimized Amazon Linux
// 2023 AMI of a Kubernetes minor version for an architecture. AL2023 is the only family: EKS
// publishes it for every version it supports, while Amazon Linux 2 ends at 1.32, and one family
// keeps one user-data format (nodeadm) to build and test.
func amiParameter(kubernetesVersion, arch string) (string, error) {
	amiArch, ok := amiArchitectures[arch]
	if !ok {
		return "", fmt.Errorf("no EKS-optimized AMI for architecture %q", arch)
	}
	return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id", kubernetesVersion, amiArch), nil
}

// Recommended returns the AMI EKS recommends for nodes of the architecture: the EKS-optimized
// Amazon Linux 2023 AMI of the cluster's Kubernetes version, kept for an hour.
func (p *Provider) Recommended(ctx context.Context, arch string) (string, error) {
	if p.kubernetesVersion == "" {
		return "", fmt.Errorf("choosing an AMI needs the cluster's Kubernetes version")
	}
	name, err := amiParameter(p.kubernetesVersion, arch)
	if err != nil {
		return "", err
	}
	if cached, ok := p.cache.Get(name); ok {
		return cached.(string), nil
	}
	c, err := p.clients()
	if err != nil {
		return "", err
	}
	out, err := c.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: sdkaws.String(name)})
	if awsapi.ErrorCode(err) == "ParameterNotFound" {
		return "", &cloudprovider.ActionRequiredError{Reason: cloudprovider.ReasonInvalidAMI, Err: fmt.Errorf(
			"EKS publishes no EKS-optimized AMI for Kubernetes %s (parameter %s): run a version EKS supports, or name a launchTemplate with an AMI", p.kubernetesVersion, name)}
	}
	if err != nil {
		return "", awsapi.CallError(err, "ssm:GetParameter", "parameter "+name)
	}
	if out.Parameter == nil || sdkaws.ToString(out.Parameter.Value) == "" {
		return "", fmt.Errorf("parameter %s has no value", name)
	}
	ami := sdkaws.ToString(out.Parameter.Value)
	p.cache.Add(name, ami, cacheTTL)
	return ami, nil
}
