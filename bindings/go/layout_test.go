// SPDX-License-Identifier: MIT

package gpubuf

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"gpubuf.org/gpubuf/internal/testc"
)

// general mirrors gonum's blas64.General field for field: gonum is not in
// Debian, so the tests hold gpubuf's slices to its contract without it.
type general struct {
	Rows, Cols, Stride int
	Data               []float64
}

// checkGeneral applies the rules gonum's mat.Dense.SetRawMatrix and the
// blas64 routines panic on: a stride at least the row length, and data
// reaching the last element of the last row.
func checkGeneral(g general) error {
	if g.Rows < 0 || g.Cols < 0 {
		return fmt.Errorf("negative dimension")
	}
	if g.Stride < 1 || g.Stride < g.Cols {
		return fmt.Errorf("stride %d below cols %d", g.Stride, g.Cols)
	}
	if g.Rows > 0 && g.Cols > 0 && len(g.Data) < (g.Rows-1)*g.Stride+g.Cols {
		return fmt.Errorf("data of %d elements, a %dx%d stride %d matrix needs %d",
			len(g.Data), g.Rows, g.Cols, g.Stride, (g.Rows-1)*g.Stride+g.Cols)
	}
	return nil
}

// asGeneral is the documented one-liner (doc.go), for a RowMajor float64 m.
func asGeneral(m *Matrix) general {
	return general{Rows: m.Rows(), Cols: m.Cols(), Stride: m.Stride(), Data: m.Float64s()}
}

// gemmGeneral is blas64.Gemm(NoTrans, NoTrans) as gonum computes it.
func gemmGeneral(alpha float64, a, b general, beta float64, c general) {
	for i := 0; i < c.Rows; i++ {
		for j := 0; j < c.Cols; j++ {
			var s float64
			for k := 0; k < a.Cols; k++ {
				s += a.Data[i*a.Stride+k] * b.Data[k*b.Stride+j]
			}
			c.Data[i*c.Stride+j] = alpha*s + beta*c.Data[i*c.Stride+j]
		}
	}
}

// fill writes f(r, c) through At/Set, the path independent of the slices.
func fill(m *Matrix, f func(r, c int) float64) {
	for r := 0; r < m.Rows(); r++ {
		for c := 0; c < m.Cols(); c++ {
			m.Set(r, c, f(r, c))
		}
	}
}

func TestGonumLayoutContract(t *testing.T) {
	ctx := openCtx(t)
	a, _ := ctx.NewMatrix(Float64, 9, 11, RowMajor)
	b, _ := ctx.NewMatrix(Float64, 7, 13, ColMajor) // reaches gonum as b.T()
	c, _ := ctx.NewMatrix(Float64, 6, 8, RowMajor)
	defer a.Close()
	defer b.Close()
	defer c.Close()
	fill(a, func(r, c int) float64 { return float64(r*11+c) / 7 })
	fill(b, func(r, c int) float64 { return float64(r-c) / 3 })
	fill(c, func(r, c int) float64 { return float64(r + c) })
	// Sub-views with padded strides: A[1:7, 2:9] is 6x7; B is 7x13
	// column-major, so B^T is a 13x7 row-major view and B^T[2:9, :] 7x7;
	// C[:, 0:7] is 6x7.
	as := a.Slice(1, 7, 2, 9)
	bv := b.T().Slice(2, 9, 0, 7)
	cv := c.Slice(0, 6, 0, 7)
	for _, m := range []*Matrix{as, bv, cv} {
		if m.Layout() != RowMajor {
			t.Fatalf("%s is not row-major", m)
		}
		if err := checkGeneral(asGeneral(m)); err != nil {
			t.Fatalf("%s as blas64.General: %v", m, err)
		}
		if g := asGeneral(m); len(g.Data) != (g.Rows-1)*g.Stride+g.Cols {
			t.Errorf("%s: Data %d elements, exactly the view's span expected", m, len(g.Data))
		}
	}
	// Reference: C = 2 A B + 0.5 C through At, before anything is written.
	want := make([][]float64, cv.Rows())
	for i := range want {
		want[i] = make([]float64, cv.Cols())
		for j := range want[i] {
			var s float64
			for k := 0; k < as.Cols(); k++ {
				s += as.At(i, k) * bv.At(k, j)
			}
			want[i][j] = 2*s + 0.5*cv.At(i, j)
		}
	}
	gemmGeneral(2, asGeneral(as), asGeneral(bv), 0.5, asGeneral(cv))
	for i := range want {
		for j := range want[i] {
			if got := cv.At(i, j); got != want[i][j] {
				t.Fatalf("C(%d,%d) = %v through the General, %v through At", i, j, got, want[i][j])
			}
		}
	}
	// The column outside the sub-view was not touched.
	if got := c.At(2, 7); got != 9 {
		t.Errorf("C(2,7) outside the view changed to %v", got)
	}
}

