package interruption_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/interruption"
	"karpenter.sh/karpenter/pkg/controllers/node/termination"
	"karpenter.sh/karpenter/pkg/nodes"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/events"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
	"karpenter.sh/karpenter/test/awsemulator"
)

const queueName = "interruptions"

// The queue hides a received message for a second: a message not deleted comes back soon.
const emulatorSeed = `
sqsQueues:
- name: interruptions
  attributes:
    VisibilityTimeout: "1"
`

type suite struct {
	env      *environment.Environment
	cloud    *fake.InstanceProvider
	emulator *awsemulator.Emulator
	queue    cloudprovider.InterruptionQueue
	// stop stops the operator the test started.
	stop func()
}

// TestInterruption runs the controller as the binary does, reading the emulator's SQS queue
// through the AWS implementation, against a real control plane where kwok plays the kubelets
// and the termination finalizer drains the nodes; the fake cloud holds the instances.
func TestInterruption(t *testing.T) {
	for _, v := range []string{"AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}, Kwok: true})
	emulator, server := awstest.Serve(t, awsemulator.Options{}, emulatorSeed)
	provider, err := aws.New(t.Context(), aws.Options{Region: "us-west-2", MaxAttempts: 2, MaxBackoff: 5 * time.Millisecond},
		config.WithBaseEndpoint(server.URL), config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	queue, err := provider.InterruptionQueue(queueName)
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{env: env, cloud: fake.NewInstanceProvider(fake.InstanceProviderOptions{}), emulator: emulator, queue: queue}
	if err := env.Client.Create(t.Context(), builders.Provisioner(builders.ProvisionerOptions{Name: "default"})); err != nil {
		t.Fatal(err)
	}
	s.stop = s.start(t)

	t.Run("a spot interruption drains the node, terminates its instance and stops offering it", s.spotInterruption)
	t.Run("a scheduled change and an instance stopping drain the node", s.scheduledChangeAndStopping)
	t.Run("a rebalance recommendation is an Event only", s.rebalanceIsAnEventOnly)
	t.Run("a do-not-evict pod that tolerates the cordon holds the drain of an interrupted node", s.doNotEvictToleratingCordonHolds)
	t.Run("messages about other instances, and malformed ones, are deleted and nothing else", s.otherInstancesAndMalformedMessages)
	t.Run("an interruption before the instance's Node exists waits for the Node", s.interruptionBeforeTheNode)
	t.Run("TestForgedInterruptionIsRefused: an event from another account, or from none, is refused and deleted", s.forgedInterruptionIsRefused)
	t.Run("a crash before the message is deleted: it comes back and is handled harmlessly", s.crashBeforeTheMessageIsDeleted)
}

func (s *suite) spotInterruption(t *testing.T) {
	node, instance := s.node(t, "spot", true)
	pod := builders.Pod(builders.PodOptions{Name: "app", NodeName: node.Name})
	s.create(t, pod)
	s.waitRunning(t, pod)
	s.interrupt(t, instance, awsemulator.InterruptSpot, "")
	events.Wait(t, s.env.Client, node.Name, string(cloudprovider.InterruptionSpot), "Spot interruption warning for instance "+instance.ID)
	events.Wait(t, s.env.Client, node.Name, termination.ReasonTerminated, instance.ProviderID)
	s.expectGone(t, pod)
	s.expectGone(t, node)
	if _, err := s.cloud.Get(t.Context(), instance.ProviderID); err == nil {
		t.Errorf("instance %s outlived its node", instance.ProviderID)
	}
	offering := cloudprovider.OfferingKey{InstanceType: instance.InstanceType, Zone: instance.Zone, CapacityType: instance.CapacityType}
	if !slices.Contains(s.cloud.MarkUnavailableCalls(), offering) {
		t.Errorf("offerings marked unavailable %v, want %v among them", s.cloud.MarkUnavailableCalls(), offering)
	}
	s.expectQueueEmpty(t)
}

func (s *suite) scheduledChangeAndStopping(t *testing.T) {
	for _, tc := range []struct {
		kind  awsemulator.InterruptionKind
		state string
		text  string
	}{
		{awsemulator.InterruptScheduledChange, "", "Scheduled maintenance"},
		{awsemulator.InterruptStateChange, "stopping", "Instance state stopping"},
	} {
		node, instance := s.node(t, string(tc.kind), false)
		s.interrupt(t, instance, tc.kind, tc.state)
		events.Wait(t, s.env.Client, node.Name, string(map[awsemulator.InterruptionKind]cloudprovider.InterruptionKind{
			awsemulator.InterruptScheduledChange: cloudprovider.InterruptionScheduledChange,
			awsemulator.InterruptStateChange:     cloudprovider.InterruptionStateChange,
		}[tc.kind]), tc.text)
		s.expectGone(t, node)
		s.expectQueueEmpty(t)
	}
}

func (s *suite) rebalanceIsAnEventOnly(t *testing.T) {
	node, instance := s.node(t, "rebalanced", true)
	s.interrupt(t, instance, awsemulator.InterruptRebalance, "")
	events.Wait(t, s.env.Client, node.Name, string(cloudprovider.InterruptionRebalance), "no action taken")
	s.expectQueueEmpty(t)
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil || node.DeletionTimestamp != nil {
		t.Errorf("node %s: %v, deletion %v; want it kept", node.Name, err, node.DeletionTimestamp)
	}
}

// Finding 34.3: the drain leaves a pod that tolerates the cordon on the node, but its
// do-not-evict annotation must hold the drain, or the instance takes it with it.
func (s *suite) doNotEvictToleratingCordonHolds(t *testing.T) {
	node, instance := s.node(t, "interrupted-job", true)
	job := builders.Pod(builders.PodOptions{Name: "interrupted-job", NodeName: node.Name, Annotations: map[string]string{pods.DoNotEvictAnnotationKey: "true"},
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}})
	s.create(t, job)
	s.waitRunning(t, job)
	s.interrupt(t, instance, awsemulator.InterruptSpot, "")
	events.Wait(t, s.env.Client, node.Name, termination.ReasonDrainBlocked, "default/interrupted-job")
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(job), job); err != nil || job.DeletionTimestamp != nil {
		t.Fatalf("pod %s deleted while it holds the drain (%v)", job.Name, err)
	}
	if slices.Contains(s.cloud.DeleteCalls(), instance.ProviderID) {
		t.Fatalf("instance %s terminated while pod %s holds the drain", instance.ProviderID, job.Name)
	}
	s.expectQueueEmpty(t)
	if err := s.env.Client.Delete(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	s.expectGone(t, node)
}

func (s *suite) otherInstancesAndMalformedMessages(t *testing.T) {
	foreign := environment.KwokNode("foreign", nil, builders.Resources("cpu", "4", "memory", "16Gi"))
	foreign.Spec.ProviderID = "aws:///us-west-2a/i-0ffffffffffffffff"
	s.create(t, foreign)
	deletes := len(s.cloud.DeleteCalls())
	s.interruptID(t, "i-0ffffffffffffffff", awsemulator.InterruptSpot, "")
	s.interruptID(t, "i-0eeeeeeeeeeeeeeee", awsemulator.InterruptStateChange, "terminated")
	if err := s.emulator.SendMessages(queueName, 1, "not an event"); err != nil {
		t.Fatal(err)
	}
	s.expectQueueEmpty(t)
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(foreign), foreign); err != nil || foreign.DeletionTimestamp != nil {
		t.Errorf("node %s: %v, deletion %v; want it kept", foreign.Name, err, foreign.DeletionTimestamp)
	}
	if len(s.cloud.DeleteCalls()) != deletes {
		t.Errorf("instances terminated: %v", s.cloud.DeleteCalls()[deletes:])
	}
}

