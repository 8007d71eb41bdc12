// SPDX-License-Identifier: MIT

package gpubuf

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Out of memory arrives as an error that errors.Is(err, syscall.ENOMEM)
// recognises: in a child of this test binary whose address space has
// 64 MiB to spare, the 256 MiB mapping of a new buffer fails.
func TestENOMEMArrivesAsErrno(t *testing.T) {
	if os.Getenv("GPUBUF_GO_ENOMEM_CHILD") == "1" {
		enomemChild()
		return
	}
	if raceEnabled {
		// Its shadow memory needs address space at every new mapping.
		t.Skip("under -race an address-space limit stops the race runtime, not the allocation; the plain runs (the guest's 66-go) cover it")
	}
	runChild(t, "TestENOMEMArrivesAsErrno", "ENOMEM as errors.Is", "GPUBUF_GO_ENOMEM_CHILD=1")
}

// runChild runs test (its child half, chosen by env) in a new process of
// this test binary, whose limits end with it; its output must say want.
func runChild(t *testing.T, test, want string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func enomemChild() {
	ctx, err := Open()
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	var vm uint64
	f, err := os.Open("/proc/self/status")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "VmSize:" {
			kb, _ := strconv.ParseUint(fields[1], 10, 64)
			vm = kb * 1024
		}
	}
	f.Close()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err != nil || vm == 0 {
		fmt.Println("getrlimit:", err, vm)
		os.Exit(1)
	}
	rl.Cur = vm + 64<<20
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &rl); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(1)
	}
	b, err := ctx.Alloc(256 << 20)
	if err == nil {
		b.Close()
		fmt.Println("allocated 256 MiB under the limit")
		os.Exit(1)
	}
	if !errors.Is(err, syscall.ENOMEM) {
		fmt.Println("not ENOMEM:", err)
		os.Exit(1)
	}
	fmt.Println("ENOMEM as errors.Is:", err)
	os.Exit(0)
}
