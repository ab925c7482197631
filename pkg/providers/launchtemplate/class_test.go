package launchtemplate_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	"karpenter.sh/karpenter/pkg/providers/launchtemplate"
)

// The volume that holds a class's nodes' ephemeral storage is sized as upstream sizes it.
func TestEphemeralVolumeSize(t *testing.T) {
	volume := func(device, size string, root bool) *awsv1.BlockDeviceMapping {
		d := &awsv1.BlockDeviceMapping{DeviceName: ptr.To(device), RootVolume: root, EBS: &awsv1.BlockDevice{SnapshotID: ptr.To("snap-0123")}}
		if size != "" {
			d.EBS.VolumeSize = ptr.To(resource.MustParse(size))
		}
		return d
	}
	for _, tt := range []struct {
		name    string
		alias   string
		family  *string
		volumes []*awsv1.BlockDeviceMapping
		want    string
	}{
		{name: "AL2023's default root volume", alias: "al2023@latest", want: "20Gi"},
		{name: "Bottlerocket's default data volume", alias: "bottlerocket@latest", want: "20Gi"},
		{name: "Custom without volumes: the default", family: ptr.To(awsv1.AMIFamilyCustom), want: "20Gi"},
		{name: "the rootVolume wins", alias: "al2023@latest", volumes: []*awsv1.BlockDeviceMapping{volume("/dev/xvda", "50Gi", false), volume("/dev/xvdf", "200Gi", true)}, want: "200Gi"},
		{name: "AL2's root device", alias: "al2@latest", volumes: []*awsv1.BlockDeviceMapping{volume("/dev/xvdf", "500Gi", false), volume("/dev/xvda", "80Gi", false)}, want: "80Gi"},
		{name: "Bottlerocket's data device, not its OS volume", alias: "bottlerocket@latest",
			volumes: []*awsv1.BlockDeviceMapping{volume("/dev/xvda", "8Gi", false), volume("/dev/xvdb", "150Gi", false)}, want: "150Gi"},
		{name: "Custom's last volume", family: ptr.To(awsv1.AMIFamilyCustom), volumes: []*awsv1.BlockDeviceMapping{volume("/dev/xvda", "30Gi", false), volume("/dev/xvdb", "300G", false)}, want: "300G"},
		{name: "a rootVolume sized by its snapshot alone tells nothing", alias: "al2023@latest",
			volumes: []*awsv1.BlockDeviceMapping{volume("/dev/xvdf", "", true), volume("/dev/xvda", "60Gi", false)}, want: "60Gi"},
		{name: "no volume on the family's device: the default", alias: "al2023@latest", volumes: []*awsv1.BlockDeviceMapping{volume("/dev/xvdf", "500Gi", false)}, want: "20Gi"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			class := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMIFamily: tt.family, BlockDeviceMappings: tt.volumes}}
			if tt.alias != "" {
				class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tt.alias}}
			}
			if got := launchtemplate.EphemeralVolumeSize(class); got.Cmp(resource.MustParse(tt.want)) != 0 {
				t.Errorf("EphemeralVolumeSize = %s, want %s", got.String(), tt.want)
			}
		})
	}
}
