package awsemulator

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

func (e *Emulator) validateSeedEC2(s Seed) error {
	if err := e.validateSeedVPC(s); err != nil {
		return err
	}
	for name := range s.SSMParameters {
		if !strings.HasPrefix(name, "/") {
			return fmt.Errorf("ssmParameters: %q is not a parameter path (it starts with /)", name)
		}
	}
	if s.Catalogue != nil {
		return e.validateSeedCatalogue(*s.Catalogue)
	}
	return nil
}

func (e *Emulator) validateSeedVPC(s Seed) error {
	seen := map[string]bool{}
	zoneIDs := map[string]string{} // by zone, of the subnets there are and those seeded
	for _, id := range sortedKeys(e.subnets) {
		zoneIDs[e.subnets[id].zone] = e.subnets[id].zoneID
	}
	for _, sn := range s.Subnets {
		switch {
		case sn.ID == "" || sn.AvailabilityZone == "":
			return fmt.Errorf("subnets: id and availabilityZone are required (%q)", sn.ID)
		case e.subnets[sn.ID] != nil || seen[sn.ID]:
			return fmt.Errorf("subnet %q already exists", sn.ID)
		case sn.AvailabilityZoneID != "" && !zoneIDPattern.MatchString(sn.AvailabilityZoneID):
			return fmt.Errorf("subnet %q: availabilityZoneId %q is not a zone id (like usw2-az1)", sn.ID, sn.AvailabilityZoneID)
		}
		zoneID := orDefault(sn.AvailabilityZoneID, defaultZoneID(sn.AvailabilityZone))
		if other, ok := zoneIDs[sn.AvailabilityZone]; ok && other != zoneID {
			return fmt.Errorf("subnet %q: zone %s has the id %s, not %s", sn.ID, sn.AvailabilityZone, other, zoneID)
		}
		zoneIDs[sn.AvailabilityZone] = zoneID
		if sn.CIDRBlock != "" {
			if p, err := netip.ParsePrefix(sn.CIDRBlock); err != nil || !p.Addr().Is4() || p.Bits() > 28 {
				return fmt.Errorf("subnet %q: cidrBlock %q is not an IPv4 block of /28 or larger", sn.ID, sn.CIDRBlock)
			}
		}
		seen[sn.ID] = true
	}
	for _, g := range s.SecurityGroups {
		switch {
		case g.ID == "" || g.Name == "":
			return fmt.Errorf("securityGroups: id and name are required (%q)", g.ID)
		case e.securityGroups[g.ID] != nil || seen[g.ID]:
			return fmt.Errorf("security group %q already exists", g.ID)
		}
		seen[g.ID] = true
	}
	return nil
}

func (e *Emulator) validateSeedCatalogue(c SeedCatalogue) error {
	known := func(t string) bool {
		_, ok := e.catalogue.Types[t]
		return ok || slices.ContainsFunc(c.Types, func(i InstanceTypeInfo) bool { return i.InstanceType == t })
	}
	for _, t := range c.InstanceTypes {
		if !known(t) {
			return fmt.Errorf("catalogue.instanceTypes: unknown instance type %q", t)
		}
	}
	for t, p := range c.Prices {
		if !known(t) || p.OnDemand <= 0 || p.SpotMax < p.SpotMin {
			return fmt.Errorf("catalogue.prices: %q needs a known type, onDemand > 0 and spotMin <= spotMax", t)
		}
	}
	for _, t := range c.Types {
		if t.InstanceType == "" || t.VCPUs <= 0 || t.MemoryMiB <= 0 || len(t.Architectures) == 0 {
			return fmt.Errorf("catalogue.types: %q needs instanceType, vcpus, memoryMiB and architectures", t.InstanceType)
		}
		if s := t.InstanceStorage; s != nil && (s.Disks <= 0 || s.DiskSizeGB <= 0 || (s.DiskType != "ssd" && s.DiskType != "hdd")) {
			return fmt.Errorf("catalogue.types: %q instanceStorage needs disks > 0, diskSizeGB > 0 and diskType ssd or hdd", t.InstanceType)
		}
	}
	zones := c.Zones
	if len(zones) == 0 {
		zones = e.catalogue.zones
	}
	for t, zs := range c.Offerings {
		if !known(t) {
			return fmt.Errorf("catalogue.offerings: unknown instance type %q", t)
		}
		for _, z := range zs {
			if !slices.Contains(zones, z) {
				return fmt.Errorf("catalogue.offerings: %s is offered in %q, which is not a zone of the region %v", t, z, zones)
			}
		}
	}
	return nil
}

// seedEC2 adds the seed's VPC resources and catalogue overrides; the caller holds e.mu and
// has validated the seed.
func (e *Emulator) seedEC2(s Seed) {
	for _, sn := range s.Subnets {
		cidr := sn.CIDRBlock
		if cidr == "" {
			cidr = fmt.Sprintf("10.0.%d.0/24", len(e.subnets)+1)
		}
		prefix := netip.MustParsePrefix(cidr)
		available := int32(1)<<(32-prefix.Bits()) - 5
		if sn.AvailableIPAddressCount != nil {
			available = *sn.AvailableIPAddressCount
		}
		e.subnets[sn.ID] = &subnet{
			id: sn.ID, vpcID: orDefault(sn.VPCID, defaultVPC), zone: sn.AvailabilityZone, cidr: prefix.Masked().String(),
			zoneID:       orDefault(sn.AvailabilityZoneID, defaultZoneID(sn.AvailabilityZone)),
			availableIPs: available, tags: maps.Clone(sn.Tags),
		}
	}
	maps.Copy(e.ssmParameters, s.SSMParameters)
	for _, g := range s.SecurityGroups {
		e.securityGroups[g.ID] = &securityGroup{id: g.ID, name: g.Name, description: orDefault(g.Description, g.Name), vpcID: orDefault(g.VPCID, defaultVPC), tags: maps.Clone(g.Tags)}
	}
	if c := s.Catalogue; c != nil {
		for _, t := range c.Types {
			e.catalogue.Types[t.InstanceType] = t
		}
		region := e.catalogue.Prices[e.opts.Region]
		if region == nil {
			region = map[string]Price{}
			e.catalogue.Prices[e.opts.Region] = region
		}
		maps.Copy(region, c.Prices)
		if len(c.InstanceTypes) > 0 {
			maps.DeleteFunc(region, func(t string, _ Price) bool { return !slices.Contains(c.InstanceTypes, t) })
		}
		if len(c.Zones) > 0 {
			e.catalogue.zones = slices.Clone(c.Zones)
		}
		for t, zs := range c.Offerings {
			e.catalogue.offerings[t] = slices.Clone(zs)
		}
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
