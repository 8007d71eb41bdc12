// SPDX-License-Identifier: MIT

package gpubuf

// #include "gpubufgo.h"
import "C"

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// DType is an element type.
type DType int

const (
	Float16    DType = C.GPUBUF_DTYPE_F16
	BFloat16   DType = C.GPUBUF_DTYPE_BF16
	Float32    DType = C.GPUBUF_DTYPE_F32
	Float64    DType = C.GPUBUF_DTYPE_F64
	Int8       DType = C.GPUBUF_DTYPE_I8
	Uint8      DType = C.GPUBUF_DTYPE_U8
	Int16      DType = C.GPUBUF_DTYPE_I16
	Uint16     DType = C.GPUBUF_DTYPE_U16
	Int32      DType = C.GPUBUF_DTYPE_I32
	Uint32     DType = C.GPUBUF_DTYPE_U32
	Int64      DType = C.GPUBUF_DTYPE_I64
	Uint64     DType = C.GPUBUF_DTYPE_U64
	Complex64  DType = C.GPUBUF_DTYPE_COMPLEX64
	Complex128 DType = C.GPUBUF_DTYPE_COMPLEX128
)

var dtypeNames = map[DType]string{
	Float16: "float16", BFloat16: "bfloat16", Float32: "float32", Float64: "float64",
	Int8: "int8", Uint8: "uint8", Int16: "int16", Uint16: "uint16",
	Int32: "int32", Uint32: "uint32", Int64: "int64", Uint64: "uint64",
	Complex64: "complex64", Complex128: "complex128",
}

func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// Size is the element size in bytes, 0 for an unknown dtype.
func (d DType) Size() int { return int(C.gpubuf_dtype_size(C.enum_gpubuf_dtype(d))) }

// Layout is the order of elements: RowMajor (C order: Stride is the
// distance between row starts) or ColMajor (Fortran order: between column
// starts).
type Layout int

const (
	RowMajor Layout = C.GPUBUF_ROW_MAJOR
	ColMajor Layout = C.GPUBUF_COL_MAJOR
)

func (l Layout) String() string {
	if l == ColMajor {
		return "col-major"
	}
	return "row-major"
}

// Matrix is a 2-D strided view of a gpubuf buffer. One made by
// Context.NewMatrix or NewMatrixAlign owns its buffer and must be closed;
// views (Buffer.Matrix, Slice, T) borrow their owner's memory, own nothing
// and are valid until the owner is closed. A Matrix is a small value with
// no lock: reads from many goroutines are fine, and so are writes to
// disjoint elements, but not a Close of the owner while they run (see
// the package's memory rule).
type Matrix struct {
	cm    C.struct_gpubuf_matrix
	mem   *memory
	owner bool
}

// Rows, Cols, Stride, DType, Layout and Offset describe the view: element
// (r, c) is at byte Offset + (r*Stride + c)*DType.Size() of the buffer
// (RowMajor) or Offset + (c*Stride + r)*DType.Size() (ColMajor).
func (m *Matrix) Rows() int { return int(m.cm.rows) }

// Cols is the number of columns.
func (m *Matrix) Cols() int { return int(m.cm.cols) }

// Dims is Rows, Cols, as gonum's mat.Matrix spells it.
func (m *Matrix) Dims() (r, c int) { return int(m.cm.rows), int(m.cm.cols) }

// Stride is the leading dimension (ld): elements between the starts of
// consecutive rows (RowMajor) or columns (ColMajor).
func (m *Matrix) Stride() int { return int(m.cm.ld) }

// DType is the element type.
func (m *Matrix) DType() DType { return DType(m.cm.dtype) }

// Layout is RowMajor or ColMajor.
func (m *Matrix) Layout() Layout { return Layout(m.cm.layout) }

// Offset is the byte offset of element (0, 0) in the buffer.
func (m *Matrix) Offset() int { return int(m.cm.offset) }

// ReadOnly reports whether the buffer is mapped read-only.
func (m *Matrix) ReadOnly() bool { return m.mem.readonly }

// Owner reports whether this Matrix owns its buffer (and so needs Close).
func (m *Matrix) Owner() bool { return m.owner }