func (s *suite) interruptionBeforeTheNode(t *testing.T) {
	instance := s.launch(t, true)
	id, err := s.emulator.Interrupt(queueName, instance.ID, awsemulator.InterruptSpot, "")
	if err != nil {
		t.Fatal(err)
	}
	// Received, kept, and received again: the controller waits for the Node.
	eventually.Holds(t, "the message received twice", func() (bool, string, error) {
		n, err := s.emulator.ReceiveCount(queueName, id)
		return n >= 2, fmt.Sprintf("received %d times", n), err
	})
	node := s.register(t, instance.NodeName, instance)
	events.Wait(t, s.env.Client, node.Name, string(cloudprovider.InterruptionSpot), instance.ID)
	s.expectGone(t, node)
	s.expectQueueEmpty(t)
}

// Finding 34.14: the queue's policy may let another account's EventBridge rule send to it;
// its events, and bodies without an account (no EventBridge event lacks one), must not
// drain the cluster's nodes.
func (s *suite) forgedInterruptionIsRefused(t *testing.T) {
	node, instance := s.node(t, "forged", true)
	refused := actions(t, cloudprovider.InterruptionSpot, "Refuse")
	deletes, unavailable := len(s.cloud.DeleteCalls()), len(s.cloud.MarkUnavailableCalls())
	for _, account := range []string{"999999999999", ""} {
		if _, err := s.emulator.InterruptFromAccount(queueName, account, instance.ID, awsemulator.InterruptSpot, ""); err != nil {
			t.Fatal(err)
		}
	}
	s.expectQueueEmpty(t)
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil || node.DeletionTimestamp != nil {
		t.Errorf("node %s: %v, deletion %v; want it kept", node.Name, err, node.DeletionTimestamp)
	}
	if len(s.cloud.DeleteCalls()) != deletes || len(s.cloud.MarkUnavailableCalls()) != unavailable {
		t.Errorf("instances terminated %v, offerings marked unavailable %v; want none", s.cloud.DeleteCalls()[deletes:], s.cloud.MarkUnavailableCalls()[unavailable:])
	}
	if got := actions(t, cloudprovider.InterruptionSpot, "Refuse") - refused; got != 2 {
		t.Errorf(`karpenter_interruption_actions_total{kind="SpotInterruption",action="Refuse"} rose by %v, want 2`, got)
	}
	if n := s.events(t, node.Name, string(cloudprovider.InterruptionSpot)); n != 0 {
		t.Errorf("%d %s events on node %s, want none", n, cloudprovider.InterruptionSpot, node.Name)
	}
}

