package scheduling

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// cuttingStock is a random program shaped like the packer's: a surplus column per row, a column
// per shape alone (count[s] pods of shape s), then random patterns; the basis of the surpluses
// and shapes alone is feasible.
func cuttingStock(r *rand.Rand, rows, patterns int, integral bool) (c []float64, A *mat.Dense, b []float64, basis []int) {
	cols := 2*rows + patterns
	c = make([]float64, cols)
	A = mat.NewDense(rows, cols, nil)
	b = make([]float64, rows)
	for i := range rows {
		A.Set(i, i, -1)
		copies := float64(1 + r.IntN(4))
		A.Set(i, rows+i, copies)
		c[rows+i] = copies * (0.5 + r.Float64())
		b[i] = float64(1 + r.IntN(20))
		if !integral {
			b[i] += r.Float64()
		}
		basis = append(basis, rows+i)
	}
	for j := 2 * rows; j < cols; j++ {
		size := 0.0
		for i := range rows {
			if r.IntN(3) == 0 {
				n := float64(r.IntN(5))
				A.Set(i, j, n)
				size += n
			}
		}
		if size == 0 { // gonum refuses a column of zeros
			A.Set(r.IntN(rows), j, 1)
			size = 1
		}
		c[j] = 0.1 + size*(0.3+0.5*r.Float64())
	}
	return c, A, b, basis
}

func TestSimplexFromAgreesWithGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		rows, patterns := 2+r.IntN(30), r.IntN(120)
		// Integral counts make degenerate optima, where Bland's rule keeps the method from cycling.
		c, A, b, basis := cuttingStock(r, rows, patterns, trial%2 == 0)
		x, duals, basic, err := simplexFrom(c, A, b, basis, never)
		if err != nil {
			t.Fatalf("trial %d (%d rows, %d patterns): %v", trial, rows, patterns, err)
		}
		want, _, err := lp.Simplex(c, A, b, 1e-10, nil)
		if err != nil {
			t.Fatalf("trial %d: gonum: %v", trial, err)
		}
		got := 0.0
		for j, v := range x {
			got += c[j] * v
		}
		if math.Abs(got-want) > 1e-7*(1+math.Abs(want)) {
			t.Errorf("trial %d (%d rows, %d patterns): optimum %.9f, gonum's %.9f", trial, rows, patterns, got, want)
		}
		// x is feasible, the duals price every column within its cost, and they are worth the
		// optimum (strong duality): both are optimal.
		var ax mat.VecDense
		ax.MulVec(A, mat.NewVecDense(len(x), x))
		for i := range rows {
			if math.Abs(ax.AtVec(i)-b[i]) > 1e-7*(1+b[i]) {
				t.Errorf("trial %d: row %d holds %g, want %g", trial, i, ax.AtVec(i), b[i])
			}
		}
		worth := 0.0
		for i, y := range duals {
			worth += y * b[i]
		}
		if math.Abs(worth-want) > 1e-7*(1+math.Abs(want)) {
			t.Errorf("trial %d: the duals are worth %.9f, the optimum is %.9f", trial, worth, want)
		}
		for j := range c {
			reduced := c[j]
			for i, y := range duals {
				reduced -= y * A.At(i, j)
			}
			if reduced < -1e-7*(1+math.Abs(c[j])) {
				t.Errorf("trial %d: column %d's reduced cost %g is negative at the duals", trial, j, reduced)
			}
		}
		if len(basic) != rows {
			t.Errorf("trial %d: a basis of %d columns for %d rows", trial, len(basic), rows)
		}
	}
}

func TestSimplexFromRefuses(t *testing.T) {
	// Two rows; columns: the surpluses, then (1, 0), (0, 1) and (1, 1).
	A := mat.NewDense(2, 5, []float64{
		-1, 0, 1, 0, 1,
		0, -1, 0, 1, 1,
	})
	b := []float64{2, 3}
	for _, tc := range []struct {
		name  string
		c     []float64
		basis []int
		want  error
	}{
		{name: "an infeasible basis (the surpluses at -2 and -3)", c: []float64{0, 0, 1, 1, 1.5}, basis: []int{0, 1}},
		{name: "a singular basis", c: []float64{0, 0, 1, 1, 1.5}, basis: []int{2, 0}},
		{name: "a column twice", c: []float64{0, 0, 1, 1, 1.5}, basis: []int{2, 2}},
		{name: "a basis of the wrong size", c: []float64{0, 0, 1, 1, 1.5}, basis: []int{2}},
		{name: "a surplus that pays", c: []float64{-2, 0, 1, 1, 1.5}, basis: []int{2, 3}, want: errUnbounded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := simplexFrom(tc.c, A, b, tc.basis, never)
			if err == nil {
				t.Fatal("solved, want an error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	if _, _, _, err := simplexFrom([]float64{0, 0, 1, 1, 1.5}, A, b, []int{2, 3}, func() bool { return true }); !errors.Is(err, errStopped) {
		t.Errorf("a solve its stop cuts short: error %v, want %v", err, errStopped)
	}
	x, duals, _, err := simplexFrom([]float64{0, 0, 1, 1, 1.5}, A, b, []int{2, 3}, never)
	if err != nil {
		t.Fatal(err)
	}
	// Two of (1, 1) and one of (0, 1): 4; the duals (0.5, 1) price (1, 1) at its cost.
	if want := []float64{0, 0, 0, 1, 2}; !floatsNear(x, want) {
		t.Errorf("x = %v, want %v", x, want)
	}
	if want := []float64{0.5, 1}; !floatsNear(duals, want) {
		t.Errorf("duals = %v, want %v", duals, want)
	}
}

func never() bool { return false }

func floatsNear(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}
