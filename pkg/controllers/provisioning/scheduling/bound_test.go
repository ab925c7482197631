package scheduling_test

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/pods"
)

// lowerBound is a true floor for the price of any plan that places pods on types: the larger
// of two bounds, each one no plan can beat (aggregateBound, fitBound). TestWorkload fails if a
// plan ever costs less.
func lowerBound(tb testing.TB, types []*cloudprovider.InstanceType, ps []*corev1.Pod) float64 {
	tb.Helper()
	in := newBoundInput(types, ps)
	return math.Max(aggregateBound(tb, in), fitBound(in))
}

// boundInput is what the bounds see of a workload: its pods by shape, the nodes it needs at
// least, and the instance types no other type beats in every resource at no higher price (a
// plan using a beaten type costs no less with the type that beats it, so the bounds hold for
// every plan).
type boundInput struct {
	shapes []podShape
	// nodes is the least number of nodes: one per hostname anti-affinity pod, each needing a
	// node of its own.
	nodes float64
	types []nodeShape
	// cheapest is the price of the cheapest type.
	cheapest float64
}

// podShape is a pod's requests in cores and GiB, with the number of pods of that shape.
type podShape struct{ cpu, memory, count float64 }

// nodeShape is an instance type's allocatable in cores, GiB and pods, at its cheapest offering.
type nodeShape struct{ cpu, memory, pods, price float64 }

// fits reports whether a pod of the shape fits alone on a node of the type. Both sides are read
// the same way (cores and GiB from millicores and bytes, by cores and GiB), and dividing by the
// same number keeps the order of the exact values, so a pod that exactly fills a type fits it.
func (t nodeShape) fits(s podShape) bool {
	return s.cpu <= t.cpu && s.memory <= t.memory && t.pods >= 1
}

// cores and gibibytes read a quantity of cpu or memory as nodeShape and podShape hold it.
func cores(q resource.Quantity) float64     { return float64(q.MilliValue()) / 1000 }
func gibibytes(q resource.Quantity) float64 { return float64(q.Value()) / (1 << 30) }

func newBoundInput(types []*cloudprovider.InstanceType, ps []*corev1.Pod) boundInput {
	in := boundInput{cheapest: math.Inf(1)}
	counts := map[[2]float64]float64{}
	var ownNode float64
	for _, pod := range ps {
		r := pods.Requests(pod)
		counts[[2]float64{cores(*r.Cpu()), gibibytes(*r.Memory())}]++
		if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				if term.TopologyKey == corev1.LabelHostname {
					ownNode++
					break
				}
			}
		}
	}
	in.nodes = math.Max(1, ownNode)
	for shape, count := range counts {
		in.shapes = append(in.shapes, podShape{cpu: shape[0], memory: shape[1], count: count})
	}
	var all []nodeShape
	for _, it := range types {
		price := math.Inf(1)
		for _, o := range it.Offerings {
			if o.Available {
				price = math.Min(price, o.Price)
			}
		}
		if math.IsInf(price, 1) {
			continue
		}
		a := it.Allocatable()
		all = append(all, nodeShape{cpu: cores(*a.Cpu()), memory: gibibytes(*a.Memory()), pods: float64(a.Pods().Value()), price: price})
		in.cheapest = math.Min(in.cheapest, price)
	}
	for i, t := range all {
		beaten := false
		for j, u := range all {
			if j != i && u.cpu >= t.cpu && u.memory >= t.memory && u.pods >= t.pods && u.price <= t.price &&
				(u != t || j < i) {
				beaten = true
				break
			}
		}
		if !beaten {
			in.types = append(in.types, t)
		}
	}
	return in
}

// aggregateBound is the optimum of the linear program that buys nodes of each type in
// fractions so that their allocatable cpu, memory and pods cover the pods' total requests,
// with at least in.nodes nodes (solved with gonum's simplex). Any plan's nodes are such a
// purchase in whole numbers. It lets a pod's cpu sit on one node and its memory on another:
// on a catalogue priced linearly in size, like the synthetic one, that costs nothing, and the
// bound is the price per core of the cores the binding resource needs, with every node's
// overhead reserved.
func aggregateBound(tb testing.TB, in boundInput) float64 {
	tb.Helper()
	covered := []float64{0, 0, 0, in.nodes}
	for _, s := range in.shapes {
		covered[0] += s.cpu * s.count
		covered[1] += s.memory * s.count
		covered[2] += s.count
	}
	// Standard form, minimise price·x subject to A·x = b, x ≥ 0: one column per type, rows
	// cpu, memory, pods and node count, and a surplus column per row that turns "covers" into
	// an equality.
	rows := len(covered)
	prices := make([]float64, len(in.types)+rows)
	A := mat.NewDense(rows, len(in.types)+rows, nil)
	for j, t := range in.types {
		prices[j] = t.price
		A.SetCol(j, []float64{t.cpu, t.memory, t.pods, 1})
	}
	for i := range rows {
		A.Set(i, len(in.types)+i, -1)
	}
	bound, _, err := lp.Simplex(prices, A, covered, 1e-10, nil)
	if err != nil {
		tb.Fatalf("solving the aggregate bound's linear program, %v", err)
	}
	return bound
}

