package awsemulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Seed is the initial state of an emulator, written as YAML or JSON. Seeded
// groups start converged: their instances are already InService.
type Seed struct {
	AutoScalingGroups []SeedAutoScalingGroup `json:"autoScalingGroups,omitempty"`
	EKSNodeGroups     []SeedEKSNodeGroup     `json:"eksNodeGroups,omitempty"`
	// EKSClusters describe clusters to eks:DescribeCluster; a cluster not seeded is described
	// with the defaults (Kubernetes 1.34, service CIDR 10.100.0.0/16).
	EKSClusters []SeedEKSCluster `json:"eksClusters,omitempty"`
	SQSQueues   []SeedQueue      `json:"sqsQueues,omitempty"`

	// Subnets and SecurityGroups make up the VPC that EC2 calls see.
	Subnets        []SeedSubnet        `json:"subnets,omitempty"`
	SecurityGroups []SeedSecurityGroup `json:"securityGroups,omitempty"`
	// IAMRoles are the account's IAM roles, e.g. the node role a getting-started guide creates.
	IAMRoles []SeedIAMRole `json:"iamRoles,omitempty"`
	// InstanceProfiles are the account's IAM instance profiles, which launch templates may
	// name: each a name alone (no role) or {name, role, path, tags}.
	InstanceProfiles []SeedInstanceProfile `json:"instanceProfiles,omitempty"`
	// Images are the account's own AMIs and those other accounts share with it, besides
	// Amazon's public node AMIs that the public SSM parameters name; any other AMI does not
	// exist. Each is an id alone or a SeedImage.
	Images []SeedImage `json:"images,omitempty"`
	// SSMParameters add or replace SSM parameters (name → value); the public AMI parameters
	// of the EKS-optimized, Bottlerocket and Windows AMIs are there from the start. A value
	// naming an AMI the emulator does not know adds that AMI.
	SSMParameters map[string]string `json:"ssmParameters,omitempty"`
	// Catalogue restricts or overrides the instance types, offerings and prices of the
	// emulator's region; without it the generated catalogue's apply.
	Catalogue *SeedCatalogue `json:"catalogue,omitempty"`
}

// SeedSubnet is a VPC subnet.
type SeedSubnet struct {
	ID               string `json:"id"`
	AvailabilityZone string `json:"availabilityZone"`
	// AvailabilityZoneID is the zone's id (usw2-az1), the same for every subnet of the zone;
	// by default the region's short name and the zone's letter (us-west-2b: usw2-az2).
	AvailabilityZoneID string `json:"availabilityZoneId,omitempty"`
	// VPCID defaults to the emulator's one VPC.
	VPCID string `json:"vpcId,omitempty"`
	// CIDRBlock defaults to 10.0.<n>.0/24 for the n-th subnet (from 1).
	CIDRBlock string `json:"cidrBlock,omitempty"`
	// AvailableIPAddressCount defaults to what the CIDR block leaves after AWS's five
	// reserved addresses; each launch takes one.
	AvailableIPAddressCount *int32            `json:"availableIpAddressCount,omitempty"`
	Tags                    map[string]string `json:"tags,omitempty"`
}

