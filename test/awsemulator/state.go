package awsemulator

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Instance lifecycle states, as Auto Scaling names them.
const (
	lifecyclePending     = "Pending"
	lifecycleInService   = "InService"
	lifecycleTerminating = "Terminating"
)

type autoScalingGroup struct {
	name, arn         string
	min, max, desired int32
	instanceType      string
	zones             []string
	labels            map[string]string
	taints            []Taint
	capacity          map[string]string
	tags              map[string]string
	created           time.Time
	// eksNodeGroup is "cluster/name" when this group backs an EKS managed node group.
	eksNodeGroup string
	instances    []*instance // in launch order
}

type instance struct {
	id, zone    string
	launched    time.Time
	terminating time.Time // zero while not terminating
}

func (e *Emulator) lifecycle(i *instance, now time.Time) string {
	switch {
	case !i.terminating.IsZero():
		return lifecycleTerminating
	case now.Before(i.launched.Add(e.opts.PendingDelay)):
		return lifecyclePending
	default:
		return lifecycleInService
	}
}

type eksNodeGroup struct {
	cluster, name, arn, id string
	status                 string // ACTIVE or UPDATING
	min, max, desired      int32
	instanceTypes          []string
	labels                 map[string]string
	taints                 []Taint
	tags                   map[string]string
	created, modified      time.Time
	group                  *autoScalingGroup
	updates                []*eksUpdate
}

type eksUpdate struct {
	id                string
	created           time.Time
	status            string // InProgress or Successful
	min, max, desired *int32
}

const (
	eksStatusActive     = "ACTIVE"
	eksStatusUpdating   = "UPDATING"
	eksUpdateInProgress = "InProgress"
	eksUpdateSuccessful = "Successful"
)

