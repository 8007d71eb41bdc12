// SPDX-License-Identifier: MIT

package gpubuf

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// In checked mode a slice kept past Close faults at the buffer's own
// address: the child (runHelperScenario "stale-slice") recovers the fault
// as a panic (debug.SetPanicOnFault) and reports where it was.
func TestCheckedModeStaleSliceFaults(t *testing.T) {
	for _, size := range []int{4096, 4 << 20} { // 4 MiB: a 2 MiB-placed mapping
		r := runHelper(t, "stale-slice", []string{"GPUBUF_GO_CHECKED=1", "GPUBUF_GO_SIZE=" + strconv.Itoa(size)}, nil)
		var addr, fault uintptr
		var maps string
		for _, line := range strings.Split(r.out, "\n") {
			fmt.Sscanf(line, "buffer %x", &addr)
			fmt.Sscanf(line, "fault %x", &fault)
			if strings.HasPrefix(line, "maps ") {
				maps = line
			}
		}
		if r.code != 0 || addr == 0 || fault != addr+uintptr(size)/2 {
			t.Fatalf("size %d: exit %d, buffer %#x, fault %#x:\n%s", size, r.code, addr, fault, r.out)
		}
		// The range is a reservation nobody can touch, not a hole.
		if !strings.Contains(maps, " ---p ") {
			t.Errorf("size %d: the closed range is mapped as %q", size, maps)
		}
	}
}

// Without SetPanicOnFault the program dies at once, naming the address:
// no silent read of memory that belongs to something else.
func TestCheckedModeStaleSliceKillsTheProgram(t *testing.T) {
	r := runHelper(t, "stale-slice-crash", []string{"GPUBUF_GO_CHECKED=1"}, nil)
	var addr uintptr
	for _, line := range strings.Split(r.out, "\n") {
		fmt.Sscanf(line, "buffer %x", &addr)
	}
	want := fmt.Sprintf("unexpected fault address %#x", addr+100)
	if r.code == 0 || addr == 0 || !strings.Contains(r.out, want) || strings.Contains(r.out, "still readable") {
		t.Fatalf("exit %d, want a crash with %q:\n%s", r.code, want, r.out)
	}
}

// Checked mode is off unless asked for, and the default Close gives the
// range back (the documented contract: stale slices are the program's bug).
func TestDefaultModeUnmaps(t *testing.T) {
	if os.Getenv("GPUBUF_GO_CHECKED") == "1" {
		if !Checked() {
			t.Fatal("GPUBUF_GO_CHECKED=1 but Checked() is false")
		}
		return
	}
	if Checked() {
		t.Fatal("checked mode on without GPUBUF_GO_CHECKED=1")
	}
	ctx := openCtx(t)
	b, _ := ctx.Alloc(1 << 16)
	addr := b.address()
	b.Close()
	if line := mapsLine(addr); strings.Contains(line, "memfd:gpubuf") || strings.Contains(line, "dmabuf") {
		t.Errorf("the buffer is still mapped after Close: %q", line)
	}
}

// An owner dropped without Close is reported, with the line that made it,
// and its range fenced, since slices of it may still be around. The fence
// is in place when the handler runs: the handler itself reads the range
// (reading it after the report raced the finalizer, which once fenced only
// after reporting; the guest's 66-go on trixie caught it).
// A finalizer whose fence failed says so in the report.
func TestLeakTextSaysUnfenced(t *testing.T) {
	l := Leak{Kind: "Buffer", Size: 4096, Site: "x.go:1"}
	if strings.Contains(l.String(), "fenced") {
		t.Errorf("fenced leak: %q", l)
	}
	l.Unfenced = true
	if !strings.Contains(l.String(), "could not be fenced") {
		t.Errorf("unfenced leak: %q", l)
	}
}

