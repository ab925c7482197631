package metricsproducer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/autoscaler"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/controllers"
	"karpenter.sh/karpenter/pkg/controllers/horizontalautoscaler"
	"karpenter.sh/karpenter/pkg/controllers/metricsproducer"
	"karpenter.sh/karpenter/pkg/metrics/producers"
	"karpenter.sh/karpenter/pkg/test/awstest"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/test/eventually"
	"karpenter.sh/karpenter/pkg/test/operatortest"
	"karpenter.sh/karpenter/test/awsemulator"
)

const (
	namespace   = "producers"
	pollTimeout = time.Minute
	// period is short so the queue and schedule producers, which have no watch, update quickly.
	period = 2 * time.Second
)

// TestProducersThroughPrometheus runs the controller against a real apiserver, scheduler and
// kwok nodes, serves its registry over HTTP like the controller's /metrics, and reads every
// producer's gauges back through a real Prometheus scraping it every second. The environment
// is shared because its startup dominates the runtime.
//
//nolint:gocyclo // One story on one shared environment: its steps read in order and share state.
func TestProducersThroughPrometheus(t *testing.T) {
	metricsAddress := environment.ServeMetricsRegistry(t)
	env := environment.New(t, environment.Options{
		AddToScheme:       []func(*runtime.Scheme) error{v1alpha1.AddToScheme},
		Scheduler:         true,
		ControllerManager: true, // removes the not-ready taint from nodes once kwok marks them Ready
		Kwok:              true,
		Prometheus: &environment.PrometheusOptions{
			ScrapeInterval: time.Second,
			ScrapeConfigs:  []environment.ScrapeConfig{{JobName: "karpenter", Targets: []string{metricsAddress}}},
		},
	})
	ctx := t.Context()
	emulator := startEmulator(t)
	startController(t, env, emulator)
	prometheus := newPrometheusAPI(t, env.Prometheus.URL)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpCluster(t, env)
		}
	})

	t.Run("pending pods raise karpenter_pending_capacity_nodes", func(t *testing.T) {
		group := map[string]string{"group": "pending"}
		create(t, env, environment.KwokNode("pending-1", group, builders.Resources("cpu", "2", "memory", "8Gi")))
		mp := create(t, env, producer("pending", v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{NodeSelector: group}}))
		// Two 1-cpu pods fill the 2-cpu node; three stay pending and need two more nodes.
		for i := range 5 {
			create(t, env, podRequesting(fmt.Sprintf("pending-%d", i), group, "1"))
		}
		eventuallyQuery(t, prometheus, `karpenter_pending_capacity_nodes{namespace="producers",name="pending"}`, 2)
		eventuallyStatus(t, env, mp, func(mp *v1alpha1.MetricsProducer) bool {
			s := mp.Status.PendingCapacity
			return s != nil && s.Pods == 3 && s.Nodes == 2 && ready(mp)
		})

		// A bigger node joins: the scheduler places the three pods and nothing is pending.
		create(t, env, environment.KwokNode("pending-2", group, builders.Resources("cpu", "4", "memory", "8Gi")))
		eventuallyQuery(t, prometheus, `karpenter_pending_capacity_nodes{namespace="producers",name="pending"}`, 0)
	})

	t.Run("a group without nodes is packed onto its node template", func(t *testing.T) {
		group := map[string]string{"group": "from-zero"}
		taint := corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
		create(t, env, producer("from-zero", v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{
			NodeSelector: group,
			NodeTemplate: &v1alpha1.NodeTemplate{Taints: []corev1.Taint{taint}, Allocatable: builders.Resources("cpu", "4", "memory", "16Gi", "pods", "110")},
		}}))
		for i := range 3 {
			pod := podRequesting(fmt.Sprintf("batch-%d", i), group, "3")
			pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
			create(t, env, pod)
		}
		// A pod that does not tolerate the group's taint is not the group's to serve.
		create(t, env, podRequesting("intolerant", group, "1"))
		eventuallyQuery(t, prometheus, `karpenter_pending_capacity_nodes{namespace="producers",name="from-zero"}`, 3)
	})

	t.Run("a node template must offer some resource", func(t *testing.T) {
		err := env.Client.Create(ctx, producer("empty-template", v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{
			NodeSelector: map[string]string{"group": "x"},
			NodeTemplate: &v1alpha1.NodeTemplate{Allocatable: corev1.ResourceList{}},
		}}))
		if err == nil || !strings.Contains(err.Error(), "spec.pendingCapacity.nodeTemplate") || !strings.Contains(err.Error(), "allocatable must name at least one resource") {
			t.Errorf("creating a template without allocatable: %v, want a rejection naming the field", err)
		}
	})

	t.Run("a HorizontalAutoscaler on karpenter_pending_capacity_nodes scales a ScalableNodeGroup", func(t *testing.T) {
		group := map[string]string{"group": "ha"}
		create(t, env, producer("ha-pending", v1alpha1.MetricsProducerSpec{PendingCapacity: &v1alpha1.PendingCapacitySpec{
			NodeSelector: group,
			NodeTemplate: &v1alpha1.NodeTemplate{Allocatable: builders.Resources("cpu", "2", "pods", "110")},
		}}))
		for i := range 3 {
			create(t, env, podRequesting(fmt.Sprintf("ha-%d", i), group, "2"))
		}
		nodeGroup := create(t, env, &v1alpha1.ScalableNodeGroup{
			ObjectMeta: metav1.ObjectMeta{Name: "ha-workers", Namespace: namespace},
			Spec:       v1alpha1.ScalableNodeGroupSpec{Replicas: ptr.To[int32](0), Type: v1alpha1.AWSEC2AutoScalingGroup, ID: "ha-workers"},
		})
		// The query docs/metricsproducers.md recommends: nodes the group serves plus nodes its
		// pending pods need, one node per replica.
		create(t, env, &v1alpha1.HorizontalAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "ha-workers", Namespace: namespace},
			Spec: v1alpha1.HorizontalAutoscalerSpec{
				ScaleTargetRef: v1alpha1.CrossVersionObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "ScalableNodeGroup", Name: "ha-workers"},
				MinReplicas:    ptr.To[int32](0),
				MaxReplicas:    10,
				Metrics: []v1alpha1.Metric{{Prometheus: &v1alpha1.PrometheusMetricSource{
					Query: `scalar(karpenter_pending_capacity_nodes{namespace="producers",name="ha-pending"})` +
						` + scalar(karpenter_horizontalautoscaler_current_replicas{namespace="producers",name="ha-workers"})`,
					Target: v1alpha1.MetricTarget{Type: v1alpha1.AverageValueMetricType, Value: resource.MustParse("1")},
				}}},
			},
		})
		eventually.Holds(t, "the HorizontalAutoscaler sets the group's replicas to 3", func() (bool, string, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(nodeGroup), nodeGroup)
			return err == nil && ptr.Deref(nodeGroup.Spec.Replicas, -1) == 3, fmt.Sprintf("replicas %d", ptr.Deref(nodeGroup.Spec.Replicas, -1)), err
		}, eventually.Timeout(pollTimeout))
	})

	t.Run("reserved capacity over kwok nodes with running pods", func(t *testing.T) {
		group := map[string]string{"group": "reserved"}
		mp := create(t, env, producer("reserved", v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: group}}))
		eventuallyStatus(t, env, mp, func(mp *v1alpha1.MetricsProducer) bool {
			condition := mp.StatusConditions().GetCondition("Ready")
			return condition != nil && condition.Status == corev1.ConditionFalse && condition.Reason == producers.ReasonNoCapacity
		})

		for _, name := range []string{"reserved-1", "reserved-2"} {
			node := create(t, env, environment.KwokNode(name, group, builders.Resources("cpu", "4", "memory", "8Gi", "pods", "10")))
			// Pods created before the node lifecycle controller lifts the not-ready taint wait
			// out the scheduler's backoff.
			eventually.Holds(t, name+" is schedulable", func() (bool, string, error) {
				err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), node)
				return err == nil && len(node.Spec.Taints) == 0, fmt.Sprintf("taints %v", node.Spec.Taints), err
			}, eventually.Timeout(pollTimeout))
		}
		var pods []*corev1.Pod
		for i := range 3 {
			pod := podRequesting(fmt.Sprintf("reserved-%d", i), group, "1")
			pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Gi")
			pods = append(pods, create(t, env, pod))
		}
		eventually.Holds(t, "the pods run", func() (bool, string, error) {
			for _, pod := range pods {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil || pod.Status.Phase != corev1.PodRunning {
					return false, fmt.Sprintf("%s is %s", pod.Name, pod.Status.Phase), err
				}
			}
			return true, "", nil
		}, eventually.Timeout(pollTimeout))
		eventuallyQuery(t, prometheus, `karpenter_reserved_capacity_cpu_utilization{namespace="producers",name="reserved"}`, 0.375)
		eventuallyQuery(t, prometheus, `karpenter_reserved_capacity_memory_reserved{namespace="producers",name="reserved"}`, 3<<30)
		eventuallyStatus(t, env, mp, func(mp *v1alpha1.MetricsProducer) bool {
			s := mp.Status.ReservedCapacity
			return ready(mp) && s[corev1.ResourceCPU] == "37.50%, 3/8" && s[corev1.ResourceMemory] == "18.75%, 3Gi/16Gi" && s[corev1.ResourcePods] == "15.00%, 3/20"
		})

		// Deleting the producer removes its series from /metrics, so Prometheus sees them go.
		if err := env.Client.Delete(ctx, mp); err != nil {
			t.Fatal(err)
		}
		eventuallyAbsent(t, prometheus, `karpenter_reserved_capacity_cpu_utilization{namespace="producers",name="reserved"}`)
	})

	t.Run("scheduled capacity", func(t *testing.T) {
		now := time.Now().UTC()
		nextMonth := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		// Started every minute and ended only at midnight on the days of next month: active now,
		// until the first of next month.
		mp := create(t, env, producer("scheduled", v1alpha1.MetricsProducerSpec{ScheduleSpec: &v1alpha1.ScheduleSpec{
			DefaultReplicas: 2,
			Behaviors: []v1alpha1.ScheduledBehavior{{
				Replicas: 5,
				Start:    &v1alpha1.Pattern{Minutes: ptr.To("*"), Hours: ptr.To("*")},
				End:      &v1alpha1.Pattern{Months: ptr.To(strings.ToLower(nextMonth.Month().String()))},
			}},
		}}))
		eventuallyQuery(t, prometheus, `karpenter_scheduled_replicas_value{namespace="producers",name="scheduled"}`, 5)
		eventuallyStatus(t, env, mp, func(mp *v1alpha1.MetricsProducer) bool {
			s := mp.Status.ScheduledCapacity
			return ready(mp) && s != nil && ptr.Deref(s.CurrentValue, -1) == 5 && ptr.Deref(s.NextValue, -1) == 2 &&
				s.NextValueTime != nil && s.NextValueTime.Time.Equal(nextMonth)
		})
	})

	t.Run("queue length and oldest message age from the AWS emulator", func(t *testing.T) {
		mp := create(t, env, producer("queue", v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{
			Type: v1alpha1.AWSSQSQueueType, ID: "arn:aws:sqs:us-west-2:123456789012:jobs",
		}}))
		eventuallyQuery(t, prometheus, `karpenter_queue_length{namespace="producers",name="queue"}`, 4)
		if err := emulator.SendMessages("jobs", 3, "job"); err != nil {
			t.Fatal(err)
		}
		eventuallyQuery(t, prometheus, `karpenter_queue_length{namespace="producers",name="queue"}`, 7)
		eventuallyQuery(t, prometheus, `count(karpenter_queue_oldest_message_age_seconds{namespace="producers",name="queue"} >= 0)`, 1)
		eventuallyStatus(t, env, mp, func(mp *v1alpha1.MetricsProducer) bool {
			s := mp.Status.Queue
			return ready(mp) && s != nil && s.Length == 7 && s.OldestMessageAgeSeconds != nil
		})

		// CloudWatch fails: the length stays exported and fresh, the age is withdrawn.
		if _, err := emulator.InjectFault(awsemulator.Fault{Service: "monitoring", Kind: awsemulator.FaultAccessDenied}); err != nil {
			t.Fatal(err)
		}
		if err := emulator.SendMessages("jobs", 1, "job"); err != nil {
			t.Fatal(err)
		}
		eventuallyQuery(t, prometheus, `karpenter_queue_length{namespace="producers",name="queue"}`, 8)
		eventuallyAbsent(t, prometheus, `karpenter_queue_oldest_message_age_seconds{namespace="producers",name="queue"}`)
		eventuallyStatus(t, env, mp, func(mp *v1alpha1.MetricsProducer) bool {
			calculable := mp.StatusConditions().GetCondition(v1alpha1.Calculable)
			s := mp.Status.Queue
			return ready(mp) && calculable != nil && calculable.Reason == producers.ReasonOldestMessageAgeUnavailable &&
				s != nil && s.Length == 8 && s.OldestMessageAgeSeconds == nil
		})
		emulator.ClearFaults()
		eventuallyQuery(t, prometheus, `count(karpenter_queue_oldest_message_age_seconds{namespace="producers",name="queue"} >= 0)`, 1)

		// A queue that does not exist: not Ready, and no value is exported.
		missing := create(t, env, producer("missing-queue", v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{
			Type: v1alpha1.AWSSQSQueueType, ID: "arn:aws:sqs:us-west-2:123456789012:missing",
		}}))
		eventuallyStatus(t, env, missing, func(mp *v1alpha1.MetricsProducer) bool {
			condition := mp.StatusConditions().GetCondition("Ready")
			return condition != nil && condition.Status == corev1.ConditionFalse && condition.Reason == producers.ReasonQueueUnreadable
		})
		eventuallyAbsent(t, prometheus, `karpenter_queue_length{namespace="producers",name="missing-queue"}`)
	})
}

