// SPDX-License-Identifier: MIT

package gpubuf

import (
	"errors"
	"sync"
	"syscall"
	"testing"
)

func TestPoolReusesAndCounts(t *testing.T) {
	ctx := openCtx(t)
	p, err := ctx.NewPool(PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b, err := p.Get(5000) // the 8 KiB class
	if err != nil {
		t.Fatal(err)
	}
	if b.Size() != 8192 {
		t.Errorf("Get(5000) gave %d bytes, want the 8192 class", b.Size())
	}
	addr := b.address()
	b.Bytes()[100] = 42
	if err := p.Put(b); err != nil {
		t.Fatal(err)
	}
	if !b.Closed() {
		t.Error("Put left the Buffer open")
	}
	if err := p.Put(b); !errors.Is(err, ErrClosed) {
		t.Errorf("a second Put: %v, want ErrClosed", err)
	}
	b2, err := p.Get(8000)
	if err != nil {
		t.Fatal(err)
	}
	if b2.address() != addr || b2.Bytes()[100] != 42 {
		t.Errorf("the cached buffer was not handed out again (%#x vs %#x)", b2.address(), addr)
	}
	st := p.Stats()
	if st.Hits != 1 || st.Misses != 1 || st.Puts != 1 || st.Drops != 0 || st.CachedBuffers != 0 {
		t.Errorf("stats %+v", st)
	}
	// Buffers of another pool, or of none, are refused and stay open.
	plain, _ := ctx.Alloc(8192)
	if err := p.Put(plain); !errors.Is(err, syscall.EXDEV) || plain.Closed() {
		t.Errorf("Put of an Alloc'd buffer: %v (closed %v)", err, plain.Closed())
	}
	plain.Close()
	q, _ := ctx.NewPool(PoolOptions{})
	if err := q.Put(b2); !errors.Is(err, syscall.EXDEV) || b2.Closed() {
		t.Errorf("Put into another pool: %v", err)
	}
	q.Close()
	p.Put(b2)
	if st := p.Stats(); st.CachedBuffers != 1 || st.CachedBytes != 8192 {
		t.Errorf("after the second Put: %+v", st)
	}
	p.Trim()
	if st := p.Stats(); st.CachedBuffers != 0 || st.CachedBytes != 0 {
		t.Errorf("after Trim: %+v", st)
	}
	// Buffers handed out outlive the pool; Put then frees them.
	out, _ := p.Get(4096)
	p.Close()
	if _, err := p.Get(4096); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	out.Bytes()[0] = 1
	if err := p.Put(out); err != nil {
		t.Errorf("Put after the pool's Close: %v", err)
	}
	if p.Stats() != (PoolStats{}) {
		t.Errorf("stats of a closed pool: %+v", p.Stats())
	}
}

// The context stays open underneath its pools.
func TestContextCloseWaitsForPools(t *testing.T) {
	ctx, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ctx.NewPool(PoolOptions{MaxCachedBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx.Close()
	if _, err := ctx.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close: %v", err)
	}
	if _, err := ctx.NewPool(PoolOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("NewPool after Close: %v", err)
	}
	b, err := p.Get(1 << 16) // a miss: allocates on the closed context's file
	if err != nil {
		t.Fatalf("Get from a pool of a closed context: %v", err)
	}
	p.Put(b)
	p.Close()
	if ctx.ctx != nil {
		t.Error("the context was not closed after its last pool")
	}
}

// Many goroutines share a pool: every Get is a hit or a miss, every Put is
// counted, and no two goroutines ever hold the same buffer (each writes its
// id over the whole buffer and finds it intact).
func TestPoolManyGoroutines(t *testing.T) {
	ctx := openCtx(t)
	p, err := ctx.NewPool(PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const workers, rounds = 16, 100
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(id byte) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				b, err := p.Get(4096 << (i % 3))
				if err != nil {
					errs <- err
					return
				}
				data := b.Bytes()
				for j := range data {
					data[j] = id
				}
				for j := range data {
					if data[j] != id {
						errs <- errors.New("a buffer was handed to two goroutines at once")
						return
					}
				}
				if err := p.Put(b); err != nil {
					errs <- err
					return
				}
			}
		}(byte(w + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Hits+st.Misses != workers*rounds || st.Puts != workers*rounds {
		t.Errorf("stats %+v after %d gets and puts", st, workers*rounds)
	}
	if st.Hits == 0 {
		t.Errorf("no hit in %d gets: the pool did not reuse", workers*rounds)
	}
}

// Close while other goroutines Get: they stop with ErrClosed, nothing
// crashes, and every buffer they got is still theirs to use and free.
func TestPoolCloseWhileGetting(t *testing.T) {
	ctx := openCtx(t)
	for round := 0; round < 20; round++ {
		p, err := ctx.NewPool(PoolOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		started := make(chan struct{}, 4)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first := true
				for {
					b, err := p.Get(1 << 16)
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Errorf("Get: %v", err)
						}
						return
					}
					b.Bytes()[0] = 1
					p.Put(b)
					if first {
						started <- struct{}{}
						first = false
					}
				}
			}()
		}
		for i := 0; i < 4; i++ {
			<-started
		}
		p.Close()
		wg.Wait()
	}
}
