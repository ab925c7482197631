package awsemulator

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	capacityTypeOnDemand = "on-demand"
	capacityTypeSpot     = "spot"
)

// FleetRequest is a CreateFleet call as the emulator received it, for tests to assert what
// went on the wire.
type FleetRequest struct {
	FleetID     string    `json:"fleetId"`
	ClientToken string    `json:"clientToken,omitempty"`
	Received    time.Time `json:"received"`
	// Replayed is true when the client token matched an earlier request, which was answered again.
	Replayed                   bool                        `json:"replayed,omitempty"`
	Type                       string                      `json:"type"`
	TotalTargetCapacity        int                         `json:"totalTargetCapacity"`
	DefaultTargetCapacityType  string                      `json:"defaultTargetCapacityType"`
	OnDemandAllocationStrategy string                      `json:"onDemandAllocationStrategy,omitempty"`
	SpotAllocationStrategy     string                      `json:"spotAllocationStrategy,omitempty"`
	LaunchTemplateConfigs      []FleetLaunchTemplateConfig `json:"launchTemplateConfigs"`
	// TagSpecifications are the tags by resource type (instance, volume, fleet, …).
	TagSpecifications map[string]map[string]string `json:"tagSpecifications,omitempty"`
	InstanceIDs       []string                     `json:"instanceIds,omitempty"`
	// ErrorCodes are the codes of the response's Errors, in order.
	ErrorCodes []string `json:"errorCodes,omitempty"`
}

// FleetLaunchTemplateConfig is one of CreateFleet's LaunchTemplateConfigs.
type FleetLaunchTemplateConfig struct {
	LaunchTemplateID   string          `json:"launchTemplateId,omitempty"`
	LaunchTemplateName string          `json:"launchTemplateName,omitempty"`
	Version            string          `json:"version,omitempty"`
	Overrides          []FleetOverride `json:"overrides,omitempty"`
}

// FleetOverride is one override: a pool of one instance type in one subnet or zone.
type FleetOverride struct {
	InstanceType     string   `json:"instanceType,omitempty"`
	SubnetID         string   `json:"subnetId,omitempty"`
	AvailabilityZone string   `json:"availabilityZone,omitempty"`
	Priority         *float64 `json:"priority,omitempty"`
	ImageID          string   `json:"imageId,omitempty"`
	MaxPrice         string   `json:"maxPrice,omitempty"`
}

// fleet is what answering a CreateFleet left behind, kept by client token for replays.
type fleet struct {
	id       string
	response any
	// parameters are the request's, bar its token: a replay must repeat them.
	parameters string
}

// parameters is a request's identity for its client token, as EC2 compares a replay with the
// first request: everything but the token and what the emulator records of the answer.
func (r FleetRequest) parameters() string {
	r.FleetID, r.ClientToken, r.Received, r.Replayed, r.InstanceIDs, r.ErrorCodes = "", "", time.Time{}, false, nil, nil
	out, err := json.Marshal(r) //nolint:gosec // G117: the client token is cleared above; nothing secret is encoded.
	if err != nil {
		panic(fmt.Sprintf("encoding a fleet request, %v", err))
	}
	return string(out)
}

// pool is one launch template and override: where a fleet may launch.
type pool struct {
	config   FleetLaunchTemplateConfig
	override FleetOverride
	template *launchTemplate
	subnet   *subnet
	zone     string
	price    float64
	// profile is the IAM instance profile the template names, if any.
	profile *iamInstanceProfile
	// err is why the pool cannot launch; checked in order of preference.
	err *apiError
}

