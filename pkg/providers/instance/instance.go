// Package instance launches, reads, lists and terminates the cluster's EC2 instances: one
// CreateFleet request per launch, its capacity errors marking offerings unavailable, its
// launch templates from the launchtemplate provider.
package instance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/providers/awsapi"
	"karpenter.sh/karpenter/pkg/providers/instancetype"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
	"karpenter.sh/karpenter/pkg/providers/selector"
	"karpenter.sh/karpenter/pkg/providers/subnet"
)

// NodeClass is what instances are launched from: the node class of the launch, resolved from a
// Provisioner's provider block or a NodePool's EC2NodeClass.
type NodeClass struct {
	// Subnets are those instances may launch into; each zone's with the most free addresses is
	// used.
	Subnets []subnet.Subnet
	// LaunchTemplate names a launch template of the user's, used as given ($Default); empty
	// launches from Karpenter's templates.
	LaunchTemplate string
	// SecurityGroups and InstanceProfile make Karpenter's templates.
	SecurityGroups  []selector.Term
	InstanceProfile string
	// Tags are added to every instance; Karpenter's own tags win.
	Tags map[string]string
	// EC2NodeClass is the NodePool's class, nil for a Provisioner: Karpenter's templates are made
	// from it (launchtemplate.Request.NodeClass), and the instances tagged with its name.
	EC2NodeClass *awsv1.EC2NodeClass
}

// Provider launches and finds the instances of one cluster in the region its clients call.
type Provider struct {
	clients         awsapi.ClientsFunc
	clusterName     string
	clock           clock.Clock
	unavailable     *instancetype.UnavailableOfferings
	launchTemplates *launchtemplate.Provider
}

// NewProvider builds the provider of clusterName's instances: it marks the offerings EC2 has no
// capacity for unavailable, and launches from launchTemplates' templates. It does no I/O.
func NewProvider(clients awsapi.ClientsFunc, clusterName string, clk clock.Clock, unavailable *instancetype.UnavailableOfferings, launchTemplates *launchtemplate.Provider) *Provider {
	return &Provider{clients: clients, clusterName: clusterName, clock: clk, unavailable: unavailable, launchTemplates: launchTemplates}
}

// privateDNSAttempts bound the DescribeInstances calls that wait for a launched instance's
// private DNS name; EC2 usually has it at once, and some seconds later at worst.
const (
	privateDNSAttempts = 10
	privateDNSDelay    = time.Second
)

// describeLaunched reads a just-launched instance until EC2 knows its private DNS name, which is
// its node's name. EC2 may not know the instance at all for a moment after CreateFleet. A
// CreateFleet answered again for its client token names instances that may have terminated
// since (EC2 keeps the answer for at least a day after they did): such an instance is returned
// as it is, shutting down or terminated. One EC2 still does not know after every attempt is not
// read: it may be that new (EC2's reads are eventually consistent) or long terminated (EC2
// forgets an instance about an hour after), and only a later read tells which; until then it is
// the caller's as CreateFleet's answer told it (UnreadInstancesError), never an instance with no
// provider ID.
func (p *Provider) describeLaunched(ctx context.Context, id string) (*cloudprovider.Instance, error) {
	var last error
	for attempt := 0; attempt < privateDNSAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the private DNS name of instance %s, %w", id, ctx.Err())
			case <-p.clock.After(privateDNSDelay):
			}
		}
		instance, err := p.read(ctx, id)
		if err == nil && settled(instance) {
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

// settled is whether a just-launched instance is read as describeLaunched waits for it: EC2 knows
// its private DNS name, or it shut down.
func settled(instance *cloudprovider.Instance) bool {
	return instance.NodeName != "" || instance.State.ShutDown()
}

// readSettled reads the instances in one DescribeInstances call and returns, by id, those
// settled. An
// instance EC2 does not know yet fails the whole call (InvalidInstanceID.NotFound), and so does
// any other error: then none is returned, and each is read on its own.
func (p *Provider) readSettled(ctx context.Context, launched []*cloudprovider.Instance) map[string]*cloudprovider.Instance {
	c, err := p.clients()
	if err != nil || len(launched) < 2 {
		return nil
	}
	ids := make([]string, len(launched))
	for i, instance := range launched {
		ids[i] = instance.ID
	}
	described, err := c.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		return nil
	}
	out := map[string]*cloudprovider.Instance{}
	for _, reservation := range described.Reservations {
		for _, instance := range reservation.Instances {
			if read := convertInstance(instance); settled(read) {
				out[read.ID] = read
			}
		}
	}
	return out
}

