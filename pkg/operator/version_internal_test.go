package operator

import (
	"testing"

	"k8s.io/apimachinery/pkg/version"
)

func TestMinorVersion(t *testing.T) {
	for _, tt := range []struct{ gitVersion, want string }{
		{"v1.29.3", "1.29"},
		{"v1.29.3-eks-adc7111", "1.29"},
		{"v1.34.1+k3s1", "1.34"},
	} {
		got, err := minorVersion(&version.Info{GitVersion: tt.gitVersion})
		if err != nil || got != tt.want {
			t.Errorf("minorVersion(%s) = %q, %v; want %s", tt.gitVersion, got, err, tt.want)
		}
	}
	if _, err := minorVersion(&version.Info{GitVersion: "unknown"}); err == nil {
		t.Error("an unparseable version was accepted")
	}
}
