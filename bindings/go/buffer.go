// SPDX-License-Identifier: MIT

package gpubuf

// #include "gpubufgo.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Buffer is one pinned gpubuf buffer, from Context.Alloc, Context.ImportFD
// or Pool.Get. It owns its memory: Close it (or Put it back to its pool).
// Matrix views and slices of it borrow the memory and are valid until then.
type Buffer struct {
	mem *memory
}

// Size is the buffer's size in bytes: whole pages.
func (b *Buffer) Size() int { return b.mem.size }

// Bytes is the whole mapping as a byte slice, without a copy. It is valid
// until the Buffer is closed (see the package documentation); its capacity
// is its length, so append copies instead of writing past the buffer.
// Panics with ErrClosed after Close.
func (b *Buffer) Bytes() []byte {
	b.mem.use()
	return unsafe.Slice((*byte)(b.mem.ptr), b.mem.size)[:b.mem.size:b.mem.size]
}

// FD is the buffer's dma-buf file descriptor, owned by the buffer (dup it
// to keep it past Close); ok is false on the memfd backend, which has none.
func (b *Buffer) FD() (fd int, ok bool) {
	b.mem.use()
	if !b.mem.dmabuf {
		return -1, false
	}
	fd = int(C.gpubuf_fd(b.mem.buf))
	runtime.KeepAlive(b)
	return fd, true
}

// ReadOnly reports whether the buffer is an imported dma-buf mapped
// read-only; writing through its slices then faults.
func (b *Buffer) ReadOnly() bool { return b.mem.readonly }

// Closed reports whether Close (or Pool.Put) was called.
func (b *Buffer) Closed() bool { return b.mem.closed.Load() }

// View describes a matrix in a buffer: element (r, c) lives at byte
// Offset + (r*Stride + c)*size (RowMajor) or Offset + (c*Stride + r)*size
// (ColMajor). Stride 0 packs rows (columns).
type View struct {
	DType  DType
	Rows   int
	Cols   int
	Stride int
	Layout Layout
	Offset int
}

// Matrix is a view of the buffer (gpubuf_matrix_view(3)); EINVAL for a bad
// dtype, stride or misaligned offset, ERANGE when it does not fit. The view
// borrows the buffer and is valid until the buffer is closed.
func (b *Buffer) Matrix(v View) (*Matrix, error) {
	if b.mem.closed.Load() {
		return nil, ErrClosed
	}
	if v.Rows < 0 || v.Cols < 0 || v.Stride < 0 || v.Offset < 0 {
		return nil, fmt.Errorf("gpubuf: negative view %+v", v)
	}
	ld := v.Stride
	if ld == 0 {
		ld = v.Cols
		if v.Layout == ColMajor {
			ld = v.Rows
		}
		if ld < 1 { // libgpubuf asks for at least 1, empty views too
			ld = 1
		}
	}
	var cm C.struct_gpubuf_matrix
	ret := C.gpubuf_matrix_view(b.mem.buf, C.size_t(v.Offset), C.enum_gpubuf_dtype(v.DType),
		C.size_t(v.Rows), C.size_t(v.Cols), C.size_t(ld), C.enum_gpubuf_layout(v.Layout), &cm)
	runtime.KeepAlive(b)
	if ret != 0 {
		return nil, newError("gpubuf_matrix_view", ret, "")
	}
	return &Matrix{cm: cm, mem: b.mem}, nil
}

// Close releases the buffer. Views, slices and device views of it become
// invalid: their methods panic with ErrClosed, and in checked mode (see
// Checked) touching a slice faults. Closing twice is harmless.
func (b *Buffer) Close() error {
	_, err := b.mem.close(nil)
	return err
}

// refcount is libgpubuf's count, for the tests.
func (b *Buffer) refcount() int {
	b.mem.use()
	n := int(C.gpubuf_refcount(b.mem.buf))
	runtime.KeepAlive(b)
	return n
}

// address is the mapping's address, for the tests.
func (b *Buffer) address() uintptr { return uintptr(b.mem.ptr) }

// Access says what the CPU is about to do with a buffer between
// BeginCPUAccess and End.
type Access uint

const (
	Read      Access = C.GPUBUF_ACCESS_READ
	Write     Access = C.GPUBUF_ACCESS_WRITE
	ReadWrite Access = C.GPUBUF_ACCESS_RW
)

// CPUAccess is an open DMA_BUF_IOCTL_SYNC bracket (gpubuf_sync_begin(3)).
type CPUAccess struct {
	mem    *memory
	access Access
	ended  bool
}

// BeginCPUAccess starts a CPU access bracket (DMA_BUF_SYNC_START on the
// module backend; nothing to do on memfd). End it with End.
func (b *Buffer) BeginCPUAccess(a Access) (*CPUAccess, error) {
	return beginCPUAccess(b.mem, a)
}

// CPUAccess runs f inside a CPU access bracket, ending it whatever f
// returns; f's error comes first.
func (b *Buffer) CPUAccess(a Access, f func() error) error {
	return withCPUAccess(b.mem, a, f)
}

func beginCPUAccess(m *memory, a Access) (*CPUAccess, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if ret := C.gpubuf_sync_begin(m.buf, C.uint(a)); ret != 0 {
		return nil, newError("gpubuf_sync_begin", ret, "")
	}
	return &CPUAccess{mem: m, access: a}, nil
}

// End ends the bracket (DMA_BUF_SYNC_END). Ending twice is an error.
func (s *CPUAccess) End() error {
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	if s.ended {
		return errors.New("gpubuf: CPUAccess already ended")
	}
	s.ended = true
	if s.mem.closed.Load() {
		return ErrClosed
	}
	return newError("gpubuf_sync_end", C.gpubuf_sync_end(s.mem.buf, C.uint(s.access)), "")
}

func withCPUAccess(m *memory, a Access, f func() error) (ferr error) {
	s, err := beginCPUAccess(m, a)
	if err != nil {
		return err
	}
	// Deferred: a panic in f still ends the bracket.
	defer func() {
		if err := s.End(); ferr == nil {
			ferr = err
		}
	}()
	return f()
}
