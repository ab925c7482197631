package awsemulator

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

type subnet struct {
	id, vpcID, zone, zoneID, cidr string
	availableIPs                  int32
	nextHost                      int // the next host number handed out in the CIDR
	tags                          map[string]string
}

type securityGroup struct {
	id, name, vpcID, description string
	tags                         map[string]string
}

type xmlInstanceTypeInfo struct {
	InstanceType      string `xml:"instanceType"`
	CurrentGeneration bool   `xml:"currentGeneration"`
	BareMetal         bool   `xml:"bareMetal"`
	Hypervisor        string `xml:"hypervisor,omitempty"`
	VCpuInfo          struct {
		DefaultVCpus int32 `xml:"defaultVCpus"`
	} `xml:"vCpuInfo"`
	MemoryInfo struct {
		SizeInMiB int64 `xml:"sizeInMiB"`
	} `xml:"memoryInfo"`
	ProcessorInfo struct {
		SupportedArchitectures *xmlItems[string] `xml:"supportedArchitectures"`
	} `xml:"processorInfo"`
	NetworkInfo struct {
		MaximumNetworkInterfaces  int32 `xml:"maximumNetworkInterfaces"`
		Ipv4AddressesPerInterface int32 `xml:"ipv4AddressesPerInterface"`
	} `xml:"networkInfo"`
	GpuInfo *struct {
		Gpus *xmlItems[xmlGpu] `xml:"gpus"`
	} `xml:"gpuInfo"`
	NeuronInfo *struct {
		NeuronDevices *xmlItems[xmlNeuronDevice] `xml:"neuronDevices"`
	} `xml:"neuronInfo"`
	EbsInfo                      *xmlEbsInfo             `xml:"ebsInfo"`
	InstanceStorageSupported     bool                    `xml:"instanceStorageSupported"`
	InstanceStorageInfo          *xmlInstanceStorageInfo `xml:"instanceStorageInfo"`
	SupportedUsageClasses        *xmlItems[string]       `xml:"supportedUsageClasses"`
	SupportedVirtualizationTypes *xmlItems[string]       `xml:"supportedVirtualizationTypes"`
	SupportedRootDeviceTypes     *xmlItems[string]       `xml:"supportedRootDeviceTypes"`
}

type xmlEbsInfo struct {
	MaximumEbsAttachments int32  `xml:"maximumEbsAttachments"`
	AttachmentLimitType   string `xml:"attachmentLimitType"`
}

// nitroEBSInfo is what EC2 reports for a Nitro type without a dedicated EBS limit: 28
// attachment slots shared with its network interfaces, NVMe instance-store disks and GPUs.
// Xen types report none.
var nitroEBSInfo = &xmlEbsInfo{MaximumEbsAttachments: 28, AttachmentLimitType: "shared"}

type xmlInstanceStorageInfo struct {
	TotalSizeInGB int64              `xml:"totalSizeInGB"`
	Disks         *xmlItems[xmlDisk] `xml:"disks"`
	NvmeSupport   string             `xml:"nvmeSupport"`
}

type xmlDisk struct {
	SizeInGB int64  `xml:"sizeInGB"`
	Count    int32  `xml:"count"`
	Type     string `xml:"type"`
}

// instanceStorageInfo is the type's instance store as EC2 describes it; nil without one.
func instanceStorageInfo(s *InstanceStorage) *xmlInstanceStorageInfo {
	if s == nil {
		return nil
	}
	nvme := "unsupported"
	if s.NVMe {
		nvme = "required"
	}
	return &xmlInstanceStorageInfo{
		TotalSizeInGB: s.TotalSizeInGB(),
		Disks:         items([]xmlDisk{{SizeInGB: s.DiskSizeGB, Count: s.Disks, Type: s.DiskType}}),
		NvmeSupport:   nvme,
	}
}

type xmlGpu struct {
	Count        int32  `xml:"count"`
	Manufacturer string `xml:"manufacturer,omitempty"`
}

type xmlNeuronDevice struct {
	Count int32  `xml:"count"`
	Name  string `xml:"name"`
}

