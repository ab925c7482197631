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
