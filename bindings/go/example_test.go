// SPDX-License-Identifier: MIT

package gpubuf_test

import (
	"fmt"
	"log"

	"gpubuf.org/gpubuf"
)

// A matrix in pinned memory, filled through a zero-copy slice and read
// through a sub-view.
func Example() {
	ctx, err := gpubuf.Open() // gpubuf.ko when loaded, else memfd
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	m, err := ctx.NewMatrix(gpubuf.Float64, 4, 6, gpubuf.RowMajor)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	data := m.Float64s() // the mapping itself: rows are Stride() apart
	for r := 0; r < m.Rows(); r++ {
		for c := 0; c < m.Cols(); c++ {
			data[r*m.Stride()+c] = float64(10*r + c)
		}
	}
	sub := m.Slice(1, 3, 2, 5) // rows 1-2, columns 2-4, same memory
	fmt.Println(sub.Rows(), sub.Cols(), sub.Stride(), sub.At(1, 2), sub.T().At(2, 1))
	// Output: 2 3 32 24 24
}

// A pool shared by goroutines; Put hands the memory to the next Get.
func ExamplePool() {
	ctx, err := gpubuf.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	pool, err := ctx.NewPool(gpubuf.PoolOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	for i := 0; i < 3; i++ {
		b, err := pool.Get(1 << 20)
		if err != nil {
			log.Fatal(err)
		}
		b.Bytes()[0] = byte(i)
		pool.Put(b)
	}
	st := pool.Stats()
	fmt.Println(st.Misses, st.Hits, st.CachedBuffers)
	// Output: 1 2 1
}