// The slices go to C as they are, the way a cgo BLAS takes them, with the
// goroutine pinned to its thread around the call as BLAS users do.
func TestSlicesToCgoBLAS(t *testing.T) {
	ctx := openCtx(t)
	a, _ := ctx.NewMatrix(Float64, 17, 9, RowMajor)
	b, _ := ctx.NewMatrix(Float64, 9, 5, RowMajor)
	c, _ := ctx.NewMatrix(Float64, 17, 5, RowMajor)
	defer a.Close()
	defer b.Close()
	defer c.Close()
	fill(a, func(r, c int) float64 { return float64(r + 2*c) })
	fill(b, func(r, c int) float64 { return float64(r*c) - 3 })
	fill(c, func(r, c int) float64 { return 1 })
	runtime.LockOSThread()
	testc.Dgemm(17, 5, 9, 1, a.Float64s(), a.Stride(), b.Float64s(), b.Stride(), 1, c.Float64s(), c.Stride())
	runtime.UnlockOSThread()
	for i := 0; i < 17; i++ {
		for j := 0; j < 5; j++ {
			var s float64 = 1
			for k := 0; k < 9; k++ {
				s += a.At(i, k) * b.At(k, j)
			}
			if c.At(i, j) != s {
				t.Fatalf("C(%d,%d) = %v from C code, want %v", i, j, c.At(i, j), s)
			}
		}
	}
}

// Many goroutines allocate, fill, multiply and close matrices at once, and
// others write disjoint rows of one shared matrix; the results are
// checked. Under -race the detector sees the package's own Go state
// (contexts, pools, finalizers), not the rows: it instruments only the Go
// heap and globals, and the matrices are C memory from mmap.
func TestManyGoroutines(t *testing.T) {
	ctx := openCtx(t)
	shared, err := ctx.NewMatrix(Float32, 64, 32, RowMajor)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			row := shared.Slice(2*g, 2*g+2, 0, 32).Float32s()
			for i := range row {
				row[i] = float32(g)
			}
			for i := 0; i < 20; i++ {
				m, err := ctx.NewMatrix(Float64, 8, 8, Layout(i%2))
				if err != nil {
					errs <- err
					return
				}
				fill(m, func(r, c int) float64 { return float64(g*100 + r*8 + c) })
				d := m.Float64s()
				var sum float64
				for r := 0; r < 8; r++ {
					for c := 0; c < 8; c++ {
						sum += d[m.index(r, c)]
					}
				}
				if want := float64(g*100*64 + 63*64/2); sum != want {
					errs <- fmt.Errorf("goroutine %d: sum %v, want %v", g, sum, want)
				}
				if err := m.Close(); err != nil {
					errs <- err
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for r := 0; r < 64; r++ {
		for c := 0; c < 32; c++ {
			if shared.At(r, c) != float64(r/2) {
				t.Fatalf("shared (%d,%d) = %v, want %d", r, c, shared.At(r, c), r/2)
			}
		}
	}
}