type xmlLaunchTemplateAndOverrides struct {
	LaunchTemplateSpecification struct {
		LaunchTemplateID   string `xml:"launchTemplateId,omitempty"`
		LaunchTemplateName string `xml:"launchTemplateName,omitempty"`
		Version            string `xml:"version,omitempty"`
	} `xml:"launchTemplateSpecification"`
	Overrides struct {
		InstanceType     string `xml:"instanceType,omitempty"`
		SubnetID         string `xml:"subnetId,omitempty"`
		AvailabilityZone string `xml:"availabilityZone,omitempty"`
		Priority         string `xml:"priority,omitempty"`
		ImageID          string `xml:"imageId,omitempty"`
		MaxPrice         string `xml:"maxPrice,omitempty"`
	} `xml:"overrides"`
}

func (p *pool) xml() xmlLaunchTemplateAndOverrides {
	var x xmlLaunchTemplateAndOverrides
	spec := &x.LaunchTemplateSpecification
	spec.LaunchTemplateID, spec.LaunchTemplateName, spec.Version = p.config.LaunchTemplateID, p.config.LaunchTemplateName, p.config.Version
	if p.template != nil {
		spec.LaunchTemplateID, spec.LaunchTemplateName = p.template.id, p.template.name
	}
	o := &x.Overrides
	o.InstanceType, o.SubnetID, o.AvailabilityZone, o.ImageID, o.MaxPrice = p.override.InstanceType, p.override.SubnetID, p.override.AvailabilityZone, p.override.ImageID, p.override.MaxPrice
	if p.override.Priority != nil {
		o.Priority = strconv.FormatFloat(*p.override.Priority, 'f', -1, 64)
	}
	return x
}

type xmlCreateFleetError struct {
	LaunchTemplateAndOverrides xmlLaunchTemplateAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string                        `xml:"lifecycle"`
	ErrorCode                  string                        `xml:"errorCode"`
	ErrorMessage               string                        `xml:"errorMessage"`
}

type xmlCreateFleetInstance struct {
	LaunchTemplateAndOverrides xmlLaunchTemplateAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string                        `xml:"lifecycle"`
	InstanceIDs                *xmlItems[string]             `xml:"instanceIds"`
	InstanceType               string                        `xml:"instanceType"`
}

type xmlCreateFleetResponse struct {
	FleetID          string                            `xml:"fleetId"`
	ErrorSet         *xmlItems[xmlCreateFleetError]    `xml:"errorSet"`
	FleetInstanceSet *xmlItems[xmlCreateFleetInstance] `xml:"fleetInstanceSet"`
}

func parseFleetRequest(q ec2Query) (FleetRequest, *apiError) {
	r := FleetRequest{
		ClientToken: q.str("ClientToken"), Type: orDefault(q.str("Type"), "maintain"),
		DefaultTargetCapacityType:  q.sub("TargetCapacitySpecification").str("DefaultTargetCapacityType"),
		OnDemandAllocationStrategy: q.sub("OnDemandOptions").str("AllocationStrategy"),
		SpotAllocationStrategy:     q.sub("SpotOptions").str("AllocationStrategy"),
		TagSpecifications:          q.tagSpecifications(),
	}
	total, aerr := q.sub("TargetCapacitySpecification").int("TotalTargetCapacity", -1)
	if aerr != nil {
		return r, aerr
	}
	r.TotalTargetCapacity = total
	for _, c := range q.list("LaunchTemplateConfigs") {
		spec := c.sub("LaunchTemplateSpecification")
		config := FleetLaunchTemplateConfig{LaunchTemplateID: spec.str("LaunchTemplateId"), LaunchTemplateName: spec.str("LaunchTemplateName"), Version: spec.str("Version")}
		for _, o := range c.list("Overrides") {
			override := FleetOverride{InstanceType: o.str("InstanceType"), SubnetID: o.str("SubnetId"), AvailabilityZone: o.str("AvailabilityZone"), ImageID: o.str("ImageId"), MaxPrice: o.str("MaxPrice")}
			if v := o.str("Priority"); v != "" {
				p, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return r, errEC2InvalidParameter("Value (%s) for parameter priority is invalid.", v)
				}
				override.Priority = &p
			}
			config.Overrides = append(config.Overrides, override)
		}
		r.LaunchTemplateConfigs = append(r.LaunchTemplateConfigs, config)
	}
	return r, nil
}