func (m *Matrix) String() string {
	return fmt.Sprintf("gpubuf.Matrix(%dx%d %s %s stride %d offset %d)",
		m.Rows(), m.Cols(), m.DType(), m.Layout(), m.Stride(), m.Offset())
}

// Slice is the O(1) sub-view of rows [i, k) and columns [j, l), sharing the
// memory (gonum's Slice convention). It panics when the bounds are out of
// range, as slicing does.
func (m *Matrix) Slice(i, k, j, l int) *Matrix {
	m.mem.use()
	if i < 0 || j < 0 || k < i || l < j || k > m.Rows() || l > m.Cols() {
		panic(fmt.Sprintf("gpubuf: Slice(%d, %d, %d, %d) out of range for %d x %d", i, k, j, l, m.Rows(), m.Cols()))
	}
	var out C.struct_gpubuf_matrix
	if ret := C.gpubuf_matrix_sub(&m.cm, C.size_t(i), C.size_t(j), C.size_t(k-i), C.size_t(l-j), &out); ret != 0 {
		panic(newError("gpubuf_matrix_sub", ret, ""))
	}
	runtime.KeepAlive(m)
	return &Matrix{cm: out, mem: m.mem}
}

// T is the transpose as a view of the same memory: the layout flips, the
// stride stays.
func (m *Matrix) T() *Matrix {
	m.mem.use()
	var out C.struct_gpubuf_matrix
	if ret := C.gpubuf_matrix_transpose(&m.cm, &out); ret != 0 {
		panic(newError("gpubuf_matrix_transpose", ret, ""))
	}
	runtime.KeepAlive(m)
	return &Matrix{cm: out, mem: m.mem}
}

// index is the element index of (r, c) from element (0, 0); it panics
// when (r, c) is out of range.
func (m *Matrix) index(r, c int) int {
	if r < 0 || c < 0 || r >= m.Rows() || c >= m.Cols() {
		panic(fmt.Sprintf("gpubuf: index (%d, %d) out of range for %d x %d", r, c, m.Rows(), m.Cols()))
	}
	if m.Layout() == RowMajor {
		return r*m.Stride() + c
	}
	return c*m.Stride() + r
}

// At is element (r, c) as a float64 (float16 and bfloat16 converted,
// integers exactly up to 2^53). It panics when (r, c) is out of range or
// the dtype is complex.
func (m *Matrix) At(r, c int) float64 {
	m.mem.use()
	i := m.index(r, c)
	var v float64
	switch m.DType() {
	case Float64:
		v = *(*float64)(m.elem(i, 8))
	case Float32:
		v = float64(*(*float32)(m.elem(i, 4)))
	default:
		var d C.double
		if ret := C.gpubuf_matrix_get(&m.cm, C.size_t(r), C.size_t(c), &d); ret != 0 {
			panic(newError("gpubuf_matrix_get", ret, ""))
		}
		v = float64(d)
	}
	runtime.KeepAlive(m)
	return v
}

// Set stores v at (r, c), converted to the dtype as gpubuf_matrix_set(3)
// does (integers truncated toward zero, and ERANGE when v does not fit).
// It panics on an index out of range, a value out of range, a complex
// dtype or a read-only buffer (an *Error with EROFS).
func (m *Matrix) Set(r, c int, v float64) {
	m.mem.use()
	i := m.index(r, c)
	// Checked here for every dtype: the float32/float64 stores below
	// would otherwise fault on the PROT_READ mapping and kill the program.
	if m.mem.readonly {
		panic(newError("gpubuf_matrix_set", -C.int(syscall.EROFS), "the buffer is a read-only import"))
	}
	switch m.DType() {
	case Float64:
		*(*float64)(m.elem(i, 8)) = v
	case Float32:
		*(*float32)(m.elem(i, 4)) = float32(v)
	default:
		if ret := C.gpubuf_matrix_set(&m.cm, C.size_t(r), C.size_t(c), C.double(v)); ret != 0 {
			panic(newError("gpubuf_matrix_set", ret, ""))
		}
	}
	runtime.KeepAlive(m)
}

// elem is the address of element index i of size es.
func (m *Matrix) elem(i, es int) unsafe.Pointer {
	return unsafe.Add(m.mem.ptr, int(m.cm.offset)+i*es)
}