// SeedSecurityGroup is a VPC security group.
type SeedSecurityGroup struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	VPCID       string            `json:"vpcId,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
}

// SeedCatalogue overrides the generated catalogue for the emulator's region.
type SeedCatalogue struct {
	// InstanceTypes, when set, are the only types the region offers.
	InstanceTypes []string `json:"instanceTypes,omitempty"`
	// Zones replaces the region's zones (default: us-west-2a–d, us-east-1a–f, eu-west-1a–c,
	// <region>a–c elsewhere).
	Zones []string `json:"zones,omitempty"`
	// Offerings replaces the zones that offer a type.
	Offerings map[string][]string `json:"offerings,omitempty"`
	// Prices replaces a type's prices in the region; a type not in the catalogue is added
	// when it is also described in Types.
	Prices map[string]Price `json:"prices,omitempty"`
	// Types adds instance types or replaces their description.
	Types []InstanceTypeInfo `json:"types,omitempty"`
}

// SeedAutoScalingGroup is an EC2 Auto Scaling group.
type SeedAutoScalingGroup struct {
	Name            string `json:"name"`
	MinSize         int32  `json:"minSize"`
	MaxSize         int32  `json:"maxSize"`
	DesiredCapacity int32  `json:"desiredCapacity"`
	// Tags are the group's own tags, e.g. karpenter.sh/namespace granting it to a namespace.
	Tags map[string]string `json:"tags,omitempty"`
	NodeShape
}

// SeedEKSCluster is an EKS cluster as DescribeCluster reports it; empty fields take the defaults.
type SeedEKSCluster struct {
	Name            string `json:"name"`
	Version         string `json:"version,omitempty"`
	ServiceIPv4CIDR string `json:"serviceIpv4Cidr,omitempty"`
}

// SeedEKSNodeGroup is an EKS managed node group, backed (as in EKS) by an
// Auto Scaling group named eks-<nodegroup>-<id>.
type SeedEKSNodeGroup struct {
	ClusterName   string `json:"clusterName"`
	NodegroupName string `json:"nodegroupName"`
	MinSize       int32  `json:"minSize"`
	MaxSize       int32  `json:"maxSize"`
	DesiredSize   int32  `json:"desiredSize"`
	// Tags are the node group's tags (not its Auto Scaling group's).
	Tags map[string]string `json:"tags,omitempty"`
	NodeShape
}

// NodeShape describes the nodes a group's instances become. The emulator only
// stores it and hands it to whoever registers nodes for instances (the
// sandbox's node joiner) through the admin API and as the cluster-autoscaler
// node-template tags on the Auto Scaling group.
type NodeShape struct {
	InstanceType      string            `json:"instanceType"`
	AvailabilityZones []string          `json:"availabilityZones,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Taints            []Taint           `json:"taints,omitempty"`
	// Capacity is the node's resource capacity, e.g. {cpu: "2", memory: "8Gi", pods: "29"}.
	Capacity map[string]string `json:"capacity,omitempty"`
}

