// SPDX-License-Identifier: MIT

package gpubuf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"gpubuf.org/gpubuf/internal/testc"
)

// builtWith reports whether libgpubuf has the layer at all: without it the
// calls answer EOPNOTSUPP and no stand-in is built.
func builtWith(layer string) bool {
	var err error
	if layer == "cuda" {
		_, err = CUDADeviceCount()
	} else {
		_, err = HSAAgentCount()
	}
	return !errors.Is(err, syscall.EOPNOTSUPP)
}

// needStub fails (not skips) when a stand-in of a layer the library has is
// missing: make lib builds them with bindings/go/run-tests.sh.
func needStub(t *testing.T, layer, path string) {
	if _, err := os.Stat(path); err == nil {
		return
	}
	if !builtWith(layer) {
		t.Skipf("libgpubuf was built without %s (no toolkit or headers)", layer)
	}
	t.Fatalf("%s missing: bindings/go/run-tests.sh build makes it", path)
}

// This process has no GPU runtime (the stand-ins load only in children), so
// the views fail with ENODEV and the runtime loader's words, from every
// goroutine: the per-thread detail is read on the failing call's thread.
func TestGPUViewsWithoutDriverNameTheCause(t *testing.T) {
	for _, layer := range []string{"cuda", "hsa"} {
		if !builtWith(layer) {
			t.Logf("libgpubuf was built without %s: EOPNOTSUPP expected", layer)
		}
	}
	ctx := openCtx(t)
	m, err := ctx.NewMatrix(Float32, 4, 4, RowMajor)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	details := map[string]map[string]int{"cuda": {}, "hsa": {}}
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var err error
			layer := "cuda"
			if g%2 == 0 {
				_, err = m.CUDA(0, false)
			} else {
				_, err = m.HSA(0)
				layer = "hsa"
			}
			var e *Error
			if !errors.As(err, &e) || !(errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.EOPNOTSUPP)) {
				t.Errorf("%s without a driver: %v", layer, err)
				return
			}
			mu.Lock()
			details[layer][e.Detail]++
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	// One cause per layer, given to every goroutine: a detail read on
	// another thread would be empty or another call's.
	for layer, seen := range details {
		if len(seen) != 1 {
			t.Errorf("%s: %d different details: %q", layer, len(seen), seen)
		}
		for d := range seen {
			if d == "" && builtWith(layer) {
				t.Errorf("%s: no detail", layer)
			}
		}
	}
	if d := fmt.Sprint(details["cuda"]); builtWith("cuda") && !strings.Contains(d, "libcuda.so.1") {
		t.Errorf("cuda: the detail does not name libcuda.so.1: %s", d)
	}
}

func TestCUDAViewOnTheStandIn(t *testing.T) {
	dir := filepath.Join(libBuild(), "cudastub")
	needStub(t, "cuda", filepath.Join(dir, "libcuda.so.1"))
	r := runHelper(t, "cuda-stub", []string{prependEnv("LD_LIBRARY_PATH", dir), "CUSTUB_DEVICES=2", "CUSTUB_EXEC=1"}, nil)
	if r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.out), "ok") {
		t.Fatalf("exit %d:\n%s", r.code, r.out)
	}
}

func TestHSAViewOnTheStandIn(t *testing.T) {
	dir := filepath.Join(libBuild(), "hsastub")
	needStub(t, "hsa", filepath.Join(dir, "libhsa-runtime64.so.1"))
	r := runHelper(t, "hsa-stub", []string{prependEnv("LD_LIBRARY_PATH", dir), "HSASTUB_GPUS=2"}, nil)
	if r.code != 0 || !strings.HasSuffix(strings.TrimSpace(r.out), "ok") {
		t.Fatalf("exit %d:\n%s", r.code, r.out)
	}
}

// gemmInputs fills a (4x3), b (3x2 column-major) and c (4x2) and returns
// alpha*a*b + beta*c computed through At.
func gemmInputs(a, b, c *Matrix, alpha, beta float64) [][]float64 {
	fill(a, func(r, c int) float64 { return float64(r + c + 1) })
	fill(b, func(r, c int) float64 { return float64(2*r - c) })
	fill(c, func(r, c int) float64 { return 1 })
	want := make([][]float64, c.Rows())
	for i := range want {
		want[i] = make([]float64, c.Cols())
		for j := range want[i] {
			var s float64
			for k := 0; k < a.Cols(); k++ {
				s += a.At(i, k) * b.At(k, j)
			}
			want[i][j] = alpha*s + beta*c.At(i, j)
		}
	}
	return want
}

func sameAs(m *Matrix, want [][]float64) error {
	for i := range want {
		for j := range want[i] {
			if m.At(i, j) != want[i][j] {
				return fmt.Errorf("(%d,%d) = %v, want %v", i, j, m.At(i, j), want[i][j])
			}
		}
	}
	return nil
}