// fitBound makes each pod fit whole on a node it fits, where aggregateBound does not. It is
// the dual of the linear program that also assigns pods, by shape, in fractions to the types
// they fit: weighing a node's resources by a cpu, memory and pod price (1, m, p), a type
// charges a pod the pod's weight times the type's price per unit of weight, less u per node;
// every pod pays at least the least any type it fits charges it, and every node at least u.
// Any m, p ≥ 0 and 0 ≤ u ≤ the cheapest price give a bound (weak duality); a grid, then a
// compass search from its best point, finds a good one. On the real catalogue this is what
// keeps a pod of 4 GiB off the cheapest cores, which come with 0.5 GiB.
func fitBound(in boundInput) float64 {
	fits := make([][]nodeShape, len(in.shapes))
	for i, s := range in.shapes {
		for _, t := range in.types {
			if t.fits(s) {
				fits[i] = append(fits[i], t)
			}
		}
	}
	bound := func(m, p, u float64) float64 {
		if m < 0 || p < 0 || u < 0 || u > in.cheapest {
			return math.Inf(-1)
		}
		total := in.nodes * u
		for i, s := range in.shapes {
			// A shape no type fits has no plan either (the benchmark fails); leaving it out
			// keeps the bound one for the rest.
			if len(fits[i]) == 0 {
				continue
			}
			weight, least := s.cpu+m*s.memory+p, math.Inf(1)
			for _, t := range fits[i] {
				least = math.Min(least, (t.price-u)*weight/(t.cpu+m*t.memory+p*t.pods))
			}
			total += s.count * least
		}
		return total
	}
	best, at := math.Inf(-1), [3]float64{}
	for _, m := range append([]float64{0}, powersOfTwo(-8, 4)...) {
		for _, p := range append([]float64{0}, powersOfTwo(-10, 2)...) {
			for f := 0.0; f <= 1; f += 1.0 / 16 {
				if v := bound(m, p, f*in.cheapest); v > best {
					best, at = v, [3]float64{m, p, f * in.cheapest}
				}
			}
		}
	}
	step := [3]float64{math.Max(at[0], 1.0/64) / 2, math.Max(at[1], 1.0/64) / 2, in.cheapest / 32}
	for range 400 {
		moved := false
		for d := range at {
			for _, sign := range []float64{1, -1} {
				next := at
				next[d] = max(0, next[d]+sign*step[d])
				if v := bound(next[0], next[1], next[2]); v > best {
					best, at, moved = v, next, true
				}
			}
		}
		if !moved {
			for d := range step {
				step[d] /= 2
			}
		}
	}
	return best
}

// powersOfTwo is 2^from … 2^to in steps of half a power.
func powersOfTwo(from, to float64) []float64 {
	var out []float64
	for k := from; k <= to; k += 0.5 {
		out = append(out, math.Pow(2, k))
	}
	return out
}

func TestBounds(t *testing.T) {
	// Four pods of 1 core and 1 GiB; a cheap type with 2 cores and 0.5 GiB none of them fits,
	// and one with 1 core and 8 GiB each fits alone.
	cheapCores, roomy := nodeShape{cpu: 2, memory: 0.5, pods: 10, price: 1}, nodeShape{cpu: 1, memory: 8, pods: 10, price: 2}
	for name, tc := range map[string]struct {
		in                   boundInput
		aggregate, fit, plan float64
	}{
		// Cheap nodes for the cpu and roomy ones for the memory, in fractions (56/31 and
		// 12/31 of a node): 80/31 = 2.58; whole pods need four roomy nodes, which the fit
		// bound sees.
		"pods fit only the dear type": {
			in:        boundInput{shapes: []podShape{{cpu: 1, memory: 1, count: 4}}, nodes: 1, types: []nodeShape{cheapCores, roomy}, cheapest: 1},
			aggregate: 80.0 / 31, fit: 8, plan: 8,
		},
		// Three nodes at least, for pods that would share one: each node pays its cheapest.
		"a node each": {
			in:        boundInput{shapes: []podShape{{cpu: 0.25, memory: 0.25, count: 3}}, nodes: 3, types: []nodeShape{cheapCores, roomy}, cheapest: 1},
			aggregate: 3, fit: 3, plan: 3,
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := aggregateBound(t, tc.in); math.Abs(got-tc.aggregate) > 1e-9 {
				t.Errorf("aggregate bound %v, want %v", got, tc.aggregate)
			}
			if got := fitBound(tc.in); math.Abs(got-tc.fit) > 1e-6 || got > tc.plan+1e-9 {
				t.Errorf("fit bound %v, want %v (the best plan costs %v)", got, tc.fit, tc.plan)
			}
		})
	}
}

// TestBoundInput reads the synthetic workload: every type kept (none beats another: the larger
// costs more), the pods by shape, a node per hostname anti-affinity pod.
func TestBoundInput(t *testing.T) {
	in := newBoundInput(workloadInstanceTypes(), workloadPods(100))
	if len(in.types) != 400 || in.nodes != 20 {
		t.Errorf("%d types and %v nodes at least, want 400 and 20", len(in.types), in.nodes)
	}
	var pods float64
	for _, s := range in.shapes {
		pods += s.count
	}
	if len(in.shapes) > 30 || pods != 100 {
		t.Errorf("%d shapes of %v pods, want at most 30 of 100", len(in.shapes), pods)
	}
	// fake-it-0 (1 core, 2 GiB less 100m and 10Mi) is the cheapest, and fits no pod of 1 core.
	if first := in.types[0]; first.fits(podShape{cpu: 1, memory: 0.1}) || !first.fits(podShape{cpu: 0.5, memory: 1}) || in.cheapest != first.price {
		t.Errorf("the smallest type %+v: fits a pod of 1 core, not one of 500m and 1 GiB, or is not the cheapest (%v)", first, in.cheapest)
	}
}
