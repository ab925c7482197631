// Package launchtemplate makes the launch templates Karpenter launches its nodes from: the AMI,
// the security groups, the instance profile and the user data that joins the node, one template
// per distinct set, named by a hash of it.
package launchtemplate

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/securitygroup"
	"karpenter.sh/karpenter/pkg/providers/selector"
)

// A template, once made, only goes away if someone deletes it, and a stale entry then fails one
// launch and is dropped: one is known for an hour. cacheSize bounds the templates known.
const (
	cacheTTL  = time.Hour
	cacheSize = 1000
)

// Options are the cluster the nodes join.
type Options struct {
	// ClusterName tags the templates and names the cluster in the user data.
	ClusterName string
	// ClusterEndpoint and ClusterCABundle (PEM) are how nodes reach the API server.
	ClusterEndpoint string
	ClusterCABundle []byte
	// ClusterServiceCIDR is the cluster's service CIDR; when empty it is read from EKS
	// (eks:DescribeCluster) once.
	ClusterServiceCIDR string
}

// Provider makes Karpenter's launch templates, resolving their AMIs and security groups
// through the providers of those.
type Provider struct {
	clients        awsapi.ClientsFunc
	opts           Options
	amis           *amifamily.Provider
	securityGroups *securitygroup.Provider
	// cache holds the names of the templates EC2 has.
	cache *cache.LRUExpireCache

	serviceCIDRMu sync.Mutex
	// discoveredServiceCIDR is EKS's answer, once it gave one.
	discoveredServiceCIDR string
}

// NewProvider builds the provider; it does no I/O.
func NewProvider(clients awsapi.ClientsFunc, opts Options, amis *amifamily.Provider, securityGroups *securitygroup.Provider, clk clock.PassiveClock) *Provider {
	return &Provider{clients: clients, opts: opts, amis: amis, securityGroups: securityGroups, cache: cache.NewLRUExpireCacheWithClock(cacheSize, clk)}
}

// Request is what the nodes of a template are.
type Request struct {
	// SecurityGroups select the nodes' security groups.
	SecurityGroups []selector.Term
	// InstanceProfile is the IAM instance profile the nodes run as.
	InstanceProfile string
	// Labels and Taints are registered with the node.
	Labels map[string]string
	Taints []corev1.Taint
	// InstanceType: its architecture picks the AMI and its pods capacity is the kubelet's
	// maxPods, so types that share both share a template.
	InstanceType *cloudprovider.InstanceType
	// NodeClass is the EC2NodeClass the nodes launch from, nil for a Provisioner: its status
	// holds their AMIs and security groups (SecurityGroups are not read), its spec their user
	// data, kubelet settings, volumes, metadata options and tags. InstanceProfile is its
	// status's.
	NodeClass *awsv1.EC2NodeClass
}

// NoSecurityGroupError is Resolve's error when the request's terms select no security group:
// the caller, which knows where the terms come from, says what the user must fix.
type NoSecurityGroupError struct {
	Terms []selector.Term
}

func (e *NoSecurityGroupError) Error() string {
	return "no security group matches " + selector.Key(e.Terms)
}

// Resolve returns the name of Karpenter's template for the request's nodes, making it when EC2
// has none of that name.
func (p *Provider) Resolve(ctx context.Context, request Request) (string, error) {
	if request.NodeClass != nil {
		return p.resolveClass(ctx, request)
	}
	ami, err := p.amis.Recommended(ctx, request.InstanceType.Labels[corev1.LabelArchStable])
	if err != nil {
		return "", err
	}
	groups, err := p.securityGroups.List(ctx, request.SecurityGroups)
	if err != nil {
		return "", err
	}
	if len(groups) == 0 {
		return "", &NoSecurityGroupError{Terms: request.SecurityGroups}
	}
	serviceCIDR, err := p.serviceCIDR(ctx)
	if err != nil {
		return "", err
	}
	data, err := amifamily.UserData(amifamily.NodeBootstrap{
		ClusterName:     p.opts.ClusterName,
		ClusterEndpoint: p.opts.ClusterEndpoint,
		ClusterCABundle: p.opts.ClusterCABundle,
		ServiceCIDR:     serviceCIDR,
		Labels:          request.Labels,
		Taints:          request.Taints,
		MaxPods:         request.InstanceType.Capacity.Pods().Value(),
	})
	if err != nil {
		return "", err
	}
	return p.ensure(ctx, inputs{
		AMI:             ami,
		SecurityGroups:  securitygroup.IDs(groups),
		InstanceProfile: request.InstanceProfile,
		UserData:        data,
	})
}
