// SPDX-License-Identifier: MIT

package gpubuf

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func patternFile(t *testing.T, n int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, n)
	rand.New(rand.NewSource(50)).Read(data)
	path := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// ReadFile lands the bytes, leaves f's offset alone, reports how; NoURing
// is pread; a file that ends first is ENODATA with the prefix counted.
func TestReadFileIntoBuffer(t *testing.T) {
	ctx := openCtx(t)
	f, data := patternFile(t, 3<<20+123)
	b, err := ctx.Alloc(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := f.Seek(77, 0); err != nil {
		t.Fatal(err)
	}
	r, err := b.ReadFile(f, 100, len(data)-100, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes != int64(len(data)-100) || !bytes.Equal(b.Bytes()[100:len(data)], data[100:]) {
		t.Fatalf("%+v: the bytes differ", r)
	}
	if pos, _ := f.Seek(0, 1); pos != 77 {
		t.Errorf("the file's offset moved to %d", pos)
	}
	r, err = b.ReadFile(f, 0, 1<<20, 0, &IOOptions{NoURing: true, Buffered: true})
	if err != nil || r.Method != IOPread || r.DirectBytes != 0 || r.Align != 0 {
		t.Errorf("NoURing, Buffered: %+v, %v", r, err)
	}
	r, err = b.ReadFile(f, 3<<20, 1<<20, 0, nil)
	if !errors.Is(err, syscall.ENODATA) || r.Bytes != 123 {
		t.Errorf("past the end: %+v, %v; want ENODATA and 123 bytes", r, err)
	}
	if _, err := b.ReadFile(f, 0, 5<<20, 0, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("past the buffer: %v, want EINVAL", err)
	}
	if _, err := b.ReadFile(f, 0, 4096, 0, &IOOptions{RequestBytes: 1000}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RequestBytes 1000: %v, want EINVAL", err)
	}
	b.Close()
	if _, err := b.ReadFile(f, 0, 4096, 0, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// A padded matrix from a packed file, row by row, and back.
func TestMatrixReadWriteFile(t *testing.T) {
	ctx := openCtx(t)
	const rows, cols = 50, 300
	f, data := patternFile(t, rows*cols*4)
	b, err := ctx.Alloc(rows * 400 * 4)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range b.Bytes() {
		b.Bytes()[i] = 0xee
	}
	m, err := b.Matrix(View{DType: Float32, Rows: rows, Cols: cols, Stride: 400})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := m.ReadFile(f, 0, nil); err != nil || r.Bytes != rows*cols*4 {
		t.Fatalf("%+v, %v", r, err)
	}
	for r := 0; r < rows; r++ {
		row := b.Bytes()[r*1600 : r*1600+1600]
		if !bytes.Equal(row[:1200], data[r*1200:r*1200+1200]) {
			t.Fatalf("row %d differs", r)
		}
		if row[1200] != 0xee || row[1599] != 0xee {
			t.Fatalf("row %d: the padding was written", r)
		}
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "out.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := m.WriteFile(out, 0, nil); err != nil {
		t.Fatal(err)
	}
	back, err := os.ReadFile(out.Name())
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("written back: %d bytes, %v", len(back), err)
	}
}