// neuronDevices names AWS's own accelerators by family, as EC2 reports them in neuronInfo (not
// gpuInfo, where the catalogue keeps their count).
var neuronDevices = map[string]string{"inf1": "Inferentia", "inf2": "Inferentia2", "trn1": "Trainium", "trn1n": "Trainium", "trn2": "Trainium2"}

// describeInstanceTypes lists the region's instance types (those the catalogue prices here).
func (e *Emulator) describeInstanceTypes(q ec2Query) (any, *apiError) {
	filters, aerr := q.filters("instance-type", "current-generation", "bare-metal", "hypervisor",
		"processor-info.supported-architecture", "supported-usage-class", "supported-virtualization-type",
		"vcpu-info.default-vcpus", "memory-info.size-in-mib")
	if aerr != nil {
		return nil, aerr
	}
	wanted := q.strs("InstanceType")
	for _, t := range wanted {
		if _, ok := e.catalogue.Prices[e.opts.Region][t]; !ok {
			return nil, errEC2("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", t)
		}
	}
	var selected []InstanceTypeInfo
	for _, name := range sortedKeys(e.catalogue.Prices[e.opts.Region]) {
		t, ok := e.catalogue.Types[name]
		if !ok || (len(wanted) > 0 && !slices.Contains(wanted, name)) {
			continue
		}
		usage := e.usageClasses(name)
		if !matchFilters(filters, nil, func(f string) []string {
			switch f {
			case "instance-type":
				return []string{name}
			case "current-generation":
				return []string{"true"}
			case "bare-metal":
				return []string{strconv.FormatBool(t.BareMetal)}
			case "hypervisor":
				return []string{t.Hypervisor}
			case "processor-info.supported-architecture":
				return t.Architectures
			case "supported-usage-class":
				return usage
			case "supported-virtualization-type":
				return t.VirtualizationTypes
			case "vcpu-info.default-vcpus":
				return []string{strconv.Itoa(int(t.VCPUs))}
			default: // memory-info.size-in-mib
				return []string{strconv.FormatInt(t.MemoryMiB, 10)}
			}
		}) {
			continue
		}
		selected = append(selected, t)
	}
	selected, next, aerr := page(q, selected, func(t InstanceTypeInfo) string { return t.InstanceType }, 5, 100, 100)
	if aerr != nil {
		return nil, aerr
	}
	out := struct {
		InstanceTypeSet *xmlItems[xmlInstanceTypeInfo] `xml:"instanceTypeSet"`
		NextToken       string                         `xml:"nextToken,omitempty"`
	}{NextToken: next}
	var infos []xmlInstanceTypeInfo
	for _, t := range selected {
		x := xmlInstanceTypeInfo{InstanceType: t.InstanceType, CurrentGeneration: true, BareMetal: t.BareMetal, Hypervisor: t.Hypervisor}
		x.VCpuInfo.DefaultVCpus = t.VCPUs
		x.MemoryInfo.SizeInMiB = t.MemoryMiB
		x.ProcessorInfo.SupportedArchitectures = items(t.Architectures)
		x.NetworkInfo.MaximumNetworkInterfaces = t.MaxNetworkInterfaces
		x.NetworkInfo.Ipv4AddressesPerInterface = t.IPv4AddressesPerInterface
		family, _, _ := strings.Cut(t.InstanceType, ".")
		switch device, neuron := neuronDevices[family]; {
		case t.GPUs > 0 && neuron:
			x.NeuronInfo = &struct {
				NeuronDevices *xmlItems[xmlNeuronDevice] `xml:"neuronDevices"`
			}{NeuronDevices: items([]xmlNeuronDevice{{Count: t.GPUs, Name: device}})}
		case t.GPUs > 0:
			x.GpuInfo = &struct {
				Gpus *xmlItems[xmlGpu] `xml:"gpus"`
			}{Gpus: items([]xmlGpu{{Count: t.GPUs, Manufacturer: t.GPUManufacturer}})}
		}
		if t.Hypervisor != "xen" {
			x.EbsInfo = nitroEBSInfo
		}
		x.InstanceStorageSupported = t.InstanceStorage != nil
		x.InstanceStorageInfo = instanceStorageInfo(t.InstanceStorage)
		x.SupportedUsageClasses = items(e.usageClasses(t.InstanceType))
		x.SupportedVirtualizationTypes = items(t.VirtualizationTypes)
		x.SupportedRootDeviceTypes = items([]string{"ebs"})
		infos = append(infos, x)
	}
	out.InstanceTypeSet = items(infos)
	return out, nil
}

