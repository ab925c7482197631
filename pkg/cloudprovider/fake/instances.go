package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"knative.dev/pkg/apis"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// InstanceProviderOptions configure NewInstanceProvider.
type InstanceProviderOptions struct {
	// InstanceTypes is the catalogue; nil means DefaultInstanceTypes().
	InstanceTypes []*cloudprovider.InstanceType
	// Clock stamps launch times; nil means the real clock.
	Clock clock.PassiveClock
	// LaunchPending keeps launched instances pending until MarkRunning; otherwise they
	// run at once.
	LaunchPending bool
	// ShutDownPending keeps deleted instances shutting down (Get answers them, List does not)
	// until MarkTerminated; otherwise they terminate at once.
	ShutDownPending bool
}

// InstanceProvider is an in-memory cloud of instances. It launches from its catalogue
// in request order, skipping offerings the test made run out of capacity, and names
// instances in launch order (i-00000000000000001, ...), so results are deterministic. It
// records every call for assertions and is safe for concurrent use.
type InstanceProvider struct {
	clock           clock.PassiveClock
	launchPending   bool
	shutDownPending bool

	mu        sync.Mutex
	catalogue []*cloudprovider.InstanceType
	instances map[string]*cloudprovider.Instance
	// terminated are the instances deleted, kept for the launches that answer them again.
	terminated map[string]*cloudprovider.Instance
	launched   int
	noCapacity map[cloudprovider.OfferingKey]bool
	// perCall caps the instances one Create launches; 0 is no cap.
	perCall int
	// unreadLaunches are how many of the next Create calls answer their instances unread.
	unreadLaunches int
	err            error
	stalePrices    error
	// launches maps an idempotency key to the provider ids it launched, and requests to what
	// the first launch under it asked for (requestIdentity).
	launches map[string][]string
	requests map[string]string
	// registerWith are the taints each instance's kubelet registers its node with, by provider id.
	registerWith map[string][]corev1.Taint
	typesCalls   []cloudprovider.Constraints
	createCalls  []cloudprovider.LaunchRequest
	deleteCalls  []string
	unavailable  []cloudprovider.OfferingKey
}

var _ cloudprovider.InstanceProvider = (*InstanceProvider)(nil)

func NewInstanceProvider(opts InstanceProviderOptions) *InstanceProvider {
	catalogue := opts.InstanceTypes
	if catalogue == nil {
		catalogue = DefaultInstanceTypes()
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &InstanceProvider{
		clock:           clk,
		launchPending:   opts.LaunchPending,
		shutDownPending: opts.ShutDownPending,
		catalogue:       catalogue,
		instances:       map[string]*cloudprovider.Instance{},
		terminated:      map[string]*cloudprovider.Instance{},
		noCapacity:      map[cloudprovider.OfferingKey]bool{},
		launches:        map[string][]string{},
		requests:        map[string]string{},
		registerWith:    map[string][]corev1.Taint{},
	}
}

func (p *InstanceProvider) InstanceTypes(_ context.Context, constraints cloudprovider.Constraints) ([]*cloudprovider.InstanceType, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.typesCalls = append(p.typesCalls, constraints)
	if p.err != nil {
		return nil, p.err
	}
	var types []*cloudprovider.InstanceType
	for _, t := range p.catalogue {
		var offerings []cloudprovider.Offering
		for _, o := range t.Offerings {
			if !satisfies(offeringLabels(t, o), constraints.Requirements) {
				continue
			}
			o.Available = o.Available && !p.noCapacity[cloudprovider.Candidate{InstanceType: t, Offering: o}.Key()]
			offerings = append(offerings, o)
		}
		if len(offerings) == 0 {
			continue
		}
		copied := *t
		copied.Labels = maps.Clone(t.Labels)
		copied.Capacity = t.Capacity.DeepCopy()
		copied.Overhead = t.Overhead.DeepCopy()
		copied.Offerings = offerings
		types = append(types, &copied)
	}
	return types, nil
}

func (p *InstanceProvider) Create(_ context.Context, request cloudprovider.LaunchRequest) ([]*cloudprovider.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.createCalls = append(p.createCalls, request)
	if p.err != nil {
		return nil, p.err
	}
	if len(request.Candidates) == 0 {
		return nil, fmt.Errorf("launching for provisioner %q, no candidate instance types", request.ProvisionerName)
	}
	// As EC2 answers a repeated client token: the first answer again, terminated instances
	// and all, and nothing launched; a refusal when the request is not the first one's.
	if ids, ok := p.launches[request.IdempotencyKey]; ok && request.IdempotencyKey != "" {
		if p.requests[request.IdempotencyKey] != requestIdentity(request) {
			return nil, &cloudprovider.LaunchedBeforeError{Key: request.IdempotencyKey, Err: errors.New("the fake cloud's first launch under this key asked for something else")}
		}
		out := make([]*cloudprovider.Instance, 0, len(ids))
		for _, id := range ids {
			instance, ok := p.instances[id]
			if !ok {
				instance = p.terminated[id]
			}
			out = append(out, copyInstance(instance))
		}
		return out, nil
	}
	var failed []cloudprovider.OfferingKey
	reasons := map[cloudprovider.OfferingKey]string{}
	var out []*cloudprovider.Instance
	for _, c := range request.Candidates {
		key := c.Key()
		if !p.offered(key) || p.noCapacity[key] {
			failed = append(failed, key)
			reasons[key] = "InsufficientInstanceCapacity"
			continue
		}
		for len(out) < request.Wanted() && (p.perCall == 0 || len(out) < p.perCall) {
			out = append(out, p.launch(request, c))
		}
		break
	}
	if len(out) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{Offerings: failed, Reasons: reasons, Err: errors.New("the fake cloud has no capacity left for them")}
	}
	for _, launched := range out {
		if len(failed) > 0 {
			launched.FellBackFrom = &cloudprovider.InsufficientCapacityError{Offerings: failed, Reasons: reasons, Err: errors.New("the fake cloud had no capacity for them")}
		}
	}
	if p.unreadLaunches > 0 {
		p.unreadLaunches--
		// As a launch whose describe failed answers: what the launch's answer told, no node name.
		for _, launched := range out {
			launched.NodeName = ""
		}
		return nil, &cloudprovider.UnreadInstancesError{Instances: out, Err: errors.New("the fake cloud refused to describe them")}
	}
	return out, nil
}

