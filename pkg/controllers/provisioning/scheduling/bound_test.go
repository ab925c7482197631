package scheduling_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
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

// podShape is a pod's requests in cores and GiB, with the number of pods of that shape; own
// for pods that need a node of their own (hostname anti-affinity).
type podShape struct {
	cpu, memory, count float64
	own                bool
}

// nodeShape is an instance type's allocatable in cores, GiB and pods, at its cheapest offering.
type nodeShape struct {
	cpu, memory, pods, price float64
	name                     string
}

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
	counts := map[podShape]float64{}
	var ownNode float64
	for _, pod := range ps {
		shape := shapeOf(pod)
		if shape.own {
			ownNode++
		}
		counts[shape]++
	}
	in.nodes = math.Max(1, ownNode)
	for shape, count := range counts {
		shape.count = count
		in.shapes = append(in.shapes, shape)
	}
	// A stable order, so that every bound is computed the same way each run.
	slices.SortFunc(in.shapes, func(a, b podShape) int {
		return cmp.Or(cmp.Compare(a.cpu, b.cpu), cmp.Compare(a.memory, b.memory), cmpBool(a.own, b.own))
	})
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
		all = append(all, nodeShape{cpu: cores(*a.Cpu()), memory: gibibytes(*a.Memory()), pods: float64(a.Pods().Value()), price: price, name: it.Name})
		in.cheapest = math.Min(in.cheapest, price)
	}
	for i, t := range all {
		beaten := false
		for j, u := range all {
			same := u.cpu == t.cpu && u.memory == t.memory && u.pods == t.pods && u.price == t.price
			if j != i && u.cpu >= t.cpu && u.memory >= t.memory && u.pods >= t.pods && u.price <= t.price && (!same || j < i) {
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

// shapeOf is the pod's shape, with no count.
func shapeOf(pod *corev1.Pod) podShape {
	r := pods.Requests(pod)
	shape := podShape{cpu: cores(*r.Cpu()), memory: gibibytes(*r.Memory())}
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		shape.own = slices.ContainsFunc(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, func(term corev1.PodAffinityTerm) bool {
			return term.TopologyKey == corev1.LabelHostname
		})
	}
	return shape
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
		// Two pods of 0.6 cores never share a node of one core: three nodes, which only the
		// pattern bound sees (the others let pods share cores in fractions).
		"whole pods": {
			in:        boundInput{shapes: []podShape{{cpu: 0.6, memory: 0.1, count: 3}}, nodes: 1, types: []nodeShape{{cpu: 1, memory: 1, pods: 10, price: 1}}, cheapest: 1},
			aggregate: 1.8, fit: 1.8, plan: 3,
		},
		// Three nodes at least, for pods that would share one: each node pays its cheapest.
		"a node each": {
			in:        boundInput{shapes: []podShape{{cpu: 0.25, memory: 0.25, count: 3, own: true}}, nodes: 3, types: []nodeShape{cheapCores, roomy}, cheapest: 1},
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
			// Whole nodes of whole pods: the best plan itself here.
			if got, _ := patternBound(t, tc.in, nil); math.Abs(got-tc.plan) > 1e-5 || got > tc.plan+1e-9 {
				t.Errorf("pattern bound %v, want the best plan's %v", got, tc.plan)
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
	// 5 cpu requests × 6 memory requests, with or without a node of their own.
	if len(in.shapes) > 60 || pods != 100 {
		t.Errorf("%d shapes of %v pods, want at most 60 of 100", len(in.shapes), pods)
	}
	// fake-it-0 (1 core, 2 GiB less 100m and 10Mi) is the cheapest, and fits no pod of 1 core.
	if first := in.types[0]; first.fits(podShape{cpu: 1, memory: 0.1}) || !first.fits(podShape{cpu: 0.5, memory: 1}) || in.cheapest != first.price {
		t.Errorf("the smallest type %+v: fits a pod of 1 core, not one of 500m and 1 GiB, or is not the cheapest (%v)", first, in.cheapest)
	}
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// patternBound is the Gilmore–Gomory bound of bin packing: the optimum of the linear program
// that buys, in fractions, whole nodes each holding a packing ("pattern": how many pods of each
// shape one node of a type holds, with at most one pod needing a node of its own) so that
// every pod is covered. Its dual prices each shape (π): column generation solves the dual over
// the patterns found so far (shapePrices; seeds, such as a plan's nodes, and one per shape),
// then, type by type, finds the packing the prices value most (an
// exact knapsack, searchPacking) and adds those worth more than their type's price, until none
// is. Any π is a bound once scaled so that no packing of any type is worth more than the type's
// price (weak duality), and the scale comes from each type's best packing, or an upper bound
// of it when the search is cut short: the bound holds whether or not the generation converged.
// It ignores spreads and pod affinity (a relaxation: still a bound), and whole pods, whole
// nodes and hostname anti-affinity are what it adds over fitBound.
func patternBound(tb testing.TB, in boundInput, seeds []pattern) (float64, []pattern) {
	tb.Helper()
	patterns := slices.Clone(seeds)
	// One pattern per shape to start: as many of it as the type it costs least on holds.
	for i, s := range in.shapes {
		var best pattern
		perPod := math.Inf(1)
		for _, t := range in.types {
			if n := copiesFitting(t, s); n >= 1 && t.price/n < perPod {
				counts := make([]float64, len(in.shapes))
				counts[i] = n
				best, perPod = pattern{counts: counts, price: t.price, name: t.name}, t.price/n
			}
		}
		if best.counts != nil {
			patterns = append(patterns, best)
		}
	}
	bound := 0.0
	rounds, converged := 0, false
	defer func() {
		tb.Logf("the pattern bound: %d rounds, %d patterns, converged: %t", rounds, len(patterns), converged)
	}()
	for range 60 {
		rounds++
		prices, err := shapePrices(in, patterns)
		if err != nil {
			tb.Logf("the pattern bound stops at its round with %d patterns: %v", len(patterns), err)
			break
		}
		worth := 0.0
		for i, s := range in.shapes {
			worth += s.count * prices[i]
		}
		// The worst ratio of a type's best packing to its price scales π down to a feasible
		// dual point; the packings that beat their price join the patterns.
		ratio := 1.0
		type violation struct {
			pattern
			ratio float64
		}
		var violations []violation
		for _, t := range in.types {
			value, counts, upper := searchPacking(t, in.shapes, prices)
			ratio = math.Max(ratio, upper/t.price)
			if value > t.price*(1+1e-7) {
				violations = append(violations, violation{pattern{counts, t.price, t.name}, value / t.price})
			}
		}
		bound = math.Max(bound, worth/ratio)
		if len(violations) == 0 {
			converged = true
			break
		}
		sort.Slice(violations, func(i, j int) bool { return violations[i].ratio > violations[j].ratio })
		for _, v := range violations[:min(len(violations), 32)] {
			patterns = append(patterns, v.pattern)
		}
	}
	return bound, patterns
}

// shapePrices are the dual prices (π, one per pod shape) of the restricted program over the
// patterns: maximise Σ count·π subject to each pattern's π-worth ≤ its price, π ≥ 0. They come
// from the primal's optimal basis (B, the columns of its basic variables: B^T·π = their prices),
// solved with gonum's simplex over a row per shape, whereas the dual itself has a row per
// pattern, thousands after a few rounds, and solving it took minutes. The counts are perturbed
// a little, by a fixed sequence, so that the optimal basis is not degenerate: each basic
// variable positive names the basis. The perturbation moves the primal only: π is checked
// against every pattern, and the bound scales any π to a feasible point anyway.
func shapePrices(in boundInput, patterns []pattern) ([]float64, error) {
	S, P := len(in.shapes), len(patterns)
	var pi []float64
	var err error
	// A perturbation that leaves the optimum degenerate all the same is tried again with the
	// next of the sequence, each larger, a few times.
	for attempt := range 4 {
		c, A, b := restrictedProgram(in, patterns)
		perturb := rand.New(rand.NewPCG(1, 2+uint64(attempt)))
		for i := range b {
			b[i] *= 1 + 1e-6*math.Pow(10, float64(attempt))*(1+perturb.Float64())
		}
		var x []float64
		if _, x, err = lp.Simplex(c, A, b, 1e-10, nil); err != nil {
			return nil, fmt.Errorf("solving the restricted program over %d patterns, %w", P, err)
		}
		if pi, _, err = scheduling.OptimalDuals(c, A, x, 1e-9); !errors.Is(err, scheduling.ErrDegenerate) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the restricted program's optimum over %d patterns: %w", P, err)
	}
	prices := make([]float64, S)
	for i := range S {
		if v := pi[i]; v < -1e-9 {
			return nil, fmt.Errorf("shape %d priced %g over %d patterns: the basis is not optimal", i, v, P)
		} else {
			prices[i] = max(v, 0)
		}
	}
	for j, p := range patterns {
		worth := 0.0
		for i, n := range p.counts {
			worth += n * prices[i]
		}
		if worth > p.price*(1+1e-6) {
			return nil, fmt.Errorf("pattern %d worth %g at the shapes' prices, more than its price %g: the basis is not optimal", j, worth, p.price)
		}
	}
	return prices, nil
}

// pattern is a packing of one node: how many pods of each of a boundInput's shapes it holds,
// its price and its instance type's name.
type pattern struct {
	counts []float64
	price  float64
	name   string
}

// restrictedPlan solves the linear program over the patterns found: how many nodes of each
// pattern, in fractions, cover every pod at least cost. Not a bound (a pattern not found could
// do better), it shows what a cheap packing looks like: which types hold which pods.
func restrictedPlan(in boundInput, patterns []pattern) (float64, []float64, error) {
	c, A, b := restrictedProgram(in, patterns)
	cost, x, err := lp.Simplex(c, A, b, 1e-10, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("solving the restricted program over %d patterns, %w", len(patterns), err)
	}
	return cost, x[:len(patterns)], nil
}

// restrictedProgram is the restricted program in gonum's standard form (minimise c·x subject
// to A·x = b, x ≥ 0): a column per pattern and a surplus column per shape, a row per shape.
func restrictedProgram(in boundInput, patterns []pattern) (c []float64, A *mat.Dense, b []float64) {
	S, P := len(in.shapes), len(patterns)
	c = make([]float64, P+S)
	A = mat.NewDense(S, P+S, nil)
	b = make([]float64, S)
	for j, p := range patterns {
		c[j] = p.price
		for i, n := range p.counts {
			A.Set(i, j, n)
		}
	}
	for i, s := range in.shapes {
		A.Set(i, P+i, -1)
		b[i] = s.count
	}
	return c, A, b
}

// describe is a pattern as cores/GiB of its pods, those needing a node of their own starred.
func (p pattern) describe(in boundInput) string {
	var pods []string
	for i, n := range p.counts {
		if n > 0 {
			s := in.shapes[i]
			own := ""
			if s.own {
				own = "*"
			}
			pods = append(pods, fmt.Sprintf("%g×%g/%g%s", n, s.cpu, s.memory, own))
		}
	}
	return fmt.Sprintf("%s $%.4f/h: %s", p.name, p.price, strings.Join(pods, " "))
}

// planPatterns are the packings of a plan's new nodes, each once: seeds that spare
// patternBound's column generation most of its rounds.
func planPatterns(in boundInput, r *scheduling.Results) []pattern {
	index := map[podShape]int{}
	for i, s := range in.shapes {
		s.count = 0
		index[s] = i
	}
	var out []pattern
	seen := sets.New[string]()
	for _, n := range r.NewNodes {
		p := pattern{counts: make([]float64, len(in.shapes)), price: n.Price, name: n.InstanceTypes[0].Name}
		for _, pod := range n.Pods {
			p.counts[index[shapeOf(pod)]]++
		}
		if key := fmt.Sprint(p); !seen.Has(key) {
			seen.Insert(key)
			out = append(out, p)
		}
	}
	return out
}

// copiesFitting is how many pods of the shape a node of the type holds alone.
func copiesFitting(t nodeShape, s podShape) float64 {
	if !t.fits(s) {
		return 0
	}
	return copiesWithin(s, [3]float64{t.cpu, t.memory, t.pods})
}

// copiesWithin is how many pods of the shape fit within room (cores, GiB, pods): at most the
// shape's count, and one when each needs a node of its own.
func copiesWithin(s podShape, room [3]float64) float64 {
	n := math.Min(s.count, math.Floor(room[2]+1e-9))
	if s.cpu > 0 {
		n = math.Min(n, math.Floor(room[0]/s.cpu+1e-9))
	}
	if s.memory > 0 {
		n = math.Min(n, math.Floor(room[1]/s.memory+1e-9))
	}
	if s.own {
		n = math.Min(n, 1)
	}
	return math.Max(0, n)
}

// searchPackingBudget bounds the nodes of one knapsack search; past it the search returns the
// best packing found and an upper bound of the optimum instead of the optimum.
const searchPackingBudget = 200_000

// knapsackDual solves the dual of a node's knapsack relaxation: minimise λ·room + ν + Σ cap·μ
// subject to, for each of the n items, λ·weight + ν·own + μ ≥ price, all ≥ 0. item gives the
// k-th item's cpu, memory and pods, whether it needs a node of its own, its price and cap. It
// returns λ, ν and the optimum, which bounds every packing (weak duality), and +Inf when the
// solver fails (no bound then).
func knapsackDual(room [3]float64, n int, item func(int) (cpu, memory, pods float64, own bool, price, limit float64)) ([3]float64, float64, float64) {
	// Columns λ (3), ν, μ (n), surplus (n); a row per item.
	cols := 4 + 2*n
	c := make([]float64, cols)
	c[0], c[1], c[2], c[3] = room[0], room[1], room[2], 1
	A := mat.NewDense(n, cols, nil)
	b := make([]float64, n)
	for k := range n {
		cpu, memory, pods, own, price, limit := item(k)
		A.Set(k, 0, cpu)
		A.Set(k, 1, memory)
		A.Set(k, 2, pods)
		if own {
			A.Set(k, 3, 1)
		}
		A.Set(k, 4+k, 1)
		A.Set(k, 4+n+k, -1)
		c[4+k] = limit
		// Raised a little, item by item, so that the program is not degenerate (gonum's simplex
		// can cycle on one that is): a point that meets the raised prices meets the prices, so
		// its objective still bounds every packing.
		b[k] = price * (1 + 1e-7*float64(k+1))
	}
	optimum, x, err := lp.Simplex(c, A, b, 1e-10, nil)
	if err != nil {
		return [3]float64{}, 0, math.Inf(1)
	}
	return [3]float64{x[0], x[1], x[2]}, x[3], optimum
}

// searchPacking is the packing of one node of type t that the prices value most: how many pods
// of each shape (at most the shape's count, one pod needing a node of its own at most) within
// the type's cpu, memory and pods. It returns that value, the packing and an upper bound of the
// optimum: the value itself when the depth-first search, pruned by the least of the three
// single-resource fractional knapsack bounds, completed within its budget.
func searchPacking(t nodeShape, shapes []podShape, prices []float64) (value float64, counts []float64, upper float64) {
	type item struct {
		podShape
		index int
		price float64
	}
	var items []item
	for i, s := range shapes {
		if prices[i] > 1e-12 && t.fits(s) {
			items = append(items, item{s, i, prices[i]})
		}
	}
	counts = make([]float64, len(shapes))
	if len(items) == 0 {
		return 0, counts, 0
	}
	// Densest first, by the share of the node a pod takes in its tightest resource.
	share := func(it item) float64 { return math.Max(math.Max(it.cpu/t.cpu, it.memory/t.memory), 1/t.pods) }
	sort.SliceStable(items, func(a, b int) bool { return items[a].price/share(items[a]) > items[b].price/share(items[b]) })
	weights := [3]func(item) float64{
		func(it item) float64 { return it.cpu }, func(it item) float64 { return it.memory }, func(item) float64 { return 1 },
	}
	// orders[d] are the items' positions by price per unit of resource d, highest first.
	var orders [3][]int
	for d, weight := range weights {
		orders[d] = make([]int, len(items))
		for k := range items {
			orders[d][k] = k
		}
		sort.SliceStable(orders[d], func(a, b int) bool {
			x, y := items[orders[d][a]], items[orders[d][b]]
			return x.price*weight(y) > y.price*weight(x)
		})
	}
	// fractional bounds what the items from position k on add within room, relaxing whole
	// pods and all but one resource at a time.
	fractional := func(k int, room [3]float64) float64 {
		least := math.Inf(1)
		for d, weight := range weights {
			left, total := room[d], 0.0
			for _, j := range orders[d] {
				it := items[j]
				if j < k {
					continue
				}
				n := it.count
				if it.own {
					n = 1
				}
				if w := weight(it); w > 0 {
					n = math.Min(n, left/w)
					left -= n * w
				}
				total += n * it.price
				if left <= 0 {
					break
				}
			}
			least = math.Min(least, total)
		}
		return least
	}
	root := [3]float64{t.cpu, t.memory, t.pods}
	// caps are how many of each item one node holds at most.
	caps := make([]float64, len(items))
	for k, it := range items {
		caps[k] = copiesFitting(t, it.podShape)
	}
	// The Lagrangian bound: for any λ ≥ 0 weighing cpu, memory and pods, and ν ≥ 0 the one pod
	// needing a node of its own, the node is worth at most λ·room + ν plus, per item, its cap
	// times whatever its price exceeds its weight by. The best λ and ν are the dual of the
	// knapsack's linear relaxation (solved with gonum's simplex), whose optimum is then the
	// bound at the root; suffix[k] is the items' part from position k on, for the search.
	reduced := func(it item, lambda [3]float64, nu float64) float64 {
		r := it.price - lambda[0]*it.cpu - lambda[1]*it.memory - lambda[2]
		if it.own {
			r -= nu
		}
		return math.Max(0, r)
	}
	lambda, nu, least := knapsackDual(root, len(items), func(k int) (float64, float64, float64, bool, float64, float64) {
		return items[k].cpu, items[k].memory, 1, items[k].own, items[k].price, caps[k]
	})
	suffix := make([]float64, len(items)+1)
	for k := len(items) - 1; k >= 0; k-- {
		suffix[k] = suffix[k+1] + caps[k]*reduced(items[k], lambda, nu)
	}
	upper = math.Min(least, fractional(0, root))
	current := make([]float64, len(items))
	best := make([]float64, len(items))
	visited, complete := 0, true
	var search func(k int, room [3]float64, own bool, worth float64)
	search = func(k int, room [3]float64, own bool, worth float64) {
		if worth > value {
			value = worth
			copy(best, current)
		}
		if k == len(items) {
			return
		}
		if visited++; visited > searchPackingBudget {
			complete = false
			return
		}
		ownRoom := nu
		if own {
			ownRoom = 0
		}
		if worth+lambda[0]*room[0]+lambda[1]*room[1]+lambda[2]*room[2]+ownRoom+suffix[k] <= value*(1+1e-12) ||
			worth+fractional(k, room) <= value*(1+1e-12) {
			return
		}
		it := items[k]
		n := copiesWithin(it.podShape, room)
		if it.own && own {
			n = 0
		}
		for c := n; c >= 0; c-- {
			current[k] = c
			next := [3]float64{room[0] - c*it.cpu, room[1] - c*it.memory, room[2] - c}
			search(k+1, next, own || (it.own && c > 0), worth+c*it.price)
		}
		current[k] = 0
	}
	search(0, root, false, 0)
	for k, c := range best {
		counts[items[k].index] = c
	}
	if complete {
		upper = value
	}
	return value, counts, math.Max(upper, value)
}
