package scheduling

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// program is the restricted program in gonum's standard form (minimise c·x subject to A·x = b,
// x ≥ 0): a surplus column per row, then a column per pattern; a row per shape (its pods held)
// and per kind (its bins, each with one pattern). The surplus columns come first so that a
// column's index stays as patterns join, and the last optimal basis starts the next solve.
func (p *batchPacker) program() (c []float64, A *mat.Dense, b []float64) {
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
	for s, shape := range p.shapes {
		b[s] = float64(shape.count)
	}
	for k, kind := range p.kinds {
		b[S+k] = float64(len(kind.members))
	}
	for i := range b {
		b[i] = b[i]*(1+1e-5*(1+perturb.Float64())) + 1e-5*perturb.Float64()
	}
	return c, A, b
}

// errDegenerate is an optimum whose basis the positive variables do not name.
var errDegenerate = errors.New("degenerate optimum")

// solve is gonum's simplex from basis (nil: from scratch); a panic (gonum's answer to a basis
// that is not feasible) is an error.
func solve(c []float64, A *mat.Dense, b []float64, basis []int) (x []float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("simplex: %v", r)
		}
	}()
	_, x, err = lp.Simplex(c, A, b, 1e-10, basis)
	return x, err
}

// prices are the program's duals, a price per shape and per kind, from its optimal basis (B,
// the columns of the basic variables: Bᵀ·π = their prices).
func (p *batchPacker) prices() ([]float64, error) {
	c, A, b := p.program()
	rows := len(b)
	x, err := solve(c, A, b, p.basis)
	if err != nil && p.basis != nil {
		x, err = solve(c, A, b, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("solving the packing program over %d patterns, %w", len(p.patterns), err)
	}
	prices, basic, err := optimalDuals(c, A, x, 1e-12)
	if err != nil {
		return nil, fmt.Errorf("pricing the packing program over %d patterns, %w", len(p.patterns), err)
	}
	for i := range prices {
		prices[i] = max(prices[i], 0)
	}
	p.basis, p.bought = basic, x[rows:]
	return prices, nil
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
