// SPDX-License-Identifier: MIT

package gpubuf

// #include <errno.h>
// #include "gpubufgo.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
)

// Backend is where buffers come from.
type Backend int

const (
	// BackendAuto uses /dev/gpubuf when gpubuf.ko is loaded and the memfd
	// backend otherwise, unless GPUBUF_BACKEND says.
	BackendAuto Backend = 0
	// BackendModule insists on /dev/gpubuf: buffers are dma-bufs.
	BackendModule Backend = C.GPUBUF_BACKEND_MODULE
	// BackendMemfd uses memfd + mlock even when the module is present:
	// pinned pages, no dma-buf file descriptor.
	BackendMemfd Backend = C.GPUBUF_BACKEND_MEMFD
)

func (b Backend) String() string {
	switch b {
	case BackendAuto:
		return "auto"
	case BackendModule:
		return "module"
	case BackendMemfd:
		return "memfd"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

// Context is an open libgpubuf context (gpubuf_open(3)). It is safe for
// many goroutines. Buffers and matrices made from it do not need it once
// made; pools do, so Close leaves the real gpubuf_close(3) to the last
// pool's Close.
type Context struct {
	// mu is held shared by calls into the C context and by pools' lives,
	// exclusively by Close.
	mu      sync.RWMutex
	ctx     *C.struct_gpubuf_ctx
	closed  bool
	pools   int
	backend Backend
	dmabuf  bool
	leak    *leakGuard
}

// Open opens a context on the default backend: the module when present,
// else memfd, with GPUBUF_BACKEND=module|memfd|auto in the environment
// deciding first.
func Open() (*Context, error) { return open(BackendAuto) }

// OpenBackend opens a context on a given backend; BackendModule fails
// (with ENOENT or EACCES, and the library's advice) when /dev/gpubuf cannot
// be opened. The environment is ignored unless b is BackendAuto.
func OpenBackend(b Backend) (*Context, error) { return open(b) }

func open(b Backend) (*Context, error) {
	var flags C.uint
	switch b {
	case BackendAuto:
		flags = C.GPUBUF_OPEN_ALLOW_MEMFD
	case BackendModule:
		flags = C.GPUBUF_OPEN_IGNORE_ENV
	case BackendMemfd:
		flags = C.GPUBUF_OPEN_FORCE_MEMFD | C.GPUBUF_OPEN_IGNORE_ENV
	default:
		return nil, fmt.Errorf("gpubuf: unknown backend %d", int(b))
	}
	var ctx *C.struct_gpubuf_ctx
	var msg C.struct_gbgo_msg
	if ret := C.gbgo_open(&ctx, flags, &msg); ret != 0 {
		// gpubuf_open_err's text already says what failed and why.
		e := newError("gpubuf_open", ret, "").(*Error)
		if t := msgText(&msg); t != "" {
			e.Text = t
		}
		return nil, e
	}
	var dmabuf C.uint64_t
	C.gpubuf_query(ctx, C.GPUBUF_ATTR_DMABUF, &dmabuf)
	c := &Context{ctx: ctx, backend: Backend(C.gpubuf_backend(ctx)), dmabuf: dmabuf != 0}
	c.leak = newLeakGuard("Context", callerSite(2), func() { C.gpubuf_close(ctx) })
	return c, nil
}

// hold gives the C context for one call, or ErrClosed; release with
// c.mu.RUnlock().
func (c *Context) hold() (*C.struct_gpubuf_ctx, error) {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return nil, ErrClosed
	}
	return c.ctx, nil
}

// Backend is BackendModule or BackendMemfd.
func (c *Context) Backend() Backend { return c.backend }

// DMABuf reports whether buffers have a dma-buf file descriptor (module
// backend).
func (c *Context) DMABuf() bool { return c.dmabuf }

// PageSize is the allocation granularity in bytes.
func (c *Context) PageSize() (int, error) {
	ctx, err := c.hold()
	if err != nil {
		return 0, err
	}
	defer c.mu.RUnlock()
	var v C.uint64_t
	if ret := C.gpubuf_query(ctx, C.GPUBUF_ATTR_PAGE_SIZE, &v); ret != 0 {
		return 0, newError("gpubuf_query", ret, "")
	}
	return int(v), nil
}

// DriverVersion is gpubuf.ko's version; ok is false on the memfd backend.
func (c *Context) DriverVersion() (major, minor, patch int, ok bool) {
	ctx, err := c.hold()
	if err != nil {
		return 0, 0, 0, false
	}
	defer c.mu.RUnlock()
	var v C.struct_gpubuf_version
	if C.gpubuf_driver_version(ctx, &v) != 0 {
		return 0, 0, 0, false
	}
	return int(v.major), int(v.minor), int(v.patch), true
}

// allocDetail is the library's text about a failed allocation: only the
// memfd backend's allocations clear and set it (gpubuf_last_error(3):
// ENOMEM, why mlock failed; EPERM, a strict node); otherwise it could be
// an older call's.
func (c *Context) allocDetail(ret C.int, msg *C.struct_gbgo_msg) string {
	if c.dmabuf || (ret != -C.ENOMEM && ret != -C.EPERM) {
		return ""
	}
	return msgText(msg)
}

// Alloc allocates a pinned, zero-filled buffer of at least size bytes
// (rounded up to whole pages).
func (c *Context) Alloc(size int) (*Buffer, error) {
	return c.alloc(size, nil)
}

func (c *Context) alloc(size int, opts *C.struct_gpubuf_alloc_opts) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("gpubuf: Alloc size must be positive, not %d", size)
	}
	ctx, err := c.hold()
	if err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	var buf *C.struct_gpubuf
	var msg C.struct_gbgo_msg
	lockMaps()
	ret := C.gbgo_alloc(ctx, C.size_t(size), opts, &buf, &msg)
	unlockMaps()
	if ret != 0 {
		return nil, newError("gpubuf_alloc", ret, c.allocDetail(ret, &msg))
	}
	return &Buffer{mem: newMemory(buf, c.dmabuf, "Buffer", 2)}, nil
}

