package pods

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func trimmed(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	obj, err := TrimForCache(pod)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*corev1.Pod)
}

// size is the number of values the table holds.
func (t *internTable[T]) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.values)
}

func TestTrimForCacheSharesWhatPodsCarryAlike(t *testing.T) {
	a, b := trimmed(t, replica(t, "web-a", "1")), trimmed(t, replica(t, "web-b", "1"))
	other := trimmed(t, replica(t, "web-c", "2"))

	shares := []struct {
		part       string
		a, b, ofC  any
		sharedWith bool // whether the pod with another request shares it too
	}{
		{"containers", &a.Spec.Containers[0], &b.Spec.Containers[0], &other.Spec.Containers[0], false},
		{"init containers", &a.Spec.InitContainers[0], &b.Spec.InitContainers[0], &other.Spec.InitContainers[0], true},
		{"tolerations", &a.Spec.Tolerations[0], &b.Spec.Tolerations[0], &other.Spec.Tolerations[0], true},
		{"spread constraints", &a.Spec.TopologySpreadConstraints[0], &b.Spec.TopologySpreadConstraints[0], &other.Spec.TopologySpreadConstraints[0], true},
		{"affinity", a.Spec.Affinity, b.Spec.Affinity, other.Spec.Affinity, true},
	}
	for _, share := range shares {
		if share.a != share.b {
			t.Errorf("two replicas' %s are two copies, want one", share.part)
		}
		if (share.a == share.ofC) != share.sharedWith {
			t.Errorf("a pod with another cpu request shares the %s: %t, want %t", share.part, share.a == share.ofC, share.sharedWith)
		}
	}
	if other.Spec.Containers[0].Resources.Requests.Cpu().String() != "2" {
		t.Errorf("the pod with another request has cpu %s, want 2", other.Spec.Containers[0].Resources.Requests.Cpu())
	}
	if len(a.Spec.Tolerations) != cap(a.Spec.Tolerations) || len(a.Spec.Containers) != cap(a.Spec.Containers) {
		t.Errorf("a shared slice's capacity exceeds its length: an append would write into other pods'")
	}

	// Sharing changes no value: a pod trimmed and shared equals the same pod trimmed alone.
	alone := replica(t, "web-a", "1")
	alone.Spec.Containers = trimContainers(alone.Spec.Containers)
	alone.Spec.InitContainers = trimContainers(alone.Spec.InitContainers)
	if !equality.Semantic.DeepEqual(a.Spec.Containers, alone.Spec.Containers) || !equality.Semantic.DeepEqual(a.Spec.InitContainers, alone.Spec.InitContainers) ||
		!equality.Semantic.DeepEqual(a.Spec.Tolerations, alone.Spec.Tolerations) || !equality.Semantic.DeepEqual(a.Spec.Affinity, alone.Spec.Affinity) ||
		!equality.Semantic.DeepEqual(a.Spec.TopologySpreadConstraints, alone.Spec.TopologySpreadConstraints) {
		t.Errorf("a shared pod's spec differs from the pod trimmed alone")
	}

	// Trimming again (the transform must be idempotent) keeps the pod on the shared copies.
	again := trimmed(t, a)
	if &again.Spec.Containers[0] != &b.Spec.Containers[0] || &again.Spec.Tolerations[0] != &b.Spec.Tolerations[0] {
		t.Errorf("a pod trimmed twice no longer shares its parts")
	}
}

// TestSharedValuesGoWithTheirPods checks that the table holds a value only while a pod
// references it: a cache of churning pods does not grow it.
func TestSharedValuesGoWithTheirPods(t *testing.T) {
	var table internTable[corev1.Toleration]
	func() {
		held := table.slice(replica(t, "web-a", "1").Spec.Tolerations)
		if got := table.size(); got != 1 {
			t.Fatalf("table holds %d values, want 1", got)
		}
		if again := table.slice(replica(t, "web-b", "1").Spec.Tolerations); &again[0] != &held[0] {
			t.Fatalf("an equal value was interned twice")
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for table.size() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the table still holds %d values 30 s after no pod references them", table.size())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	// A value interned anew after its first copy went is held again.
	again := table.slice(replica(t, "web-c", "1").Spec.Tolerations)
	if got := table.size(); got != 1 {
		t.Errorf("table holds %d values after a new intern, want 1", got)
	}
	runtime.KeepAlive(again)
}

// TestALateCleanupKeepsTheNewerValue: a value collected and interned again under the same key
// before the first one's cleanup ran keeps its entry when that cleanup runs.
func TestALateCleanupKeepsTheNewerValue(t *testing.T) {
	var table internTable[corev1.Toleration]
	first := replica(t, "web-a", "1").Spec.Tolerations
	key, _ := encode(nil, first)
	stale := internedKey[corev1.Toleration]{key: string(key), first: weak.Make(&first[0])}
	newer := table.slice(replica(t, "web-b", "1").Spec.Tolerations)
	table.forget(stale)
	if got := table.size(); got != 1 {
		t.Fatalf("a stale cleanup removed the newer value's entry: %d entries", got)
	}
	if again := table.slice(replica(t, "web-c", "1").Spec.Tolerations); &again[0] != &newer[0] {
		t.Errorf("an equal value was interned anew while the newer one is held")
	}
	runtime.KeepAlive(first)
}

// TestSharingFromManyInformers: the transform runs on each informer's goroutine; several at
// once, with collections between, share one copy (run with -race).
func TestSharingFromManyInformers(t *testing.T) {
	const informers, podsEach = 4, 200
	cached := make([][]*corev1.Pod, informers)
	var wg sync.WaitGroup
	for i := range informers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range podsEach {
				pod := &corev1.Pod{}
				if err := pod.Unmarshal(encodedReplica); err != nil {
					t.Error(err)
					return
				}
				trimmedPod, err := TrimForCache(pod)
				if err != nil {
					t.Error(err)
					return
				}
				cached[i] = append(cached[i], trimmedPod.(*corev1.Pod))
				if j%50 == 0 {
					runtime.GC()
				}
			}
		}()
	}
	wg.Wait()
	first := &cached[0][0].Spec.Containers[0]
	for i := range cached {
		for _, pod := range cached[i] {
			if &pod.Spec.Containers[0] != first {
				t.Fatalf("pod of informer %d holds its own containers, want the one shared copy", i)
			}
		}
	}
}
