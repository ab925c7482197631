// Command catalogue writes the AWS emulator's instance-type catalogue (types, prices and the
// zones that offer each type) and the controller's fallback prices from
// github.com/cristim/ec2-instances-info (the ec2instances.info dataset), so the large dataset
// stays out of the product's module and binaries:
//
//	go run . -catalogue ../../test/awsemulator/catalogue -pricing ../../pkg/providers/pricing/zz_generated.pricing.go
//
// `make catalogue` runs it; refresh by bumping the data package in this module's go.mod first.
package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	ec2instancesinfo "github.com/LeanerCloud/ec2-instances-info"
)

// regions are the regions the catalogue carries prices for; a type is kept when it has a
// Linux on-demand price in at least one of them.
var regions = []string{"eu-west-1", "us-east-1", "us-west-2"}

// zoneCounts are how many zones the emulator gives each region (test/awsemulator's defaultZones).
var zoneCounts = map[string]int{"eu-west-1": 3, "us-east-1": 6, "us-west-2": 4}

// xenFamilies are the current-generation families that still run on the Xen hypervisor; the
// dataset does not say, and every other virtualized current-generation type runs on Nitro.
var xenFamilies = []string{"c4", "d2", "f1", "g3", "g3s", "h1", "i3", "m4", "p2", "p3", "r4", "t2", "x1", "x1e"}

func main() {
	catalogueDir := flag.String("catalogue", "", "directory for the emulator's types.csv and prices.csv")
	pricingFile := flag.String("pricing", "", "Go file for the controller's fallback prices (package pricing)")
	flag.Parse()
	if *catalogueDir == "" || *pricingFile == "" {
		log.Fatal("both -catalogue and -pricing are required")
	}
	data, err := ec2instancesinfo.Data()
	if err != nil {
		log.Fatalf("loading the instance data, %v", err)
	}
	types := selectTypes(*data)
	zones, err := readZones()
	if err != nil {
		log.Fatal(err)
	}
	if err := writeCatalogue(*catalogueDir, types); err != nil {
		log.Fatal(err)
	}
	if err := writeOfferings(filepath.Join(*catalogueDir, "offerings.csv"), types, zones); err != nil {
		log.Fatal(err)
	}
	if err := writePricing(*pricingFile, types); err != nil {
		log.Fatal(err)
	}
}

func selectTypes(data ec2instancesinfo.InstanceData) []ec2instancesinfo.EC2Instance {
	var out []ec2instancesinfo.EC2Instance
	for _, t := range data {
		// Mac instances run only on dedicated hosts, which no fleet launches.
		if t.Generation != "current" || slices.ContainsFunc(t.Arch, func(a string) bool { return strings.HasSuffix(a, "_mac") }) {
			continue
		}
		if slices.ContainsFunc(regions, func(r string) bool { return t.Pricing[r].Linux.OnDemand > 0 }) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b ec2instancesinfo.EC2Instance) int { return strings.Compare(a.InstanceType, b.InstanceType) })
	return out
}

func writeCatalogue(dir string, types []ec2instancesinfo.EC2Instance) error {
	rows := [][]string{{"instanceType", "vcpus", "memoryMiB", "architectures", "virtualizationTypes",
		"maxNetworkInterfaces", "ipv4AddressesPerInterface", "gpus", "gpuManufacturer", "bareMetal", "hypervisor",
		"instanceStorageDisks", "instanceStorageDiskSizeGB", "instanceStorageDiskType", "instanceStorageNVMe"}}
	for _, t := range types {
		family, _, _ := strings.Cut(t.InstanceType, ".")
		metal := strings.Contains(t.InstanceType, "metal")
		hypervisor := "nitro"
		switch {
		case metal:
			hypervisor = ""
		case slices.Contains(xenFamilies, family):
			hypervisor = "xen"
		}
		gpuManufacturer := ""
		if t.GPU > 0 {
			gpuManufacturer = gpuManufacturerOf(family)
		}
		rows = append(rows, append([]string{
			t.InstanceType, strconv.Itoa(t.VCPU), strconv.Itoa(int(math.Round(float64(t.Memory) * 1024))),
			strings.Join(t.Arch, ";"), strings.Join(virtualizationTypes(t.LinuxVirtualizationTypes), ";"),
			strconv.Itoa(t.VPC.MaxENIs), strconv.Itoa(t.VPC.IPsPerENI), strconv.Itoa(t.GPU), gpuManufacturer,
			strconv.FormatBool(metal), hypervisor,
		}, instanceStorage(t.Storage)...))
	}
	if err := writeCSV(filepath.Join(dir, "types.csv"), rows); err != nil {
		return err
	}
	prices := [][]string{{"region", "instanceType", "onDemand", "spotMin", "spotMax"}}
	for _, r := range regions {
		for _, t := range types {
			p := t.Pricing[r].Linux
			if p.OnDemand == 0 {
				continue
			}
			prices = append(prices, []string{r, t.InstanceType, price(p.OnDemand), price(p.SpotMin), price(p.SpotMax)})
		}
	}
	return writeCSV(filepath.Join(dir, "prices.csv"), prices)
}

