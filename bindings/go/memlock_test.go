// SPDX-License-Identifier: MIT

package gpubuf

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// Where RLIMIT_MEMLOCK stops the memfd backend's mlock (a container:
// Docker's default is 64 MiB), the error says so and what to do: in a
// child of this test binary on the memfd backend, without CAP_IPC_LOCK,
// with a 1 MiB limit (issue 51, item 5).
func TestMemlockLimitSaysWhatToDo(t *testing.T) {
	if os.Getenv("GPUBUF_GO_MEMLOCK_CHILD") == "1" {
		memlockChild()
		return
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the capget/capset layout used is x86-64's")
	}
	runChild(t, "TestMemlockLimitSaysWhatToDo", "limit explained:",
		"GPUBUF_GO_MEMLOCK_CHILD=1", "GPUBUF_BACKEND=memfd")
}

func memlockChild() {
	fail := func(f string, a ...interface{}) {
		fmt.Printf(f+"\n", a...)
		os.Exit(1)
	}
	// Capabilities belong to a thread: drop CAP_IPC_LOCK on the one that
	// makes the cgo calls below.
	runtime.LockOSThread()
	hdr := struct {
		version uint32
		pid     int32
	}{0x20080522, 0} // _LINUX_CAPABILITY_VERSION_3
	var caps [2]struct{ effective, permitted, inheritable uint32 }
	const capIPCLock = 14
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&caps[0])), 0); e != 0 {
		fail("capget: %v", e)
	}
	caps[0].effective &^= 1 << capIPCLock
	caps[0].permitted &^= 1 << capIPCLock
	caps[0].inheritable &^= 1 << capIPCLock
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&caps[0])), 0); e != 0 {
		fail("capset: %v", e)
	}
	const rlimitMemlock = 8 // RLIMIT_MEMLOCK, not in package syscall
	if err := syscall.Setrlimit(rlimitMemlock, &syscall.Rlimit{Cur: 1 << 20, Max: 1 << 20}); err != nil {
		fail("setrlimit: %v", err)
	}
	ctx, err := Open()
	if err != nil {
		fail("open: %v", err)
	}
	if ctx.Backend() != BackendMemfd {
		fail("not the memfd backend: %v", ctx.Backend())
	}
	_, err = ctx.Alloc(4 << 20)
	if !errors.Is(err, syscall.ENOMEM) {
		fail("4 MiB past a 1 MiB limit: %v, want ENOMEM", err)
	}
	for _, want := range []string{"RLIMIT_MEMLOCK is 1048576 bytes", "/dev/gpubuf", "--ulimit memlock=-1"} {
		if !strings.Contains(err.Error(), want) {
			fail("error %q does not say %q", err, want)
		}
	}
	b, err2 := ctx.Alloc(256 << 10)
	if err2 != nil {
		fail("256 KiB within the limit: %v", err2)
	}
	b.Close()
	ctx.Close()
	fmt.Println("limit explained:", err)
	os.Exit(0)
}
