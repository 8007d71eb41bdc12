// SPDX-License-Identifier: MIT

// Package gpubuf gives Go programs libgpubuf's pinned, zero-copy host
// buffers: byte slices and matrix views over memory that CUDA, ROCm HSA,
// DRM and RDMA can use in place, exported as dma-bufs by gpubuf.ko (or
// memfd + mlock without the module).
//
//	ctx, err := gpubuf.Open()
//	m, err := ctx.NewMatrix(gpubuf.Float64, 1024, 1024, gpubuf.RowMajor)
//	defer m.Close()
//	data := m.Float64s() // no copy: element (r, c) is data[r*m.Stride()+c]
//
// # Memory rule
//
// A Buffer (Context.Alloc, Context.ImportFD, Pool.Get) or an owning Matrix
// (Context.NewMatrix) owns its memory until Close (or Pool.Put). Everything
// made from it borrows that memory: Matrix views (Buffer.Matrix, Slice, T),
// device views, and the slices Bytes, Float32s, Float64s, ... return. The
// slices point into the mapping, not into Go's heap, so the garbage
// collector neither moves them nor keeps the mapping alive for them:
//
//   - After Close, methods of the owner and of its views panic with
//     ErrClosed (or return it).
//   - Slices obtained before Close must not be used after it. By default
//     that is not checked, as with memory from C: the range may be mapped
//     again by the next allocation. With GPUBUF_GO_CHECKED=1 (checked
//     mode, see Checked), Close leaves the range reserved and inaccessible,
//     so a stale slice faults at once: the program dies with "unexpected
//     fault address", or, where runtime/debug.SetPanicOnFault is on, the
//     goroutine panics with a runtime.Error whose Addr is in the range.
//   - Close must not overlap other uses of the same memory: methods of the
//     owner and its views, the slices, a GEMM on its device views. Order
//     it after them (sync.WaitGroup, a channel), as with any free. The
//     ErrClosed check catches uses that start after Close; a use already
//     past that check when Close unmaps can fault, or by default touch
//     what is mapped there next. Context and Pool differ: their Close
//     waits for calls in flight.
//   - Pool.Put hands the memory to the next Get by design: slices kept
//     past Put read and write the next user's data in either mode.
//   - An owner dropped without Close is freed by a finalizer, which
//     fences the range in either mode, since slices may still point there,
//     and then reports it (SetLeakHandler): the handler sees the range
//     fenced already. The fence fails if another mapping took the range
//     in between (an mmap elsewhere in the process); the report then says
//     so (Leak.Unfenced). Do not rely on it: close explicitly.
//
// # Go pointers
//
// Nothing here stores a Go pointer in C memory or passes one that holds Go
// pointers, so the package runs under GODEBUG=cgocheck=2; the slices may be
// passed to C (a BLAS through cgo) as they are, since they are C memory.
//
// # Errors
//
// Failures of libgpubuf are *Error values carrying the C function, the
// errno and the library's text; errors.Is(err, syscall.EACCES) and
// errors.Is(err, fs.ErrNotExist) match. The GPU layers' per-thread detail
// (gpubuf_last_error) is read in the same C call as the failure, so it is
// right however goroutines move between threads.
//
// # gonum
//
// gonum is not in Debian, so this package does not import it; its raw
// matrix types take the slices as they are. For a float64 RowMajor m:
//
//	g := blas64.General{Rows: m.Rows(), Cols: m.Cols(), Stride: m.Stride(), Data: m.Float64s()}
//	d := mat.NewDense(m.Rows(), m.Cols(), nil); d.SetRawMatrix(g)
//
// A ColMajor m is m.T() to gonum (transpose it in the call instead).
package gpubuf
