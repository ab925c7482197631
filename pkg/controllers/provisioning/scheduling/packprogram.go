package scheduling

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// program is the restricted program in gonum's standard form (minimise c·x subject to A·x = b,
// x ≥ 0) for a demand: a surplus column per row, then a column per pattern; a row per shape
// (the demand's pods of it held) and per kind (the demand's bins of it, each with one pattern). The surplus columns come first so that a
// column's index stays as patterns join, and the last optimal basis starts the next solve.
func (p *batchPacker) program(demand []float64) (c []float64, A *mat.Dense, b []float64) {
	S, K, P := len(p.shapes), len(p.kinds), len(p.patterns)
	rows := S + K
	c = make([]float64, rows+P)
	A = mat.NewDense(rows, rows+P, nil)
	b = make([]float64, rows)
	for i := range rows {
		A.Set(i, i, -1)
	}
	for j, pt := range p.patterns {
		c[rows+j] = p.types[pt.typ].price
		for s, n := range pt.counts {
			A.Set(s, rows+j, float64(n))
		}
		if pt.kind >= 0 {
			A.Set(S+pt.kind, rows+j, 1)
		}
	}
	// Perturbed a little, by a fixed sequence, so that every basic variable of an optimum is
	// positive and names its basis; the same each round, so that the last basis stays feasible.
	perturb := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // a fixed perturbation, the same every run, not a secret
	for i := range b {
		b[i] = demand[i]*(1+1e-5*(1+perturb.Float64())) + 1e-5*perturb.Float64()
	}
	return c, A, b
}

// errDegenerate is an optimum whose basis the positive variables do not name.
var errDegenerate = errors.New("degenerate optimum")

// solve is gonum's simplex from scratch (its phase one finds a basis); a panic is an error.
func solve(c []float64, A *mat.Dense, b []float64) (x []float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("simplex: %v", r)
		}
	}()
	_, x, err = lp.Simplex(c, A, b, 1e-10, nil)
	return x, err
}

// prices are the program's duals, a price per shape and per kind, from its optimum: solved
// from the last optimal basis (the seeded program's starting basis the first time), or, should
// that fail, by gonum's simplex from scratch, the duals then read from its optimal basis. The
// error is errStopped if stop reported true during the solve.
func (p *batchPacker) prices(stop func() bool) ([]float64, error) {
	c, A, b := p.program(p.newRounding().demand())
	rows := len(b)
	if p.basis == nil {
		p.basis = p.startingBasis(b)
	}
	x, prices, basic, err := simplexFrom(c, A, b, p.basis, stop)
	if errors.Is(err, errStopped) {
		return nil, err
	}
	if err != nil {
		if x, err = solve(c, A, b); err != nil {
			return nil, fmt.Errorf("solving the packing program over %d patterns, %w", len(p.patterns), err)
		}
		if prices, basic, err = optimalDuals(c, A, x, 1e-12); err != nil {
			return nil, fmt.Errorf("pricing the packing program over %d patterns, %w", len(p.patterns), err)
		}
	}
	for i := range prices {
		prices[i] = max(prices[i], 0)
	}
	p.basis, p.bought = basic, x[rows:]
	return prices, nil
}

// optimumFor is the program's optimum, a number of each pattern, over the patterns so far for
// another demand (what a rounding has left), solved from the starting basis; nil if that fails
// or stop reports true first.
func (p *batchPacker) optimumFor(demand []float64, stop func() bool) []float64 {
	c, A, b := p.program(demand)
	x, _, _, err := simplexFrom(c, A, b, p.startingBasis(b), stop)
	if err != nil {
		return nil
	}
	return x[len(b):]
}

// startingBasis is a feasible basis of the seeded program to start the first solve from (a
// solve without one must find one first, which took gonum most of its time): each kind's seed
// pattern, bought once per member, and per shape the pods those leave, held by the shape's
// pattern alone, or the shape's surplus where the kinds' patterns hold them all. The basis is
// triangular (the kinds' columns alone in their rows, each shape's alone in its row among the
// shapes'), so it is never singular.
func (p *batchPacker) startingBasis(b []float64) []int {
	S, K := len(p.shapes), len(p.kinds)
	rows := S + K
	basis := make([]int, 0, rows)
	for s := range S {
		left := b[s]
		for k := range K {
			left -= float64(p.patterns[p.kindSeed[k]].counts[s]) * b[S+k]
		}
		if left > 0 {
			basis = append(basis, rows+p.alone[s])
		} else {
			basis = append(basis, s)
		}
	}
	for k := range K {
		basis = append(basis, rows+p.kindSeed[k])
	}
	return basis
}

// optimalDuals are the duals (π) of a program in standard form (minimise c·x subject to
// A·x = b, x ≥ 0) at its optimum x, from the basis its variables above positive name (B, their
// columns: Bᵀ·π = their prices), and that basis. An optimum with fewer such variables than
// rows is degenerate and names no basis: perturbing b a little avoids it.
func optimalDuals(c []float64, A *mat.Dense, x []float64, positive float64) ([]float64, []int, error) {
	rows, _ := A.Dims()
	var basic []int
	for j, v := range x {
		if v > positive {
			basic = append(basic, j)
		}
	}
	if len(basic) != rows {
		return nil, nil, fmt.Errorf("%d positive variables for %d rows, %w", len(basic), rows, errDegenerate)
	}
	Bt := mat.NewDense(rows, rows, nil)
	cB := mat.NewVecDense(rows, nil)
	for k, j := range basic {
		for i := range rows {
			Bt.Set(k, i, A.At(i, j))
		}
		cB.SetVec(k, c[j])
	}
	var pi mat.VecDense
	if err := pi.SolveVec(Bt, cB); err != nil {
		return nil, nil, fmt.Errorf("solving for the duals, %w", err)
	}
	duals := make([]float64, rows)
	for i := range duals {
		duals[i] = pi.AtVec(i)
	}
	return duals, basic, nil
}
