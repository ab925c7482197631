package statemetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/controllers/statemetrics"
)

// listReader hands out fixed lists, as the cache does without copies, so that the benchmarks
// measure the families and not a fake client's copying.
type listReader struct {
	nodes corev1.NodeList
	pods  corev1.PodList
}

func (r *listReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("not implemented")
}

func (r *listReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *corev1.NodeList:
		*l = r.nodes
	case *corev1.PodList:
		*l = r.pods
	case *v1.NodePoolList, *v1alpha5.ProvisionerList:
	default:
		return fmt.Errorf("unexpected list %T", list)
	}
	return nil
}

// clusterOf is the scale run's cluster (test/scale/autoscaling): nodes of a Provisioner with
// podsPerNode ReplicaSet pods each, Running and Ready.
func clusterOf(nodes, podsPerNode int) *listReader {
	r := &listReader{}
	created := metav1.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		r.nodes.Items = append(r.nodes.Items, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				v1alpha5.ProvisionerNameLabelKey: "default", corev1.LabelTopologyZone: "us-west-2a", corev1.LabelTopologyRegion: "us-west-2",
				corev1.LabelInstanceTypeStable: "m5.xlarge", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
				v1alpha5.CapacityTypeLabelKey: "on-demand",
			}},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58"), corev1.ResourceEphemeralStorage: resource.MustParse("20Gi")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi"), corev1.ResourcePods: resource.MustParse("58"), corev1.ResourceEphemeralStorage: resource.MustParse("17Gi")},
			},
		})
		for j := range podsPerNode {
			r.pods.Items = append(r.pods.Items, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%04d-%02d", i, j), Namespace: "default", UID: types.UID(fmt.Sprintf("%04d-%02d", i, j)), CreationTimestamp: created,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app", Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				}},
			})
		}
	}
	return r
}

// BenchmarkExport is a pass of the state families over the scale run's 500 nodes and 5,000
// pods, in steady state (the families already hold the same series). retained-B is what the
// families hold between passes: the heap after a pass over that cluster less the heap after a
// pass over none (which empties the families, so that -count runs measure the same).
func BenchmarkExport(b *testing.B) {
	cluster := clusterOf(500, 10)
	clk := clocktesting.NewFakeClock(time.Now())
	empty, err := statemetrics.New(statemetrics.Options{Client: &listReader{}, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	controller, err := statemetrics.New(statemetrics.Options{Client: cluster, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	if err := empty.Export(b.Context()); err != nil {
		b.Fatal(err)
	}
	before := heapInUse()
	if err := controller.Export(b.Context()); err != nil {
		b.Fatal(err)
	}
	retained := float64(heapInUse()) - float64(before)
	b.ReportAllocs()
	for b.Loop() {
		if err := controller.Export(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	// After the loop: its first round resets the metrics reported.
	b.ReportMetric(retained, "retained-B")
}

func heapInUse() uint64 {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

// BenchmarkScrape is a scrape of the controller's /metrics, gzipped as Prometheus asks, once a
// pass over that cluster has set the state families.
func BenchmarkScrape(b *testing.B) {
	controller, err := statemetrics.New(statemetrics.Options{Client: clusterOf(500, 10), Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		b.Fatal(err)
	}
	if err := controller.Export(b.Context()); err != nil {
		b.Fatal(err)
	}
	handler := promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	request := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	request.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	for b.Loop() {
		response := httptest.NewRecorder()
		handler.ServeHTTP(response, request)
		if response.Code != http.StatusOK {
			b.Fatalf("scrape answered %d: %s", response.Code, response.Body.String())
		}
	}
}
