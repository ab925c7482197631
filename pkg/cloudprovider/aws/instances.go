package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Defaults of InstancesOptions.
const (
	DefaultInstanceTypesRefresh    = 5 * time.Minute
	DefaultPricingRefresh          = 12 * time.Hour
	DefaultUnavailableOfferingsTTL = 3 * time.Minute
)

// How long resolved launch inputs are kept. Subnets and security groups are re-read soon after
// a user tags a new one; EKS publishes new AMIs weekly at most; a launch template, once made,
// only goes away if someone deletes it, and a stale entry then fails one launch and is dropped.
const (
	selectorCacheTTL       = time.Minute
	amiCacheTTL            = time.Hour
	launchTemplateCacheTTL = time.Hour
	// cacheSize bounds each cache: entries are per distinct selector, AMI or template.
	cacheSize = 1000
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
	// Clock times the refreshes and the caches; the real clock when nil.
	Clock clock.WithTicker
}

// Instances launches EC2 instances for Provisioners in the provider's default region: it is the
// cloudprovider.InstanceProvider on AWS. Start must run (it is a manager Runnable) for
// InstanceTypes to have a catalogue: the catalogue and the prices are read in the background,
// never while scheduling.
type Instances struct {
	ProviderBlockValidator
	provider *Provider
	opts     InstancesOptions
	clock    clock.WithTicker

	mu sync.RWMutex
	// catalogue is the instance types of the region with the zones they are offered in.
	catalogue []catalogueEntry
	// catalogueErr is the last refresh's failure, nil once one succeeded after it.
	catalogueErr error
	prices       priceBook

	unavailable     *cache.LRUExpireCache
	subnets         *cache.LRUExpireCache
	securityGroups  *cache.LRUExpireCache
	amis            *cache.LRUExpireCache
	launchTemplates *cache.LRUExpireCache
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
	for name, d := range map[string]time.Duration{"instance types refresh": opts.InstanceTypesRefresh, "pricing refresh": opts.PricingRefresh, "unavailable offerings TTL": opts.UnavailableOfferingsTTL} {
		if d < 0 {
			return nil, fmt.Errorf("the %s must be positive, not %s", name, d)
		}
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Instances{
		ProviderBlockValidator: ProviderBlockValidator{Defaults: ProviderDefaults{ClusterName: opts.ClusterName, InstanceProfile: opts.DefaultInstanceProfile}},
		provider:               p,
		opts:                   opts,
		clock:                  clk,
		prices:                 newPriceBook(p.Region()),
		unavailable:            cache.NewLRUExpireCacheWithClock(cacheSize*10, clk),
		subnets:                cache.NewLRUExpireCacheWithClock(cacheSize, clk),
		securityGroups:         cache.NewLRUExpireCacheWithClock(cacheSize, clk),
		amis:                   cache.NewLRUExpireCacheWithClock(cacheSize, clk),
		launchTemplates:        cache.NewLRUExpireCacheWithClock(cacheSize, clk),
	}, nil
}

// Start reads the catalogue and the prices, then refreshes each on its period until ctx is
// done. A failed read is logged by the caller's next InstanceTypes error or the prices'
// staleness, and retried on the next period.
func (i *Instances) Start(ctx context.Context) error {
	// A failure is kept (InstanceTypes reports it) and retried on the next tick.
	_ = i.RefreshInstanceTypes(ctx)
	i.RefreshPrices(ctx)
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

// NeedLeaderElection is false: every replica needs the catalogue to be ready to lead.
func (i *Instances) NeedLeaderElection() bool { return false }

// clients are those of the provider's default region, where instances launch.
func (i *Instances) clients() (*clients, error) {
	return i.provider.clientsFor("")
}

// privateDNSAttempts bound the DescribeInstances calls that wait for a launched instance's
// private DNS name; EC2 usually has it at once, and some seconds later at worst.
const (
	privateDNSAttempts = 10
	privateDNSDelay    = time.Second
)

// describeLaunched reads a just-launched instance until EC2 knows its private DNS name, which is
// its node's name. EC2 may not know the instance at all for a moment after CreateFleet.
func (i *Instances) describeLaunched(ctx context.Context, id string) (*cloudprovider.Instance, error) {
	var last error
	for attempt := 0; attempt < privateDNSAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the private DNS name of instance %s, %w", id, ctx.Err())
			case <-i.clock.After(privateDNSDelay):
			}
		}
		instance, err := i.describe(ctx, id)
		if err == nil && instance.NodeName != "" {
			return instance, nil
		}
		var notFound *cloudprovider.NotFoundError
		if err != nil && !errors.As(err, &notFound) {
			return nil, err
		}
		last = err
		if err == nil {
			last = fmt.Errorf("instance %s has no private DNS name yet", id)
		}
	}
	return nil, fmt.Errorf("launched instance %s, but its node name is unknown, %w", id, last)
}