// describe reads one instance; a terminated one is not found, one shutting down is (it may hold
// its volumes and network interfaces a while yet).
func (p *Provider) describe(ctx context.Context, id string) (*cloudprovider.Instance, error) {
	instance, err := p.read(ctx, id)
	if err != nil {
		return nil, err
	}
	if instance.State == cloudprovider.InstanceStateTerminated {
		return nil, &cloudprovider.NotFoundError{Resource: "instance " + id, Err: errors.New("terminated")}
	}
	return instance, nil
}

// read reads one instance, a terminated one too; one EC2 does not know is not found.
func (p *Provider) read(ctx context.Context, id string) (*cloudprovider.Instance, error) {
	c, err := p.clients()
	if err != nil {
		return nil, err
	}
	out, err := c.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return nil, awsapi.CallError(err, "ec2:DescribeInstances", "instance "+id, "InvalidInstanceID.NotFound")
	}
	for _, reservation := range out.Reservations {
		if len(reservation.Instances) > 0 {
			return convertInstance(reservation.Instances[0]), nil
		}
	}
	return nil, &cloudprovider.NotFoundError{Resource: "instance " + id, Err: errors.New("unknown to EC2")}
}

// convertInstance maps an EC2 instance's state to what the cluster needs of it: pending (stopping
// and stopped ones too), running, shutting down or terminated.
func convertInstance(instance ec2types.Instance) *cloudprovider.Instance {
	state := cloudprovider.InstanceStatePending
	if instance.State != nil {
		switch instance.State.Name {
		case ec2types.InstanceStateNameShuttingDown:
			state = cloudprovider.InstanceStateShuttingDown
		case ec2types.InstanceStateNameTerminated:
			state = cloudprovider.InstanceStateTerminated
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
	launchGroup := ""
	for _, tag := range instance.Tags {
		switch sdkaws.ToString(tag.Key) {
		case v1alpha5.ProvisionerNameLabelKey, v1.NodePoolLabelKey:
			labels[sdkaws.ToString(tag.Key)] = sdkaws.ToString(tag.Value)
		case LaunchGroupTagKey:
			launchGroup = sdkaws.ToString(tag.Value)
		}
	}
	var groups []string
	for _, group := range instance.SecurityGroups {
		groups = append(groups, sdkaws.ToString(group.GroupId))
	}
	return &cloudprovider.Instance{
		SubnetID:         sdkaws.ToString(instance.SubnetId),
		SecurityGroupIDs: groups,
		ProviderID:       providerID(zone, id),
		ID:               id,
		InstanceType:     string(instance.InstanceType),
		Zone:             zone,
		CapacityType:     capacityType,
		NodeName:         sdkaws.ToString(instance.PrivateDnsName),
		ImageID:          sdkaws.ToString(instance.ImageId),
		LaunchGroup:      launchGroup,
		LaunchTime:       sdkaws.ToTime(instance.LaunchTime),
		State:            state,
		Labels:           labels,
	}
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

// Get returns the instance of the provider id; a terminated one is not found.
func (p *Provider) Get(ctx context.Context, providerID string) (*cloudprovider.Instance, error) {
	id, err := instanceID(providerID)
	if err != nil {
		return nil, err
	}
	return p.describe(ctx, id)
}

// Delete terminates the instance; one EC2 no longer knows, or already terminated, is deleted.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	id, err := instanceID(providerID)
	if err != nil {
		return err
	}
	c, err := p.clients()
	if err != nil {
		return err
	}
	if _, err := c.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		if awsapi.ErrorCode(err) == "InvalidInstanceID.NotFound" {
			return nil
		}
		return awsapi.CallError(err, "ec2:TerminateInstances", "instance "+id)
	}
	return nil
}

// List returns the instances tagged as the cluster's and launched by a Provisioner that are not
// shutting down or terminated, sorted by id.
func (p *Provider) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	c, err := p.clients()
	if err != nil {
		return nil, err
	}
	var instances []*cloudprovider.Instance
	pages := ec2.NewDescribeInstancesPaginator(c.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: sdkaws.String("tag:" + awsapi.ClusterTagKey(p.clusterName)), Values: []string{"owned"}},
		// A Provisioner's or a NodePool's: the values of one filter are alternatives.
		{Name: sdkaws.String("tag-key"), Values: []string{v1alpha5.ProvisionerNameLabelKey, v1.NodePoolLabelKey}},
		{Name: sdkaws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, awsapi.CallError(err, "ec2:DescribeInstances", "the cluster's instances")
		}
		for _, reservation := range page.Reservations {
			for _, instance := range reservation.Instances {
				if converted := convertInstance(instance); !converted.State.ShutDown() {
					instances = append(instances, converted)
				}
			}
		}
	}
	slices.SortFunc(instances, func(a, b *cloudprovider.Instance) int { return strings.Compare(a.ID, b.ID) })
	return instances, nil
}