// span is the number of elements from (0, 0) to the last element of the
// view inclusive: what a BLAS routine reads given rows, cols and ld.
func (m *Matrix) span() int {
	r, c := m.Rows(), m.Cols()
	if r == 0 || c == 0 {
		return 0
	}
	outer, inner := r, c
	if m.Layout() == ColMajor {
		outer, inner = c, r
	}
	return (outer-1)*m.Stride() + inner
}

// elements is the view's span as a []T, after checking the dtype.
func elements[T any](m *Matrix, want DType) []T {
	m.mem.use()
	if m.DType() != want {
		panic(fmt.Sprintf("gpubuf: %s elements of a %s matrix", want, m.DType()))
	}
	n := m.span()
	if n == 0 {
		return []T{}
	}
	s := unsafe.Slice((*T)(m.elem(0, want.Size())), n)
	return s[:n:n]
}

// Float32s is the view's elements as a []float32 over the mapping, without
// a copy: element (r, c) is s[r*Stride()+c] (RowMajor) or s[c*Stride()+r]
// (ColMajor). It runs from element (0, 0) to the view's last element, so
// its length and capacity are (Rows()-1)*Stride()+Cols() (RowMajor), and
// append never writes past the view's end. It holds the padding between
// rows and, for a sub-view, the elements of the parent between them: write
// only inside the view. Valid until the owner is closed. Panics for another
// dtype.
func (m *Matrix) Float32s() []float32 { return elements[float32](m, Float32) }

// Float64s is Float32s for float64 matrices: the Data of gonum's
// blas64.General with Stride = Stride().
func (m *Matrix) Float64s() []float64 { return elements[float64](m, Float64) }

// Int8s is Float32s for int8 matrices.
func (m *Matrix) Int8s() []int8 { return elements[int8](m, Int8) }

// Uint8s is Float32s for uint8 matrices.
func (m *Matrix) Uint8s() []uint8 { return elements[uint8](m, Uint8) }

// Int16s is Float32s for int16 matrices.
func (m *Matrix) Int16s() []int16 { return elements[int16](m, Int16) }

// Uint16s is Float32s for uint16 matrices.
func (m *Matrix) Uint16s() []uint16 { return elements[uint16](m, Uint16) }

// Int32s is Float32s for int32 matrices.
func (m *Matrix) Int32s() []int32 { return elements[int32](m, Int32) }

// Uint32s is Float32s for uint32 matrices.
func (m *Matrix) Uint32s() []uint32 { return elements[uint32](m, Uint32) }

// Int64s is Float32s for int64 matrices.
func (m *Matrix) Int64s() []int64 { return elements[int64](m, Int64) }

// Uint64s is Float32s for uint64 matrices.
func (m *Matrix) Uint64s() []uint64 { return elements[uint64](m, Uint64) }

// Complex64s is Float32s for complex64 matrices (gonum's cblas64).
func (m *Matrix) Complex64s() []complex64 { return elements[complex64](m, Complex64) }

// Complex128s is Float32s for complex128 matrices (gonum's cblas128).
func (m *Matrix) Complex128s() []complex128 { return elements[complex128](m, Complex128) }

// Raw is the view's span as bytes, for any dtype (float16 and bfloat16
// included), with the same bounds as Float32s.
func (m *Matrix) Raw() []byte {
	m.mem.use()
	es := m.DType().Size()
	n := m.span() * es
	if n == 0 {
		return []byte{}
	}
	s := unsafe.Slice((*byte)(m.elem(0, es)), n)
	return s[:n:n]
}

// BeginCPUAccess starts a CPU access bracket on the matrix's buffer.
func (m *Matrix) BeginCPUAccess(a Access) (*CPUAccess, error) { return beginCPUAccess(m.mem, a) }

// CPUAccess runs f inside a CPU access bracket on the matrix's buffer.
func (m *Matrix) CPUAccess(a Access, f func() error) error { return withCPUAccess(m.mem, a, f) }

// Closed reports whether the memory's owner (this Matrix, or the Buffer or
// Matrix it is a view of) was closed.
func (m *Matrix) Closed() bool { return m.mem.closed.Load() }

// Close releases the buffer of an owning Matrix (see Buffer.Close); on a
// view, which owns nothing, it does nothing.
func (m *Matrix) Close() error {
	if !m.owner {
		return nil
	}
	_, err := m.mem.close(nil)
	return err
}