// SetUnreadLaunches makes the next n Create calls launch as asked and answer their instances in
// an UnreadInstancesError, as a launch whose instances could not be read back does; Get reads
// them.
func (p *InstanceProvider) SetUnreadLaunches(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unreadLaunches = n
}

// launch makes one instance of the candidate and returns a copy of it.
func (p *InstanceProvider) launch(request cloudprovider.LaunchRequest, c cloudprovider.Candidate) *cloudprovider.Instance {
	key := c.Key()
	p.launched++
	id := fmt.Sprintf("i-%017x", p.launched)
	labels := maps.Clone(c.InstanceType.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, request.Labels)
	maps.Copy(labels, map[string]string{
		corev1.LabelInstanceTypeStable: key.InstanceType,
		corev1.LabelTopologyZone:       key.Zone,
		v1alpha5.CapacityTypeLabelKey:  key.CapacityType,
	})
	state := cloudprovider.InstanceStateRunning
	if p.launchPending {
		state = cloudprovider.InstanceStatePending
	}
	instance := &cloudprovider.Instance{
		ProviderID:   fmt.Sprintf("fake:///%s/%s", key.Zone, id),
		ID:           id,
		InstanceType: key.InstanceType,
		Zone:         key.Zone,
		CapacityType: key.CapacityType,
		NodeName:     fmt.Sprintf("ip-10-%d-%d-%d.us-west-2.compute.internal", p.launched>>16&255, p.launched>>8&255, p.launched&255),
		ImageID:      "fake-image-" + labels[corev1.LabelArchStable],
		LaunchTime:   p.clock.Now(),
		LaunchGroup:  request.IdempotencyKey,
		State:        state,
		Labels:       labels,
	}
	p.instances[instance.ProviderID] = instance
	p.registerWith[instance.ProviderID] = slices.Clone(request.Taints)
	if request.IdempotencyKey != "" {
		p.launches[request.IdempotencyKey] = append(p.launches[request.IdempotencyKey], instance.ProviderID)
		p.requests[request.IdempotencyKey] = requestIdentity(request)
	}
	return copyInstance(instance)
}

// unregisteredTaint is what a node registers with until Karpenter has matched it to its
// NodeClaim, as Karpenter's user data asks of the kubelet on AWS.
var unregisteredTaint = corev1.Taint{Key: v1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}

// KubeletNode is the Node the kubelet of a running instance registers, as Karpenter's user data
// tells it to on AWS: named as the instance, with its provider id and labels (the launch's and
// the offering's) and the hostname, the launch's taints and the unregistered taint, and its
// instance type's capacity and allocatable. ok is false for an instance not running; the fake's
// kubelets always know what to register (no error).
func (p *InstanceProvider) KubeletNode(providerID string) (node *corev1.Node, ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	instance, ok := p.instances[providerID]
	if !ok || instance.State != cloudprovider.InstanceStateRunning {
		return nil, false, nil
	}
	labels := maps.Clone(instance.Labels)
	labels[corev1.LabelHostname] = instance.NodeName
	node = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: instance.NodeName, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: append(slices.Clone(p.registerWith[providerID]), unregisteredTaint)},
	}
	for _, t := range p.catalogue {
		if t.Name == instance.InstanceType {
			node.Status.Capacity, node.Status.Allocatable = t.Capacity.DeepCopy(), t.Allocatable()
		}
	}
	return node, true, nil
}