func TestLeakReported(t *testing.T) {
	type seen struct {
		leak Leak
		line string // the range's /proc/self/maps line when reported
	}
	got := make(chan seen, 4)
	var addr atomic.Uintptr
	leaksMu.Lock()
	expectLeakReport = func(l Leak) bool {
		if l.Kind == "Buffer" && l.Size == 3*4096 {
			got <- seen{l, mapsLine(addr.Load())}
			return true
		}
		return false
	}
	leaksMu.Unlock()
	defer func() {
		leaksMu.Lock()
		expectLeakReport = nil
		leaksMu.Unlock()
	}()
	ctx := openCtx(t)
	func() {
		b, err := ctx.Alloc(3 * 4096) // the leak: never closed
		if err != nil {
			t.Fatal(err)
		}
		addr.Store(b.address())
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
		select {
		case s := <-got:
			if !strings.Contains(s.leak.Site, "safety_test.go:") {
				t.Errorf("leak report names %q, not this file", s.leak.Site)
			}
			if !strings.Contains(s.line, " ---p ") {
				t.Errorf("the leaked buffer's range when its leak was reported: %q", s.line)
			}
			if !strings.Contains(s.leak.String(), "never closed") {
				t.Errorf("report text %q", s.leak)
			}
			if s.leak.Unfenced {
				t.Errorf("nothing else maps here, yet the fence failed: %q", s.leak)
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatal("no leak report within 10 s of dropping an unclosed Buffer")
}

// Close while other goroutines hold views: a use that starts after they
// see the Close (Closed reports it) panics with ErrClosed. This is the
// check the documentation promises, not more: a use already running when
// Close unmaps is the program's bug (the memory rule), and nothing here
// makes it safe.
func TestUseAfterCloseSeenByOtherGoroutines(t *testing.T) {
	ctx := openCtx(t)
	for round := 0; round < 50; round++ {
		m, err := ctx.NewMatrix(Float64, 16, 16, RowMajor)
		if err != nil {
			t.Fatal(err)
		}
		v := m.Slice(0, 8, 0, 8)
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil {
						if e, ok := r.(error); !ok || !errors.Is(e, ErrClosed) {
							t.Errorf("panic %v, not ErrClosed", r)
						}
					}
				}()
				for i := 0; i < 1000; i++ {
					_ = v.Rows() + v.Stride()
					if v.Closed() {
						v.At(0, 0) // must panic now
						t.Errorf("At on a closed view returned")
						return
					}
				}
			}()
		}
		m.Close()
		wg.Wait()
	}
}

// runHelperScenario is the child side of runHelper: it prints what the
// parent checks and returns the exit code.
func runHelperScenario(name string) int {
	switch name {
	case "stale-slice", "stale-slice-crash":
		return helperStaleSlice(name == "stale-slice")
	case "open-module":
		_, err := OpenBackend(BackendModule)
		fmt.Printf("uid %d: %v\n", os.Getuid(), err)
		var e *Error
		if errors.As(err, &e) && errors.Is(err, syscall.EACCES) && errors.Is(err, os.ErrPermission) {
			fmt.Println("EACCES ok")
			return 0
		}
		return 1
	case "cuda-stub":
		return helperCUDAStub()
	case "hsa-stub":
		return helperHSAStub()
	}
	fmt.Println("unknown helper", name)
	return 2
}

func helperStaleSlice(recoverFault bool) int {
	if !Checked() {
		fmt.Println("checked mode is off")
		return 1
	}
	size := 4096
	if s, err := strconv.Atoi(os.Getenv("GPUBUF_GO_SIZE")); err == nil {
		size = s
	}
	ctx, err := Open()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer ctx.Close()
	b, err := ctx.Alloc(size)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	data := b.Bytes()
	data[size/2] = 7
	fmt.Printf("buffer %x\n", b.address())
	b.Close()
	// Allocations after Close must not take the range back.
	for i := 0; i < 8; i++ {
		o, err := ctx.Alloc(size)
		if err == nil {
			if o.address() == b.address() {
				fmt.Println("the fenced range was handed out again")
				return 1
			}
			defer o.Close()
		}
	}
	fmt.Printf("maps %s\n", mapsLine(b.address()))
	os.Stdout.Sync()
	if !recoverFault {
		fmt.Println(data[100], "still readable")
		return 0
	}
	debug.SetPanicOnFault(true)
	defer func() {
		r := recover()
		re, ok := r.(interface{ Addr() uintptr })
		if !ok {
			fmt.Printf("recovered %v without an address\n", r)
			os.Exit(1)
		}
		fmt.Printf("fault %x\n", re.Addr())
		os.Exit(0)
	}()
	fmt.Println(data[size/2], "still readable")
	return 1
}

// Methods with an error result return ErrClosed after the owner's Close,
// as the package documentation promises, rather than panicking.
func TestErrorMethodsReturnErrClosed(t *testing.T) {
	ctx := openCtx(t)
	b, err := ctx.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Matrix(View{DType: Float32, Rows: 2, Cols: 2})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Buffer.Matrix after Close panicked: %v", r)
			}
		}()
		if _, err := b.Matrix(View{DType: Float32, Rows: 2, Cols: 2}); !errors.Is(err, ErrClosed) {
			t.Errorf("Buffer.Matrix after Close: %v, want ErrClosed", err)
		}
	}()
	// Device views whose buffer was closed under them (made by hand: this
	// process has no GPU runtime to register with).
	cv := &CUDAMatrix{deviceView: deviceView{host: m, held: true}}
	hv := &HSAMatrix{deviceView: deviceView{host: m, held: true}}
	for name, gemm := range map[string]func() error{
		"CUDAGemm": func() error { return CUDAGemm(1, cv, cv, 0, cv) },
		"HSAGemm":  func() error { return HSAGemm(1, hv, hv, 0, hv) },
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s on views of a closed buffer panicked: %v", name, r)
				}
			}()
			if err := gemm(); !errors.Is(err, ErrClosed) {
				t.Errorf("%s on views of a closed buffer: %v, want ErrClosed", name, err)
			}
		}()
	}
}