// usageClasses are on-demand, and spot where the region has a spot price for the type.
func (e *Emulator) usageClasses(instanceType string) []string {
	if e.catalogue.Prices[e.opts.Region][instanceType].SpotMin > 0 {
		return []string{"on-demand", "spot"}
	}
	return []string{"on-demand"}
}

type xmlInstanceTypeOffering struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

func (e *Emulator) describeInstanceTypeOfferings(q ec2Query) (any, *apiError) {
	locationType := q.str("LocationType")
	switch locationType {
	case "":
		locationType = "region"
	case "region", "availability-zone":
	default:
		return nil, errEC2InvalidParameter("Value (%s) for parameter locationType is invalid. Supported: region, availability-zone.", locationType)
	}
	filters, aerr := q.filters("instance-type", "location")
	if aerr != nil {
		return nil, aerr
	}
	var offerings []xmlInstanceTypeOffering
	for _, name := range sortedKeys(e.catalogue.Prices[e.opts.Region]) {
		if _, ok := e.catalogue.Types[name]; !ok {
			continue
		}
		locations := []string{e.opts.Region}
		if locationType == "availability-zone" {
			locations = slices.DeleteFunc(slices.Clone(e.catalogue.zones), func(z string) bool { return !e.offered(name, z) })
		}
		for _, loc := range locations {
			if matchFilters(filters, nil, func(f string) []string {
				if f == "instance-type" {
					return []string{name}
				}
				return []string{loc}
			}) {
				offerings = append(offerings, xmlInstanceTypeOffering{InstanceType: name, LocationType: locationType, Location: loc})
			}
		}
	}
	offerings, next, aerr := page(q, offerings, func(o xmlInstanceTypeOffering) string { return o.InstanceType + "/" + o.Location }, 5, 1000, 1000)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		InstanceTypeOfferingSet *xmlItems[xmlInstanceTypeOffering] `xml:"instanceTypeOfferingSet"`
		NextToken               string                             `xml:"nextToken,omitempty"`
	}{InstanceTypeOfferingSet: items(offerings), NextToken: next}, nil
}

type xmlSpotPrice struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
}

// spotProductDescriptions are the Linux products a spot price is published for.
var spotProductDescriptions = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

