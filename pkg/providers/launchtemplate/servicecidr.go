package launchtemplate

import (
	"context"
	"fmt"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// serviceCIDR is the cluster's service CIDR, which nodeadm needs to find the cluster DNS
// address: Options.ClusterServiceCIDR, else EKS's answer for the cluster, kept once read since
// EKS cannot change it.
func (p *Provider) serviceCIDR(ctx context.Context) (string, error) {
	if p.opts.ClusterServiceCIDR != "" {
		return p.opts.ClusterServiceCIDR, nil
	}
	p.serviceCIDRMu.Lock()
	defer p.serviceCIDRMu.Unlock()
	if p.discoveredServiceCIDR != "" {
		return p.discoveredServiceCIDR, nil
	}
	c, err := p.clients()
	if err != nil {
		return "", err
	}
	out, err := c.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: sdkaws.String(p.opts.ClusterName)})
	if err != nil {
		return "", fmt.Errorf("nodes need the cluster's service CIDR: set --cluster-service-cidr, or allow eks:DescribeCluster on cluster %s, %w",
			p.opts.ClusterName, awsapi.CallError(err, "eks:DescribeCluster", "cluster "+p.opts.ClusterName, "ResourceNotFoundException"))
	}
	cidr := clusterServiceCIDR(out.Cluster)
	if cidr == "" {
		return "", fmt.Errorf("nodes need the cluster's service CIDR: EKS reports none for cluster %s, set --cluster-service-cidr", p.opts.ClusterName)
	}
	p.discoveredServiceCIDR = cidr
	return cidr, nil
}

// clusterServiceCIDR is the service CIDR of the cluster's IP family, "" when EKS reports none.
func clusterServiceCIDR(cluster *ekstypes.Cluster) string {
	if cluster == nil || cluster.KubernetesNetworkConfig == nil {
		return ""
	}
	network := cluster.KubernetesNetworkConfig
	if network.IpFamily == ekstypes.IpFamilyIpv6 {
		return sdkaws.ToString(network.ServiceIpv6Cidr)
	}
	return sdkaws.ToString(network.ServiceIpv4Cidr)
}