// describe reads one instance; a terminated one is not found.
func (i *Instances) describe(ctx context.Context, id string) (*cloudprovider.Instance, error) {
	c, err := i.clients()
	if err != nil {
		return nil, err
	}
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return nil, callError(err, "ec2:DescribeInstances", "instance "+id, "InvalidInstanceID.NotFound")
	}
	for _, reservation := range out.Reservations {
		for _, instance := range reservation.Instances {
			if converted, ok := convertInstance(instance); ok {
				return converted, nil
			}
		}
	}
	return nil, &cloudprovider.NotFoundError{Resource: "instance " + id, Err: errors.New("terminated or unknown to EC2")}
}

// convertInstance maps an EC2 instance; false for one that is shutting down or gone.
func convertInstance(instance ec2types.Instance) (*cloudprovider.Instance, bool) {
	state := cloudprovider.InstanceStatePending
	if instance.State != nil {
		switch instance.State.Name {
		case ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
			return nil, false
		case ec2types.InstanceStateNameRunning:
			state = cloudprovider.InstanceStateRunning
		}
	}
	zone := ""
	if instance.Placement != nil {
		zone = sdkaws.ToString(instance.Placement.AvailabilityZone)
	}
	capacityType := v1alpha5.CapacityTypeOnDemand
	if instance.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		capacityType = v1alpha5.CapacityTypeSpot
	}
	id := sdkaws.ToString(instance.InstanceId)
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: string(instance.InstanceType),
		corev1.LabelTopologyZone:       zone,
		v1alpha5.CapacityTypeLabelKey:  capacityType,
	}
	for _, tag := range instance.Tags {
		if sdkaws.ToString(tag.Key) == v1alpha5.ProvisionerNameLabelKey {
			labels[v1alpha5.ProvisionerNameLabelKey] = sdkaws.ToString(tag.Value)
		}
	}
	return &cloudprovider.Instance{
		ProviderID:   providerID(zone, id),
		ID:           id,
		InstanceType: string(instance.InstanceType),
		Zone:         zone,
		CapacityType: capacityType,
		NodeName:     sdkaws.ToString(instance.PrivateDnsName),
		LaunchTime:   sdkaws.ToTime(instance.LaunchTime),
		State:        state,
		Labels:       labels,
	}, true
}

// providerID is the node's spec.providerID for an instance, as the AWS cloud controller sets it.
func providerID(zone, id string) string {
	return fmt.Sprintf("aws:///%s/%s", zone, id)
}

// instanceID is the instance id of a provider id, aws:///<zone>/<id>.
func instanceID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	id := rest[strings.LastIndex(rest, "/")+1:]
	if !ok || !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("provider id %q is not aws:///<zone>/<instance id>", providerID)
	}
	return id, nil
}

func (i *Instances) Get(ctx context.Context, providerID string) (*cloudprovider.Instance, error) {
	id, err := instanceID(providerID)
	if err != nil {
		return nil, err
	}
	return i.describe(ctx, id)
}

// Delete terminates the instance; one EC2 no longer knows, or already terminated, is deleted.
func (i *Instances) Delete(ctx context.Context, providerID string) error {
	id, err := instanceID(providerID)
	if err != nil {
		return err
	}
	c, err := i.clients()
	if err != nil {
		return err
	}
	if _, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		if apiErrorCode(err) == "InvalidInstanceID.NotFound" {
			return nil
		}
		return callError(err, "ec2:TerminateInstances", "instance "+id)
	}
	return nil
}

// List returns the instances tagged as the cluster's and launched by a Provisioner that are not
// shutting down or terminated, sorted by id.
func (i *Instances) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	c, err := i.clients()
	if err != nil {
		return nil, err
	}
	var instances []*cloudprovider.Instance
	pages := ec2.NewDescribeInstancesPaginator(c.ec2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: sdkaws.String("tag:" + clusterTagKey(i.opts.ClusterName)), Values: []string{"owned"}},
		{Name: sdkaws.String("tag-key"), Values: []string{v1alpha5.ProvisionerNameLabelKey}},
		{Name: sdkaws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, callError(err, "ec2:DescribeInstances", "the cluster's instances")
		}
		for _, reservation := range page.Reservations {
			for _, instance := range reservation.Instances {
				if converted, ok := convertInstance(instance); ok {
					instances = append(instances, converted)
				}
			}
		}
	}
	slices.SortFunc(instances, func(a, b *cloudprovider.Instance) int { return strings.Compare(a.ID, b.ID) })
	return instances, nil
}