// offered reports whether the catalogue has the offering and it is available.
func (p *InstanceProvider) offered(key cloudprovider.OfferingKey) bool {
	for _, t := range p.catalogue {
		if t.Name != key.InstanceType {
			continue
		}
		for _, o := range t.Offerings {
			if o.Zone == key.Zone && o.CapacityType == key.CapacityType {
				return o.Available
			}
		}
	}
	return false
}

func (p *InstanceProvider) Delete(_ context.Context, providerID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleteCalls = append(p.deleteCalls, providerID)
	if p.err != nil {
		return p.err
	}
	if instance, ok := p.instances[providerID]; ok {
		if p.shutDownPending {
			instance.State = cloudprovider.InstanceStateShuttingDown
			return nil
		}
		p.terminate(providerID)
	}
	return nil
}

// terminate makes an instance gone; the launches that answer it again say it terminated.
func (p *InstanceProvider) terminate(providerID string) {
	instance := p.instances[providerID]
	instance.State = cloudprovider.InstanceStateTerminated
	p.terminated[providerID] = instance
	delete(p.instances, providerID)
}

// MarkTerminated makes an instance shutting down (ShutDownPending) gone, as the cloud does once
// it stopped.
func (p *InstanceProvider) MarkTerminated(providerID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.instances[providerID]; !ok {
		return &cloudprovider.NotFoundError{Resource: "instance " + providerID, Err: errors.New("the fake cloud has no such instance")}
	}
	p.terminate(providerID)
	return nil
}

func (p *InstanceProvider) Get(_ context.Context, providerID string) (*cloudprovider.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	instance, ok := p.instances[providerID]
	if !ok {
		return nil, &cloudprovider.NotFoundError{Resource: "instance " + providerID, Err: errors.New("the fake cloud has no such instance")}
	}
	return copyInstance(instance), nil
}

// List returns the instances in launch order.
func (p *InstanceProvider) List(context.Context) ([]*cloudprovider.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	instances := make([]*cloudprovider.Instance, 0, len(p.instances))
	for _, instance := range p.instances {
		if !instance.State.ShutDown() {
			instances = append(instances, copyInstance(instance))
		}
	}
	// Ids are zero-padded launch counters: their order is the launch order.
	slices.SortFunc(instances, func(a, b *cloudprovider.Instance) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return instances, nil
}

// StalePrices returns what SetStalePrices set, nil at first.
func (p *InstanceProvider) StalePrices() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalePrices
}

// SetStalePrices makes StalePrices return err (a *cloudprovider.StalePricesError, typically);
// nil clears it.
func (p *InstanceProvider) SetStalePrices(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalePrices = err
}

// MarkRunning makes a pending instance run, as the cloud does once it boots.
func (p *InstanceProvider) MarkRunning(providerID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	instance, ok := p.instances[providerID]
	if !ok {
		return &cloudprovider.NotFoundError{Resource: "instance " + providerID, Err: errors.New("the fake cloud has no such instance")}
	}
	instance.State = cloudprovider.InstanceStateRunning
	return nil
}

// SetInsufficientCapacity makes Create fail over the offerings and InstanceTypes report
// them unavailable, until ClearInsufficientCapacity.
func (p *InstanceProvider) SetInsufficientCapacity(offerings ...cloudprovider.OfferingKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, key := range offerings {
		p.noCapacity[key] = true
	}
}

// MarkUnavailable records the offering and makes it run out of capacity, as
// SetInsufficientCapacity does, until ClearInsufficientCapacity.
func (p *InstanceProvider) MarkUnavailable(_ context.Context, offering cloudprovider.OfferingKey, _ string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unavailable = append(p.unavailable, offering)
	p.noCapacity[offering] = true
}

// MarkUnavailableCalls returns the offering of every MarkUnavailable call so far.
func (p *InstanceProvider) MarkUnavailableCalls() []cloudprovider.OfferingKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.unavailable)
}

// SetCapacityPerCall makes each Create launch at most n instances, without an error when it
// launches fewer than asked, as EC2's CreateFleet fills a request partially; 0 lifts the cap.
func (p *InstanceProvider) SetCapacityPerCall(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.perCall = n
}