func validateFleetRequest(r FleetRequest) *apiError {
	switch {
	case r.Type != "instant":
		return errEC2InvalidParameter("The emulator serves only fleets of type instant, not %q.", r.Type)
	case r.TotalTargetCapacity < 1:
		return errEC2("MissingParameter", "The request must contain the parameter TargetCapacitySpecification.TotalTargetCapacity (at least 1)")
	case r.DefaultTargetCapacityType != capacityTypeOnDemand && r.DefaultTargetCapacityType != capacityTypeSpot:
		return errEC2InvalidParameter("Value (%s) for parameter DefaultTargetCapacityType is invalid. Expected on-demand or spot.", r.DefaultTargetCapacityType)
	case len(r.LaunchTemplateConfigs) == 0:
		return errEC2("MissingParameter", "The request must contain the parameter LaunchTemplateConfigs")
	case !slices.Contains([]string{"", "lowest-price", "prioritized"}, r.OnDemandAllocationStrategy):
		return errEC2InvalidParameter("Value (%s) for parameter OnDemandOptions.AllocationStrategy is invalid.", r.OnDemandAllocationStrategy)
	case !slices.Contains([]string{"", "lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized"}, r.SpotAllocationStrategy):
		return errEC2InvalidParameter("Value (%s) for parameter SpotOptions.AllocationStrategy is invalid.", r.SpotAllocationStrategy)
	}
	return nil
}

// createFleet launches an instant fleet: it ranks the pools by the allocation strategy and
// launches everything it can in the best pool that has capacity, moving to the next pool
// when one fails; each failed pool is reported in Errors as EC2 does. A repeated client
// token answers the first response again and launches nothing.
func (e *Emulator) createFleet(q ec2Query, now time.Time) (any, *apiError) {
	r, aerr := parseFleetRequest(q)
	if aerr != nil {
		return nil, aerr
	}
	r.Received = now
	if f, ok := e.fleets[r.ClientToken]; ok && r.ClientToken != "" {
		if f.parameters != r.parameters() {
			// EC2 answers a token used again with other parameters so, and launches nothing.
			return nil, &apiError{status: http.StatusBadRequest, code: "IdempotentParameterMismatch",
				message: "Arguments on this idempotent request are inconsistent with arguments used in previous request(s)."}
		}
		r.FleetID, r.Replayed = f.id, true
		e.fleetRequests = append(e.fleetRequests, r)
		return f.response, nil
	}
	if aerr := validateFleetRequest(r); aerr != nil {
		return nil, aerr
	}
	r.FleetID = "fleet-" + e.newID()
	capacityType := r.DefaultTargetCapacityType
	pools := e.fleetPools(r, capacityType)

	resp := xmlCreateFleetResponse{FleetID: r.FleetID}
	var errs []xmlCreateFleetError
	var launched []xmlCreateFleetInstance
	reservationID := e.newResourceID("r")
	remaining := r.TotalTargetCapacity
	for _, p := range pools {
		if remaining == 0 {
			break
		}
		if p.err == nil {
			p.err = e.takeCapacityFault(p.override.InstanceType, p.zone, capacityType)
		}
		var ids []string
		for p.err == nil && remaining > 0 {
			i, aerr := e.launch(r, p, capacityType, reservationID, now)
			if aerr != nil {
				p.err = aerr
				break
			}
			ids = append(ids, i.id)
			remaining--
		}
		if len(ids) > 0 {
			launched = append(launched, xmlCreateFleetInstance{LaunchTemplateAndOverrides: p.xml(), Lifecycle: capacityType, InstanceIDs: items(ids), InstanceType: p.override.InstanceType})
			r.InstanceIDs = append(r.InstanceIDs, ids...)
		}
		if p.err != nil {
			errs = append(errs, xmlCreateFleetError{LaunchTemplateAndOverrides: p.xml(), Lifecycle: capacityType, ErrorCode: p.err.code, ErrorMessage: p.err.message})
			r.ErrorCodes = append(r.ErrorCodes, p.err.code)
		}
	}
	resp.ErrorSet, resp.FleetInstanceSet = items(errs), items(launched)
	if r.ClientToken != "" {
		e.fleets[r.ClientToken] = &fleet{id: r.FleetID, response: resp, parameters: r.parameters()}
	}
	e.fleetRequests = append(e.fleetRequests, r)
	return resp, nil
}