// Last: it restarts the operator.
func (s *suite) crashBeforeTheMessageIsDeleted(t *testing.T) {
	node, instance := s.node(t, "crashed", true)
	blocker := builders.Pod(builders.PodOptions{Name: "blocker", NodeName: node.Name, Annotations: map[string]string{pods.DoNotEvictAnnotationKey: "true"}})
	s.create(t, blocker)
	s.waitRunning(t, blocker)
	// Every deletion fails, as if the controller died right after acting.
	if _, err := s.emulator.InjectFault(awsemulator.Fault{Service: "sqs", Action: "DeleteMessage", Kind: awsemulator.FaultServerError}); err != nil {
		t.Fatal(err)
	}
	s.interrupt(t, instance, awsemulator.InterruptSpot, "")
	events.Wait(t, s.env.Client, node.Name, string(cloudprovider.InterruptionSpot), instance.ID)
	s.stop()
	s.emulator.ClearFaults()
	if n, err := s.emulator.MessageCount(queueName); err != nil || n != 1 {
		t.Fatalf("%d messages (%v), want the one never deleted", n, err)
	}
	s.start(t)
	s.expectQueueEmpty(t)
	// The node drains still, held by its do-not-evict pod; the Event was not repeated.
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil || node.DeletionTimestamp == nil {
		t.Fatalf("node %s: %v, deletion %v; want it being deleted", node.Name, err, node.DeletionTimestamp)
	}
	if n := s.events(t, node.Name, string(cloudprovider.InterruptionSpot)); n != 1 {
		t.Errorf("%d %s events (counted), want 1", n, cloudprovider.InterruptionSpot)
	}
	if err := s.env.Client.Delete(t.Context(), blocker); err != nil {
		t.Fatal(err)
	}
	s.expectGone(t, node)
}

func (s *suite) start(t *testing.T) func() {
	return operatortest.Start(t, s.env, operatortest.Options{Controllers: controllers.Options{
		Enabled:           []string{interruption.Name, termination.Name},
		CloudProvider:     cloudprovider.NewRegistry(),
		InstanceProvider:  s.cloud,
		InterruptionQueue: s.queue,
	}})
}

// node creates a Ready node as Karpenter launches it, for a spot or an on-demand instance of
// the fake cloud.
func (s *suite) node(t *testing.T, name string, spot bool) (*corev1.Node, *cloudprovider.Instance) {
	t.Helper()
	instance := s.launch(t, spot)
	return s.register(t, name, instance), instance
}

