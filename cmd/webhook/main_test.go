package main

import (
	"flag"
	"testing"
)

func TestParseFlagsAWSProviderDefaults(t *testing.T) {
	t.Setenv("CLUSTER_NAME", "demo")
	f, err := parseFlags(flag.NewFlagSet("webhook", flag.ContinueOnError), []string{"--namespace=karpenter", "--aws-default-instance-profile=nodes"})
	if err != nil {
		t.Fatal(err)
	}
	if f.provider.ClusterName != "demo" || f.provider.InstanceProfile != "nodes" {
		t.Errorf("provider defaults = %+v, want cluster demo from the environment and profile nodes", f.provider)
	}
}
