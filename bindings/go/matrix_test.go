// SPDX-License-Identifier: MIT

package gpubuf

import (
	"encoding/binary"
	"errors"
	"math"
	"syscall"
	"testing"
	"unsafe"
)

// spanOf is what a BLAS reads for a view: (outer-1)*ld + inner elements.
func spanOf(m *Matrix) int {
	outer, inner := m.Rows(), m.Cols()
	if m.Layout() == ColMajor {
		outer, inner = inner, outer
	}
	if outer == 0 || inner == 0 {
		return 0
	}
	return (outer-1)*m.Stride() + inner
}

func TestMatrixShapeStrideAndSlices(t *testing.T) {
	ctx := openCtx(t)
	for _, layout := range []Layout{RowMajor, ColMajor} {
		m, err := ctx.NewMatrix(Float32, 5, 7, layout)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Owner() || m.Rows() != 5 || m.Cols() != 7 || m.DType() != Float32 || m.Layout() != layout {
			t.Fatalf("%s", m)
		}
		// The default alignment is 256 bytes: 64 float32s.
		if m.Stride() != 64 {
			t.Errorf("%s: stride %d, want 64", layout, m.Stride())
		}
		s := m.Float32s()
		want := spanOf(m)
		if len(s) != want || cap(s) != want {
			t.Errorf("%s: Float32s len %d cap %d, want %d", layout, len(s), cap(s), want)
		}
		for r := 0; r < 5; r++ {
			for c := 0; c < 7; c++ {
				m.Set(r, c, float64(r*10+c))
			}
		}
		for r := 0; r < 5; r++ {
			for c := 0; c < 7; c++ {
				i := r*m.Stride() + c
				if layout == ColMajor {
					i = c*m.Stride() + r
				}
				if s[i] != float32(r*10+c) || m.At(r, c) != float64(r*10+c) {
					t.Fatalf("%s: (%d,%d) slice %v, At %v", layout, r, c, s[i], m.At(r, c))
				}
			}
		}
		tr := m.T()
		if tr.Owner() || tr.Rows() != 7 || tr.Cols() != 5 || tr.Layout() == layout || tr.Stride() != m.Stride() {
			t.Errorf("T: %s of %s", tr, m)
		}
		if tr.At(6, 4) != m.At(4, 6) {
			t.Errorf("T().At(6,4) %v != At(4,6) %v", tr.At(6, 4), m.At(4, 6))
		}
		sub := m.Slice(1, 4, 2, 6)
		if sub.Rows() != 3 || sub.Cols() != 4 || sub.Stride() != m.Stride() {
			t.Fatalf("Slice: %s", sub)
		}
		wantOff := 4 * (1*m.Stride() + 2)
		if layout == ColMajor {
			wantOff = 4 * (2*m.Stride() + 1)
		}
		if sub.Offset() != wantOff {
			t.Errorf("%s: sub-view offset %d, want %d", layout, sub.Offset(), wantOff)
		}
		ss := sub.Float32s()
		if len(ss) != spanOf(sub) || cap(ss) != spanOf(sub) {
			t.Errorf("sub Float32s len %d cap %d, want %d", len(ss), cap(ss), spanOf(sub))
		}
		ss[0] = -1 // element (0,0) of the sub-view is (1,2) of the parent
		if m.At(1, 2) != -1 || sub.At(2, 3) != m.At(3, 5) {
			t.Errorf("the sub-view does not share the parent's memory")
		}
		if sub.Close() != nil || m.Closed() {
			t.Error("Close of a view did something")
		}
		mustPanic(t, "Slice past the end", func() { m.Slice(0, 6, 0, 1) })
		mustPanic(t, "At out of range", func() { m.At(5, 0) })
		mustPanic(t, "Float64s of float32", func() { m.Float64s() })
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		r := mustPanic(t, "At on a view after the owner's Close", func() { sub.At(0, 0) })
		if e, ok := r.(error); !ok || !errors.Is(e, ErrClosed) {
			t.Errorf("view after Close panicked with %v", r)
		}
	}
	packed, err := ctx.NewMatrixAlign(Float64, 3, 5, RowMajor, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer packed.Close()
	if packed.Stride() != 5 || len(packed.Float64s()) != 15 {
		t.Errorf("align 8: stride %d, %d elements", packed.Stride(), len(packed.Float64s()))
	}
	if _, err := ctx.NewMatrixAlign(Float64, 3, 5, RowMajor, 3); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("align 3: %v", err)
	}
}

