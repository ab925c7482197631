package awsemulator

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"
)

// The admin API lets tools that are not AWS clients (the sandbox's node
// joiner, scripts, tests) inspect and steer the emulator:
//
//	GET    /_emulator/healthz
//	GET    /_emulator/instances[?group=<asg name>]   instances with their node shape
//	POST   /_emulator/seed                          add resources (seed YAML or JSON)
//	POST   /_emulator/queues/{name}/messages        {"count": 10, "body": "job"}
//	DELETE /_emulator/queues/{name}/messages        purge
//	GET    /_emulator/ec2/instances                 free-standing EC2 instances, with tags
//	POST   /_emulator/ec2/instances/terminate       {"instanceIds": [...]}; none: all (drain)
//	GET    /_emulator/ec2/fleets                    CreateFleet requests as received
//	GET    /_emulator/ec2/terminations              TerminateInstances calls answered, in order
//	GET    /_emulator/ec2/launchtemplates           launch templates with their data
//	POST   /_emulator/instances/{id}/interrupt?queue=<name>&kind=spot|rebalance|scheduled-change|state-change[&state=terminated]
//	                                                an EventBridge event about the instance on the queue
//	GET    /_emulator/faults                        faults and how often each hit
//	POST   /_emulator/faults                        add a Fault (JSON)
//	DELETE /_emulator/faults                        clear faults
const adminPrefix = "/_emulator/"

// Instance is an EC2 instance of an Auto Scaling group, with what a node
// registered for it should look like.
type Instance struct {
	InstanceID string `json:"instanceId"`
	// ProviderID is the Kubernetes node providerID: aws:///<zone>/<instance-id>.
	ProviderID           string            `json:"providerID"`
	AutoScalingGroupName string            `json:"autoScalingGroupName"`
	EKSNodeGroup         string            `json:"eksNodeGroup,omitempty"` // <cluster>/<nodegroup>
	InstanceType         string            `json:"instanceType"`
	AvailabilityZone     string            `json:"availabilityZone"`
	LifecycleState       string            `json:"lifecycleState"`
	LaunchTime           time.Time         `json:"launchTime"`
	Labels               map[string]string `json:"labels,omitempty"`
	Taints               []Taint           `json:"taints,omitempty"`
	Capacity             map[string]string `json:"capacity,omitempty"`
}

// Instances lists the instances of one Auto Scaling group, or of all groups
// when group is empty, ordered by group then launch.
func (e *Emulator) Instances(group string) []Instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	var out []Instance
	for _, name := range slices.Sorted(maps.Keys(e.groups)) {
		if group != "" && name != group {
			continue
		}
		g := e.groups[name]
		for _, i := range g.instances {
			out = append(out, Instance{
				InstanceID: i.id, ProviderID: fmt.Sprintf("aws:///%s/%s", i.zone, i.id),
				AutoScalingGroupName: g.name, EKSNodeGroup: g.eksNodeGroup, InstanceType: g.instanceType,
				AvailabilityZone: i.zone, LifecycleState: e.lifecycle(i, now), LaunchTime: i.launched,
				Labels: maps.Clone(g.labels), Taints: slices.Clone(g.taints), Capacity: maps.Clone(g.capacity),
			})
		}
	}
	return out
}

// SendMessages puts count messages with body on a queue.
func (e *Emulator) SendMessages(queueName string, count int, body string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.advance()
	q, ok := e.queues[queueName]
	if !ok {
		return fmt.Errorf("queue %q does not exist", queueName)
	}
	for range count {
		e.sendMessage(q, body, 0, now)
	}
	return nil
}

// PurgeQueue deletes every message of a queue.
func (e *Emulator) PurgeQueue(queueName string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	q, ok := e.queues[queueName]
	if !ok {
		return fmt.Errorf("queue %q does not exist", queueName)
	}
	q.messages = nil
	return nil
}

// SetAutoScalingGroupTags replaces the tags of an Auto Scaling group, as
// CreateOrUpdateTags and DeleteTags would.
func (e *Emulator) SetAutoScalingGroupTags(name string, tags map[string]string) error {
	return replaceTags(e, e.groups, func(g *autoScalingGroup) *map[string]string { return &g.tags }, "auto scaling group", name, tags)
}

// SetEKSNodeGroupTags replaces the tags of an EKS node group ("<cluster>/<nodegroup>"), as
// TagResource and UntagResource would.
func (e *Emulator) SetEKSNodeGroupTags(clusterAndName string, tags map[string]string) error {
	return replaceTags(e, e.nodeGroups, func(ng *eksNodeGroup) *map[string]string { return &ng.tags }, "eks node group", clusterAndName, tags)
}

