package amifamily

import "testing"

func TestAMIParameters(t *testing.T) {
	for _, tt := range []struct {
		version, arch, want string
	}{
		{"1.34", "amd64", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"},
		{"1.33", "arm64", "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/recommended/image_id"},
		{"1.34", "s390x", ""},
	} {
		got, err := amiParameter(tt.version, tt.arch)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("amiParameter(%s, %s) = %q, %v, want %q", tt.version, tt.arch, got, err, tt.want)
		}
	}
}
