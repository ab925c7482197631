package awsemulator

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// EC2 instance states, as EC2 names and numbers them.
const (
	statePending      = "pending"
	stateRunning      = "running"
	stateShuttingDown = "shutting-down"
	stateTerminated   = "terminated"
)

var stateCodes = map[string]int{statePending: 0, stateRunning: 16, stateShuttingDown: 32, stateTerminated: 48}

// terminatedRetention is how long a terminated instance stays visible, as in EC2 (about an hour).
const terminatedRetention = time.Hour

// ec2Instance is a free-standing instance launched by CreateFleet (Auto Scaling instances
// live with their group).
type ec2Instance struct {
	id, instanceType, zone, capacityType string // capacityType: on-demand or spot
	subnetID, vpcID, privateIP, imageID  string
	fleetID, reservationID               string
	launchTemplateID, launchTemplateName string
	// instanceProfileARN and instanceProfileID are those of the profile it launched with.
	instanceProfileARN, instanceProfileID string
	securityGroupIDs                      []string
	// userData is what the instance booted with (its launch template's, decoded): a kubelet
	// reads its flags there.
	userData string
	// ephemeralStorage is the size of the filesystem its kubelet keeps its state on, fixed at
	// launch by its volumes, instance store and user data; nil when the kubelet reports none
	// (Emulator.ephemeralStorage).
	ephemeralStorage      *resource.Quantity
	launched, terminating time.Time // terminating is zero until TerminateInstances
	tags                  map[string]string
}

func (e *Emulator) instanceState(i *ec2Instance, now time.Time) string {
	switch {
	case i.terminating.IsZero() && now.Before(i.launched.Add(e.opts.PendingDelay)):
		return statePending
	case i.terminating.IsZero():
		return stateRunning
	case now.Before(i.terminating.Add(e.opts.TerminatingDelay)):
		return stateShuttingDown
	default:
		return stateTerminated
	}
}

// privateDNSName is EC2's name for an address: ip-10-0-1-23.us-west-2.compute.internal,
// or ip-10-0-1-23.ec2.internal in us-east-1.
func (e *Emulator) privateDNSName(ip string) string {
	domain := e.opts.Region + ".compute.internal"
	if e.opts.Region == "us-east-1" {
		domain = "ec2.internal"
	}
	return "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + domain
}

// expireInstances forgets instances terminated more than terminatedRetention ago and gives
// their addresses back to their subnets. The caller holds e.mu.
func (e *Emulator) expireInstances(now time.Time) {
	for id, i := range e.instances {
		if i.terminating.IsZero() {
			continue
		}
		terminated := i.terminating.Add(e.opts.TerminatingDelay)
		if !now.Before(terminated.Add(terminatedRetention)) {
			delete(e.instances, id)
		}
		if !now.Before(terminated) && i.privateIP != "" {
			if s, ok := e.subnets[i.subnetID]; ok {
				s.availableIPs++
			}
			i.privateIP = ""
		}
	}
}

var instanceIDPattern = regexp.MustCompile(`^i-([0-9a-f]{8}|[0-9a-f]{17})$`)

