// SPDX-License-Identifier: MIT

package gpubuf

// #include "gpubufgo.h"
import "C"

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// PoolOptions bound a Pool's cache; zero means libgpubuf's default (64 MiB
// each). Near, if set, puts the pool's buffers on a device's NUMA node
// (see DeviceNode); GetNode asks for other nodes.
type PoolOptions struct {
	MaxCachedBytes int    // idle bytes kept at most
	MaxClassBytes  int    // the largest size that is pooled at all
	Near           string // "cuda:0", "rdma:mlx5_0", ...; "" for none
}

// PoolStats are a pool's counters (gpubuf_pool_stats(3)).
type PoolStats struct {
	Hits          uint64 // Gets served from the cache
	Misses        uint64 // Gets that allocated
	Puts          uint64 // buffers given back
	Drops         uint64 // buffers given back and freed, not cached
	CachedBytes   uint64 // idle bytes now
	CachedBuffers uint64 // idle buffers now
	OtherNodeHits uint64 // GetNode hits from another node's buffers
	NodeLists     uint64 // nodes with free lists now; Trim frees them
}

// Pool caches buffers in power-of-two size classes (gpubuf_pool_create(3)),
// for programs that reuse matrices of a few sizes. It is safe for many
// goroutines. A buffer from Get keeps the contents its last user left:
// only new buffers are zero-filled.
type Pool struct {
	ctx *Context
	// mu is held shared by calls into the C pool, exclusively by Close.
	mu     sync.RWMutex
	pool   *C.struct_gpubuf_pool
	closed bool
	leak   *leakGuard
}

// NewPool makes a pool on the context; the context stays open underneath
// until the pool is closed.
func (c *Context) NewPool(o PoolOptions) (*Pool, error) {
	if o.MaxCachedBytes < 0 || o.MaxClassBytes < 0 {
		return nil, fmt.Errorf("gpubuf: negative pool limits %+v", o)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	opts := C.struct_gpubuf_pool_opts{
		size:             C.sizeof_struct_gpubuf_pool_opts,
		max_cached_bytes: C.size_t(o.MaxCachedBytes),
		max_class_bytes:  C.size_t(o.MaxClassBytes),
	}
	var pool *C.struct_gpubuf_pool
	var ret C.int
	if o.Near != "" {
		// The C options live in C memory: a Go pointer may not be
		// stored in the C struct passed to C.
		alloc := (*C.struct_gpubuf_alloc_opts)(C.calloc(1, C.sizeof_struct_gpubuf_alloc_opts))
		defer C.free(unsafe.Pointer(alloc))
		if err := nearOpts(o.Near, alloc); err != nil {
			return nil, err
		}
		opts.alloc = alloc
	}
	if ret = C.gpubuf_pool_create(c.ctx, &opts, &pool); ret != 0 {
		return nil, newError("gpubuf_pool_create", ret, "")
	}
	c.pools++
	p := &Pool{ctx: c, pool: pool}
	// The cleanup must not refer to p: a finalizer's object on a cycle
	// is never collected.
	p.leak = newLeakGuard("Pool", callerSite(1), func() {
		C.gpubuf_pool_destroy(pool)
		c.poolDone()
	})
	return p, nil
}

// Get returns a cached buffer of size's class, or a new one. The Buffer
// owns it: give it back with Put, or Close it to free it.
func (p *Pool) Get(size int) (*Buffer, error) {
	return p.get(size, 0, false, false)
}

// GetNode is Get for NUMA node (AnyNode: none in particular): a cached
// buffer allocated for that node, else, with anyNode, one of another
// node's, else a new one on that node (gpubuf_pool_get_node(3)). A buffer
// given back goes to the list of the node it was allocated for.
func (p *Pool) GetNode(size, node int, anyNode bool) (*Buffer, error) {
	if node < AnyNode {
		return nil, fmt.Errorf("gpubuf: GetNode node must be a node or AnyNode, not %d", node)
	}
	return p.get(size, node, anyNode, true)
}

func (p *Pool) get(size, node int, anyNode, byNode bool) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("gpubuf: Get size must be positive, not %d", size)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrClosed
	}
	var buf *C.struct_gpubuf
	var flags C.uint
	if anyNode {
		flags = C.GPUBUF_POOL_ANY_NODE
	}
	lockMaps()
	var ret C.int
	if byNode {
		ret = C.gpubuf_pool_get_node(p.pool, C.size_t(size), C.int(node), flags, &buf)
	} else {
		ret = C.gpubuf_pool_get(p.pool, C.size_t(size), &buf)
	}
	unlockMaps()
	if ret != 0 {
		return nil, newError("gpubuf_pool_get", ret, "")
	}
	m := newMemory(buf, p.ctx.dmabuf, "Buffer", 2)
	m.pool = p
	return &Buffer{mem: m}, nil
}

// Put gives a buffer from Get back and closes the Buffer: its views and
// slices are invalid from now on, and the next Get may hand the same
// memory to another user. It is cached unless a GPU registration or lock
// still holds it. EXDEV for a buffer of another pool or none (the Buffer
// then stays open); ErrClosed for a closed Buffer.
func (p *Pool) Put(b *Buffer) error {
	if b.mem.pool != p {
		if b.mem.closed.Load() {
			return ErrClosed
		}
		return newError("gpubuf_pool_put", -C.int(syscall.EXDEV), "the buffer is not from this pool")
	}
	done, err := b.mem.close(p)
	if !done {
		return ErrClosed
	}
	return err
}

// put hands the reference to the C pool, or frees it once the pool is
// closed.
func (p *Pool) put(buf *C.struct_gpubuf) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		C.gbgo_release(buf, 0)
		return nil
	}
	return newError("gpubuf_pool_put", C.gpubuf_pool_put(p.pool, buf), "")
}

// Trim frees every cached buffer.
func (p *Pool) Trim() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.closed {
		C.gpubuf_pool_trim(p.pool)
	}
}

// Stats reads the pool's counters; zero after Close.
func (p *Pool) Stats() PoolStats {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return PoolStats{}
	}
	var st C.struct_gpubuf_pool_stats
	C.gpubuf_pool_stats(p.pool, &st)
	return PoolStats{
		Hits: uint64(st.hits), Misses: uint64(st.misses), Puts: uint64(st.puts),
		Drops: uint64(st.drops), CachedBytes: uint64(st.cached_bytes),
		CachedBuffers: uint64(st.cached_buffers), OtherNodeHits: uint64(st.other_node_hits),
		NodeLists: uint64(st.node_lists),
	}
}

// Close frees the cached buffers. Buffers handed out stay valid; Put then
// frees them. It waits for Gets running in other goroutines; later ones
// fail with ErrClosed. Closing twice is harmless.
func (p *Pool) Close() error {
	p.leak.disarm()
	p.destroy()
	return nil
}

func (p *Pool) destroy() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	C.gpubuf_pool_destroy(p.pool)
	p.pool = nil
	p.mu.Unlock()
	p.ctx.poolDone()
}

// poolDone counts a pool gone, closing the context if it waited for it.
func (c *Context) poolDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pools--
	if c.closed && c.pools == 0 {
		c.finish()
	}
}