// SSMParameter is the value of a public SSM parameter, as GetParameter answers it.
func (e *Emulator) SSMParameter(name string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	value, ok := e.ssmParameters[name]
	return value, ok
}

// SetSSMParameter makes the parameter hold value, as AWS does when it publishes a new release
// behind a "recommended" (latest) parameter.
func (e *Emulator) SetSSMParameter(name, value string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ssmParameters[name] = value
}

// replaceTags replaces the tags, found by tagsOf, of the resource of the kind named name in
// resources, one of the emulator's maps.
func replaceTags[R any](e *Emulator, resources map[string]*R, tagsOf func(*R) *map[string]string, kind, name string, tags map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := resources[name]
	if !ok {
		return fmt.Errorf("%s %q does not exist", kind, name)
	}
	*tagsOf(r) = maps.Clone(tags)
	return nil
}

func (e *Emulator) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_emulator/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /_emulator/instances", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, "application/json", map[string][]Instance{"instances": e.Instances(r.URL.Query().Get("group"))})
	})
	mux.HandleFunc("POST /_emulator/seed", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		seed, err := ParseSeed(b)
		if err == nil {
			err = e.Seed(seed)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /_emulator/queues/{name}/messages", func(w http.ResponseWriter, r *http.Request) {
		in := struct {
			Count int    `json:"count"`
			Body  string `json:"body"`
		}{Count: 1, Body: "message"}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil && err != io.EOF {
			http.Error(w, fmt.Sprintf("decoding request, %v", err), http.StatusBadRequest)
			return
		}
		if in.Count < 0 {
			http.Error(w, "count must be >= 0", http.StatusBadRequest)
			return
		}
		if err := e.SendMessages(r.PathValue("name"), in.Count, in.Body); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /_emulator/instances/{id}/interrupt", func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query()
		id, err := e.Interrupt(query.Get("queue"), r.PathValue("id"), InterruptionKind(query.Get("kind")), query.Get("state"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, "application/json", map[string]string{"messageId": id})
	})
	mux.HandleFunc("DELETE /_emulator/queues/{name}/messages", func(w http.ResponseWriter, r *http.Request) {
		if err := e.PurgeQueue(r.PathValue("name")); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	setTags := func(set func(string, map[string]string) error, id func(*http.Request) string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var tags map[string]string
			if err := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes)).Decode(&tags); err != nil {
				http.Error(w, fmt.Sprintf("decoding request, %v", err), http.StatusBadRequest)
				return
			}
			if err := set(id(r), tags); err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}
	mux.HandleFunc("PUT /_emulator/autoscalinggroups/{name}/tags", setTags(e.SetAutoScalingGroupTags,
		func(r *http.Request) string { return r.PathValue("name") }))
	mux.HandleFunc("PUT /_emulator/eksnodegroups/{cluster}/{name}/tags", setTags(e.SetEKSNodeGroupTags,
		func(r *http.Request) string { return r.PathValue("cluster") + "/" + r.PathValue("name") }))
	mux.HandleFunc("GET /_emulator/ec2/instances", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, "application/json", map[string][]EC2Instance{"instances": e.EC2Instances()})
	})
	mux.HandleFunc("POST /_emulator/ec2/instances/terminate", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			InstanceIDs []string `json:"instanceIds"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes)).Decode(&in); err != nil && err != io.EOF {
			http.Error(w, fmt.Sprintf("decoding request, %v", err), http.StatusBadRequest)
			return
		}
		if err := e.TerminateEC2Instances(in.InstanceIDs); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /_emulator/ec2/fleets", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, "application/json", map[string][]FleetRequest{"fleets": e.FleetRequests()})
	})
	mux.HandleFunc("GET /_emulator/ec2/terminations", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, "application/json", map[string][]TerminationRequest{"terminations": e.TerminationRequests()})
	})
	mux.HandleFunc("GET /_emulator/ec2/launchtemplates", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, "application/json", map[string][]LaunchTemplate{"launchTemplates": e.LaunchTemplates()})
	})
	mux.HandleFunc("GET /_emulator/faults", func(w http.ResponseWriter, _ *http.Request) {
		type faultHits struct {
			Fault
			Hits int `json:"hits"`
		}
		e.mu.Lock()
		out := []faultHits{}
		for _, f := range e.faults {
			out = append(out, faultHits{Fault: f.Fault, Hits: f.hits})
		}
		e.mu.Unlock()
		writeJSON(w, "application/json", map[string]any{"faults": out})
	})
	mux.HandleFunc("POST /_emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		var f Fault
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			http.Error(w, fmt.Sprintf("decoding fault, %v", err), http.StatusBadRequest)
			return
		}
		if _, err := e.InjectFault(f); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /_emulator/faults", func(w http.ResponseWriter, _ *http.Request) {
		e.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