// fleetPools resolves every override into a pool and orders the pools as the allocation
// strategy prefers them; pools that cannot launch keep their error and go last.
func (e *Emulator) fleetPools(r FleetRequest, capacityType string) []*pool {
	var pools []*pool
	for _, c := range r.LaunchTemplateConfigs {
		overrides := c.Overrides
		if len(overrides) == 0 {
			overrides = []FleetOverride{{}}
		}
		for _, o := range overrides {
			pools = append(pools, e.resolvePool(c, o, capacityType))
		}
	}
	strategy := r.OnDemandAllocationStrategy
	if capacityType == capacityTypeSpot {
		strategy = r.SpotAllocationStrategy
	}
	// The emulator knows no spare capacity, so the capacity-aware spot strategies choose by
	// price as price-capacity-optimized does when capacity is plentiful. EC2 documents no order
	// among pools of one price (or priority): the emulator keeps the request's.
	byPriority := strategy == "prioritized" || strategy == "capacity-optimized-prioritized"
	slices.SortStableFunc(pools, func(a, b *pool) int {
		if (a.err == nil) != (b.err == nil) {
			if a.err == nil {
				return -1
			}
			return 1
		}
		if byPriority {
			return cmp.Compare(priorityOf(a), priorityOf(b))
		}
		return cmp.Compare(a.price, b.price)
	})
	return pools
}

// priorityOf ranks overrides without a priority last, as EC2 does.
func priorityOf(p *pool) float64 {
	if p.override.Priority == nil {
		return float64(1 << 30)
	}
	return *p.override.Priority
}

// resolvePool finds the template, instance type, subnet and zone of an override, and why
// it cannot launch if it cannot.
func (e *Emulator) resolvePool(c FleetLaunchTemplateConfig, o FleetOverride, capacityType string) *pool {
	p := &pool{config: c, override: o}
	lt, aerr := e.lookupLaunchTemplate(c.LaunchTemplateID, c.LaunchTemplateName)
	if aerr != nil {
		p.err = aerr
		return p
	}
	p.template = lt
	if p.override.InstanceType == "" {
		p.override.InstanceType = lt.data.InstanceType
	}
	if p.override.ImageID == "" {
		p.override.ImageID = lt.data.ImageID
	}
	p.err = e.checkPool(p, capacityType)
	return p
}

