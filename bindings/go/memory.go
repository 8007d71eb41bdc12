// SPDX-License-Identifier: MIT

package gpubuf

// #include "gpubufgo.h"
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// checked is GPUBUF_GO_CHECKED=1, read once at start: see Checked.
var checked = os.Getenv("GPUBUF_GO_CHECKED") == "1"

// Checked reports whether checked mode is on (GPUBUF_GO_CHECKED=1 in the
// environment at program start). In checked mode, closing the last owner of
// a buffer leaves its address range reserved and inaccessible, so that a
// slice kept past Close faults at once instead of reading or corrupting
// whatever is mapped there next. It costs address space (never memory) for
// every closed buffer, and serialises allocation with Close: for tests and
// debugging, not production.
func Checked() bool { return checked }

// mapLock keeps, in checked mode, this package's own allocations out of the
// instant between a buffer's munmap and the fence that takes its range back.
var mapLock sync.RWMutex

func lockMaps() {
	if checked {
		mapLock.RLock()
	}
}

func unlockMaps() {
	if checked {
		mapLock.RUnlock()
	}
}

// memory is one libgpubuf buffer reference as the binding holds it: the
// Buffer or owning Matrix that made it owns it, and every view, slice and
// device view of it borrows it. Its finalizer is the safety net for an owner
// dropped without Close.
type memory struct {
	buf      *C.struct_gpubuf
	ptr      unsafe.Pointer
	size     int
	dmabuf   bool
	readonly bool
	pool     *Pool   // the pool it came from, nil otherwise
	kind     string  // "Buffer" or "Matrix", for leak reports
	site     uintptr // where the owner was made, for leak reports

	closed atomic.Bool
	// mu orders Close against CPU-access brackets and device views, which
	// use the C buffer while they run.
	mu sync.Mutex
}

// newMemory wraps a fresh reference; skip counts the callers between the
// user's call and this one, so that a leak report names the user's line.
func newMemory(buf *C.struct_gpubuf, dmabuf bool, kind string, skip int) *memory {
	var pcs [1]uintptr
	runtime.Callers(skip+2, pcs[:])
	m := &memory{
		buf:      buf,
		ptr:      C.gpubuf_ptr(buf),
		size:     int(C.gpubuf_size(buf)),
		dmabuf:   dmabuf,
		readonly: C.gpubuf_is_readonly(buf) != 0,
		kind:     kind,
		site:     pcs[0],
	}
	runtime.SetFinalizer(m, (*memory).finalize)
	return m
}

// use panics when the owner was closed: every accessor calls it first.
func (m *memory) use() {
	if m.closed.Load() {
		panic(fmt.Errorf("%w: the %s this view or slice belongs to was closed", ErrClosed, m.kind))
	}
}

// close gives the reference up, to the pool when toPool is set. False when
// it was already closed.
func (m *memory) close(toPool *Pool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Swap(true) {
		return false, nil
	}
	runtime.SetFinalizer(m, nil)
	if toPool != nil {
		return true, toPool.put(m.buf)
	}
	return true, m.release(checked)
}

// release drops the C reference, fencing the range when asked.
func (m *memory) release(fence bool) error {
	if !fence {
		C.gbgo_release(m.buf, 0)
		return nil
	}
	mapLock.Lock()
	ret := C.gbgo_release(m.buf, 1)
	mapLock.Unlock()
	if ret < 0 {
		return newError("gpubuf_unref (checked mode fence)", ret,
			"the closed buffer's address range was mapped again before it could be fenced")
	}
	return nil
}

// finalize runs when an owner was dropped without Close: free the buffer
// behind a fence, since slices of it may still exist, then report it, so
// that what the leak handler sees is already cleaned up.
func (m *memory) finalize() {
	if m.closed.Swap(true) {
		return
	}
	err := m.release(true)
	reportLeak(Leak{Kind: m.kind, Size: m.size, Site: siteString(m.site),
		Unfenced: err != nil})
}

// Leak describes an object that was garbage collected without Close.
type Leak struct {
	Kind string // "Buffer", "Matrix", "Pool", "Context"
	Size int    // bytes of a Buffer or Matrix's buffer, else 0
	Site string // "file:line" of the call that made it
	// Unfenced: the freed range could not be fenced, because another
	// mapping (an mmap elsewhere in the process) took it first: slices
	// still pointing there now reach that mapping.
	Unfenced bool
}

func (l Leak) String() string {
	s := fmt.Sprintf("gpubuf: a %s made at %s was never closed", l.Kind, l.Site)
	if l.Size > 0 {
		s = fmt.Sprintf("gpubuf: a %s of %d bytes made at %s was never closed", l.Kind, l.Size, l.Site)
	}
	if l.Unfenced {
		s += "; its range could not be fenced (mapped again first): slices of it now reach other memory"
	}
	return s
}

var (
	leakMu      sync.Mutex
	leakHandler = func(l Leak) { fmt.Fprintln(os.Stderr, l.String()) }
)

// SetLeakHandler replaces what happens when the garbage collector finds an
// object that was never closed (by default a line on standard error) and
// returns the previous handler. The finalizer frees the object either way,
// before the handler runs; tests use the handler to fail on leaks. The
// handler runs on the finalizer goroutine.
func SetLeakHandler(h func(Leak)) func(Leak) {
	leakMu.Lock()
	defer leakMu.Unlock()
	old := leakHandler
	leakHandler = h
	return old
}

func reportLeak(l Leak) {
	leakMu.Lock()
	h := leakHandler
	leakMu.Unlock()
	if h != nil {
		h(l)
	}
}

func siteString(pc uintptr) string {
	if pc == 0 {
		return "unknown"
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return fmt.Sprintf("%s:%d", f.File, f.Line)
}

// callerSite is the pc of the user's call skip frames up.
func callerSite(skip int) uintptr {
	var pcs [1]uintptr
	runtime.Callers(skip+2, pcs[:])
	return pcs[0]
}
