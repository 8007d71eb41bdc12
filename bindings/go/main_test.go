// SPDX-License-Identifier: MIT

package gpubuf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// unexpectedLeaks are leak reports no test asked for: TestMain fails on
// any, so every test must close what it opens.
var (
	leaksMu          sync.Mutex
	unexpectedLeaks  []Leak
	expectLeakReport func(Leak) bool // set by TestLeakReported while it waits
)

func TestMain(m *testing.M) {
	if h := os.Getenv("GPUBUF_GO_HELPER"); h != "" {
		// A child of a test (runHelper): run one scenario, not the suite.
		os.Exit(runHelperScenario(h))
	}
	SetLeakHandler(func(l Leak) {
		leaksMu.Lock()
		defer leaksMu.Unlock()
		if expectLeakReport != nil && expectLeakReport(l) {
			return
		}
		unexpectedLeaks = append(unexpectedLeaks, l)
	})
	ctx, err := Open()
	if err == nil {
		maj, min, pat := LibraryVersion()
		fmt.Printf("# go: backend %s, libgpubuf %d.%d.%d, %s, checked mode %v, GODEBUG=%q\n",
			ctx.Backend(), maj, min, pat, runtime.Version(), Checked(), os.Getenv("GODEBUG"))
		ctx.Close()
	}
	code := m.Run()
	// Finalizers run after a collection; two rounds catch chains.
	for i := 0; i < 3; i++ {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	leaksMu.Lock()
	for _, l := range unexpectedLeaks {
		fmt.Println("--- FAIL: TestMainNoLeaks:", l)
		code = 1
	}
	if len(unexpectedLeaks) == 0 && code == 0 {
		fmt.Println("--- PASS: TestMainNoLeaks (0.00s)")
	}
	leaksMu.Unlock()
	os.Exit(code)
}

// openCtx opens the default context and closes it when t ends.
func openCtx(t testing.TB) *Context {
	t.Helper()
	ctx, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// helperResult is what a child process said and how it ended.
type helperResult struct {
	out  string
	code int
}

// runHelper re-runs this test binary as a child running scenario name
// (runHelperScenario) with extra environment, so that a crash, an
// environment read at load time (LD_LIBRARY_PATH for dlopen, checked mode)
// or another uid stays out of this process.
func runHelper(t *testing.T, name string, env []string, cfg func(*exec.Cmd)) helperResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "GPUBUF_GO_HELPER="+name), env...)
	if cfg != nil {
		cfg(cmd)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("helper %s: %v", name, err)
	}
	return helperResult{out: string(out), code: code}
}

// libBuild is libgpubuf's build directory, where its stand-in GPU
// runtimes are (GPUBUF_LIB_BUILD in the guest, which has no tree).
func libBuild() string {
	if d := os.Getenv("GPUBUF_LIB_BUILD"); d != "" {
		return d
	}
	d, _ := filepath.Abs(filepath.Join("..", "..", "libgpubuf", "build"))
	return d
}

// prependEnv puts dir first on a PATH-like variable of the environment.
func prependEnv(name, dir string) string {
	if old := os.Getenv(name); old != "" {
		return name + "=" + dir + ":" + old
	}
	return name + "=" + dir
}

// mustPanic runs f and returns what it panicked with, failing if it did not.
func mustPanic(t *testing.T, what string, f func()) (r interface{}) {
	t.Helper()
	defer func() {
		r = recover()
		if r == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
	return nil
}

// mapsLine is the /proc/self/maps line of the mapping holding addr.
func mapsLine(addr uintptr) string {
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err == nil && lo <= addr && addr < hi {
			return line
		}
	}
	return ""
}
