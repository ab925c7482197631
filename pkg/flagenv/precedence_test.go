package flagenv_test

import (
	"bytes"
	"errors"
	"flag"
	"log"
	"strings"
	"testing"

	"karpenter.sh/karpenter/pkg/flagenv"
)

// TestTheCommandLineWinsOverTheEnvironmentAndSaysSo: a flag given on the command line and in its
// environment variable takes the command line's value, and a warning names both.
func TestTheCommandLineWinsOverTheEnvironmentAndSaysSo(t *testing.T) {
	t.Setenv("CLUSTER_NAME", "from-the-environment")
	var logged bytes.Buffer
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(nil) })
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	name := fs.String("cluster-name", "", "")
	err := flagenv.Parse(fs, []string{"--cluster-name=from-the-flag"})
	if err != nil {
		t.Fatal(err)
	}
	if *name != "from-the-flag" {
		t.Errorf("cluster name %q, want the command line's", *name)
	}
	if !strings.Contains(logged.String(), "CLUSTER_NAME") {
		t.Errorf("no warning names CLUSTER_NAME, which the command line overrode; logged %q", logged.String())
	}
}

// TestUpstreamAliasesAndIgnoredVariables: an alias sets its flag through its conversion unless
// the flag's own variable is set; an ignored variable is reported unless it holds its inert
// value; a bad alias value is an error naming the variable.
func TestUpstreamAliasesAndIgnoredVariables(t *testing.T) {
	negate := func(v string) (string, error) {
		if v == "true" {
			return "false", nil
		}
		return "true", nil
	}
	for _, c := range []struct {
		name       string
		env        map[string]string
		wantLeader bool
		wantWarn   []string
		wantErr    string
	}{
		{name: "the alias sets the flag", env: map[string]string{"DISABLE_LEADER_ELECTION": "true"}, wantLeader: false},
		{name: "the flag's own variable wins over the alias", env: map[string]string{"DISABLE_LEADER_ELECTION": "true", "LEADER_ELECT": "true"}, wantLeader: true, wantWarn: []string{`LEADER_ELECT="true" wins over DISABLE_LEADER_ELECTION="true"`}},
		{name: "an ignored variable at its inert value is quiet", env: map[string]string{"ENABLE_ZONAL_SHIFT": "false"}, wantLeader: true},
		{name: "an ignored variable set otherwise is reported", env: map[string]string{"ENABLE_ZONAL_SHIFT": "true"}, wantLeader: true, wantWarn: []string{`ENABLE_ZONAL_SHIFT="true" is upstream Karpenter's and has no effect here: not here`}},
		{name: "a bad alias value names the variable", env: map[string]string{"METRICS_PORT": "eighty"}, wantErr: `METRICS_PORT="eighty"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			leader := fs.Bool("leader-elect", true, "")
			fs.String("metrics-bind-address", ":8080", "")
			var warnings []string
			err := flagenv.Parse(fs, nil,
				flagenv.WithAliases(
					flagenv.Alias{Variable: "DISABLE_LEADER_ELECTION", Flag: "leader-elect", Value: negate},
					flagenv.Alias{Variable: "METRICS_PORT", Flag: "metrics-bind-address", Value: func(v string) (string, error) {
						if strings.Trim(v, "0123456789") != "" {
							return "", errors.New("not a port")
						}
						return ":" + v, nil
					}}),
				flagenv.WithIgnored(flagenv.Ignored{Variable: "ENABLE_ZONAL_SHIFT", Inert: "false", Why: "not here"}),
				flagenv.WarnTo(func(m string) { warnings = append(warnings, m) }))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *leader != c.wantLeader {
				t.Errorf("leader-elect %t, want %t", *leader, c.wantLeader)
			}
			if strings.Join(warnings, "\n") != strings.Join(c.wantWarn, "\n") {
				t.Errorf("warnings %q, want %q", warnings, c.wantWarn)
			}
		})
	}
}