func TestBufferViews(t *testing.T) {
	ctx := openCtx(t)
	b, err := ctx.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	v, err := b.Matrix(View{DType: Float64, Rows: 3, Cols: 3, Stride: 4, Offset: 8})
	if err != nil {
		t.Fatal(err)
	}
	d := v.Float64s()
	if uintptr(unsafe.Pointer(&d[0])) != b.address()+8 || len(d) != 2*4+3 {
		t.Errorf("view data at %p (buffer %#x), %d elements", &d[0], b.address(), len(d))
	}
	v.Set(2, 1, 2.5)
	if got := math.Float64frombits(binary.LittleEndian.Uint64(b.Bytes()[8+8*(2*4+1):])); got != 2.5 {
		t.Errorf("Set(2,1) reads %v in the bytes", got)
	}
	if _, err := b.Matrix(View{DType: Float64, Rows: 2, Cols: 2, Offset: 4}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("misaligned offset: %v, want EINVAL", err)
	}
	if _, err := b.Matrix(View{DType: Float64, Rows: 1000, Cols: 1000}); !errors.Is(err, syscall.ERANGE) {
		t.Errorf("a view past the buffer: %v, want ERANGE", err)
	}
	if _, err := b.Matrix(View{DType: Float32, Rows: 2, Cols: 4, Stride: 3}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("stride below the row length: %v, want EINVAL", err)
	}
	for _, e := range []View{{DType: Float32}, {DType: Float32, Rows: 3}, {DType: Float32, Cols: 5, Layout: ColMajor}} {
		m, err := b.Matrix(e)
		if err != nil {
			t.Fatalf("empty view %+v: %v", e, err)
		}
		if len(m.Float32s()) != 0 || len(m.Raw()) != 0 {
			t.Errorf("empty view %+v has elements", e)
		}
	}
}

