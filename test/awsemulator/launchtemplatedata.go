package awsemulator

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// LaunchTemplateData is what the emulator keeps of a launch template's data: what a launch
// uses, and what tests read back of what Karpenter sent. Optional values are pointers, nil when
// the request left them out.
type LaunchTemplateData struct {
	ImageID                string   `json:"imageId,omitempty"`
	InstanceType           string   `json:"instanceType,omitempty"`
	IAMInstanceProfileName string   `json:"iamInstanceProfileName,omitempty"`
	IAMInstanceProfileARN  string   `json:"iamInstanceProfileArn,omitempty"`
	SecurityGroupIDs       []string `json:"securityGroupIds,omitempty"`
	// UserData is base64, as sent; DecodedUserData is what the instance gets.
	UserData        string `json:"userData,omitempty"`
	DecodedUserData string `json:"decodedUserData,omitempty"`
	// TagSpecifications are the tags launches apply, by resource type (instance, volume, …).
	TagSpecifications   map[string]map[string]string       `json:"tagSpecifications,omitempty"`
	BlockDeviceMappings []LaunchTemplateBlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	MetadataOptions     *LaunchTemplateMetadataOptions     `json:"metadataOptions,omitempty"`
	// DetailedMonitoring is Monitoring.Enabled.
	DetailedMonitoring *bool                            `json:"detailedMonitoring,omitempty"`
	NetworkInterfaces  []LaunchTemplateNetworkInterface `json:"networkInterfaces,omitempty"`
	Placement          *LaunchTemplatePlacement         `json:"placement,omitempty"`
}

// LaunchTemplateBlockDeviceMapping is a device of a launch template.
type LaunchTemplateBlockDeviceMapping struct {
	DeviceName  string             `json:"deviceName,omitempty"`
	VirtualName string             `json:"virtualName,omitempty"`
	NoDevice    string             `json:"noDevice,omitempty"`
	EBS         *LaunchTemplateEBS `json:"ebs,omitempty"`
}

// LaunchTemplateEBS is an EBS volume of a block device mapping; sizes in GiB.
type LaunchTemplateEBS struct {
	VolumeSize               *int32 `json:"volumeSize,omitempty"`
	VolumeType               string `json:"volumeType,omitempty"`
	IOPS                     *int32 `json:"iops,omitempty"`
	Throughput               *int32 `json:"throughput,omitempty"`
	Encrypted                *bool  `json:"encrypted,omitempty"`
	DeleteOnTermination      *bool  `json:"deleteOnTermination,omitempty"`
	KMSKeyID                 string `json:"kmsKeyId,omitempty"`
	SnapshotID               string `json:"snapshotId,omitempty"`
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
}

// LaunchTemplateMetadataOptions are the instance metadata service (IMDS) options.
type LaunchTemplateMetadataOptions struct {
	HTTPEndpoint            string `json:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        string `json:"httpProtocolIpv6,omitempty"`
	HTTPPutResponseHopLimit *int32 `json:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              string `json:"httpTokens,omitempty"`
	InstanceMetadataTags    string `json:"instanceMetadataTags,omitempty"`
}

// LaunchTemplateNetworkInterface is a network interface a launch creates.
type LaunchTemplateNetworkInterface struct {
	DeviceIndex                    *int32   `json:"deviceIndex,omitempty"`
	NetworkCardIndex               *int32   `json:"networkCardIndex,omitempty"`
	InterfaceType                  string   `json:"interfaceType,omitempty"`
	SubnetID                       string   `json:"subnetId,omitempty"`
	SecurityGroupIDs               []string `json:"securityGroupIds,omitempty"`
	AssociatePublicIPAddress       *bool    `json:"associatePublicIpAddress,omitempty"`
	DeleteOnTermination            *bool    `json:"deleteOnTermination,omitempty"`
	IPv4PrefixCount                *int32   `json:"ipv4PrefixCount,omitempty"`
	IPv6PrefixCount                *int32   `json:"ipv6PrefixCount,omitempty"`
	IPv6AddressCount               *int32   `json:"ipv6AddressCount,omitempty"`
	SecondaryPrivateIPAddressCount *int32   `json:"secondaryPrivateIpAddressCount,omitempty"`
	PrimaryIPv6                    *bool    `json:"primaryIpv6,omitempty"`
}

// LaunchTemplatePlacement is where launches go.
type LaunchTemplatePlacement struct {
	Tenancy          string `json:"tenancy,omitempty"`
	GroupID          string `json:"groupId,omitempty"`
	GroupName        string `json:"groupName,omitempty"`
	PartitionNumber  *int32 `json:"partitionNumber,omitempty"`
	AvailabilityZone string `json:"availabilityZone,omitempty"`
}