// Taint is a Kubernetes node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// SeedQueue is an SQS queue holding Messages messages at start.
type SeedQueue struct {
	Name       string            `json:"name"`
	Messages   int               `json:"messages,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// unmarshalNameOrStrict reads a seed item written as a bare string, its name (or id), or as an
// object decoded into full, refusing unknown fields as ParseSeed does.
func unmarshalNameOrStrict(b []byte, name *string, full any) error {
	if err := json.Unmarshal(b, name); err == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(full)
}

// LoadSeed reads a seed file (YAML or JSON).
func LoadSeed(path string) (Seed, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the seed file the emulator was started with.
	if err != nil {
		return Seed{}, fmt.Errorf("reading seed, %w", err)
	}
	return ParseSeed(b)
}

// ParseSeed parses a seed (YAML or JSON), rejecting unknown fields.
func ParseSeed(b []byte) (Seed, error) {
	var s Seed
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return Seed{}, fmt.Errorf("parsing seed, %w", err)
	}
	return s, nil
}

// Seed adds the seed's resources. It fails without changing anything if a
// resource is invalid or already exists.
func (e *Emulator) Seed(s Seed) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.validateSeed(s); err != nil {
		return err
	}
	now := e.advance()
	// Seeded instances launched one pending-delay ago, so they are InService now.
	launched := now.Add(-e.opts.PendingDelay)
	for _, sg := range s.AutoScalingGroups {
		g := e.newGroup(sg.Name, sg.MinSize, sg.MaxSize, sg.DesiredCapacity, sg.NodeShape, now)
		g.tags = maps.Clone(sg.Tags)
		e.converge(g, launched)
	}
	for _, sn := range s.EKSNodeGroups {
		id := e.newID()
		shape := sn.NodeShape
		shape.Labels = maps.Clone(shape.Labels)
		if shape.Labels == nil {
			shape.Labels = map[string]string{}
		}
		shape.Labels["eks.amazonaws.com/nodegroup"] = sn.NodegroupName
		g := e.newGroup(fmt.Sprintf("eks-%s-%s", sn.NodegroupName, id), sn.MinSize, sn.MaxSize, sn.DesiredSize, shape, now)
		g.eksNodeGroup = sn.ClusterName + "/" + sn.NodegroupName
		e.nodeGroups[g.eksNodeGroup] = &eksNodeGroup{
			cluster: sn.ClusterName, name: sn.NodegroupName, id: id,
			arn:    fmt.Sprintf("arn:aws:eks:%s:%s:nodegroup/%s/%s/%s", e.opts.Region, e.opts.AccountID, sn.ClusterName, sn.NodegroupName, id),
			status: eksStatusActive, min: sn.MinSize, max: sn.MaxSize, desired: sn.DesiredSize,
			instanceTypes: []string{sn.InstanceType}, labels: maps.Clone(sn.Labels), taints: sn.Taints,
			tags: maps.Clone(sn.Tags), created: now, modified: now, group: g,
		}
		e.converge(g, launched)
	}
	for _, c := range s.EKSClusters {
		e.clusters[c.Name] = &c
	}
	e.seedEC2(s)
	e.seedImages(s, now)
	e.seedIAM(s, now)
	for _, sq := range s.SQSQueues {
		q := e.newQueue(sq.Name, sq.Attributes, now)
		for range sq.Messages {
			e.sendMessage(q, "seeded message", 0, now)
		}
	}
	return nil
}

func (e *Emulator) validateSeed(s Seed) error {
	seen := map[string]bool{}
	checkGroup := func(what, name string, min, max, desired int32, shape NodeShape) error {
		switch {
		case name == "":
			return fmt.Errorf("%s: name is required", what)
		case min < 0 || max < min || desired < min || desired > max:
			return fmt.Errorf("%s %q: need 0 <= min (%d) <= desired (%d) <= max (%d)", what, name, min, desired, max)
		case shape.InstanceType == "":
			return fmt.Errorf("%s %q: instanceType is required", what, name)
		}
		return nil
	}
	for _, g := range s.AutoScalingGroups {
		if err := checkGroup("autoScalingGroups", g.Name, g.MinSize, g.MaxSize, g.DesiredCapacity, g.NodeShape); err != nil {
			return err
		}
		if _, ok := e.groups[g.Name]; ok || seen["asg/"+g.Name] {
			return fmt.Errorf("auto scaling group %q already exists", g.Name)
		}
		seen["asg/"+g.Name] = true
	}
	for _, n := range s.EKSNodeGroups {
		if n.ClusterName == "" {
			return fmt.Errorf("eksNodeGroups %q: clusterName is required", n.NodegroupName)
		}
		if err := checkGroup("eksNodeGroups", n.NodegroupName, n.MinSize, n.MaxSize, n.DesiredSize, n.NodeShape); err != nil {
			return err
		}
		key := n.ClusterName + "/" + n.NodegroupName
		if _, ok := e.nodeGroups[key]; ok || seen["eks/"+key] {
			return fmt.Errorf("eks node group %q already exists", key)
		}
		seen["eks/"+key] = true
	}
	for _, c := range s.EKSClusters {
		if c.Name == "" {
			return fmt.Errorf("eksClusters: name is required")
		}
		if _, ok := e.clusters[c.Name]; ok || seen["eks-cluster/"+c.Name] {
			return fmt.Errorf("eks cluster %q already exists", c.Name)
		}
		if _, err := netip.ParsePrefix(c.ServiceIPv4CIDR); c.ServiceIPv4CIDR != "" && err != nil {
			return fmt.Errorf("eks cluster %q: serviceIpv4Cidr, %w", c.Name, err)
		}
		seen["eks-cluster/"+c.Name] = true
	}
	for _, q := range s.SQSQueues {
		if q.Name == "" || strings.ContainsAny(q.Name, "/: ") {
			return fmt.Errorf("sqsQueues: invalid queue name %q", q.Name)
		}
		if _, ok := e.queues[q.Name]; ok || seen["sqs/"+q.Name] {
			return fmt.Errorf("sqs queue %q already exists", q.Name)
		}
		seen["sqs/"+q.Name] = true
	}
	if err := e.validateSeedImages(s); err != nil {
		return err
	}
	if err := e.validateSeedIAM(s); err != nil {
		return err
	}
	return e.validateSeedEC2(s)
}

// newGroup creates an Auto Scaling group with no instances; the caller holds e.mu.
func (e *Emulator) newGroup(name string, min, max, desired int32, shape NodeShape, now time.Time) *autoScalingGroup {
	zones := shape.AvailabilityZones
	if len(zones) == 0 {
		zones = []string{e.opts.Region + "a"}
	}
	g := &autoScalingGroup{
		name: name, arn: e.groupARN(name), min: min, max: max, desired: desired,
		instanceType: shape.InstanceType, zones: zones, labels: maps.Clone(shape.Labels),
		taints: shape.Taints, capacity: maps.Clone(shape.Capacity), created: now,
	}
	e.groups[name] = g
	return g
}

// newQueue creates a queue; the caller holds e.mu.
func (e *Emulator) newQueue(name string, attributes map[string]string, now time.Time) *queue {
	q := &queue{name: name, url: e.queueURL(name), arn: e.queueARN(name), created: now, attributes: maps.Clone(attributes)}
	if q.attributes == nil {
		q.attributes = map[string]string{}
	}
	e.queues[name] = q
	return q
}