// Every dtype: At/Set agree with the bytes, typed slices see the same
// elements, and values a dtype cannot hold are refused.
func TestDTypes(t *testing.T) {
	ctx := openCtx(t)
	sizes := map[DType]int{Float16: 2, BFloat16: 2, Float32: 4, Float64: 8, Int8: 1, Uint8: 1,
		Int16: 2, Uint16: 2, Int32: 4, Uint32: 4, Int64: 8, Uint64: 8, Complex64: 8, Complex128: 16}
	for dt, size := range sizes {
		if dt.Size() != size {
			t.Errorf("%s: Size %d, want %d", dt, dt.Size(), size)
		}
		m, err := ctx.NewMatrix(dt, 3, 4, RowMajor)
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		raw := m.Raw()
		if len(raw) != spanOf(m)*size {
			t.Errorf("%s: Raw has %d bytes, want %d", dt, len(raw), spanOf(m)*size)
		}
		if dt == Complex64 || dt == Complex128 {
			mustPanic(t, dt.String()+" Set", func() { m.Set(0, 0, 1) })
			if dt == Complex64 {
				m.Complex64s()[m.Stride()+2] = complex(1, 2)
				if math.Float32frombits(binary.LittleEndian.Uint32(raw[8*(m.Stride()+2)+4:])) != 2 {
					t.Errorf("complex64 imaginary part not in the bytes")
				}
			} else {
				m.Complex128s()[1] = complex(3, 4)
			}
			m.Close()
			continue
		}
		for r := 0; r < 3; r++ {
			for c := 0; c < 4; c++ {
				m.Set(r, c, float64(r*4+c+1))
			}
		}
		off := size * (2*m.Stride() + 3) // element (2,3): 12
		le := binary.LittleEndian
		var got float64
		switch dt {
		case Float32:
			got = float64(math.Float32frombits(le.Uint32(raw[off:])))
			if m.Float32s()[2*m.Stride()+3] != 12 {
				t.Error("Float32s")
			}
		case Float64:
			got = math.Float64frombits(le.Uint64(raw[off:]))
			if m.Float64s()[2*m.Stride()+3] != 12 {
				t.Error("Float64s")
			}
		case Int8:
			got = float64(int8(raw[off]))
			if m.Int8s()[2*m.Stride()+3] != 12 {
				t.Error("Int8s")
			}
		case Uint8:
			got = float64(raw[off])
			if m.Uint8s()[2*m.Stride()+3] != 12 {
				t.Error("Uint8s")
			}
		case Int16:
			got = float64(int16(le.Uint16(raw[off:])))
			if m.Int16s()[2*m.Stride()+3] != 12 {
				t.Error("Int16s")
			}
		case Uint16:
			got = float64(le.Uint16(raw[off:]))
			if m.Uint16s()[2*m.Stride()+3] != 12 {
				t.Error("Uint16s")
			}
		case Int32:
			got = float64(int32(le.Uint32(raw[off:])))
			if m.Int32s()[2*m.Stride()+3] != 12 {
				t.Error("Int32s")
			}
		case Uint32:
			got = float64(le.Uint32(raw[off:]))
			if m.Uint32s()[2*m.Stride()+3] != 12 {
				t.Error("Uint32s")
			}
		case Int64:
			got = float64(int64(le.Uint64(raw[off:])))
			if m.Int64s()[2*m.Stride()+3] != 12 {
				t.Error("Int64s")
			}
		case Uint64:
			got = float64(le.Uint64(raw[off:]))
			if m.Uint64s()[2*m.Stride()+3] != 12 {
				t.Error("Uint64s")
			}
		case Float16:
			// 12 = 1.5 * 2^3: sign 0, exponent 3+15, mantissa 0.5 (10 bits).
			got = float64(le.Uint16(raw[off:]))
			if got != float64(18<<10|1<<9) {
				t.Errorf("float16 12 is %#x in memory", int(got))
			}
			got = m.At(2, 3)
		case BFloat16:
			// exponent 3+127, mantissa 0.5 (7 bits).
			if bits := le.Uint16(raw[off:]); bits != 130<<7|1<<6 {
				t.Errorf("bfloat16 12 is %#x in memory", bits)
			}
			got = m.At(2, 3)
		}
		if got != 12 || m.At(2, 3) != 12 {
			t.Errorf("%s: element (2,3) is %v in memory, At %v; want 12", dt, got, m.At(2, 3))
		}
		if dt == Int8 {
			r := mustPanic(t, "int8 300", func() { m.Set(0, 0, 300) })
			if e, ok := r.(error); !ok || !errors.Is(e, syscall.ERANGE) {
				t.Errorf("Set(300) on int8 panicked with %v", r)
			}
		}
		if dt != Float32 {
			mustPanic(t, dt.String()+" Float32s", func() { m.Float32s() })
		}
		m.Close()
	}
}

// Set on a read-only buffer panics with EROFS for every dtype, as
// gpubuf_matrix_set(3) refuses it, instead of writing (or, through the
// float32/float64 fast path, dying of a write fault the program cannot
// recover from). The host has no read-only dma-buf, so the buffer is marked
// read-only here; TestReadOnlyImport (module backend) uses a real one.
func TestSetOnReadOnlyPanicsWithEROFS(t *testing.T) {
	ctx := openCtx(t)
	for _, dt := range []DType{Float32, Float64, Int32, Float16} {
		m, err := ctx.NewMatrix(dt, 2, 2, RowMajor)
		if err != nil {
			t.Fatal(err)
		}
		m.mem.readonly = true
		r := mustPanic(t, dt.String()+" Set on a read-only matrix", func() { m.Set(1, 1, 3) })
		if e, ok := r.(error); !ok || !errors.Is(e, syscall.EROFS) {
			t.Errorf("%s: Set on a read-only matrix panicked with %v, want EROFS", dt, r)
		}
		if v := m.At(1, 1); v != 0 {
			t.Errorf("%s: Set wrote %v into a read-only matrix", dt, v)
		}
		m.Close()
	}
}
