package aws_test

import (
	"fmt"
	"testing"
)

// TestCreateLaunchesTheFirstCandidate is finding 34.17 at the cloud's edge: Create asks EC2
// for the candidates in the order given (NewNode.Offerings', the plan's), so that the
// first is the one launched whenever it has capacity, also among offerings of one price. In
// us-west-2a t3.small and t3a.small cost the same as spot, and they launch from different
// templates (their max pods differ); an on-demand type costs the same in every zone.
func TestCreateLaunchesTheFirstCandidate(t *testing.T) {
	for _, ranking := range [][]string{
		{"t3.small/us-west-2a/spot", "t3a.small/us-west-2a/spot", "t3.medium/us-west-2a/spot"},
		{"t3a.small/us-west-2a/spot", "t3.small/us-west-2a/spot", "t3.medium/us-west-2a/spot"},
		{"t3a.small/us-west-2b/on-demand", "t3a.small/us-west-2a/on-demand", "t3.small/us-west-2a/on-demand"},
		{"t3a.small/us-west-2a/on-demand", "t3a.small/us-west-2b/on-demand", "t3.small/us-west-2b/on-demand"},
	} {
		t.Run(ranking[0], func(t *testing.T) {
			e := newInstancesEnv(t, launchSeed, 0)
			e.refresh(t)
			candidates := e.candidates(t, ranking...)
			instance := e.create(t, request(candidates))
			got := fmt.Sprintf("%s/%s/%s", instance.InstanceType, instance.Zone, instance.CapacityType)
			if got != ranking[0] {
				t.Errorf("launched %s, want the first candidate %s", got, ranking[0])
			}
			// The request itself carries the ranking, as the overrides' order and priorities.
			requests := e.emulator.FleetRequests()
			if len(requests) != 1 {
				t.Fatalf("%d fleet requests, want 1", len(requests))
			}
			var overrides []string
			for _, c := range requests[0].LaunchTemplateConfigs {
				for _, o := range c.Overrides {
					priority := "none"
					if o.Priority != nil {
						priority = fmt.Sprint(*o.Priority)
					}
					overrides = append(overrides, fmt.Sprintf("%s@%s priority %s", o.InstanceType, o.SubnetID, priority))
				}
			}
			// launchSeed's subnets of the cluster: one per zone (subnet-a has the most addresses).
			subnets := map[string]string{"us-west-2a": "subnet-a", "us-west-2b": "subnet-b"}
			first := candidates[0]
			if want := fmt.Sprintf("%s@%s priority 0", first.InstanceType.Name, subnets[first.Offering.Zone]); len(overrides) != len(ranking) || overrides[0] != want {
				t.Errorf("overrides %v, want %d starting with %q", overrides, len(ranking), want)
			}
		})
	}
}
