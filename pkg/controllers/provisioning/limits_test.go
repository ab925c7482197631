package provisioning

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pools"
	"karpenter.sh/karpenter/pkg/test/builders"
)

func cpu(cores string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cores)}
}

func candidate(name, cores string) cloudprovider.Candidate {
	return cloudprovider.Candidate{InstanceType: &cloudprovider.InstanceType{Name: name, Capacity: cpu(cores)}}
}

func names(candidates []cloudprovider.Candidate) []string {
	var out []string
	for _, c := range candidates {
		out = append(out, c.InstanceType.Name)
	}
	return out
}

func TestLedgerReserve(t *testing.T) {
	candidates := []cloudprovider.Candidate{candidate("small", "2"), candidate("medium", "4"), candidate("large", "8")}
	for _, tc := range []struct {
		name   string
		limits corev1.ResourceList
		nodes  map[string]corev1.ResourceList
		// launched are earlier reservations, by their node's name ("" while launching).
		launched []string
		want     []string
		exceeded bool
	}{
		{"no limits keep every candidate", nil, nil, nil, []string{"small", "medium", "large"}, false},
		{"under limits, up to twice the cheapest", cpu("100"), nil, nil, []string{"small", "medium"}, false},
		{"the larger would pass the limit", cpu("5"), map[string]corev1.ResourceList{"n1": cpu("2")}, nil, []string{"small"}, false},
		{"at the limit exactly is within it", cpu("6"), map[string]corev1.ResourceList{"n1": cpu("2")}, nil, []string{"small", "medium"}, false},
		{"full", cpu("4"), map[string]corev1.ResourceList{"n1": cpu("4")}, nil, nil, true},
		// An earlier launch, without limits, reserved the largest candidate's 8 cores until
		// its Node is seen.
		{"launching counts", cpu("11"), nil, []string{""}, []string{"small"}, false},
		// Launched narrows the reservation to the instance type launched (2 cores).
		{"a launched node not yet seen counts", cpu("5"), nil, []string{"n2"}, []string{"small"}, false},
		// Once seen, the node counts by its capacity (2) and the reservation no longer does.
		{"a seen node counts once", cpu("6"), map[string]corev1.ResourceList{"n2": cpu("2")}, []string{"n2"}, []string{"small", "medium"}, false},
		{"other resources do not limit", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, nil, nil, []string{"small", "medium", "large"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			for _, nodeName := range tc.launched {
				_, id, err := l.Reserve(pools.Provisioner("p"), nil, nil, candidates, nil)
				if err != nil {
					t.Fatal(err)
				}
				if nodeName != "" {
					l.Launched(id, "", nodeName, cpu("2"))
				}
			}
			kept, _, err := l.Reserve(pools.Provisioner("p"), tc.limits, tc.nodes, candidates, nil)
			if tc.exceeded {
				var exceeded *LimitExceededError
				if !errors.As(err, &exceeded) {
					t.Fatalf("reserved %v, %v; want a LimitExceededError", names(kept), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(kept); !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLedgerReservesForTheBatch: under a limit far above what a batch of small nodes needs,
// every node of the batch is reserved, though each could fall back to a type many times its
// size.
func TestLedgerReservesForTheBatch(t *testing.T) {
	l := NewLedger()
	candidates := []cloudprovider.Candidate{candidate("small", "2"), candidate("medium", "4"), candidate("huge", "192")}
	for i := range 14 {
		kept, _, err := l.Reserve(pools.Provisioner("p"), cpu("1000"), nil, candidates, nil)
		if err != nil {
			t.Fatalf("node %d of the batch: %v", i+1, err)
		}
		if got := names(kept); !slices.Equal(got, []string{"small", "medium"}) {
			t.Errorf("node %d kept %v, want [small medium]", i+1, got)
		}
	}
	if used := l.Used(pools.Provisioner("p"), nil); used.Cpu().Cmp(resource.MustParse("56")) != 0 {
		t.Errorf("the batch reserved %s cores, want 14 × 4", used.Cpu())
	}
}

// TestLedgerHardUnderConcurrency reserves from many goroutines at once: however they
// interleave, what is reserved never passes the limit.
func TestLedgerHardUnderConcurrency(t *testing.T) {
	l := NewLedger()
	limits := cpu("20")
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := l.Reserve(pools.Provisioner("p"), limits, nil, []cloudprovider.Candidate{candidate("small", "2"), candidate("large", "8")}, nil); err == nil {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	used := l.Used(pools.Provisioner("p"), nil)
	if used.Cpu().Cmp(resource.MustParse("20")) > 0 {
		t.Errorf("%d launches reserved %s cores past the limit of 20", granted, used.Cpu())
	}
	if granted == 0 {
		t.Error("no launch was granted")
	}
	// Another provisioner's launches are not limited by this one's.
	if _, _, err := l.Reserve(pools.Provisioner("q"), limits, nil, []cloudprovider.Candidate{candidate("large", "8")}, nil); err != nil {
		t.Errorf("provisioner q was refused, %v", err)
	}
}

func TestLedgerRelease(t *testing.T) {
	l := NewLedger()
	_, id, err := l.Reserve(pools.Provisioner("p"), cpu("8"), nil, []cloudprovider.Candidate{candidate("large", "8")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Reserve(pools.Provisioner("p"), cpu("8"), nil, []cloudprovider.Candidate{candidate("large", "8")}, nil); err == nil {
		t.Fatal("a second launch was reserved past the limit")
	}
	l.Release(id)
	if _, _, err := l.Reserve(pools.Provisioner("p"), cpu("8"), nil, []cloudprovider.Candidate{candidate("large", "8")}, nil); err != nil {
		t.Errorf("a released reservation still counts, %v", err)
	}
}

// TestLedgerKeepsTheRoomOfALaunchedTypeItDoesNotKnow (issue 34, finding 12): a launch whose
// instance type is none of the candidates (so its capacity is unknown) keeps the room it
// reserved, rather than count as nothing until its Node is seen.
func TestLedgerKeepsTheRoomOfALaunchedTypeItDoesNotKnow(t *testing.T) {
	l := NewLedger()
	_, id, err := l.Reserve(pools.Provisioner("p"), cpu("100"), nil, []cloudprovider.Candidate{candidate("small", "2"), candidate("medium", "4")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Launched(id, "", "n1", nil)
	if used := l.Used(pools.Provisioner("p"), nil); used.Cpu().Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("used %v after launching a type the ledger does not know, want the 4 cores reserved", used)
	}
}

// TestLedgerForgetGone: a reservation whose Node the cache showed before the cluster was read,
// and that the read no longer holds by name and UID, holds no room; any other stands.
func TestLedgerForgetGone(t *testing.T) {
	node := func(name, uid string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
	}
	for _, tc := range []struct {
		name string
		// cached is whether the cache showed the reservation's Node n1 (uid-1), and after
		// whether that was after the cluster was read.
		cached, after bool
		nodes         []corev1.Node
		reserved      bool
	}{
		{"deleted before a pass counted it", true, false, nil, false},
		{"replaced by another Node of its name", true, false, []corev1.Node{node("n1", "uid-2")}, false},
		{"still there", true, false, []corev1.Node{node("n1", "uid-1")}, true},
		{"shown after the cluster was read", true, true, nil, true},
		{"never shown: its Node may not exist yet", false, false, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			_, id, err := l.Reserve(pools.Provisioner("p"), nil, nil, []cloudprovider.Candidate{candidate("small", "2")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			l.Launched(id, "", "n1", cpu("2"))
			read := l.Cached()
			if tc.cached {
				l.NodeCached(id, "uid-1")
				if !tc.after {
					read = l.Cached()
				}
			}
			l.ForgetGone(tc.nodes, nil, read)
			used := l.Used(pools.Provisioner("p"), nil)
			if reserved := !used.Cpu().IsZero(); reserved != tc.reserved {
				t.Errorf("reserved = %t, want %t", reserved, tc.reserved)
			}
		})
	}
}

// TestLedgerHandOver: a reservation handed to the NodeClaim of a launch still in progress
// stands until that NodeClaim is counted, launched, or a read of the cluster begun after the
// hand-over lacks it and the API server does too; a read begun before may not show it yet, nor
// may a cache that lags the API server.
func TestLedgerHandOver(t *testing.T) {
	for _, tc := range []struct {
		name string
		// counted are the nodes counted by name; readBefore is whether the cluster was read
		// from before the hand-over; shown whether the read holds the NodeClaim, and held
		// whether the API server does.
		counted                 map[string]corev1.ResourceList
		readBefore, shown, held bool
		// used is the cores counted then: the reservation's 2, or none.
		used string
	}{
		{"launching, shown unlaunched", nil, false, true, true, "2"},
		{"counted under the nodeclaim's name, once", map[string]corev1.ResourceList{"claim-1": cpu("2")}, false, true, true, "2"},
		// Its Node registered: Counted names it by its NodeClaim too.
		{"registered, counted once", map[string]corev1.ResourceList{"ip-1": cpu("2"), "claim-1": {}}, false, true, true, "2"},
		{"gone from a read begun after and from the API server", nil, false, false, false, "0"},
		{"not in the cache yet, held by the API server", nil, false, false, true, "2"},
		{"not shown by a read begun before", nil, true, false, false, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			_, id, err := l.Reserve(pools.Provisioner("p"), nil, nil, []cloudprovider.Candidate{candidate("small", "2")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			read := l.Cached()
			l.HandOver(id, "claim-1")
			if !tc.readBefore {
				read = l.Cached()
			}
			var nodeClaims []v1.NodeClaim
			if tc.shown {
				nodeClaims = append(nodeClaims, v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-1"}})
			}
			gone := sets.New[string]()
			for _, name := range l.UnshownHandOvers(nodeClaims, read) {
				if !tc.held {
					gone.Insert(name)
				}
			}
			l.ForgetGone(nil, gone, read)
			if used := l.Used(pools.Provisioner("p"), tc.counted); used.Cpu().Cmp(resource.MustParse(tc.used)) != 0 {
				t.Errorf("used %s cores, want %s", used.Cpu(), tc.used)
			}
		})
	}
}

// TestLedgerReserveKeepsMinValues: beyond the spread, the candidates that give a value of a key
// the others lack for minValues are kept too, cheapest first; never one over the limits.
func TestLedgerReserveKeepsMinValues(t *testing.T) {
	family := func(name, cores, family string) cloudprovider.Candidate {
		c := candidate(name, cores)
		c.InstanceType.Labels = map[string]string{"example.com/family": family}
		return c
	}
	candidates := []cloudprovider.Candidate{family("small", "2", "a"), family("medium", "4", "a"), family("large", "8", "b"),
		family("larger", "12", "b"), family("huge", "16", "c")}
	for _, tc := range []struct {
		name      string
		limits    corev1.ResourceList
		minValues map[string]int
		want      []string
	}{
		{"no minValues: the spread", cpu("100"), nil, []string{"small", "medium"}},
		{"two families", cpu("100"), map[string]int{"example.com/family": 2}, []string{"small", "medium", "large"}},
		{"three families", cpu("100"), map[string]int{"example.com/family": 3}, []string{"small", "medium", "large", "huge"}},
		{"the limits bound them", cpu("10"), map[string]int{"example.com/family": 3}, []string{"small", "medium", "large"}},
		{"met within the spread", cpu("100"), map[string]int{corev1.LabelInstanceTypeStable: 2}, []string{"small", "medium"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, _, err := NewLedger().Reserve(pools.NodePool("p"), tc.limits, nil, candidates, tc.minValues)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(kept); !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLedgerKeepsTheCheapestInstanceTypes: a launch keeps the candidates of the 60 instance types
// whose cheapest offering is cheapest, every offering of each, in price order (upstream's
// NodeClaims list at most 60 types); with minValues it keeps what they need.
func TestLedgerKeepsTheCheapestInstanceTypes(t *testing.T) {
	candidates := builders.Candidates(100, "a", "b", "c")
	// Type i costs i in zone a, i+10 in b and i+20 in c: in price order, as a plan's offerings
	// come, a type's dearer zones come after cheaper types' offerings, some of types not kept.
	for j := range candidates {
		var typeIndex int
		if _, err := fmt.Sscanf(candidates[j].InstanceType.Name, "type-%d", &typeIndex); err != nil {
			t.Fatal(err)
		}
		candidates[j].Offering.Price = float64(typeIndex + 10*(j%3))
	}
	slices.SortStableFunc(candidates, func(a, b cloudprovider.Candidate) int { return cmp.Compare(a.Offering.Price, b.Offering.Price) })
	kept, _, err := NewLedger().Reserve(pools.Provisioner("default"), nil, nil, candidates, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(candidates), func(c cloudprovider.Candidate) bool {
		var typeIndex int
		_, _ = fmt.Sscanf(c.InstanceType.Name, "type-%d", &typeIndex)
		return typeIndex >= 60
	})
	if !slices.Equal(kept, want) {
		t.Errorf("kept %d candidates, want the %d offerings of types 0 – 59, in price order", len(kept), len(want))
	}
	// minValues asks for more types than 60: every candidate stays.
	kept, _, err = NewLedger().Reserve(pools.Provisioner("default"), nil, nil, candidates, map[string]int{corev1.LabelInstanceTypeStable: 80})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != len(candidates) {
		t.Errorf("kept %d of %d candidates under minValues, want them all", len(kept), len(candidates))
	}
}