// maxUserDataBytes is EC2's limit on user data before base64.
const maxUserDataBytes = 16 * 1024

// The values EC2 accepts for the enumerations a launch template's data holds.
var (
	imdsEndpointStates = []string{"enabled", "disabled"}
	imdsTokenStates    = []string{"optional", "required"}
	volumeTypes        = []string{"standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"}
)

// parseLaunchTemplateData reads LaunchTemplateData.*, refusing what EC2 refuses.
func parseLaunchTemplateData(d ec2Query) (LaunchTemplateData, *apiError) {
	data := LaunchTemplateData{
		ImageID: d.str("ImageId"), InstanceType: d.str("InstanceType"),
		IAMInstanceProfileName: d.sub("IamInstanceProfile").str("Name"), IAMInstanceProfileARN: d.sub("IamInstanceProfile").str("Arn"),
		SecurityGroupIDs: d.strs("SecurityGroupId"), UserData: d.str("UserData"),
		TagSpecifications: d.tagSpecifications(), DetailedMonitoring: d.sub("Monitoring").optBool("Enabled"),
	}
	if data.UserData != "" {
		decoded, err := base64.StdEncoding.DecodeString(data.UserData)
		if err != nil {
			return LaunchTemplateData{}, errEC2("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
		if len(decoded) > maxUserDataBytes {
			return LaunchTemplateData{}, errEC2("InvalidUserData.Malformed", "User data is limited to %d bytes", maxUserDataBytes)
		}
		data.DecodedUserData = string(decoded)
	}
	var aerr *apiError
	if data.BlockDeviceMappings, aerr = parseBlockDeviceMappings(d); aerr != nil {
		return LaunchTemplateData{}, aerr
	}
	if data.MetadataOptions, aerr = parseMetadataOptions(d); aerr != nil {
		return LaunchTemplateData{}, aerr
	}
	if data.NetworkInterfaces, aerr = parseNetworkInterfaces(d); aerr != nil {
		return LaunchTemplateData{}, aerr
	}
	if d.has("Placement") {
		p := d.sub("Placement")
		data.Placement = &LaunchTemplatePlacement{Tenancy: p.str("Tenancy"), GroupID: p.str("GroupId"), GroupName: p.str("GroupName"), AvailabilityZone: p.str("AvailabilityZone")}
		if data.Placement.PartitionNumber, aerr = p.optInt32("PartitionNumber"); aerr != nil {
			return LaunchTemplateData{}, aerr
		}
	}
	return data, nil
}

func parseBlockDeviceMappings(d ec2Query) ([]LaunchTemplateBlockDeviceMapping, *apiError) {
	var out []LaunchTemplateBlockDeviceMapping
	for _, b := range d.list("BlockDeviceMapping") {
		m := LaunchTemplateBlockDeviceMapping{DeviceName: b.str("DeviceName"), VirtualName: b.str("VirtualName"), NoDevice: b.str("NoDevice")}
		if b.has("Ebs") {
			ebs, aerr := parseEBS(b.sub("Ebs"))
			if aerr != nil {
				return nil, aerr
			}
			m.EBS = ebs
		}
		out = append(out, m)
	}
	return out, nil
}

func parseEBS(q ec2Query) (*LaunchTemplateEBS, *apiError) {
	ebs := &LaunchTemplateEBS{
		VolumeType: q.str("VolumeType"), Encrypted: q.optBool("Encrypted"), DeleteOnTermination: q.optBool("DeleteOnTermination"),
		KMSKeyID: q.str("KmsKeyId"), SnapshotID: q.str("SnapshotId"),
	}
	if ebs.VolumeType != "" && !slices.Contains(volumeTypes, ebs.VolumeType) {
		return nil, errInvalidEnum(ebs.VolumeType, "volumeType", volumeTypes)
	}
	var aerr *apiError
	for name, target := range map[string]**int32{"VolumeSize": &ebs.VolumeSize, "Iops": &ebs.IOPS, "Throughput": &ebs.Throughput, "VolumeInitializationRate": &ebs.VolumeInitializationRate} {
		if *target, aerr = q.optInt32(name); aerr != nil {
			return nil, aerr
		}
	}
	// EBS volumes are 1 GiB to 64 TiB.
	if ebs.VolumeSize != nil && (*ebs.VolumeSize < 1 || *ebs.VolumeSize > 65536) {
		return nil, errEC2InvalidParameter("Value (%d) for parameter volumeSize is invalid. Valid values are between 1 and 65536.", *ebs.VolumeSize)
	}
	return ebs, nil
}

func parseMetadataOptions(d ec2Query) (*LaunchTemplateMetadataOptions, *apiError) {
	if !d.has("MetadataOptions") {
		return nil, nil
	}
	q := d.sub("MetadataOptions")
	o := &LaunchTemplateMetadataOptions{
		HTTPEndpoint: q.str("HttpEndpoint"), HTTPProtocolIPv6: q.str("HttpProtocolIpv6"), HTTPTokens: q.str("HttpTokens"),
		InstanceMetadataTags: q.str("InstanceMetadataTags"),
	}
	for param, v := range map[string]string{"httpEndpoint": o.HTTPEndpoint, "httpProtocolIpv6": o.HTTPProtocolIPv6, "instanceMetadataTags": o.InstanceMetadataTags} {
		if v != "" && !slices.Contains(imdsEndpointStates, v) {
			return nil, errInvalidEnum(v, param, imdsEndpointStates)
		}
	}
	if o.HTTPTokens != "" && !slices.Contains(imdsTokenStates, o.HTTPTokens) {
		return nil, errInvalidEnum(o.HTTPTokens, "httpTokens", imdsTokenStates)
	}
	var aerr *apiError
	if o.HTTPPutResponseHopLimit, aerr = q.optInt32("HttpPutResponseHopLimit"); aerr != nil {
		return nil, aerr
	}
	if l := o.HTTPPutResponseHopLimit; l != nil && (*l < 1 || *l > 64) {
		return nil, errEC2InvalidParameter("Value (%d) for parameter httpPutResponseHopLimit is invalid. Valid values are between 1 and 64.", *l)
	}
	return o, nil
}

func parseNetworkInterfaces(d ec2Query) ([]LaunchTemplateNetworkInterface, *apiError) {
	var out []LaunchTemplateNetworkInterface
	for _, q := range d.list("NetworkInterface") {
		ni := LaunchTemplateNetworkInterface{
			InterfaceType: q.str("InterfaceType"), SubnetID: q.str("SubnetId"), SecurityGroupIDs: q.strs("SecurityGroupId"),
			AssociatePublicIPAddress: q.optBool("AssociatePublicIpAddress"), DeleteOnTermination: q.optBool("DeleteOnTermination"),
			PrimaryIPv6: q.optBool("PrimaryIpv6"),
		}
		var aerr *apiError
		for name, target := range map[string]**int32{
			"DeviceIndex": &ni.DeviceIndex, "NetworkCardIndex": &ni.NetworkCardIndex, "Ipv4PrefixCount": &ni.IPv4PrefixCount,
			"Ipv6PrefixCount": &ni.IPv6PrefixCount, "Ipv6AddressCount": &ni.IPv6AddressCount, "SecondaryPrivateIpAddressCount": &ni.SecondaryPrivateIPAddressCount,
		} {
			if *target, aerr = q.optInt32(name); aerr != nil {
				return nil, aerr
			}
		}
		out = append(out, ni)
	}
	return out, nil
}

func errInvalidEnum(value, param string, valid []string) *apiError {
	return errEC2InvalidParameter("Value (%s) for parameter %s is invalid. Valid values: %s", value, param, strings.Join(valid, ", "))
}

// securityGroups are what an instance launched from the template gets: the template's, or
// when it puts them on network interfaces, those of the primary interface.
func (d LaunchTemplateData) securityGroups() []string {
	if len(d.SecurityGroupIDs) > 0 {
		return d.SecurityGroupIDs
	}
	for _, ni := range d.NetworkInterfaces {
		if deref(ni.DeviceIndex, 0) == 0 && deref(ni.NetworkCardIndex, 0) == 0 {
			return ni.SecurityGroupIDs
		}
	}
	return nil
}

// clone is a deep copy, so what tests are handed cannot change the emulator's state; it goes
// through JSON, so the Go API answers exactly what the admin API does.
func (d LaunchTemplateData) clone() LaunchTemplateData {
	b, err := json.Marshal(d)
	if err != nil {
		// Strings, numbers, slices and maps of them always encode.
		panic(fmt.Sprintf("awsemulator: encoding launch template data, %v", err))
	}
	var out LaunchTemplateData
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("awsemulator: decoding launch template data, %v", err))
	}
	return out
}

// optInt32 reads an optional integer parameter: nil when absent.
func (q ec2Query) optInt32(name string) (*int32, *apiError) {
	v := q.str(name)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return nil, errEC2InvalidParameter("Value (%s) for parameter %s is invalid. Expected an integer.", v, name)
	}
	i := int32(n)
	return &i, nil
}

// optBool reads an optional boolean parameter: nil when absent.
func (q ec2Query) optBool(name string) *bool {
	switch q.str(name) {
	case "true":
		b := true
		return &b
	case "false":
		b := false
		return &b
	}
	return nil
}
