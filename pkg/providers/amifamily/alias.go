package amifamily

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/selector"
)

// Variants of an alias family's AMIs: the standard one, and those with the drivers of NVIDIA
// GPUs or AWS Neuron accelerators.
const (
	VariantStandard = ""
	VariantNVIDIA   = "nvidia"
	VariantNeuron   = "neuron"
)

// aliasParameters is, per family of an EC2NodeClass alias, the public SSM parameter naming the
// family's EKS-optimized AMI of a Kubernetes minor version, a version ("latest" or a release),
// an architecture and a variant; "" where AWS publishes none.
var aliasParameters = map[string]func(minor, version, arch, variant string) string{
	"al2023": func(minor, version, arch, variant string) string {
		if variant == VariantNeuron && arch != "amd64" {
			return ""
		}
		amiArch, flavor := amiArchitectures[arch], cmp.Or(variant, "standard")
		release := "recommended"
		if version != "latest" {
			release = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", amiArch, flavor, minor, version)
		}
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", minor, amiArch, flavor, release)
	},
	"al2": func(minor, version, arch, variant string) string {
		// One x86_64 GPU AMI holds the NVIDIA drivers; Neuron is not published for AL2 here.
		suffix, ok := map[[2]string]string{{"amd64", VariantStandard}: "", {"arm64", VariantStandard}: "-arm64", {"amd64", VariantNVIDIA}: "-gpu"}[[2]string{arch, variant}]
		if !ok {
			return ""
		}
		release := "recommended"
		if version != "latest" {
			release = fmt.Sprintf("amazon-eks%s-node-%s-%s", suffix, minor, version)
		}
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/%s/image_id", minor, suffix, release)
	},
	"bottlerocket": func(minor, version, arch, variant string) string {
		flavor := map[string]string{VariantStandard: "", VariantNVIDIA: "-nvidia"}
		suffix, ok := flavor[variant]
		if !ok {
			return ""
		}
		return fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", minor, suffix, amiArchitectures[arch], strings.TrimPrefix(version, "v"))
	},
	"windows2019": windowsParameter("2019"),
	"windows2022": windowsParameter("2022"),
	"windows2025": windowsParameter("2025"),
}

// windowsParameter is the parameter of Windows Server's EKS-optimized AMI of a year: x86_64
// standard only, latest only (the schema refuses other versions).
func windowsParameter(year string) func(minor, version, arch, variant string) string {
	return func(minor, _, arch, variant string) string {
		if arch != "amd64" || variant != VariantStandard {
			return ""
		}
		return fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, minor)
	}
}

// UnsupportedAliasError says an alias names a family Karpenter does not resolve.
type UnsupportedAliasError struct{ Alias string }

func (e *UnsupportedAliasError) Error() string {
	return fmt.Sprintf("alias %q names no family Karpenter resolves (al2023, al2, bottlerocket, windows2019, windows2022, windows2025)", e.Alias)
}

// Alias resolves an EC2NodeClass alias (family@version) to the family's AMI of each
// architecture and variant for the cluster's Kubernetes version, as AWS's public SSM parameters
// name them, read from EC2 for their names. What AWS publishes no parameter for is left out;
// nothing at all is no AMI, not an error.
func (p *Provider) Alias(ctx context.Context, alias string) ([]AMI, error) {
	if p.kubernetesVersion == "" {
		return nil, fmt.Errorf("resolving alias %q needs the cluster's Kubernetes version", alias)
	}
	family, version, _ := strings.Cut(alias, "@")
	parameter, ok := aliasParameters[strings.ToLower(family)]
	if !ok || version == "" {
		return nil, &UnsupportedAliasError{Alias: alias}
	}
	variants := map[string]string{}
	var terms []selector.Term
	for _, arch := range []string{"amd64", "arm64"} {
		for _, variant := range []string{VariantStandard, VariantNVIDIA, VariantNeuron} {
			name := parameter(p.kubernetesVersion, version, arch, variant)
			if name == "" {
				continue
			}
			id, err := p.Parameter(ctx, name)
			if err != nil {
				return nil, err
			}
			if id != "" {
				variants[id] = variant
				terms = append(terms, selector.Term{ID: id})
			}
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	amis, err := p.List(ctx, terms)
	if err != nil {
		return nil, err
	}
	out := make([]AMI, 0, len(amis))
	for _, ami := range amis {
		ami.Variant = variants[ami.ID]
		out = append(out, ami)
	}
	return out, nil
}

// Parameter reads the AMI id an SSM parameter holds, kept for an hour; "" when the parameter
// does not exist.
func (p *Provider) Parameter(ctx context.Context, name string) (string, error) {
	if cached, ok := p.cache.Get(name); ok {
		return cached.(string), nil
	}
	c, err := p.clients()
	if err != nil {
		return "", err
	}
	out, err := c.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: sdkaws.String(name)})
	if awsapi.ErrorCode(err) == "ParameterNotFound" {
		return "", nil
	}
	if err != nil {
		return "", awsapi.CallError(err, "ssm:GetParameter", "parameter "+name)
	}
	id := sdkaws.ToString(out.Parameter.Value)
	p.cache.Add(name, id, cacheTTL)
	return id, nil
}