// instanceStorage is the type's instance-store columns: how many disks, each one's size in GB,
// ssd or hdd, and whether they are NVMe devices (the dataset's nvme_ssd, true also for d3's
// NVMe hard disks); empty for a type without instance store.
func instanceStorage(s *ec2instancesinfo.StorageConfiguration) []string {
	if s == nil || s.Devices == 0 {
		return []string{"", "", "", ""}
	}
	diskType := "hdd"
	if s.SSD {
		diskType = "ssd"
	}
	return []string{strconv.Itoa(s.Devices), strconv.Itoa(int(math.Round(float64(s.Size)))), diskType, strconv.FormatBool(s.NVMeSSD)}
}

// readZones reads which zones of each region offer each type, which the package's loaded
// form leaves out, from the package's own copy of the dataset.
func readZones() (map[string]map[string][]string, error) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/LeanerCloud/ec2-instances-info").Output()
	if err != nil {
		return nil, fmt.Errorf("locating the data package, %w", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "data", "instances.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the dataset, %w", err)
	}
	var raw []struct {
		InstanceType      string              `json:"instance_type"`
		AvailabilityZones map[string][]string `json:"availability_zones"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("decoding the dataset, %w", err)
	}
	zones := map[string]map[string][]string{}
	for _, t := range raw {
		zones[t.InstanceType] = t.AvailabilityZones
	}
	return zones, nil
}

// writeOfferings lists, per region, the types offered in only some of its zones. The dataset
// names zones by id (usw2-az2); the catalogue names zone id azN as the region's N-th zone
// (us-west-2b), the mapping of an account whose zone names follow the ids. A type the
// dataset gives no zones for is offered in every zone.
func writeOfferings(path string, types []ec2instancesinfo.EC2Instance, zones map[string]map[string][]string) error {
	rows := [][]string{{"region", "instanceType", "zones"}}
	for _, r := range regions {
		for _, t := range types {
			ids, ok := zones[t.InstanceType][r]
			if t.Pricing[r].Linux.OnDemand == 0 || !ok {
				continue
			}
			var names []string
			for _, id := range ids {
				_, n, found := strings.Cut(id, "-az")
				index, err := strconv.Atoi(n)
				if !found || err != nil || index < 1 || index > zoneCounts[r] {
					return fmt.Errorf("%s in %s: unexpected zone id %q", t.InstanceType, r, id)
				}
				names = append(names, r+string(rune('a'+index-1)))
			}
			slices.Sort(names)
			if len(names) < zoneCounts[r] {
				rows = append(rows, []string{r, t.InstanceType, strings.Join(names, ";")})
			}
		}
	}
	return writeCSV(path, rows)
}

// virtualizationTypes spells the dataset's virtualization types as EC2's API does; bare
// metal types, for which the dataset lists none, report hvm as EC2 does.
func virtualizationTypes(dataset []string) []string {
	out := []string{}
	for _, v := range dataset {
		switch v {
		case "HVM":
			out = append(out, "hvm")
		case "PV":
			out = append(out, "paravirtual")
		}
	}
	if len(out) == 0 {
		out = append(out, "hvm")
	}
	return out
}

// gpuManufacturerOf names the accelerator maker by family, which the dataset's loaded form
// does not carry.
func gpuManufacturerOf(family string) string {
	switch {
	case strings.HasPrefix(family, "g4ad"), family == "g4a":
		return "AMD"
	case strings.HasPrefix(family, "inf"), strings.HasPrefix(family, "trn"):
		return "AWS"
	case strings.HasPrefix(family, "f"), strings.HasPrefix(family, "vt"):
		return "Xilinx"
	default:
		return "NVIDIA"
	}
}

func price(p float64) string {
	if p == 0 {
		return ""
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

func writeCSV(path string, rows [][]string) error {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.WriteAll(rows); err != nil {
		return fmt.Errorf("encoding %s, %w", path, err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil { //nolint:gosec // G306: a checked-in source file.
		return fmt.Errorf("writing %s, %w", path, err)
	}
	return nil
}

func writePricing(path string, types []ec2instancesinfo.EC2Instance) error {
	var b bytes.Buffer
	b.WriteString(`// Code generated by hack/catalogue (make catalogue) from github.com/cristim/ec2-instances-info. DO NOT EDIT.

package pricing

// fallbackPrice is an instance type's Linux price in $/h in a region: on demand, and the
// lowest spot price across the region's zones (0 when the dataset has none).
type fallbackPrice struct{ OnDemand, Spot float64 }

// fallbackPrices are the prices by region and instance type used while the Pricing and
// spot price history APIs cannot be reached.
var fallbackPrices = map[string]map[string]fallbackPrice{
`)
	for _, r := range regions {
		fmt.Fprintf(&b, "%q: {\n", r)
		for _, t := range types {
			p := t.Pricing[r].Linux
			if p.OnDemand == 0 {
				continue
			}
			fmt.Fprintf(&b, "%q: {OnDemand: %s, Spot: %s},\n", t.InstanceType,
				strconv.FormatFloat(p.OnDemand, 'f', -1, 64), strconv.FormatFloat(p.SpotMin, 'f', -1, 64))
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return fmt.Errorf("formatting %s, %w", path, err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil { //nolint:gosec // G306: a checked-in source file.
		return fmt.Errorf("writing %s, %w", path, err)
	}
	return nil
}
