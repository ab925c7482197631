package flagenv_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"karpenter.sh/karpenter/pkg/flagenv"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		env        map[string]string
		wantPeriod time.Duration
		wantLeader bool
		wantErr    string
	}{
		{name: "defaults", wantPeriod: 10 * time.Second, wantLeader: true},
		{name: "environment", env: map[string]string{"RESYNC_PERIOD": "3s", "LEADER_ELECT": "false"}, wantPeriod: 3 * time.Second},
		{name: "command line wins", args: []string{"--resync-period=5s"}, env: map[string]string{"RESYNC_PERIOD": "3s"}, wantPeriod: 5 * time.Second, wantLeader: true},
		{name: "bad environment value", env: map[string]string{"LEADER_ELECT": "maybe"}, wantErr: `LEADER_ELECT="maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			period := fs.Duration("resync-period", 10*time.Second, "")
			leader := fs.Bool("leader-elect", true, "")
			err := flagenv.Parse(fs, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *period != tc.wantPeriod || *leader != tc.wantLeader {
				t.Errorf("period %v leader %t, want %v %t", *period, *leader, tc.wantPeriod, tc.wantLeader)
			}
		})
	}
}
