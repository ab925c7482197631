package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"k8s.io/utils/clock"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/amifamily"
	"karpenter.sh/karpenter/pkg/providers/instance"
	"karpenter.sh/karpenter/pkg/providers/instancetype"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
	"karpenter.sh/karpenter/pkg/providers/pricing"
	"karpenter.sh/karpenter/pkg/providers/securitygroup"
	"karpenter.sh/karpenter/pkg/providers/subnet"
)

// Defaults of InstancesOptions.
const (
	DefaultInstanceTypesRefresh    = 5 * time.Minute
	DefaultPricingRefresh          = 12 * time.Hour
	DefaultUnavailableOfferingsTTL = 3 * time.Minute
	DefaultVMMemoryOverhead        = instancetype.DefaultVMMemoryOverhead
)

// InstancesOptions configure Instances.
type InstancesOptions struct {
	// ClusterName tags the instances and defaults the selectors. Required.
	ClusterName string
	// ClusterEndpoint and ClusterCABundle (PEM) are how nodes reach the API server.
	ClusterEndpoint string
	ClusterCABundle []byte
	// KubernetesVersion is the cluster's major.minor, e.g. "1.29": it selects the EKS AMI.
	KubernetesVersion string
	// ClusterServiceCIDR is the cluster's service CIDR, which nodes need to join; when empty
	// it is read from EKS (eks:DescribeCluster).
	ClusterServiceCIDR string
	// DefaultInstanceProfile is the instance profile of provider blocks that name none.
	DefaultInstanceProfile string
	// InstanceTypesRefresh is how often instance types and offerings are re-read;
	// DefaultInstanceTypesRefresh when zero.
	InstanceTypesRefresh time.Duration
	// PricingRefresh is how often prices are re-read; DefaultPricingRefresh when zero.
	PricingRefresh time.Duration
	// UnavailableOfferingsTTL is how long an offering the cloud had no capacity for is not
	// offered; DefaultUnavailableOfferingsTTL when zero.
	UnavailableOfferingsTTL time.Duration
	// IncludeBareMetal offers bare metal instance types too.
	IncludeBareMetal bool
	// VMMemoryOverhead is the share of an instance's memory its node does not report;
	// DefaultVMMemoryOverhead when zero.
	VMMemoryOverhead float64
	// ReservedENIs are network interfaces no pod gets an address from (VPC CNI custom
	// networking): they count neither in max-pods nor in the kube-reserved memory.
	ReservedENIs int
	// IsolatedVPC: the cluster reaches no AWS API without a VPC endpoint, so the Pricing API is
	// never called and on-demand prices are the built-in catalogue's.
	IsolatedVPC bool
	// Clock times the refreshes and the caches; the real clock when nil.
	Clock clock.WithTicker
}

// Instances launches EC2 instances for Provisioners and NodePools in the provider's default
// region: it is the cloudprovider.InstanceProvider on AWS, an adapter that resolves a
// Provisioner's provider block, or reads a NodePool's EC2NodeClass status, through the
// per-concern providers (pkg/providers) and answers in the cloudprovider's terms.
// Start must run (it is a manager Runnable) for InstanceTypes to have a catalogue: the
// catalogue and the prices are read in the background, never while scheduling.
type Instances struct {
	ProviderBlockValidator
	opts  InstancesOptions
	clock clock.WithTicker

	prices        *pricing.Provider
	unavailable   *instancetype.UnavailableOfferings
	instanceTypes *instancetype.Provider
	subnets       *subnet.Provider
	instances     *instance.Provider
}

var _ cloudprovider.InstanceProvider = (*Instances)(nil)