// lookupInstances resolves ids as EC2 does: malformed ids and unknown ids fail the call.
func (e *Emulator) lookupInstances(ids []string) ([]*ec2Instance, *apiError) {
	var missing []string
	var out []*ec2Instance
	for _, id := range ids {
		if !instanceIDPattern.MatchString(id) {
			return nil, errEC2("InvalidInstanceID.Malformed", "Invalid id: %q", id)
		}
		i, ok := e.instances[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		out = append(out, i)
	}
	switch len(missing) {
	case 0:
		return out, nil
	case 1:
		return nil, errEC2("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", missing[0])
	default:
		return nil, errEC2("InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
}

type xmlInstanceState struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

func instanceStateOf(name string) xmlInstanceState {
	return xmlInstanceState{Code: stateCodes[name], Name: name}
}

type xmlEC2Instance struct {
	InstanceID    string           `xml:"instanceId"`
	ImageID       string           `xml:"imageId"`
	InstanceState xmlInstanceState `xml:"instanceState"`
	// PrivateDNSName and PrivateIPAddress are assigned at launch, as EC2 does (unless
	// Options.AddressOnlyWhenRunning), and given back when the instance has terminated.
	PrivateDNSName string `xml:"privateDnsName"`
	DNSName        string `xml:"dnsName"`
	InstanceType   string `xml:"instanceType"`
	LaunchTime     string `xml:"launchTime"`
	Placement      struct {
		AvailabilityZone string `xml:"availabilityZone"`
		Tenancy          string `xml:"tenancy"`
	} `xml:"placement"`
	SubnetID           string                  `xml:"subnetId,omitempty"`
	VpcID              string                  `xml:"vpcId,omitempty"`
	PrivateIPAddress   string                  `xml:"privateIpAddress,omitempty"`
	Architecture       string                  `xml:"architecture,omitempty"`
	InstanceLifecycle  string                  `xml:"instanceLifecycle,omitempty"`
	IamInstanceProfile *xmlIamInstanceProfile  `xml:"iamInstanceProfile"`
	GroupSet           *xmlItems[xmlGroupItem] `xml:"groupSet"`
	TagSet             *xmlItems[ec2Tag]       `xml:"tagSet"`
	StateReason        *xmlStateReason         `xml:"stateReason"`
	Hypervisor         string                  `xml:"hypervisor,omitempty"`
	VirtualizationType string                  `xml:"virtualizationType"`
	RootDeviceType     string                  `xml:"rootDeviceType"`
}

type xmlIamInstanceProfile struct {
	Arn string `xml:"arn"`
	ID  string `xml:"id"`
}

type xmlGroupItem struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName,omitempty"`
}

type xmlStateReason struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

func (e *Emulator) xmlInstance(i *ec2Instance, now time.Time) xmlEC2Instance {
	state := e.instanceState(i, now)
	x := xmlEC2Instance{
		InstanceID: i.id, ImageID: i.imageID, InstanceState: instanceStateOf(state), InstanceType: i.instanceType,
		LaunchTime: i.launched.UTC().Format(time.RFC3339Nano), TagSet: tagSet(i.tags),
		VirtualizationType: "hvm", RootDeviceType: "ebs",
	}
	x.Placement.AvailabilityZone, x.Placement.Tenancy = i.zone, "default"
	if state != stateTerminated {
		x.SubnetID, x.VpcID = i.subnetID, i.vpcID
	}
	if state == stateRunning || state == stateShuttingDown || (state == statePending && !e.opts.AddressOnlyWhenRunning) {
		x.PrivateIPAddress, x.PrivateDNSName = i.privateIP, e.privateDNSName(i.privateIP)
	}
	if t, ok := e.catalogue.Types[i.instanceType]; ok {
		x.Architecture, x.Hypervisor = t.Architectures[len(t.Architectures)-1], t.Hypervisor
	}
	if i.capacityType == capacityTypeSpot {
		x.InstanceLifecycle = "spot"
	}
	if i.instanceProfileARN != "" {
		x.IamInstanceProfile = &xmlIamInstanceProfile{Arn: i.instanceProfileARN, ID: i.instanceProfileID}
	}
	var groups []xmlGroupItem
	for _, id := range i.securityGroupIDs {
		g := xmlGroupItem{GroupID: id}
		if sg, ok := e.securityGroups[id]; ok {
			g.GroupName = sg.name
		}
		groups = append(groups, g)
	}
	x.GroupSet = items(groups)
	if state == stateShuttingDown || state == stateTerminated {
		x.StateReason = &xmlStateReason{Code: "Client.UserInitiatedShutdown", Message: "Client.UserInitiatedShutdown: User initiated shutdown"}
	}
	return x
}

type xmlReservation struct {
	ReservationID string                    `xml:"reservationId"`
	OwnerID       string                    `xml:"ownerId"`
	RequesterID   string                    `xml:"requesterId,omitempty"`
	InstancesSet  *xmlItems[xmlEC2Instance] `xml:"instancesSet"`
}

func (e *Emulator) describeInstances(q ec2Query, now time.Time) (any, *apiError) {
	filters, aerr := q.filters("instance-state-name", "instance-state-code", "instance-id", "instance-type", "availability-zone",
		"subnet-id", "vpc-id", "instance-lifecycle", "private-dns-name", "private-ip-address", "image-id",
		"iam-instance-profile.arn", "reservation-id")
	if aerr != nil {
		return nil, aerr
	}
	ids := q.strs("InstanceId")
	if len(ids) > 0 && q.str("MaxResults") != "" {
		return nil, errInvalidParameterCombination("The parameter instancesSet cannot be used with the parameter maxResults")
	}
	wanted, aerr := e.lookupInstances(ids)
	if aerr != nil {
		return nil, aerr
	}
	var selected []*ec2Instance
	for _, id := range sortedKeys(e.instances) {
		i := e.instances[id]
		if len(ids) > 0 && !slices.Contains(wanted, i) {
			continue
		}
		x := e.xmlInstance(i, now)
		if !matchFilters(filters, i.tags, func(f string) []string {
			switch f {
			case "instance-state-name":
				return []string{x.InstanceState.Name}
			case "instance-state-code":
				return []string{fmt.Sprint(x.InstanceState.Code)}
			case "instance-id":
				return []string{i.id}
			case "instance-type":
				return []string{i.instanceType}
			case "availability-zone":
				return []string{i.zone}
			case "subnet-id":
				return []string{x.SubnetID}
			case "vpc-id":
				return []string{x.VpcID}
			case "instance-lifecycle":
				return []string{x.InstanceLifecycle}
			case "private-dns-name":
				return []string{x.PrivateDNSName}
			case "private-ip-address":
				return []string{x.PrivateIPAddress}
			case "image-id":
				return []string{i.imageID}
			case "iam-instance-profile.arn":
				if x.IamInstanceProfile != nil {
					return []string{x.IamInstanceProfile.Arn}
				}
				return nil
			default:
				return []string{i.reservationID}
			}
		}) {
			continue
		}
		selected = append(selected, i)
	}
	selected, next, aerr := page(q, selected, func(i *ec2Instance) string { return i.id }, 5, 1000, 0)
	if aerr != nil {
		return nil, aerr
	}
	// Instances launched together share a reservation, listed in the order of their first instance.
	var reservations []xmlReservation
	index := map[string]int{}
	for _, i := range selected {
		n, ok := index[i.reservationID]
		if !ok {
			n = len(reservations)
			index[i.reservationID] = n
			reservations = append(reservations, xmlReservation{ReservationID: i.reservationID, OwnerID: e.opts.AccountID, InstancesSet: &xmlItems[xmlEC2Instance]{}})
		}
		reservations[n].InstancesSet.Items = append(reservations[n].InstancesSet.Items, e.xmlInstance(i, now))
	}
	return struct {
		ReservationSet *xmlItems[xmlReservation] `xml:"reservationSet"`
		NextToken      string                    `xml:"nextToken,omitempty"`
	}{ReservationSet: items(reservations), NextToken: next}, nil
}

func errInvalidParameterCombination(msg string) *apiError {
	return errEC2("InvalidParameterCombination", "%s", msg)
}

type xmlInstanceStateChange struct {
	InstanceID    string           `xml:"instanceId"`
	CurrentState  xmlInstanceState `xml:"currentState"`
	PreviousState xmlInstanceState `xml:"previousState"`
}

// terminateInstances starts terminating running or pending instances; terminating one that
// is already shutting down or terminated succeeds and reports its state, as EC2 does.
func (e *Emulator) terminateInstances(q ec2Query, now time.Time) (any, *apiError) {
	ids := q.strs("InstanceId")
	if len(ids) == 0 {
		return nil, errEC2("MissingParameter", "The request must contain the parameter InstanceId")
	}
	instances, aerr := e.lookupInstances(ids)
	if aerr != nil {
		return nil, aerr
	}
	e.terminations = append(e.terminations, TerminationRequest{InstanceIDs: ids, Received: now})
	var changes []xmlInstanceStateChange
	for _, i := range instances {
		previous := e.instanceState(i, now)
		e.terminate(i, now)
		changes = append(changes, xmlInstanceStateChange{InstanceID: i.id, PreviousState: instanceStateOf(previous), CurrentState: instanceStateOf(e.instanceState(i, now))})
	}
	return struct {
		InstancesSet *xmlItems[xmlInstanceStateChange] `xml:"instancesSet"`
	}{InstancesSet: items(changes)}, nil
}

// terminate begins an instance's termination unless it has begun; the caller holds e.mu.
func (e *Emulator) terminate(i *ec2Instance, now time.Time) {
	if i.terminating.IsZero() {
		i.terminating = now
		// A zero delay terminates at once: give the address back now.
		e.expireInstances(now)
	}
}

func (e *Emulator) createTags(q ec2Query) (any, *apiError) {
	ids, tags := q.strs("ResourceId"), q.tags("Tag")
	if len(ids) == 0 || len(tags) == 0 {
		return nil, errEC2("MissingParameter", "The request must contain the parameters ResourceId and Tag")
	}
	var targets []map[string]string
	for _, id := range ids {
		var target *map[string]string
		switch {
		case e.instances[id] != nil:
			target = &e.instances[id].tags
		case e.launchTemplates[id] != nil:
			target = &e.launchTemplates[id].tags
		case e.subnets[id] != nil:
			target = &e.subnets[id].tags
		case e.securityGroups[id] != nil:
			target = &e.securityGroups[id].tags
		case e.images[id] != nil:
			target = &e.images[id].tags
		case strings.HasPrefix(id, "ami-"):
			return nil, errEC2("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		case strings.HasPrefix(id, "i-"):
			return nil, errEC2("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		default:
			return nil, errEC2("InvalidID", "The ID '%s' is not valid", id)
		}
		if *target == nil {
			*target = map[string]string{}
		}
		targets = append(targets, *target)
	}
	for _, t := range targets {
		maps.Copy(t, tags)
	}
	return struct {
		Return bool `xml:"return"`
	}{true}, nil
}

// EC2Instance is a free-standing EC2 instance (launched by CreateFleet) as the admin API
// shows it, with what a node registered for it looks like.
type EC2Instance struct {
	InstanceID string `json:"instanceId"`
	// ProviderID is the Kubernetes node providerID: aws:///<zone>/<instance-id>.
	ProviderID         string            `json:"providerID"`
	InstanceType       string            `json:"instanceType"`
	AvailabilityZone   string            `json:"availabilityZone"`
	CapacityType       string            `json:"capacityType"` // on-demand or spot
	State              string            `json:"state"`
	SubnetID           string            `json:"subnetId,omitempty"`
	PrivateIPAddress   string            `json:"privateIpAddress,omitempty"`
	PrivateDNSName     string            `json:"privateDnsName,omitempty"`
	ImageID            string            `json:"imageId,omitempty"`
	LaunchTemplateName string            `json:"launchTemplateName,omitempty"`
	FleetID            string            `json:"fleetId,omitempty"`
	LaunchTime         time.Time         `json:"launchTime"`
	Tags               map[string]string `json:"tags,omitempty"`
	// Capacity and Allocatable are what a kubelet on the instance reports: its type's
	// (NodeCapacity, NodeAllocatable), e.g. {cpu: "2", memory: "7577Mi", pods: "29"} and
	// {cpu: "1930m", memory: "6903Mi", pods: "29"}, and, when launched from a template that maps
	// volumes, the ephemeral storage of the filesystem it keeps its state on, e.g.
	// ephemeral-storage "20Gi" and "17Gi".
	Capacity    map[string]string `json:"capacity,omitempty"`
	Allocatable map[string]string `json:"allocatable,omitempty"`
	// PricePerHour is what the instance costs in $/h: the type's on-demand price, or the
	// zone's spot price for spot instances.
	PricePerHour float64 `json:"pricePerHour"`
	// Architecture is the instance type's (x86_64, arm64).
	Architecture string `json:"architecture,omitempty"`
	// UserData is what the instance booted with, decoded.
	UserData string `json:"userData,omitempty"`
}

// EC2Instances lists the free-standing instances, terminated ones included while EC2 still
// shows them, ordered by id (launch order).
func (e *Emulator) EC2Instances() []EC2Instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	out := []EC2Instance{}
	for _, id := range sortedKeys(e.instances) {
		i := e.instances[id]
		x := e.xmlInstance(i, now)
		capacity, allocatable := e.kubeletResources(i)
		out = append(out, EC2Instance{
			InstanceID: i.id, ProviderID: fmt.Sprintf("aws:///%s/%s", i.zone, i.id), InstanceType: i.instanceType,
			AvailabilityZone: i.zone, CapacityType: i.capacityType, State: x.InstanceState.Name, SubnetID: i.subnetID,
			PrivateIPAddress: x.PrivateIPAddress, PrivateDNSName: x.PrivateDNSName, ImageID: i.imageID,
			LaunchTemplateName: i.launchTemplateName, FleetID: i.fleetID, LaunchTime: i.launched, Tags: maps.Clone(i.tags),
			Capacity: capacity, Allocatable: allocatable, PricePerHour: e.price(i.instanceType, i.zone, i.capacityType),
			Architecture: e.architecture(i.instanceType), UserData: i.userData,
		})
	}
	return out
}

// TerminationRequest is a TerminateInstances call the emulator answered.
type TerminationRequest struct {
	InstanceIDs []string  `json:"instanceIds"`
	Received    time.Time `json:"received"`
}

// TerminationRequests lists the TerminateInstances calls answered, in order, repeated ones
// included: a test counts how often an instance was terminated.
func (e *Emulator) TerminationRequests() []TerminationRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.terminations)
}

// TerminateEC2Instances terminates the given free-standing instances, or all of them when
// ids is empty (a drain), as TerminateInstances would.
func (e *Emulator) TerminateEC2Instances(ids []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	if len(ids) == 0 {
		ids = sortedKeys(e.instances)
	}
	instances, aerr := e.lookupInstances(ids)
	if aerr != nil {
		return fmt.Errorf("%s: %s", aerr.code, aerr.message)
	}
	for _, i := range instances {
		e.terminate(i, now)
	}
	return nil
}

// NodeCapacity is what a kubelet on an instance of the type reports as its capacity: its
// vCPUs, its memory less the hypervisor's share, and the pods the VPC CNI has addresses for;
// nil for a type the catalogue does not describe.
func (e *Emulator) NodeCapacity(instanceType string) map[string]string {
	shape, ok := e.nodeShape(instanceType)
	if !ok {
		return nil
	}
	return map[string]string{
		"cpu":    strconv.FormatInt(shape.cpuMillis/1000, 10),
		"memory": strconv.FormatInt(shape.memoryMiB, 10) + "Mi",
		"pods":   strconv.FormatInt(shape.pods, 10),
	}
}

// NodeAllocatable is what that kubelet reports allocatable, as an EKS-optimized AMI configures
// it: the capacity less kube-reserved (CPU: 6 % of the first core, 1 % of the second, 0.5 % of
// the third and fourth, 0.25 % of every other; memory: 255 MiB and 11 MiB per pod) and the hard
// eviction threshold (memory.available<100Mi); nil for a type the catalogue does not describe.
func (e *Emulator) NodeAllocatable(instanceType string) map[string]string {
	shape, ok := e.nodeShape(instanceType)
	if !ok {
		return nil
	}
	var reservedMicroCores int64 // thousandths of a millicore, so that 0.25 % of a core stays exact
	for core := range shape.cpuMillis / 1000 {
		switch {
		case core == 0:
			reservedMicroCores += 60_000
		case core == 1:
			reservedMicroCores += 10_000
		case core < 4:
			reservedMicroCores += 5_000
		default:
			reservedMicroCores += 2_500
		}
	}
	return map[string]string{
		"cpu":    strconv.FormatInt(shape.cpuMillis-reservedMicroCores/1000, 10) + "m",
		"memory": strconv.FormatInt(shape.memoryMiB-(255+11*shape.pods)-100, 10) + "Mi",
		"pods":   strconv.FormatInt(shape.pods, 10),
	}
}

// kubeletResources are what the instance's kubelet reports as its capacity and allocatable: its
// type's, and its ephemeral storage when it reports one.
func (e *Emulator) kubeletResources(i *ec2Instance) (capacity, allocatable map[string]string) {
	capacity, allocatable = e.NodeCapacity(i.instanceType), e.NodeAllocatable(i.instanceType)
	if i.ephemeralStorage != nil && capacity != nil {
		capacity["ephemeral-storage"] = i.ephemeralStorage.String()
		allocatable["ephemeral-storage"] = allocatableEphemeralStorage(*i.ephemeralStorage).String()
	}
	return capacity, allocatable
}

// architecture is the instance type's first architecture, "" for a type the catalogue does not
// describe.
func (e *Emulator) architecture(instanceType string) string {
	if info, ok := e.catalogue.Types[instanceType]; ok && len(info.Architectures) > 0 {
		return info.Architectures[0]
	}
	return ""
}

// kubeletShape is what a kubelet reports of an instance type's capacity.
type kubeletShape struct {
	cpuMillis, memoryMiB, pods int64
}

func (e *Emulator) nodeShape(instanceType string) (kubeletShape, bool) {
	info, ok := e.catalogue.Types[instanceType]
	if !ok {
		return kubeletShape{}, false
	}
	return kubeletShape{
		cpuMillis: int64(info.VCPUs) * 1000,
		// The hypervisor and firmware keep about 7.5 % of the nominal memory.
		memoryMiB: info.MemoryMiB * 925 / 1000,
		// The VPC CNI gives a pod every address of every ENI but each ENI's primary one; the
		// two host-network pods (kube-proxy, aws-node) need none.
		pods: int64(info.MaxNetworkInterfaces)*int64(info.IPv4AddressesPerInterface-1) + 2,
	}, true
}

// price is an instance's price in $/h.
func (e *Emulator) price(instanceType, zone, capacityType string) float64 {
	if capacityType == capacityTypeSpot {
		return e.spotPrice(instanceType, zone)
	}
	return e.catalogue.Prices[e.opts.Region][instanceType].OnDemand
}
