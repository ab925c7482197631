package amifamily_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"karpenter.sh/karpenter/pkg/providers/amifamily"
)

// TestAliasesResolveThroughAWSsParametersPerArchitecture: an EC2NodeClass alias names, per
// architecture, the AMI AWS's public SSM parameter of the family, version and the cluster's
// Kubernetes version holds; an architecture or version AWS publishes nothing for is left out.
func TestAliasesResolveThroughAWSsParametersPerArchitecture(t *testing.T) {
	_, _, amis := newProvider(t, "1.34", "")
	for _, tc := range []struct {
		alias string
		// want are the architecture/variant of each AMI.
		want []string
	}{
		{"al2023@latest", []string{"amd64/", "amd64/nvidia", "amd64/neuron", "arm64/", "arm64/nvidia"}},
		{"al2023@v20260415", []string{"amd64/", "amd64/nvidia", "amd64/neuron", "arm64/", "arm64/nvidia"}},
		{"bottlerocket@latest", []string{"amd64/", "amd64/nvidia", "arm64/", "arm64/nvidia"}},
		{"bottlerocket@v1.57.0", []string{"amd64/", "amd64/nvidia", "arm64/", "arm64/nvidia"}},
		{"windows2022@latest", []string{"amd64/"}},
		// Amazon Linux 2 ends at Kubernetes 1.32, and no release v19990101 exists.
		{"al2@latest", nil},
		{"al2023@v19990101", nil},
	} {
		t.Run(tc.alias, func(t *testing.T) {
			got, err := amis.Alias(context.Background(), tc.alias)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, ami := range got {
				if ami.ID == "" || ami.Name == "" {
					t.Errorf("AMI %+v, want an id and a name", ami)
				}
				kinds = append(kinds, ami.Architecture+"/"+ami.Variant)
			}
			slices.Sort(kinds)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(kinds, want) {
				t.Errorf("AMIs %v, want %v", kinds, want)
			}
		})
	}
	// Amazon Linux 2's GPU AMI is x86_64's NVIDIA variant.
	_, _, al2 := newProvider(t, "1.32", "")
	got, err := al2.Alias(context.Background(), "al2@latest")
	if err != nil || len(got) != 3 {
		t.Errorf("Alias(al2@latest) on 1.32 = %+v, %v; want amd64, arm64 and amd64's nvidia", got, err)
	}
	var unsupported *amifamily.UnsupportedAliasError
	if _, err := amis.Alias(context.Background(), "suse@latest"); !errors.As(err, &unsupported) {
		t.Errorf("Alias(suse@latest) = %v, want an unsupported alias", err)
	}
}
