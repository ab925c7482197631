package launchtemplate

import (
	"strings"
	"testing"
)

func TestLaunchTemplateNames(t *testing.T) {
	in := inputs{AMI: "ami-1", SecurityGroups: []string{"sg-1"}, InstanceProfile: "p", UserData: "#!/bin/bash"}
	other := in
	other.UserData = "#!/bin/sh"
	name := in.name("demo")
	if name != in.name("demo") {
		t.Error("equal inputs have different names")
	}
	if name == other.name("demo") || name == in.name("other") {
		t.Error("different inputs or clusters share a name")
	}
	if len(name) > 128 || !strings.HasPrefix(name, "karpenter.sh/") {
		t.Errorf("name %q is not a launch template name Karpenter makes", name)
	}
}

// A Provisioner's template keeps the name it had before inputs held an EC2NodeClass's settings:
// a new name would make every running cluster create its templates again.
func TestProvisionerTemplateNamesAreUnchanged(t *testing.T) {
	in := inputs{AMI: "ami-1", SecurityGroups: []string{"sg-1"}, InstanceProfile: "p", UserData: "#!/bin/bash"}
	if name := in.name("demo"); name != "karpenter.sh/3a22208e35dd97d621ec19b49ca46ce06bdb6d241193b816686bb90ecc1ac81e" {
		t.Errorf("name = %s, changed", name)
	}
}