// Instances builds the InstanceProvider. It does no I/O: Start reads the catalogue.
func (p *Provider) Instances(opts InstancesOptions) (*Instances, error) {
	if opts.ClusterName == "" {
		return nil, errors.New("launching instances needs the cluster's name")
	}
	if opts.InstanceTypesRefresh == 0 {
		opts.InstanceTypesRefresh = DefaultInstanceTypesRefresh
	}
	if opts.PricingRefresh == 0 {
		opts.PricingRefresh = DefaultPricingRefresh
	}
	if opts.UnavailableOfferingsTTL == 0 {
		opts.UnavailableOfferingsTTL = DefaultUnavailableOfferingsTTL
	}
	if opts.VMMemoryOverhead == 0 {
		opts.VMMemoryOverhead = DefaultVMMemoryOverhead
	}
	if opts.VMMemoryOverhead < 0 || opts.VMMemoryOverhead >= 1 || opts.ReservedENIs < 0 {
		return nil, fmt.Errorf("the VM memory overhead must be within [0, 1) and the reserved ENIs not negative, not %g and %d", opts.VMMemoryOverhead, opts.ReservedENIs)
	}
	if opts.ClusterServiceCIDR != "" {
		if _, err := netip.ParsePrefix(opts.ClusterServiceCIDR); err != nil {
			return nil, fmt.Errorf("the cluster's service CIDR %q is not a CIDR, %w", opts.ClusterServiceCIDR, err)
		}
	}
	for name, d := range map[string]time.Duration{"instance types refresh": opts.InstanceTypesRefresh, "pricing refresh": opts.PricingRefresh, "unavailable offerings TTL": opts.UnavailableOfferingsTTL} {
		if d < 0 {
			return nil, fmt.Errorf("the %s must be positive, not %s", name, d)
		}
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	clients := p.DefaultRegionClients
	prices := pricing.NewProvider(clients, p.Region(), opts.IsolatedVPC, clk)
	unavailable := instancetype.NewUnavailableOfferings(clk, opts.UnavailableOfferingsTTL)
	launchTemplates := launchtemplate.NewProvider(clients, launchtemplate.Options{
		ClusterName:        opts.ClusterName,
		ClusterEndpoint:    opts.ClusterEndpoint,
		ClusterCABundle:    opts.ClusterCABundle,
		ClusterServiceCIDR: opts.ClusterServiceCIDR,
	}, amifamily.NewProvider(clients, opts.KubernetesVersion, clk), securitygroup.NewProvider(clients, clk), clk)
	return &Instances{
		ProviderBlockValidator: ProviderBlockValidator{Defaults: ProviderDefaults{ClusterName: opts.ClusterName, InstanceProfile: opts.DefaultInstanceProfile}},
		opts:                   opts,
		clock:                  clk,
		prices:                 prices,
		unavailable:            unavailable,
		instanceTypes: instancetype.NewProvider(clients, instancetype.Options{
			IncludeBareMetal: opts.IncludeBareMetal,
			VMMemoryOverhead: opts.VMMemoryOverhead,
			ReservedENIs:     opts.ReservedENIs,
		}, prices, unavailable),
		subnets:   subnet.NewProvider(clients, clk),
		instances: instance.NewProvider(clients, opts.ClusterName, clk, unavailable, launchTemplates),
	}, nil
}

// Start reads the prices and then the catalogue, then refreshes each on its period until ctx is
// done: no instance type is offered before the first price read has ended, at prices it would
// then change. A failed read is logged by the caller's next InstanceTypes error or the prices'
// staleness, and retried on the next period.
func (i *Instances) Start(ctx context.Context) error {
	i.RefreshPrices(ctx)
	// A failure is kept (InstanceTypes reports it) and retried on the next tick.
	_ = i.RefreshInstanceTypes(ctx)
	types := i.clock.NewTicker(i.opts.InstanceTypesRefresh)
	defer types.Stop()
	prices := i.clock.NewTicker(i.opts.PricingRefresh)
	defer prices.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-types.C():
			_ = i.RefreshInstanceTypes(ctx)
		case <-prices.C():
			i.RefreshPrices(ctx)
		}
	}
}

// RefreshPrices re-reads the prices; Start calls it on its period.
func (i *Instances) RefreshPrices(ctx context.Context) {
	i.prices.Refresh(ctx)
}

// StalePrices is nil while the last read of both price APIs succeeded.
func (i *Instances) StalePrices() error {
	return i.prices.Stale()
}

// NeedLeaderElection is false: every replica needs the catalogue to be ready to lead.
func (i *Instances) NeedLeaderElection() bool { return false }

// RefreshInstanceTypes re-reads the region's instance types and the zones each is offered in.
// Start calls it on its period; the catalogue is replaced only when both reads succeed.
func (i *Instances) RefreshInstanceTypes(ctx context.Context) error {
	return i.instanceTypes.Refresh(ctx)
}