// launch launches a spot or an on-demand instance in the fake cloud.
func (s *suite) launch(t *testing.T, spot bool) *cloudprovider.Instance {
	t.Helper()
	var candidate cloudprovider.Candidate
	for _, instanceType := range fake.DefaultInstanceTypes() {
		for _, offering := range instanceType.Offerings {
			if (offering.CapacityType == v1alpha5.CapacityTypeSpot) == spot && offering.Available && candidate.InstanceType == nil {
				candidate = cloudprovider.Candidate{InstanceType: instanceType, Offering: offering}
			}
		}
	}
	// An earlier spot interruption made its offering unavailable.
	s.cloud.ClearInsufficientCapacity()
	launched, err := s.cloud.Create(t.Context(), cloudprovider.LaunchRequest{ProvisionerName: "default", Candidates: []cloudprovider.Candidate{candidate}})
	if err != nil {
		t.Fatal(err)
	}
	return launched[0]
}

// register creates the instance's Node as Karpenter does, and waits for kwok to make it Ready.
func (s *suite) register(t *testing.T, name string, instance *cloudprovider.Instance) *corev1.Node {
	t.Helper()
	labels := map[string]string{v1alpha5.ProvisionerNameLabelKey: "default"}
	for k, v := range instance.Labels {
		labels[k] = v
	}
	node := environment.KwokNode(name, labels, builders.Resources("cpu", "4", "memory", "16Gi"))
	node.Spec.ProviderID = instance.ProviderID
	node.Finalizers = []string{v1alpha5.TerminationFinalizer}
	s.create(t, node)
	// Pods run on the node once kwok made it Ready.
	eventually.Holds(t, "node "+name+" Ready", func() (bool, string, error) {
		current := &corev1.Node{}
		if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), current); err != nil {
			return false, "", err
		}
		return nodes.IsReady(current), "not Ready", nil
	})
	return node
}

func (s *suite) create(t *testing.T, object client.Object) {
	t.Helper()
	if err := s.env.Client.Create(t.Context(), object); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) interrupt(t *testing.T, instance *cloudprovider.Instance, kind awsemulator.InterruptionKind, state string) {
	t.Helper()
	s.interruptID(t, instance.ID, kind, state)
}

func (s *suite) interruptID(t *testing.T, instanceID string, kind awsemulator.InterruptionKind, state string) {
	t.Helper()
	if _, err := s.emulator.Interrupt(queueName, instanceID, kind, state); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) waitRunning(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	eventually.Holds(t, "pod "+pod.Name+" runs", func() (bool, string, error) {
		if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, "", err
		}
		return pod.Status.Phase == corev1.PodRunning, string(pod.Status.Phase), nil
	})
}

func (s *suite) expectGone(t *testing.T, object client.Object) {
	t.Helper()
	eventually.Holds(t, object.GetName()+" is gone", func() (bool, string, error) {
		err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(object), object)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("deletion %v, finalizers %v", object.GetDeletionTimestamp(), object.GetFinalizers()), err
	})
}

func (s *suite) expectQueueEmpty(t *testing.T) {
	t.Helper()
	eventually.Holds(t, "every message is deleted", func() (bool, string, error) {
		n, err := s.emulator.MessageCount(queueName)
		return n == 0, fmt.Sprintf("%d messages", n), err
	})
}

// actions reads karpenter_interruption_actions_total for a kind and an action.
func actions(t *testing.T, kind cloudprovider.InterruptionKind, action string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != "karpenter_interruption_actions_total" {
			continue
		}
		for _, m := range family.GetMetric() {
			labels := map[string]string{}
			for _, pair := range m.GetLabel() {
				labels[pair.GetName()] = pair.GetValue()
			}
			if labels["kind"] == string(kind) && labels["action"] == action {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// events counts the Events of reason about the node, their repeats included.
func (s *suite) events(t *testing.T, node, reason string) int32 {
	t.Helper()
	list := &corev1.EventList{}
	if err := s.env.Client.List(t.Context(), list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	var count int32
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node && e.Reason == reason {
			count += max(e.Count, 1)
		}
	}
	return count
}
