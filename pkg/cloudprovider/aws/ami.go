package aws

import (
	"context"
	"fmt"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// amiParameter is the public SSM parameter holding the recommended EKS-optimized Amazon Linux 2
// AMI of a Kubernetes minor version for an architecture.
func amiParameter(kubernetesVersion, arch string) string {
	variant := "amazon-linux-2"
	if arch == "arm64" {
		variant = "amazon-linux-2-arm64"
	}
	return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/recommended/image_id", kubernetesVersion, variant)
}

// resolveAMI returns the AMI id for nodes of the architecture.
func (i *Instances) resolveAMI(ctx context.Context, arch string) (string, error) {
	if i.opts.KubernetesVersion == "" {
		return "", fmt.Errorf("choosing an AMI needs the cluster's Kubernetes version")
	}
	name := amiParameter(i.opts.KubernetesVersion, arch)
	if cached, ok := i.amis.Get(name); ok {
		return cached.(string), nil
	}
	c, err := i.clients()
	if err != nil {
		return "", err
	}
	out, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: sdkaws.String(name)})
	if err != nil {
		return "", callError(err, "ssm:GetParameter", "parameter "+name, "ParameterNotFound")
	}
	if out.Parameter == nil || sdkaws.ToString(out.Parameter.Value) == "" {
		return "", fmt.Errorf("parameter %s has no value", name)
	}
	ami := sdkaws.ToString(out.Parameter.Value)
	i.amis.Add(name, ami, amiCacheTTL)
	return ami, nil
}
