package workload

import "testing"

func TestParseLaunch(t *testing.T) {
	for _, tc := range []struct {
		message string
		want    Launch
		ok      bool
	}{
		{message: "Node ip-10-0-0-1.us-west-2.compute.internal (m5.large, us-west-2a) was launched for this pod by provisioner default",
			want: Launch{Node: "ip-10-0-0-1.us-west-2.compute.internal", Launched: true}, ok: true},
		{message: "Node ip-10-0-0-1.us-west-2.compute.internal (m5.large, us-west-2a) was launched for this pod by provisioner default, and the pod bound to it",
			want: Launch{Node: "ip-10-0-0-1.us-west-2.compute.internal", Launched: true, Bound: true}, ok: true},
		{message: "Waiting for node ip-10-0-0-2.us-west-2.compute.internal, launching, to become Ready",
			want: Launch{Node: "ip-10-0-0-2.us-west-2.compute.internal"}, ok: true},
		{message: "Bound to node ip-10-0-0-2.us-west-2.compute.internal, launching, to run once it is Ready",
			want: Launch{Node: "ip-10-0-0-2.us-west-2.compute.internal", Bound: true}, ok: true},
		{message: "No provisioner can launch a node for this pod: incompatible"},
	} {
		got, ok := parseLaunch(tc.message)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseLaunch(%q) = %+v, %t; want %+v, %t", tc.message, got, ok, tc.want, tc.ok)
		}
	}
}