// ImportFD maps a dma-buf file descriptor as a Buffer. The descriptor is
// duplicated: the caller keeps and closes its own. A dma-buf another
// exporter mapped read-only gives a read-only Buffer.
func (c *Context) ImportFD(fd int) (*Buffer, error) {
	ctx, err := c.hold()
	if err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	var buf *C.struct_gpubuf
	lockMaps()
	ret := C.gpubuf_import(ctx, C.int(fd), &buf)
	unlockMaps()
	if ret != 0 {
		return nil, newError("gpubuf_import", ret, "")
	}
	return &Buffer{mem: newMemory(buf, true, "Buffer", 1)}, nil
}

// NewMatrix allocates a rows x cols matrix in its own buffer, each row
// (column, for ColMajor) starting on a 256-byte boundary, so Stride may
// exceed the row length. The Matrix owns its buffer: Close it.
func (c *Context) NewMatrix(dt DType, rows, cols int, layout Layout) (*Matrix, error) {
	return c.newMatrix(dt, rows, cols, layout, 0, nil)
}

// NewMatrixAlign is NewMatrix with each row (column) aligned to align
// bytes: a power of two from the element size to the page size; the
// element size packs them (Stride equals the row length).
func (c *Context) NewMatrixAlign(dt DType, rows, cols int, layout Layout, align int) (*Matrix, error) {
	if align <= 0 {
		return nil, fmt.Errorf("gpubuf: align must be a positive power of two, not %d", align)
	}
	return c.newMatrix(dt, rows, cols, layout, align, nil)
}

func (c *Context) newMatrix(dt DType, rows, cols int, layout Layout, align int,
	opts *C.struct_gpubuf_alloc_opts) (*Matrix, error) {
	if rows < 0 || cols < 0 {
		return nil, fmt.Errorf("gpubuf: negative dimensions %d x %d", rows, cols)
	}
	ctx, err := c.hold()
	if err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	var cm C.struct_gpubuf_matrix
	var msg C.struct_gbgo_msg
	lockMaps()
	ret := C.gbgo_matrix_alloc(ctx, C.enum_gpubuf_dtype(dt), C.size_t(rows), C.size_t(cols),
		C.enum_gpubuf_layout(layout), C.size_t(align), opts, &cm, &msg)
	unlockMaps()
	if ret != 0 {
		return nil, newError("gpubuf_matrix_alloc", ret, c.allocDetail(ret, &msg))
	}
	// The matrix's one reference becomes the memory's.
	return &Matrix{cm: cm, mem: newMemory(cm.buf, c.dmabuf, "Matrix", 2), owner: true}, nil
}

// Close closes the context. Buffers and matrices made from it stay valid;
// the device file is closed once no Pool uses it. Closing twice is
// harmless.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.pools == 0 {
		c.finish()
	}
	return nil
}

// finish is the real gpubuf_close, with c.mu held.
func (c *Context) finish() {
	c.leak.disarm()
	C.gpubuf_close(c.ctx)
	c.ctx = nil
}

// leakGuard reports and cleans up an object that was garbage collected
// without Close. It is a separate object so that the finalizer does not
// keep the object itself (and what it points to) alive a cycle longer.
type leakGuard struct {
	mu      sync.Mutex
	kind    string
	site    uintptr
	cleanup func()
}

func newLeakGuard(kind string, site uintptr, cleanup func()) *leakGuard {
	g := &leakGuard{kind: kind, site: site, cleanup: cleanup}
	runtime.SetFinalizer(g, (*leakGuard).finalize)
	return g
}

func (g *leakGuard) disarm() {
	g.mu.Lock()
	g.cleanup = nil
	g.mu.Unlock()
	runtime.SetFinalizer(g, nil)
}

func (g *leakGuard) finalize() {
	g.mu.Lock()
	f := g.cleanup
	g.cleanup = nil
	g.mu.Unlock()
	if f != nil {
		f()
		reportLeak(Leak{Kind: g.kind, Site: siteString(g.site)})
	}
}