func helperCUDAStub() int {
	fail := func(f string, a ...interface{}) int { fmt.Printf(f+"\n", a...); return 1 }
	ctx, err := Open()
	if err != nil {
		return fail("%v", err)
	}
	defer ctx.Close()
	m, err := ctx.NewMatrix(Float32, 64, 32, RowMajor)
	if err != nil {
		return fail("%v", err)
	}
	defer m.Close()
	if n, err := CUDADeviceCount(); n != 2 || err != nil {
		return fail("device count %d, %v", n, err)
	}
	s := m.Slice(8, 40, 4, 20)
	d, err := s.CUDA(1, false)
	if err != nil {
		return fail("CUDA(1): %v", err)
	}
	if n, _ := testc.StubCount("libcuda.so.1", "custub_registrations"); n != 1 {
		return fail("registrations %d after CUDA(), want 1", n)
	}
	// The device address of (0,0) of the view is the buffer's device base
	// plus the view's offset: the whole matrix's view tells the base.
	whole, err := m.CUDA(1, false)
	if err != nil {
		return fail("CUDA of the whole matrix: %v", err)
	}
	if d.DevPtr() != whole.DevPtr()+uint64(s.Offset()) || d.Device() != 1 || d.ReadOnly() || d.Host() != s {
		return fail("view at %#x, whole at %#x, offset %d", d.DevPtr(), whole.DevPtr(), s.Offset())
	}
	whole.Close()
	d.Close()
	d.Close()
	if n, _ := testc.StubCount("libcuda.so.1", "custub_registrations"); n != 0 {
		return fail("registrations %d after Close, want 0", n)
	}
	_, err = m.CUDA(5, false)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, syscall.ENODEV) || !strings.Contains(e.Detail, "no CUDA device 5 (2 present)") {
		return fail("CUDA(5): %v", err)
	}
	// GEMM through the stand-in, which runs the library's kernels on the CPU.
	a, _ := ctx.NewMatrix(Float32, 4, 3, RowMajor)
	b, _ := ctx.NewMatrix(Float32, 3, 2, ColMajor)
	c, _ := ctx.NewMatrix(Float32, 4, 2, RowMajor)
	defer a.Close()
	defer b.Close()
	defer c.Close()
	want := gemmInputs(a, b, c, 2, 0.5)
	da, err1 := a.CUDA(0, true)
	db, err2 := b.CUDA(0, true)
	dc, err3 := c.CUDA(0, false)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return fail("views: %v", err)
		}
	}
	if err := CUDAGemm(2, da, db, 0.5, dc); err != nil {
		return fail("CUDAGemm: %v", err)
	}
	if err := sameAs(c, want); err != nil {
		return fail("CUDAGemm: %v", err)
	}
	ro, _ := ctx.NewMatrix(Float32, 4, 2, RowMajor)
	defer ro.Close()
	dro, err := ro.CUDA(0, true)
	if err != nil || !dro.ReadOnly() {
		return fail("read-only view: %v", err)
	}
	if err := CUDAGemm(1, da, db, 0, dro); !errors.Is(err, syscall.EROFS) {
		return fail("a read-only output: %v, want EROFS", err)
	}
	dro.Close()
	da.Close()
	db.Close()
	dc.Close()
	// A view still open when its owner closes gives nothing back twice.
	late, err := c.CUDA(0, false)
	if err != nil {
		return fail("%v", err)
	}
	c.Close()
	late.Close()
	if err := CUDAGemm(1, da, db, 0, dc); !errors.Is(err, ErrClosed) {
		return fail("CUDAGemm on closed views: %v", err)
	}
	if n, msg, err := testc.StubViolations("libcuda.so.1", "custub_violations"); n != 0 || err != nil {
		return fail("stand-in saw %d misuses: %s %v", n, msg, err)
	}
	fmt.Println("ok")
	return 0
}

func helperHSAStub() int {
	fail := func(f string, a ...interface{}) int { fmt.Printf(f+"\n", a...); return 1 }
	ctx, err := Open()
	if err != nil {
		return fail("%v", err)
	}
	defer ctx.Close()
	m, err := ctx.NewMatrix(Float32, 64, 32, RowMajor)
	if err != nil {
		return fail("%v", err)
	}
	defer m.Close()
	if n, err := HSAAgentCount(); n != 2 || err != nil {
		return fail("agent count %d, %v", n, err)
	}
	d, err := m.T().HSA(1)
	if err != nil {
		return fail("HSA(1): %v", err)
	}
	if n, _ := testc.StubCount("libhsa-runtime64.so.1", "hsastub_locks"); n != 1 {
		return fail("locks %d after HSA(), want 1", n)
	}
	if d.AgentPtr() == 0 || d.Agent() != 1 || d.Host().Rows() != 32 {
		return fail("agent view %#x agent %d", d.AgentPtr(), d.Agent())
	}
	d.Close()
	if n, _ := testc.StubCount("libhsa-runtime64.so.1", "hsastub_locks"); n != 0 {
		return fail("locks %d after Close, want 0", n)
	}
	_, err = m.HSA(7)
	if !errors.Is(err, syscall.ENODEV) || !strings.Contains(err.Error(), "no HSA GPU agent 7 (2 present)") {
		return fail("HSA(7): %v", err)
	}
	if n, msg, err := testc.StubViolations("libhsa-runtime64.so.1", "hsastub_violations"); n != 0 || err != nil {
		return fail("stand-in saw %d misuses: %s %v", n, msg, err)
	}
	fmt.Println("ok")
	return 0
}
