// SPDX-License-Identifier: MIT

// A gpubuf matrix product in Go, to copy: pinned matrices filled through
// zero-copy slices, multiplied over the raw layout gonum's blas64.General
// uses, reused through a pool.
//
// Build against the installed libgpubuf (pkg-config gpubuf):
//
//	go build -o gpubuf-matrix . && ./gpubuf-matrix
package main

import (
	"fmt"
	"os"

	"gpubuf.org/gpubuf"
)

// general has blas64.General's fields: with gonum, use blas64.General and
// blas64.Gemm instead of gemm below.
type general struct {
	Rows, Cols, Stride int
	Data               []float64
}

func view(m *gpubuf.Matrix) general {
	return general{Rows: m.Rows(), Cols: m.Cols(), Stride: m.Stride(), Data: m.Float64s()}
}

// gemm is c = a b over row-major data with strides.
func gemm(a, b, c general) {
	for i := 0; i < c.Rows; i++ {
		for j := 0; j < c.Cols; j++ {
			var s float64
			for k := 0; k < a.Cols; k++ {
				s += a.Data[i*a.Stride+k] * b.Data[k*b.Stride+j]
			}
			c.Data[i*c.Stride+j] = s
		}
	}
}

func run() error {
	ctx, err := gpubuf.Open() // gpubuf.ko when loaded, else memfd + mlock
	if err != nil {
		return err
	}
	defer ctx.Close()
	const n = 64
	var mats [3]*gpubuf.Matrix
	for i := range mats {
		if mats[i], err = ctx.NewMatrix(gpubuf.Float64, n, n, gpubuf.RowMajor); err != nil {
			return err
		}
		defer mats[i].Close()
	}
	a, b, c := view(mats[0]), view(mats[1]), view(mats[2])
	// Bracket CPU writes with DMA_BUF_SYNC (a no-op on memfd).
	err = mats[0].CPUAccess(gpubuf.Write, func() error {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				a.Data[i*a.Stride+j] = float64(i + j)
				b.Data[i*b.Stride+j] = 0
			}
			b.Data[i*b.Stride+i] = 2 // B = 2I
		}
		return nil
	})
	if err != nil {
		return err
	}
	gemm(a, b, c)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if got := mats[2].At(i, j); got != 2*float64(i+j) {
				return fmt.Errorf("C(%d,%d) = %v, want %v", i, j, got, 2*float64(i+j))
			}
		}
	}
	// Scratch buffers from a pool: the second Get reuses the first's memory.
	pool, err := ctx.NewPool(gpubuf.PoolOptions{})
	if err != nil {
		return err
	}
	defer pool.Close()
	for i := 0; i < 2; i++ {
		buf, err := pool.Get(1 << 20)
		if err != nil {
			return err
		}
		copy(buf.Bytes(), "scratch")
		if err := pool.Put(buf); err != nil {
			return err
		}
	}
	st := pool.Stats()
	fmt.Printf("%s backend: C = A * 2I checked (%dx%d, stride %d); pool hits %d, misses %d\n",
		ctx.Backend(), n, n, mats[2].Stride(), st.Hits, st.Misses)
	if st.Hits != 1 {
		return fmt.Errorf("the pool did not reuse its buffer: %+v", st)
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gpubuf-matrix:", err)
		os.Exit(1)
	}
}