// startEmulator serves the project's AWS emulator, seeded with a queue of four messages.
func startEmulator(t *testing.T) *awsemulator.Emulator {
	t.Helper()
	emulator, server := awstest.Serve(t, awsemulator.Options{}, `{"sqsQueues": [{"name": "jobs", "messages": 4}]}`)
	t.Setenv("AWS_ENDPOINT_URL", server.URL)
	for _, name := range []string{"AWS_PROFILE", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_CLOUDWATCH"} {
		t.Setenv(name, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return emulator
}

// startController runs the MetricsProducer controller in the operator, with a cloud provider
// reaching the emulator through the SDK's own endpoint variable, and the HorizontalAutoscaler
// controller querying the test's Prometheus.
func startController(t *testing.T, env *environment.Environment, _ *awsemulator.Emulator) {
	t.Helper()
	provider, err := aws.New(t.Context(), aws.Options{Region: "us-west-2", MaxAttempts: 2},
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	clouds := cloudprovider.NewRegistry()
	provider.Register(clouds)
	operatortest.Start(t, env, operatortest.Options{Controllers: controllers.Options{
		// The HorizontalAutoscaler controller, for the producers' consumer end to end.
		Enabled:                       []string{metricsproducer.Name, horizontalautoscaler.Name},
		CloudProvider:                 clouds,
		MetricsProducerPeriod:         period,
		HorizontalAutoscalerPeriod:    period,
		HorizontalAutoscalerTolerance: autoscaler.DefaultTolerance,
	}})
}

func newPrometheusAPI(t *testing.T, url string) promv1.API {
	t.Helper()
	promClient, err := promapi.NewClient(promapi.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(promClient)
}

// query returns the single value of an instant query, or ok false when it has no sample.
func query(ctx context.Context, api promv1.API, promql string) (value float64, ok bool, err error) {
	result, _, err := api.Query(ctx, promql, time.Now())
	if err != nil {
		return 0, false, err
	}
	vector, isVector := result.(model.Vector)
	if !isVector {
		return 0, false, fmt.Errorf("%s returned %s, want a vector", promql, result.Type())
	}
	switch len(vector) {
	case 0:
		return 0, false, nil
	case 1:
		return float64(vector[0].Value), true, nil
	default:
		return 0, false, fmt.Errorf("%s returned %d series, want one", promql, len(vector))
	}
}

func eventuallyQuery(t *testing.T, api promv1.API, promql string, want float64) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("%s = %v through Prometheus", promql, want), func() (bool, string, error) {
		value, ok, err := query(t.Context(), api, promql)
		return ok && value == want, fmt.Sprintf("%v (present %v)", value, ok), err
	}, eventually.Timeout(pollTimeout))
}

func eventuallyAbsent(t *testing.T, api promv1.API, promql string) {
	t.Helper()
	eventually.Holds(t, fmt.Sprintf("%s is absent from Prometheus", promql), func() (bool, string, error) {
		value, ok, err := query(t.Context(), api, promql)
		return !ok, fmt.Sprintf("%v (present %v)", value, ok), err
	}, eventually.Timeout(pollTimeout))
}

func eventuallyStatus(t *testing.T, env *environment.Environment, mp *v1alpha1.MetricsProducer, done func(*v1alpha1.MetricsProducer) bool) {
	t.Helper()
	eventually.Holds(t, "the status of metricsproducer "+mp.Name, func() (bool, string, error) {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(mp), mp); err != nil {
			return false, "", err
		}
		return done(mp), fmt.Sprintf("%+v", mp.Status), nil
	}, eventually.Timeout(pollTimeout))
}

func ready(mp *v1alpha1.MetricsProducer) bool {
	return mp.StatusConditions().IsHappy()
}

func create[T client.Object](t *testing.T, env *environment.Environment, object T) T {
	t.Helper()
	if err := env.Client.Create(t.Context(), object); err != nil {
		t.Fatalf("creating %T %s, %v", object, object.GetName(), err)
	}
	return object
}

func producer(name string, spec v1alpha1.MetricsProducerSpec) *v1alpha1.MetricsProducer {
	return &v1alpha1.MetricsProducer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
}

// podRequesting is a pod of cpu cores for the group selected by nodeSelector.
func podRequesting(name string, nodeSelector map[string]string, cpu string) *corev1.Pod {
	return builders.Pod(builders.PodOptions{Name: name, Namespace: namespace, NodeSelector: nodeSelector, Requests: builders.Resources("cpu", cpu)})
}

// dumpCluster logs the nodes and pods, to tell a scheduling problem from a producer's.
func dumpCluster(t *testing.T, env *environment.Environment) {
	ctx := context.Background()
	nodes := &corev1.NodeList{}
	if err := env.Client.List(ctx, nodes); err == nil {
		for _, n := range nodes.Items {
			t.Logf("node %s labels=%v taints=%v allocatable=%v conditions=%v", n.Name, n.Labels, n.Spec.Taints, n.Status.Allocatable, n.Status.Conditions)
		}
	}
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(namespace)); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s node=%q phase=%s conditions=%v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
	}
}