// describeSpotPriceHistory returns the latest price per type, zone and product: the
// emulator's spot prices do not move, so each has one record dated at the emulator's start.
func (e *Emulator) describeSpotPriceHistory(q ec2Query) (any, *apiError) {
	filters, aerr := q.filters("instance-type", "availability-zone", "product-description", "spot-price", "timestamp")
	if aerr != nil {
		return nil, aerr
	}
	end, aerr := q.time("EndTime")
	if aerr != nil {
		return nil, aerr
	}
	if _, aerr := q.time("StartTime"); aerr != nil {
		return nil, aerr
	}
	if !end.IsZero() && end.Before(e.started) {
		return struct{}{}, nil
	}
	types, products, zone := q.strs("InstanceType"), q.strs("ProductDescription"), q.str("AvailabilityZone")
	stamp := e.started.UTC().Format(time.RFC3339Nano)
	var prices []xmlSpotPrice
	for _, name := range sortedKeys(e.catalogue.Prices[e.opts.Region]) {
		if len(types) > 0 && !slices.Contains(types, name) {
			continue
		}
		for _, z := range e.catalogue.zones {
			price := e.spotPrice(name, z)
			if price == 0 || !e.offered(name, z) || (zone != "" && zone != z) {
				continue
			}
			for _, product := range spotProductDescriptions {
				if len(products) > 0 && !slices.Contains(products, product) {
					continue
				}
				p := xmlSpotPrice{AvailabilityZone: z, InstanceType: name, ProductDescription: product, SpotPrice: strconv.FormatFloat(price, 'f', 6, 64), Timestamp: stamp}
				if matchFilters(filters, nil, func(f string) []string {
					switch f {
					case "instance-type":
						return []string{name}
					case "availability-zone":
						return []string{z}
					case "product-description":
						return []string{product}
					case "spot-price":
						return []string{p.SpotPrice}
					default:
						return []string{stamp}
					}
				}) {
					prices = append(prices, p)
				}
			}
		}
	}
	prices, next, aerr := page(q, prices, func(p xmlSpotPrice) string {
		return p.InstanceType + "/" + p.AvailabilityZone + "/" + p.ProductDescription
	}, 1, 10000, 1000)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		SpotPriceHistorySet *xmlItems[xmlSpotPrice] `xml:"spotPriceHistorySet"`
		NextToken           string                  `xml:"nextToken,omitempty"`
	}{SpotPriceHistorySet: items(prices), NextToken: next}, nil
}

type xmlSubnet struct {
	SubnetID                string            `xml:"subnetId"`
	SubnetArn               string            `xml:"subnetArn"`
	VpcID                   string            `xml:"vpcId"`
	State                   string            `xml:"state"`
	AvailabilityZone        string            `xml:"availabilityZone"`
	AvailabilityZoneID      string            `xml:"availabilityZoneId"`
	CidrBlock               string            `xml:"cidrBlock"`
	AvailableIPAddressCount int32             `xml:"availableIpAddressCount"`
	DefaultForAz            bool              `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool              `xml:"mapPublicIpOnLaunch"`
	OwnerID                 string            `xml:"ownerId"`
	TagSet                  *xmlItems[ec2Tag] `xml:"tagSet"`
}

func (e *Emulator) describeSubnets(q ec2Query) (any, *apiError) {
	filters, aerr := q.filters("subnet-id", "vpc-id", "availability-zone", "availability-zone-id", "state", "cidr-block")
	if aerr != nil {
		return nil, aerr
	}
	ids := q.strs("SubnetId")
	for _, id := range ids {
		if _, ok := e.subnets[id]; !ok {
			return nil, errEC2("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	var out []xmlSubnet
	for _, id := range sortedKeys(e.subnets) {
		s := e.subnets[id]
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		if !matchFilters(filters, s.tags, func(f string) []string {
			return []string{map[string]string{"subnet-id": s.id, "vpc-id": s.vpcID, "availability-zone": s.zone, "availability-zone-id": s.zoneID, "state": "available", "cidr-block": s.cidr}[f]}
		}) {
			continue
		}
		out = append(out, xmlSubnet{
			SubnetID: s.id, SubnetArn: fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", e.opts.Region, e.opts.AccountID, s.id),
			VpcID: s.vpcID, State: "available", AvailabilityZone: s.zone, AvailabilityZoneID: s.zoneID, CidrBlock: s.cidr,
			AvailableIPAddressCount: s.availableIPs, OwnerID: e.opts.AccountID, TagSet: tagSet(s.tags),
		})
	}
	if len(ids) > 0 && q.str("MaxResults") != "" {
		return nil, errEC2InvalidParameter("The parameter SubnetIds cannot be used with the parameter MaxResults")
	}
	out, next, aerr := page(q, out, func(s xmlSubnet) string { return s.SubnetID }, 5, 1000, 0)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		SubnetSet *xmlItems[xmlSubnet] `xml:"subnetSet"`
		NextToken string               `xml:"nextToken,omitempty"`
	}{SubnetSet: items(out), NextToken: next}, nil
}

type xmlSecurityGroup struct {
	GroupID          string            `xml:"groupId"`
	GroupName        string            `xml:"groupName"`
	GroupDescription string            `xml:"groupDescription"`
	VpcID            string            `xml:"vpcId"`
	OwnerID          string            `xml:"ownerId"`
	SecurityGroupArn string            `xml:"securityGroupArn"`
	TagSet           *xmlItems[ec2Tag] `xml:"tagSet"`
}

func (e *Emulator) describeSecurityGroups(q ec2Query) (any, *apiError) {
	filters, aerr := q.filters("group-id", "group-name", "vpc-id", "description")
	if aerr != nil {
		return nil, aerr
	}
	ids, names := q.strs("GroupId"), q.strs("GroupName")
	for _, id := range ids {
		if _, ok := e.securityGroups[id]; !ok {
			return nil, errEC2("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(sortedKeys(e.securityGroups), func(id string) bool { return e.securityGroups[id].name == n }) {
			return nil, errEC2("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", n, defaultVPC)
		}
	}
	var out []xmlSecurityGroup
	for _, id := range sortedKeys(e.securityGroups) {
		g := e.securityGroups[id]
		if (len(ids) > 0 && !slices.Contains(ids, id)) || (len(names) > 0 && !slices.Contains(names, g.name)) {
			continue
		}
		if !matchFilters(filters, g.tags, func(f string) []string {
			return []string{map[string]string{"group-id": g.id, "group-name": g.name, "vpc-id": g.vpcID, "description": g.description}[f]}
		}) {
			continue
		}
		out = append(out, xmlSecurityGroup{
			GroupID: g.id, GroupName: g.name, GroupDescription: g.description, VpcID: g.vpcID, OwnerID: e.opts.AccountID,
			SecurityGroupArn: fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", e.opts.Region, e.opts.AccountID, g.id),
			TagSet:           tagSet(g.tags),
		})
	}
	out, next, aerr := page(q, out, func(g xmlSecurityGroup) string { return g.GroupID }, 5, 1000, 0)
	if aerr != nil {
		return nil, aerr
	}
	return struct {
		SecurityGroupInfo *xmlItems[xmlSecurityGroup] `xml:"securityGroupInfo"`
		NextToken         string                      `xml:"nextToken,omitempty"`
	}{SecurityGroupInfo: items(out), NextToken: next}, nil
}

// zoneIDPattern is the shape of an Availability Zone id: usw2-az1, use1-az4.
var zoneIDPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*-az[0-9]+$`)

