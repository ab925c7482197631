// Package aws implements the cloudprovider capabilities on AWS with
// aws-sdk-go-v2: EC2 Auto Scaling groups and EKS managed node groups as
// NodeGroups, SQS queues as Queues, EC2 instances launched by CreateFleet as the
// InstanceProvider (Instances).
//
// Configuration is the SDK's own: the default credential chain (IRSA web
// identity, environment, shared profile, instance role), the region from
// Options, AWS_REGION or the profile (an id that is an ARN carries its own
// region), adaptive retries unless AWS_RETRY_MODE or retry_mode names a mode,
// attempts from AWS_MAX_ATTEMPTS or max_attempts, and the SDK's endpoint overrides
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_AUTO_SCALING, AWS_ENDPOINT_URL_EKS,
// AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_CLOUDWATCH, AWS_ENDPOINT_URL_EC2,
// AWS_ENDPOINT_URL_SSM, AWS_ENDPOINT_URL_PRICING or endpoint_url in the shared
// config file).
package aws

import (
	"context"
	"fmt"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"k8s.io/utils/clock"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
)

// Options configure the provider. Zero values mean the SDK's defaults.
type Options struct {
	// Region is used for ids that do not name one (group names, cluster/nodegroup).
	// Empty means the SDK's chain: AWS_REGION, AWS_DEFAULT_REGION, the shared config profile.
	Region string
	// MaxAttempts bounds the attempts of one call, the first included. Zero means the
	// SDK's setting: AWS_MAX_ATTEMPTS, max_attempts in the profile, else 3.
	MaxAttempts int
	// MaxBackoff caps the delay between attempts (SDK default 20s).
	MaxBackoff time.Duration
	// Clock places the CloudWatch query window; defaults to the real clock.
	Clock clock.PassiveClock
	// CallTimeout bounds each call, its retries included; DefaultCallTimeout when zero.
	CallTimeout time.Duration
}

// maxRegions bounds the regions whose clients are kept. Ids name their own region, so without
// a bound every region any user's id names (and the adaptive retryer's state with it) would be
// kept for the life of the process; a cluster drives far fewer, and an evicted region's clients
// are rebuilt on its next use.
const maxRegions = 16

// Provider holds the SDK configuration and builds per-region clients on demand.
type Provider struct {
	cfg         sdkaws.Config
	clock       clock.PassiveClock
	callTimeout time.Duration

	mu      sync.Mutex
	regions map[string]*regionClients
	// uses counts clientsFor calls, to find the least recently used region.
	uses uint64
}

type regionClients struct {
	*awsapi.Clients
	lastUsed uint64
}

// New loads the SDK configuration. loadOptions are applied after the
// provider's own, e.g. static credentials or a base endpoint in tests.
func New(ctx context.Context, opts Options, loadOptions ...func(*config.LoadOptions) error) (*Provider, error) {
	var all []func(*config.LoadOptions) error
	if opts.Region != "" {
		all = append(all, config.WithRegion(opts.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(all, loadOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS SDK configuration, %w", err)
	}
	// A retryer from loadOptions (config.WithRetryer) is the caller's choice; otherwise
	// the retryer is built from what the SDK loaded, so its settings are honoured.
	if cfg.Retryer == nil {
		configureRetries(&cfg, opts)
	}
	callTimeout := opts.CallTimeout
	if callTimeout == 0 {
		callTimeout = DefaultCallTimeout
	}
	if callTimeout < 0 {
		return nil, fmt.Errorf("the AWS call timeout must be positive, not %s", callTimeout)
	}
	cfg.APIOptions = append(cfg.APIOptions, withCallTimeout(callTimeout))
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = GuardRequestBodies(cfg.HTTPClient)
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Provider{cfg: cfg, clock: clk, callTimeout: callTimeout, regions: map[string]*regionClients{}}, nil
}

// configureRetries sets cfg's retryer: adaptive (client-side rate limiting after
// throttling) unless the environment or profile asked for a mode, with
// opts.MaxAttempts, else the attempts the SDK loaded, else the SDK's default.
func configureRetries(cfg *sdkaws.Config, opts Options) {
	maxAttempts := opts.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = cfg.RetryMaxAttempts
	}
	standard := func(so *retry.StandardOptions) {
		if maxAttempts > 0 {
			so.MaxAttempts = maxAttempts
		}
		if opts.MaxBackoff > 0 {
			so.MaxBackoff = opts.MaxBackoff
			so.Backoff = retry.NewExponentialJitterBackoff(opts.MaxBackoff)
		}
	}
	if cfg.RetryMode == sdkaws.RetryModeStandard {
		cfg.Retryer = func() sdkaws.Retryer { return retry.NewStandard(standard) }
	} else {
		cfg.Retryer = func() sdkaws.Retryer {
			return retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
				o.StandardOptions = append(o.StandardOptions, standard)
			})
		}
	}
	// Service clients wrap their retryer with cfg.RetryMaxAttempts when it is set; keep
	// that equal to the attempts chosen above so the environment cannot override Options.
	cfg.RetryMaxAttempts = maxAttempts
}

// Register makes the provider's types validated (RegisterIDs) and resolvable through r.
// Provisioners' provider blocks are registered apart (RegisterProvider, or Instances, which
// needs the cluster's name).
func (p *Provider) Register(r *cloudprovider.Registry) {
	RegisterIDs(r)
	r.RegisterNodeGroup(autoScalingGroupType, p.AutoScalingGroup)
	r.RegisterNodeGroup(eksNodeGroupType, p.EKSNodeGroup)
	r.RegisterQueue(sqsQueueType, p.SQSQueue)
}

// Region is the default region, empty if none is configured.
func (p *Provider) Region() string { return p.cfg.Region }

// regionOf resolves an id's region, "" meaning the default region.
func (p *Provider) regionOf(region string) string {
	if region == "" {
		return p.cfg.Region
	}
	return region
}

// clientsFor returns the clients of a region ("" = the default region), keeping those of the
// maxRegions most recently used regions.
func (p *Provider) clientsFor(region string) (*awsapi.Clients, error) {
	region = p.regionOf(region)
	if region == "" {
		return nil, fmt.Errorf("no AWS region: set the controller's region flag or AWS_REGION, or use an ARN")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.uses++
	if c, ok := p.regions[region]; ok {
		c.lastUsed = p.uses
		return c.Clients, nil
	}
	if len(p.regions) >= maxRegions {
		p.evictLeastRecentlyUsed()
	}
	c := awsapi.NewClients(p.cfg, region)
	p.regions[region] = &regionClients{Clients: c, lastUsed: p.uses}
	return c, nil
}

// DefaultRegionClients are the clients of the default region, where instances launch.
func (p *Provider) DefaultRegionClients() (*awsapi.Clients, error) {
	return p.clientsFor("")
}

// evictLeastRecentlyUsed drops one region's clients; p.mu is held.
func (p *Provider) evictLeastRecentlyUsed() {
	var oldest string
	for region, c := range p.regions {
		if oldest == "" || c.lastUsed < p.regions[oldest].lastUsed {
			oldest = region
		}
	}
	delete(p.regions, oldest)
}