func (e *Emulator) checkPool(p *pool, capacityType string) *apiError {
	instanceType := p.override.InstanceType
	if instanceType == "" {
		return errEC2("MissingParameter", "The request must contain the parameter InstanceType")
	}
	price, ok := e.catalogue.Prices[e.opts.Region][instanceType]
	if _, known := e.catalogue.Types[instanceType]; !ok || !known {
		return errEC2InvalidParameter("The instance type '%s' is not supported in this region.", instanceType)
	}
	switch {
	case p.override.SubnetID != "":
		s, ok := e.subnets[p.override.SubnetID]
		if !ok {
			return errEC2("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", p.override.SubnetID)
		}
		if p.override.AvailabilityZone != "" && p.override.AvailabilityZone != s.zone {
			return errEC2InvalidParameter("The subnet %s is in %s, not in the requested Availability Zone %s.", s.id, s.zone, p.override.AvailabilityZone)
		}
		p.subnet, p.zone = s, s.zone
	case p.override.AvailabilityZone != "":
		p.zone = p.override.AvailabilityZone
		for _, id := range sortedKeys(e.subnets) {
			if e.subnets[id].zone == p.zone {
				p.subnet = e.subnets[id]
				break
			}
		}
		if p.subnet == nil {
			return errEC2("VPCIdNotSpecified", "No default VPC for this user. GroupName is only supported for EC2-Classic and default VPC.")
		}
	default:
		return errEC2("VPCIdNotSpecified", "No default VPC for this user. GroupName is only supported for EC2-Classic and default VPC.")
	}
	p.price = price.OnDemand
	if capacityType == capacityTypeSpot {
		p.price = e.spotPrice(instanceType, p.zone)
	}
	if !e.offered(instanceType, p.zone) {
		var elsewhere []string
		for _, z := range e.catalogue.zones {
			if e.offered(instanceType, z) {
				elsewhere = append(elsewhere, z)
			}
		}
		return errEC2("Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.", instanceType, p.zone, strings.Join(elsewhere, ", "))
	}
	if capacityType == capacityTypeSpot && p.price == 0 {
		return errEC2("Unsupported", "The requested instance type (%s) is not supported for Spot Instances in %s.", instanceType, p.zone)
	}
	if p.override.ImageID == "" {
		return errEC2("MissingParameter", "The request must contain the parameter ImageId")
	}
	if aerr := e.checkImage(p.override.ImageID); aerr != nil {
		return aerr
	}
	if d := p.template.data; d.IAMInstanceProfileName != "" || d.IAMInstanceProfileARN != "" {
		profile, aerr := e.instanceProfileForLaunch(d.IAMInstanceProfileName, d.IAMInstanceProfileARN)
		if aerr != nil {
			return aerr
		}
		p.profile = profile
	}
	for _, id := range p.template.data.securityGroups() {
		if _, ok := e.securityGroups[id]; !ok {
			return errEC2("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	return nil
}

// launch starts one instance in a pool; the caller holds e.mu.
func (e *Emulator) launch(r FleetRequest, p *pool, capacityType, reservationID string, now time.Time) (*ec2Instance, *apiError) {
	ip, ok := p.subnet.allocateIP()
	if !ok {
		return nil, errEC2("InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", p.subnet.id)
	}
	tags := map[string]string{}
	maps.Copy(tags, p.template.data.TagSpecifications["instance"])
	maps.Copy(tags, r.TagSpecifications["instance"])
	// EC2 tags what a fleet launches with the fleet and the template.
	tags["aws:ec2:fleet-id"] = r.FleetID
	tags["aws:ec2launchtemplate:id"] = p.template.id
	tags["aws:ec2launchtemplate:version"] = "1"
	i := &ec2Instance{
		id: e.newInstanceID(), instanceType: p.override.InstanceType, zone: p.zone, capacityType: capacityType,
		subnetID: p.subnet.id, vpcID: p.subnet.vpcID, privateIP: ip, imageID: p.override.ImageID,
		fleetID: r.FleetID, reservationID: reservationID, launchTemplateID: p.template.id, launchTemplateName: p.template.name,
		securityGroupIDs: slices.Clone(p.template.data.securityGroups()),
		userData:         p.template.data.DecodedUserData,
		ephemeralStorage: e.ephemeralStorage(p.override.InstanceType, e.images[p.override.ImageID], p.template.data),
		launched:         now, tags: tags,
	}
	if p.profile != nil {
		i.instanceProfileARN, i.instanceProfileID = p.profile.arn, p.profile.id
	}
	e.instances[i.id] = i
	return i, nil
}

// FleetRequests lists the CreateFleet calls received, in order.
func (e *Emulator) FleetRequests() []FleetRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.fleetRequests)
}

// newResourceID returns an EC2-shaped id (lt-0123456789abcdef0); the caller holds e.mu.
func (e *Emulator) newResourceID(prefix string) string {
	e.nextID++
	return fmt.Sprintf("%s-%017x", prefix, e.nextID)
}