// advance brings every resource up to the present: completes EKS updates
// whose delay has passed, converges each group on its desired capacity and
// forgets instances terminated long ago.
// It is called, under e.mu, before anything reads or changes state, so the
// emulator needs no background goroutines and an injected clock fully
// controls what clients observe. The caller holds e.mu.
func (e *Emulator) advance() time.Time {
	now := e.opts.Clock.Now()
	for _, key := range slices.Sorted(maps.Keys(e.nodeGroups)) {
		ng := e.nodeGroups[key]
		for _, u := range ng.updates {
			if u.status != eksUpdateInProgress {
				continue
			}
			done := u.created.Add(e.opts.EKSUpdateDelay)
			if now.Before(done) {
				continue
			}
			// Converge the backing group first as of "done", so instances
			// launched by the update carry the time it completed.
			e.converge(ng.group, done)
			ng.min, ng.max, ng.desired = deref(u.min, ng.min), deref(u.max, ng.max), deref(u.desired, ng.desired)
			ng.group.min, ng.group.max, ng.group.desired = ng.min, ng.max, ng.desired
			e.converge(ng.group, done)
			u.status, ng.status, ng.modified = eksUpdateSuccessful, eksStatusActive, done
		}
	}
	for _, name := range slices.Sorted(maps.Keys(e.groups)) {
		e.converge(e.groups[name], now)
	}
	e.expireInstances(now)
	return now
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// converge removes instances whose termination finished and launches or
// terminates instances so the non-terminating count matches desired.
func (e *Emulator) converge(g *autoScalingGroup, now time.Time) {
	g.instances = slices.DeleteFunc(g.instances, func(i *instance) bool {
		return !i.terminating.IsZero() && !now.Before(i.terminating.Add(e.opts.TerminatingDelay))
	})
	active := e.activeInstances(g)
	for n := int32(len(active)); n < g.desired; n++ { //nolint:gosec // G115: a group's instances number at most its int32 maximum.
		i := &instance{id: e.newInstanceID(), zone: leastUsedZone(g.zones, active), launched: now}
		g.instances = append(g.instances, i)
		active = append(active, i)
	}
	for n := int32(len(active)); n > g.desired; n-- { //nolint:gosec // G115: as above, a group's instances fit int32.
		victim := e.scaleInVictim(g.zones, active, now)
		victim.terminating = now
		active = slices.DeleteFunc(active, func(i *instance) bool { return i == victim })
	}
}

func (e *Emulator) activeInstances(g *autoScalingGroup) []*instance {
	var active []*instance
	for _, i := range g.instances {
		if i.terminating.IsZero() {
			active = append(active, i)
		}
	}
	return active
}

func (e *Emulator) newInstanceID() string {
	e.nextInstanceID++
	return fmt.Sprintf("i-%017x", e.nextInstanceID)
}

// leastUsedZone keeps zones balanced on scale-out, as Auto Scaling does.
func leastUsedZone(zones []string, active []*instance) string {
	best, bestCount := zones[0], -1
	for _, z := range zones {
		count := 0
		for _, i := range active {
			if i.zone == z {
				count++
			}
		}
		if bestCount == -1 || count < bestCount {
			best, bestCount = z, count
		}
	}
	return best
}

// scaleInVictim follows the spirit of the default termination policy: take
// from the zone with the most instances, preferring instances still pending,
// then the newest.
func (e *Emulator) scaleInVictim(zones []string, active []*instance, now time.Time) *instance {
	perZone := map[string]int{}
	for _, i := range active {
		perZone[i.zone]++
	}
	var victim *instance
	better := func(i *instance) bool {
		if victim == nil {
			return true
		}
		if perZone[i.zone] != perZone[victim.zone] {
			return perZone[i.zone] > perZone[victim.zone]
		}
		iPending, vPending := e.lifecycle(i, now) == lifecyclePending, e.lifecycle(victim, now) == lifecyclePending
		if iPending != vPending {
			return iPending
		}
		return !i.launched.Before(victim.launched)
	}
	for _, i := range active {
		if better(i) {
			victim = i
		}
	}
	return victim
}

func (e *Emulator) groupARN(name string) string {
	return fmt.Sprintf("arn:aws:autoscaling:%s:%s:autoScalingGroup:%s:autoScalingGroupName/%s", e.opts.Region, e.opts.AccountID, e.newID(), name)
}

type queue struct {
	name, url, arn string
	created        time.Time
	attributes     map[string]string
	messages       []*message
}

type message struct {
	id, body, receiptHandle string
	sent, visibleAt         time.Time
	receiveCount            int
}

func (q *queue) visibilityTimeout() time.Duration {
	return secondsAttribute(q.attributes["VisibilityTimeout"], 30*time.Second)
}

func (q *queue) delay() time.Duration {
	return secondsAttribute(q.attributes["DelaySeconds"], 0)
}

func secondsAttribute(v string, def time.Duration) time.Duration {
	var s int
	if _, err := fmt.Sscan(v, &s); err != nil {
		return def
	}
	return time.Duration(s) * time.Second
}

// queueCounts are the SQS approximate counters at an instant.
type queueCounts struct {
	visible, inFlight, delayed int
	oldest                     time.Duration // age of the oldest message that is not delayed
}

func (q *queue) counts(now time.Time) queueCounts {
	var c queueCounts
	for _, m := range q.messages {
		switch {
		case now.Before(m.visibleAt) && m.receiveCount == 0:
			c.delayed++
			continue
		case now.Before(m.visibleAt):
			c.inFlight++
		default:
			c.visible++
		}
		if age := now.Sub(m.sent); age > c.oldest {
			c.oldest = age
		}
	}
	return c
}

func (e *Emulator) queueURL(name string) string {
	return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", e.opts.Region, e.opts.AccountID, name)
}

func (e *Emulator) queueARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", e.opts.Region, e.opts.AccountID, name)
}

// sendMessage appends a message; the caller holds e.mu.
func (e *Emulator) sendMessage(q *queue, body string, delay time.Duration, now time.Time) *message {
	m := &message{id: e.newID(), body: body, sent: now, visibleAt: now.Add(delay)}
	q.messages = append(q.messages, m)
	return m
}
