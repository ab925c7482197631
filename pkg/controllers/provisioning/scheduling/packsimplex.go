package scheduling

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// The packer's programs are solved by the revised simplex method from a feasible basis, keeping
// the basis's inverse and updating it at each pivot (a rank-one change, O(rows²)). gonum's
// lp.Simplex factorises its basis afresh twice a pivot (O(rows³)) and, without a basis, solves a
// phase-one program first: on a group of 85 rows it spent 100–300 ms a solve, most of the
// packer's time. gonum still inverts the basis here, at the start and every simplexRefactor
// pivots, so that rounding errors do not pile up.

const (
	// simplexRefactor is how many pivots the basis's inverse is updated before it is computed
	// again from the basis's columns.
	simplexRefactor = 50
	// simplexTolerance is how negative a reduced cost must be to enter the basis (relative to
	// the column's cost), and how large a direction's entry to leave it.
	simplexTolerance = 1e-9
)

// entry is a nonzero entry of a column: its row and value.
type entry struct {
	row   int
	value float64
}

var (
	errUnbounded  = errors.New("unbounded program")
	errNoProgress = errors.New("no optimum within the pivots allowed")
	// errStopped is a solve left when its caller's stop reported true (the packer's budget).
	errStopped = errors.New("stopped")
)

// revisedSimplex is a program in standard form (minimise c·x subject to A·x = b, x ≥ 0) and a
// basis of it.
type revisedSimplex struct {
	rows, cols int
	// columns are A's nonzero entries by column: a pattern holds a few of the shapes, so
	// pricing every column this way costs a few products each instead of a row's worth.
	columns [][]entry
	c, b    []float64
	basic   []int
	inBasis []bool
	inverse []float64 // the basis's inverse, row-major: row k for basic[k]
	xb      []float64 // the basic variables' values
}

// simplexFrom solves the program from basis, which must be feasible (its columns independent,
// B⁻¹·b ≥ 0), and returns the optimum x, its duals (π = c_Bᵀ·B⁻¹, a price per row) and its
// basis. stop is looked at before the first pivot and every simplexRefactor pivots after it:
// errStopped once it reports true.
func simplexFrom(c []float64, A *mat.Dense, b []float64, basis []int, stop func() bool) (x, duals []float64, basic []int, err error) {
	rows, cols := A.Dims()
	if len(basis) != rows {
		return nil, nil, nil, fmt.Errorf("a basis of %d columns for %d rows", len(basis), rows)
	}
	s := &revisedSimplex{rows: rows, cols: cols, c: c, b: b, basic: append([]int(nil), basis...), inBasis: make([]bool, cols)}
	raw := A.RawMatrix()
	s.columns = make([][]entry, cols)
	for i := range rows {
		row := raw.Data[i*raw.Stride : i*raw.Stride+cols]
		for j, v := range row {
			if v != 0 {
				s.columns[j] = append(s.columns[j], entry{i, v})
			}
		}
	}
	for _, j := range s.basic {
		if j < 0 || j >= cols || s.inBasis[j] {
			return nil, nil, nil, fmt.Errorf("basis column %d is out of range or repeated", j)
		}
		s.inBasis[j] = true
	}
	if err := s.refactor(); err != nil {
		return nil, nil, nil, err
	}
	for _, v := range s.xb {
		if v < -1e-7 {
			return nil, nil, nil, fmt.Errorf("the starting basis is not feasible (a basic variable at %g)", v)
		}
	}
	if err := s.optimise(stop); err != nil {
		return nil, nil, nil, err
	}
	x = make([]float64, cols)
	for k, j := range s.basic {
		x[j] = max(s.xb[k], 0)
	}
	return x, s.duals(), s.basic, nil
}

// refactor computes the basis's inverse and the basic variables from the basis's columns.
func (s *revisedSimplex) refactor() error {
	m := s.rows
	B := mat.NewDense(m, m, nil)
	for k, j := range s.basic {
		for _, e := range s.columns[j] {
			B.Set(e.row, k, e.value)
		}
	}
	var inverse mat.Dense
	if err := inverse.Inverse(B); err != nil {
		return fmt.Errorf("inverting the basis, %w", err)
	}
	raw := inverse.RawMatrix()
	s.inverse = make([]float64, m*m)
	for k := range m {
		copy(s.inverse[k*m:(k+1)*m], raw.Data[k*raw.Stride:k*raw.Stride+m])
	}
	s.xb = make([]float64, m)
	for k := range m {
		row := s.inverse[k*m : (k+1)*m]
		for i, v := range row {
			s.xb[k] += v * s.b[i]
		}
	}
	return nil
}

// duals are c_Bᵀ·B⁻¹.
func (s *revisedSimplex) duals() []float64 {
	m := s.rows
	y := make([]float64, m)
	for k, j := range s.basic {
		if cost := s.c[j]; cost != 0 {
			row := s.inverse[k*m : (k+1)*m]
			for i, v := range row {
				y[i] += cost * v
			}
		}
	}
	return y
}

// optimise pivots until no column's reduced cost is negative: the most negative enters
// (Dantzig's rule), or after a step that moved nothing the first negative one (Bland's rule,
// which cannot cycle); the leaving row is the first to reach zero, ties to the lowest column.
func (s *revisedSimplex) optimise(stop func() bool) error {
	m, n := s.rows, s.cols
	reduced := make([]float64, n)
	direction := make([]float64, m)
	degenerate := false
	for pivot := 0; ; pivot++ {
		if pivot > 10*(m+n) {
			return errNoProgress
		}
		if pivot%simplexRefactor == 0 {
			if stop() {
				return errStopped
			}
			if pivot > 0 {
				if err := s.refactor(); err != nil {
					return err
				}
			}
		}
		y := s.duals()
		for j, column := range s.columns {
			d := s.c[j]
			for _, e := range column {
				d -= y[e.row] * e.value
			}
			reduced[j] = d
		}
		entering, most := -1, 0.0
		for j, d := range reduced {
			if s.inBasis[j] || d >= -simplexTolerance*(1+math.Abs(s.c[j])) {
				continue
			}
			if degenerate {
				entering = j
				break
			}
			if d < most {
				entering, most = j, d
			}
		}
		if entering < 0 {
			return nil
		}
		for k := range m {
			sum := 0.0
			row := s.inverse[k*m : (k+1)*m]
			for _, e := range s.columns[entering] {
				sum += row[e.row] * e.value
			}
			direction[k] = sum
		}
		leaving, step := -1, math.Inf(1)
		for k, u := range direction {
			if u <= simplexTolerance {
				continue
			}
			t := max(s.xb[k], 0) / u
			if t < step || (t == step && s.basic[k] < s.basic[leaving]) {
				leaving, step = k, t
			}
		}
		if leaving < 0 {
			return errUnbounded
		}
		s.pivot(leaving, entering, direction, step)
		degenerate = step <= 1e-12
	}
}

// pivot replaces basic[r] with column q, whose direction (B⁻¹·A_q) is u, moving step along it.
func (s *revisedSimplex) pivot(r, q int, u []float64, step float64) {
	m := s.rows
	for k := range m {
		s.xb[k] -= step * u[k]
	}
	s.xb[r] = step
	pivotRow := s.inverse[r*m : (r+1)*m]
	for i := range pivotRow {
		pivotRow[i] /= u[r]
	}
	for k := range m {
		if k == r || u[k] == 0 {
			continue
		}
		row := s.inverse[k*m : (k+1)*m]
		for i, v := range pivotRow {
			row[i] -= u[k] * v
		}
	}
	s.inBasis[s.basic[r]] = false
	s.basic[r] = q
	s.inBasis[q] = true
}
