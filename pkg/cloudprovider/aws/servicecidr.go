package aws

import (
	"context"
	"fmt"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// serviceCIDR is the cluster's service CIDR, which nodeadm needs to find the cluster DNS
// address: InstancesOptions.ClusterServiceCIDR, else EKS's answer for the cluster, kept once
// read since EKS cannot change it.
func (i *Instances) serviceCIDR(ctx context.Context) (string, error) {
	if i.opts.ClusterServiceCIDR != "" {
		return i.opts.ClusterServiceCIDR, nil
	}
	i.serviceCIDRMu.Lock()
	defer i.serviceCIDRMu.Unlock()
	if i.discoveredServiceCIDR != "" {
		return i.discoveredServiceCIDR, nil
	}
	c, err := i.clients()
	if err != nil {
		return "", err
	}
	out, err := c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: sdkaws.String(i.opts.ClusterName)})
	if err != nil {
		return "", fmt.Errorf("nodes need the cluster's service CIDR: set --cluster-service-cidr, or allow eks:DescribeCluster on cluster %s, %w",
			i.opts.ClusterName, callError(err, "eks:DescribeCluster", "cluster "+i.opts.ClusterName, "ResourceNotFoundException"))
	}
	cidr := clusterServiceCIDR(out.Cluster)
	if cidr == "" {
		return "", fmt.Errorf("nodes need the cluster's service CIDR: EKS reports none for cluster %s, set --cluster-service-cidr", i.opts.ClusterName)
	}
	i.discoveredServiceCIDR = cidr
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