// InstanceTypes answers from the catalogue and prices read in the background; only the
// Provisioner's subnets may be read (they are cached), to know its zones. A NodePool's are
// offered in the zones of its EC2NodeClass's subnets, those some AMI of the class boots.
func (i *Instances) InstanceTypes(ctx context.Context, constraints cloudprovider.Constraints) ([]*cloudprovider.InstanceType, error) {
	class, err := ec2NodeClass(constraints.NodeClass)
	if err != nil {
		return nil, err
	}
	if class != nil {
		return i.classInstanceTypes(class, constraints)
	}
	block, err := i.block(ctx, constraints.Provider)
	if err != nil {
		return nil, err
	}
	subnets, err := i.subnetsOf(ctx, block)
	if err != nil {
		return nil, err
	}
	return i.instanceTypes.List(subnet.Zones(subnets), constraints.Requirements, nil)
}

// classInstanceTypes are offered in the zones of the class's status.subnets, for the types some
// AMI of its status boots, sized as its volumes, instance store policy and kubelet settings
// make the nodes report; its selectors are not read.
func (i *Instances) classInstanceTypes(class *awsv1.EC2NodeClass, constraints cloudprovider.Constraints) ([]*cloudprovider.InstanceType, error) {
	subnets, err := classSubnets(class)
	if err != nil {
		return nil, err
	}
	storage := &instancetype.EphemeralStorage{
		RootVolumeSize:     launchtemplate.EphemeralVolumeSize(class),
		InstanceStoreRAID0: class.Spec.InstanceStorePolicy.RAID0(),
	}
	instanceTypes, err := i.instanceTypes.List(subnet.Zones(subnets), constraints.Requirements, storage)
	if err != nil {
		return nil, err
	}
	booted, err := bootable(class, instanceTypes)
	if err != nil || class.Spec.Kubelet == nil {
		return booted, err
	}
	k := class.Spec.Kubelet
	return instancetype.WithKubelet(booted, instancetype.KubeletSettings{MaxPods: k.MaxPods, PodsPerCore: k.PodsPerCore,
		KubeReserved: k.KubeReserved, SystemReserved: k.SystemReserved, EvictionHard: k.EvictionHard}), nil
}

// MarkUnavailable stops offering key for the unavailable-offerings TTL, as after a capacity
// error: interruption handling calls it when EC2 reclaims a spot instance. Marking again
// restarts the TTL.
func (i *Instances) MarkUnavailable(_ context.Context, key cloudprovider.OfferingKey, reason string) {
	i.unavailable.Mark(key, reason)
}

// Create launches the request's instances from its Provisioner's provider block: into its
// subnets, from its launch template or Karpenter's (instance.Provider.Create says how); or from
// its NodePool's EC2NodeClass as its status resolved it.
func (i *Instances) Create(ctx context.Context, request cloudprovider.LaunchRequest) ([]*cloudprovider.Instance, error) {
	class, err := ec2NodeClass(request.NodeClass)
	if err != nil {
		return nil, err
	}
	if class != nil {
		if len(request.Candidates) == 0 {
			return nil, fmt.Errorf("launching for nodepool %q, no candidate instance types", request.NodePoolName)
		}
		nodeClass, err := classNodeClass(class)
		if err != nil {
			return nil, err
		}
		instances, err := i.instances.Create(ctx, request, nodeClass)
		return instances, classError(class, err)
	}
	if len(request.Candidates) == 0 {
		return nil, fmt.Errorf("launching for provisioner %q, no candidate instance types", request.ProvisionerName)
	}
	block, err := i.block(ctx, request.Provider)
	if err != nil {
		return nil, err
	}
	subnets, err := i.subnetsOf(ctx, block)
	if err != nil {
		return nil, err
	}
	instances, err := i.instances.Create(ctx, request, nodeClass(block, subnets))
	return instances, blockError(block, err)
}

// Get returns the instance of the provider id, *cloudprovider.NotFoundError once it terminated.
func (i *Instances) Get(ctx context.Context, providerID string) (*cloudprovider.Instance, error) {
	return i.instances.Get(ctx, providerID)
}

// Delete terminates the instance; one EC2 no longer knows, or already terminated, is deleted.
func (i *Instances) Delete(ctx context.Context, providerID string) error {
	return i.instances.Delete(ctx, providerID)
}

// List returns the instances tagged as the cluster's and launched by a Provisioner that are not
// shutting down or terminated, sorted by id.
func (i *Instances) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	return i.instances.List(ctx)
}