// regionWords are how zone ids shorten a region name's words (us-west-2: usw2).
var regionWords = map[string]string{
	"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
	"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw", "gov": "g",
}

// defaultZoneID is a zone's id: AWS maps zone names to ids per account; the emulator's account
// maps the zone lettered n-th to az<n> of its region (us-west-2b: usw2-az2).
func defaultZoneID(zone string) string {
	region, letter := zone[:len(zone)-1], zone[len(zone)-1]
	var short strings.Builder
	for i, word := range strings.Split(region, "-") {
		switch abbreviation, ok := regionWords[word]; {
		case word == "":
		case i == 0:
			short.WriteString(word)
		case ok:
			short.WriteString(abbreviation)
		case word[0] >= '0' && word[0] <= '9':
			short.WriteString(word)
		default:
			short.WriteByte(word[0])
		}
	}
	return fmt.Sprintf("%s-az%d", short.String(), int(letter-'a')+1)
}

// defaultVPC is the VPC of seeded subnets and security groups that name none.
const defaultVPC = "vpc-0e0000000000000a1"

// allocateIP hands out the subnet's next address (AWS keeps the first four); ok is false
// when the subnet has no free address.
func (s *subnet) allocateIP() (string, bool) {
	if s.availableIPs <= 0 {
		return "", false
	}
	s.availableIPs--
	base, _, _ := strings.Cut(s.cidr, "/")
	octets := strings.Split(base, ".")
	host := 4 + s.nextHost
	s.nextHost++
	third, _ := strconv.Atoi(octets[2])
	return fmt.Sprintf("%s.%s.%d.%d", octets[0], octets[1], third+host/256, host%256), true
}
