package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"karpenter.sh/karpenter/pkg/cloudprovider/fake"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/test/builders"
	"karpenter.sh/karpenter/pkg/test/kubefake"
)

// BenchmarkProvisionPass times one pass of the allocator once its batch closed: the snapshot
// from the (fake) API client, the instance types, scheduling, the launches on the fake cloud
// and the Nodes' creation. With the batch window before it, it is the time from a burst's
// last pending pod to its last launch call. It plans with the batch packer at the controller's
// default budget, which the fake clock never runs out. docs/benchmarks.md has the command and
// figures.
func BenchmarkProvisionPass(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			objects := []client.Object{builders.Provisioner(builders.ProvisionerOptions{Name: "default"})}
			sizes := []struct{ cpu, memory string }{{"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"2", "4Gi"}}
			for i := range n {
				size := sizes[i%len(sizes)]
				pod := builders.Pod(builders.PodOptions{Name: fmt.Sprintf("pod-%d", i), Unschedulable: true, Requests: builders.Resources("cpu", size.cpu, "memory", size.memory)})
				pod.UID = types.UID(pod.Name)
				objects = append(objects, pod)
			}
			nodes := 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				// Creating a Node in the fake client builds a REST mapper each time, which would
				// dominate; the apiserver's cost is not what this measures.
				kube := kubefake.NewClientBuilder().WithObjects(objects...).WithInterceptorFuncs(interceptor.Funcs{
					Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return nil },
				}).Build()
				cloud := fake.NewInstanceProvider(fake.InstanceProviderOptions{})
				c, err := New(Options{Client: kube, InstanceProvider: cloud, Recorder: record.NewFakeRecorder(10 * n), Clock: clocktesting.NewFakeClock(time.Now()),
					PackBudget: scheduling.DefaultPackBudget})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if retry, err := c.provision(context.Background(), false); err != nil || retry {
					b.Fatalf("pass: retry %v, %v", retry, err)
				}
				b.StopTimer()
				nodes = len(cloud.CreateCalls())
				b.StartTimer()
			}
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}
