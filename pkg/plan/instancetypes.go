package plan

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// InstanceTypesFile is the format of --instance-types, which --dump-instance-types writes:
// the instance types and offerings the cloud provider lists, for planning offline.
type InstanceTypesFile struct {
	InstanceTypes []InstanceType `json:"instanceTypes"`
}

// InstanceType is one cloudprovider.InstanceType.
type InstanceType struct {
	Name string `json:"name"`
	// Labels the node carries whatever the offering, such as kubernetes.io/arch.
	Labels map[string]string `json:"labels,omitempty"`
	// Capacity is what the node reports; Overhead is reserved for the system and the kubelet.
	Capacity  corev1.ResourceList `json:"capacity"`
	Overhead  corev1.ResourceList `json:"overhead,omitempty"`
	Offerings []Offering          `json:"offerings"`
}

// Offering is one zone and capacity type the type is sold in, at a price per hour in US
// dollars. Available false is an offering the cloud recently had no capacity for; unset is
// available.
type Offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    *bool   `json:"available,omitempty"`
}

// DumpInstanceTypes is the file of the instance types.
func DumpInstanceTypes(types []*cloudprovider.InstanceType) InstanceTypesFile {
	file := InstanceTypesFile{InstanceTypes: []InstanceType{}}
	for _, it := range types {
		out := InstanceType{Name: it.Name, Labels: it.Labels, Capacity: it.Capacity, Overhead: it.Overhead}
		for _, o := range it.Offerings {
			offering := Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price}
			if !o.Available {
				offering.Available = &o.Available
			}
			out.Offerings = append(out.Offerings, offering)
		}
		file.InstanceTypes = append(file.InstanceTypes, out)
	}
	return file
}

// InstanceTypes are the instance types of a file, for every Provisioner alike: the scheduler
// keeps those a Provisioner's requirements allow. The provider block's own selections (such
// as the zones of its subnets) are the cloud's, and not applied.
type InstanceTypes []*cloudprovider.InstanceType

var _ cloudprovider.InstanceTypeLister = InstanceTypes(nil)

func (t InstanceTypes) InstanceTypes(context.Context, cloudprovider.Constraints) ([]*cloudprovider.InstanceType, error) {
	return t, nil
}

// ReadInstanceTypes reads a file in the InstanceTypesFile format, YAML or JSON.
func ReadInstanceTypes(file string, data []byte) (InstanceTypes, error) {
	var parsed InstanceTypesFile
	if err := yaml.UnmarshalStrict(data, &parsed); err != nil {
		return nil, &InputError{File: file, Line: yamlErrorLine(err) + 1, Err: fmt.Errorf("not an instance types file, %w", err)}
	}
	if len(parsed.InstanceTypes) == 0 {
		return nil, &InputError{File: file, Err: errors.New("lists no instanceTypes")}
	}
	var out InstanceTypes
	seen := map[string]bool{}
	for i, it := range parsed.InstanceTypes {
		where := fmt.Sprintf("instanceTypes[%d]", i)
		switch {
		case it.Name == "":
			return nil, &InputError{File: file, Object: where, Err: errors.New("needs a name")}
		case seen[it.Name]:
			return nil, &InputError{File: file, Object: where, Err: fmt.Errorf("%s is listed twice", it.Name)}
		case it.Capacity.Cpu().IsZero() || it.Capacity.Memory().IsZero() || it.Capacity.Pods().IsZero():
			return nil, &InputError{File: file, Object: where + " " + it.Name, Err: errors.New("needs a capacity of cpu, memory and pods")}
		case len(it.Offerings) == 0:
			return nil, &InputError{File: file, Object: where + " " + it.Name, Err: errors.New("needs offerings")}
		}
		seen[it.Name] = true
		out = append(out, &cloudprovider.InstanceType{Name: it.Name, Labels: it.Labels, Capacity: it.Capacity, Overhead: it.Overhead})
		for j, o := range it.Offerings {
			if o.Zone == "" || o.CapacityType == "" || o.Price < 0 {
				return nil, &InputError{File: file, Object: fmt.Sprintf("%s %s offerings[%d]", where, it.Name, j), Err: errors.New("needs a zone, a capacityType and a price of at least 0")}
			}
			out[i].Offerings = append(out[i].Offerings, cloudprovider.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: o.Available == nil || *o.Available})
		}
	}
	return out, nil
}