// ClearInsufficientCapacity restores the capacity of every offering.
func (p *InstanceProvider) ClearInsufficientCapacity() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.noCapacity)
}

// SetError makes InstanceTypes, Create, Delete, Get and List fail with err (they are still
// recorded); nil clears it.
func (p *InstanceProvider) SetError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// InstanceTypesCalls returns the constraints of every InstanceTypes call so far.
func (p *InstanceProvider) InstanceTypesCalls() []cloudprovider.Constraints {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.typesCalls)
}

// CreateCalls returns the request of every Create call so far, successful or not.
func (p *InstanceProvider) CreateCalls() []cloudprovider.LaunchRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.createCalls)
}

// DeleteCalls returns the provider id of every Delete call so far.
func (p *InstanceProvider) DeleteCalls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deleteCalls)
}

func copyInstance(i *cloudprovider.Instance) *cloudprovider.Instance {
	copied := *i
	copied.Labels = maps.Clone(i.Labels)
	return &copied
}

// offeringLabels are the well-known labels a node of the type launched as the offering
// carries.
func offeringLabels(t *cloudprovider.InstanceType, o cloudprovider.Offering) map[string]string {
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[corev1.LabelInstanceTypeStable] = t.Name
	labels[corev1.LabelTopologyZone] = o.Zone
	labels[v1alpha5.CapacityTypeLabelKey] = o.CapacityType
	return labels
}

// satisfies reports whether labels meet every requirement on a key they have; requirements
// on other keys are about labels the Provisioner sets, not about the instance type.
func satisfies(labels map[string]string, requirements []corev1.NodeSelectorRequirement) bool {
	for _, r := range requirements {
		value, ok := labels[r.Key]
		if !ok {
			continue
		}
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			if !slices.Contains(r.Values, value) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if slices.Contains(r.Values, value) {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			return false
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				return false
			}
			have, err1 := strconv.ParseInt(value, 10, 64)
			bound, err2 := strconv.ParseInt(r.Values[0], 10, 64)
			if err1 != nil || err2 != nil || (r.Operator == corev1.NodeSelectorOpGt && have <= bound) || (r.Operator == corev1.NodeSelectorOpLt && have >= bound) {
				return false
			}
		}
	}
	return true
}

// ProviderBlock is the fake cloud's spec.provider.
type ProviderBlock struct {
	// InstanceProfile is the role instances run as; DefaultInstanceProfile when unset.
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Tags are put on the instances; keys must not be empty.
	Tags map[string]string `json:"tags,omitempty"`
}

// DefaultInstanceProfile is what DefaultProvider fills in.
const DefaultInstanceProfile = "KarpenterNodeInstanceProfile"

func (p *InstanceProvider) DefaultProvider(_ context.Context, provider *runtime.RawExtension) *runtime.RawExtension {
	var block ProviderBlock
	if provider != nil {
		if err := json.Unmarshal(provider.Raw, &block); err != nil {
			return provider
		}
	}
	if block.InstanceProfile != "" {
		return provider
	}
	block.InstanceProfile = DefaultInstanceProfile
	raw, err := json.Marshal(block)
	if err != nil {
		return provider
	}
	return &runtime.RawExtension{Raw: raw}
}

// ValidateProvider rejects fields ProviderBlock does not have, by name, values of the
// wrong type and empty tag keys.
func (p *InstanceProvider) ValidateProvider(_ context.Context, provider *runtime.RawExtension) *apis.FieldError {
	if provider == nil {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(provider.Raw, &fields); err != nil {
		return &apis.FieldError{Message: fmt.Sprintf("must be an object: %v", err), Paths: []string{apis.CurrentField}}
	}
	var errs *apis.FieldError
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		var err error
		switch name {
		case "instanceProfile":
			err = json.Unmarshal(fields[name], new(string))
		case "tags":
			var tags map[string]string
			if err = json.Unmarshal(fields[name], &tags); err == nil && slices.Contains(slices.Collect(maps.Keys(tags)), "") {
				errs = errs.Also(apis.ErrInvalidKeyName("", "tags", "tag keys must not be empty"))
			}
		default:
			errs = errs.Also(apis.ErrDisallowedFields(name))
		}
		if err != nil {
			errs = errs.Also(apis.ErrInvalidValue(string(fields[name]), name, err.Error()))
		}
	}
	return errs
}

// requestIdentity is what a launch under a key must ask for again to be answered again: how many
// instances, of which offerings.
func requestIdentity(request cloudprovider.LaunchRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", request.Wanted())
	for _, c := range request.Candidates {
		fmt.Fprintf(&b, " %v", c.Key())
	}
	return b.String()
}
