// SPDX-License-Identifier: MIT

package gpubuf

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func TestOpenReportsItsBackend(t *testing.T) {
	ctx := openCtx(t)
	want := map[string]Backend{"module": BackendModule, "memfd": BackendMemfd}[os.Getenv("GPUBUF_BACKEND")]
	if want != 0 && ctx.Backend() != want {
		t.Errorf("GPUBUF_BACKEND=%s but the context is on %s", os.Getenv("GPUBUF_BACKEND"), ctx.Backend())
	}
	if ctx.DMABuf() != (ctx.Backend() == BackendModule) {
		t.Errorf("DMABuf %v on the %s backend", ctx.DMABuf(), ctx.Backend())
	}
	ps, err := ctx.PageSize()
	if err != nil || ps != os.Getpagesize() {
		t.Errorf("PageSize %d, %v; want %d", ps, err, os.Getpagesize())
	}
	if _, _, _, ok := ctx.DriverVersion(); ok != (ctx.Backend() == BackendModule) {
		t.Errorf("DriverVersion ok=%v on the %s backend", ok, ctx.Backend())
	}
	m, err := OpenBackend(BackendMemfd)
	if err != nil {
		t.Fatal(err)
	}
	if m.Backend() != BackendMemfd || m.DMABuf() {
		t.Errorf("OpenBackend(memfd) gave %s, dmabuf %v", m.Backend(), m.DMABuf())
	}
	m.Close()
	if _, err := m.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc on a closed context: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Without /dev/gpubuf (the host) the module backend is ENOENT; with it (the
// guest, where it is root's alone, mode 0600) an unprivileged user gets
// EACCES. Either way errors.Is sees the errno and the message is the
// library's.
func TestOpenModuleErrorsMatchErrno(t *testing.T) {
	if _, err := os.Stat("/dev/gpubuf"); err != nil {
		_, err := OpenBackend(BackendModule)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, syscall.ENOENT) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("OpenBackend(module) without /dev/gpubuf: %v (%#v)", err, err)
		}
		if e.Op != "gpubuf_open" || !strings.Contains(err.Error(), "/dev/gpubuf") {
			t.Errorf("message does not name the device: %q", err)
		}
		return
	}
	if os.Getuid() != 0 {
		t.Fatalf("/dev/gpubuf exists: this case runs as root, to open it as nobody")
	}
	r := runHelper(t, "open-module", nil, func(c *exec.Cmd) {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	})
	if r.code != 0 || !strings.Contains(r.out, "EACCES ok") ||
		!strings.Contains(r.out, "/dev/gpubuf: permission denied") {
		t.Fatalf("as nobody (exit %d):\n%s", r.code, r.out)
	}
}

func TestAllocBytesAreTheMapping(t *testing.T) {
	ctx := openCtx(t)
	b, err := ctx.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	data := b.Bytes()
	if b.Size() != ps || len(data) != ps || cap(data) != ps {
		t.Fatalf("Size %d, len %d, cap %d; want one page (%d)", b.Size(), len(data), cap(data), ps)
	}
	if uintptr(unsafe.Pointer(&data[0])) != b.address() {
		t.Errorf("Bytes starts at %p, the mapping at %#x", &data[0], b.address())
	}
	for i, v := range data {
		if v != 0 {
			t.Fatalf("new buffer byte %d is %d, not 0", i, v)
		}
	}
	for i := range data {
		data[i] = byte(i * 7)
	}
	again := b.Bytes()
	for i := range again {
		if again[i] != byte(i*7) {
			t.Fatalf("byte %d reads %d through a second slice", i, again[i])
		}
	}
	// append past the end copies: the capacity is the buffer's.
	grown := append(data, 1)
	if &grown[0] == &data[0] {
		t.Errorf("append wrote past the mapping")
	}
	if n := b.refcount(); n != 1 {
		t.Errorf("refcount %d, want 1", n)
	}
	if fd, ok := b.FD(); ok != ctx.DMABuf() || (ok && fd < 0) {
		t.Errorf("FD %d, %v on the %s backend", fd, ok, ctx.Backend())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !b.Closed() {
		t.Error("Closed() false after Close")
	}
	r := mustPanic(t, "Bytes after Close", func() { b.Bytes() })
	if err, ok := r.(error); !ok || !errors.Is(err, ErrClosed) {
		t.Errorf("Bytes after Close panicked with %v, not ErrClosed", r)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestAllocErrorsCarryTheLibraryText(t *testing.T) {
	ctx := openCtx(t)
	if _, err := ctx.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
	_, err := ctx.Alloc(1 << 62)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Alloc(1<<62): %v, not an *Error", err)
	}
	if e.Op != "gpubuf_alloc" || e.Errno == 0 || e.Text != Strerror(e.Errno) ||
		!errors.Is(err, e.Errno) || !strings.Contains(err.Error(), e.Text) {
		t.Errorf("Alloc(1<<62): %#v / %q", e, err)
	}
	// The module refuses it against its max_buffer_bytes, in the
	// library's words; memfd cannot size or lock it.
	if ctx.Backend() == BackendModule {
		if !errors.Is(err, syscall.EFBIG) || !strings.Contains(err.Error(), "max_buffer_bytes") {
			t.Errorf("Alloc(1<<62) on the module: %v, want EFBIG naming max_buffer_bytes", err)
		}
	} else if !errors.Is(err, syscall.ENOMEM) && !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Alloc(1<<62) on memfd: %v, want ENOMEM or EINVAL", err)
	}
}

func TestImportFD(t *testing.T) {
	ctx := openCtx(t)
	_, err := ctx.ImportFD(-1)
	if !errors.Is(err, syscall.EBADF) {
		t.Errorf("ImportFD(-1): %v, want EBADF", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = ctx.ImportFD(int(f.Fd()))
	var e *Error
	if !errors.As(err, &e) || e.Op != "gpubuf_import" || e.Text != Strerror(e.Errno) {
		t.Errorf("ImportFD of a regular file: %v", err)
	}

	b, err := ctx.Alloc(3 * os.Getpagesize())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fd, ok := b.FD()
	if !ok {
		if ctx.Backend() == BackendModule {
			t.Fatal("no dma-buf fd on the module backend")
		}
		return // memfd buffers have no dma-buf to import
	}
	other, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	imp, err := other.ImportFD(fd)
	if err != nil {
		t.Fatalf("ImportFD of a gpubuf dma-buf: %v", err)
	}
	if imp.Size() != b.Size() || imp.ReadOnly() {
		t.Errorf("imported size %d (want %d), read-only %v", imp.Size(), b.Size(), imp.ReadOnly())
	}
	if imp.address() == b.address() {
		t.Error("the import shares the original's mapping instead of mapping it again")
	}
	b.Bytes()[4097] = 0x5a
	if got := imp.Bytes()[4097]; got != 0x5a {
		t.Errorf("a write through the original reads %#x through the import", got)
	}
	imp.Bytes()[7] = 0xa5
	if got := b.Bytes()[7]; got != 0xa5 {
		t.Errorf("a write through the import reads %#x through the original", got)
	}
	if ifd, _ := imp.FD(); ifd == fd {
		t.Error("the import did not dup the descriptor")
	}
	if err := imp.Close(); err != nil {
		t.Fatal(err)
	}
	// The caller's descriptor is still its own.
	imp2, err := other.ImportFD(fd)
	if err != nil {
		t.Fatalf("the original fd after the import's Close: %v", err)
	}
	imp2.Close()
}

// readOnlyDmabuf is a dma-buf fd opened O_RDONLY, straight from gpubuf.ko's
// GPUBUF_IOC_ALLOC (include/uapi/linux/gpubuf.h): libgpubuf's own
// allocations are always read-write.
func readOnlyDmabuf(t *testing.T, size uint64) int {
	t.Helper()
	const iocAlloc = 0xC030B801 // _IOWR(0xB8, 0x01, struct gpubuf_alloc)
	var arg struct {
		size, flags uint64
		fdFlags     uint32
		numaNode    int32
		fd          int32
		reserved0   uint32
		reserved    [2]uint64
	}
	if unsafe.Sizeof(arg) != 48 {
		t.Fatalf("struct gpubuf_alloc mirror is %d bytes, not 48", unsafe.Sizeof(arg))
	}
	arg.size = size
	arg.fdFlags = syscall.O_RDONLY | syscall.O_CLOEXEC
	arg.numaNode = -1
	dev, err := os.OpenFile("/dev/gpubuf", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, dev.Fd(), iocAlloc, uintptr(unsafe.Pointer(&arg))); e != 0 {
		t.Fatalf("GPUBUF_IOC_ALLOC: %v", e)
	}
	return int(arg.fd)
}

// A dma-buf another exporter gave read-only imports as a read-only Buffer:
// its elements read, and writes through the API are refused with EROFS
// (a write through a slice would fault: see ReadOnly).
func TestReadOnlyImport(t *testing.T) {
	if _, err := os.Stat("/dev/gpubuf"); err != nil {
		t.Skip("read-only dma-bufs come from gpubuf.ko, not loaded here (the guest run has it)")
	}
	ctx := openCtx(t)
	fd := readOnlyDmabuf(t, 8192)
	b, err := ctx.ImportFD(fd)
	syscall.Close(fd)
	if err != nil {
		t.Fatalf("ImportFD of a read-only dma-buf: %v", err)
	}
	defer b.Close()
	m, err := b.Matrix(View{DType: Float32, Rows: 16, Cols: 16})
	if err != nil {
		t.Fatal(err)
	}
	if !b.ReadOnly() || !m.ReadOnly() || b.Size() != 8192 {
		t.Fatalf("import: read-only %v/%v, size %d", b.ReadOnly(), m.ReadOnly(), b.Size())
	}
	if m.At(15, 15) != 0 || b.Bytes()[8191] != 0 {
		t.Error("a new read-only dma-buf does not read as zeros")
	}
	r := mustPanic(t, "Set on a read-only import", func() { m.Set(0, 0, 1) })
	if e, ok := r.(error); !ok || !errors.Is(e, syscall.EROFS) {
		t.Errorf("Set on a read-only import panicked with %v, want EROFS", r)
	}
	if err := b.CPUAccess(Write, func() error { return nil }); !errors.Is(err, syscall.EROFS) {
		t.Errorf("a write bracket on a read-only import: %v, want EROFS", err)
	}
	if err := b.CPUAccess(Read, func() error { return nil }); err != nil {
		t.Errorf("a read bracket on a read-only import: %v", err)
	}
}

func TestCPUAccessBrackets(t *testing.T) {
	ctx := openCtx(t)
	b, err := ctx.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	if err := b.CPUAccess(ReadWrite, func() error { ran = true; b.Bytes()[0] = 1; return nil }); err != nil || !ran {
		t.Fatalf("CPUAccess: %v, ran %v", err, ran)
	}
	sentinel := errors.New("from f")
	if err := b.CPUAccess(Read, func() error { return sentinel }); err != sentinel {
		t.Errorf("f's error came back as %v", err)
	}
	_, err = b.BeginCPUAccess(Access(8))
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("BeginCPUAccess(8): %v, want EINVAL", err)
	}
	s, err := b.BeginCPUAccess(Write)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.End(); err != nil {
		t.Errorf("End: %v", err)
	}
	if err := s.End(); err == nil {
		t.Error("a second End succeeded")
	}
	func() {
		defer func() { recover() }()
		b.CPUAccess(Write, func() error { panic("inside the bracket") })
	}()
	open, err := b.BeginCPUAccess(Read)
	if err != nil {
		t.Fatalf("a bracket after a panicking one: %v", err)
	}
	b.Close()
	if err := open.End(); !errors.Is(err, ErrClosed) {
		t.Errorf("End after Close: %v", err)
	}
	if _, err := b.BeginCPUAccess(Read); !errors.Is(err, ErrClosed) {
		t.Errorf("BeginCPUAccess after Close: %v", err)
	}
}
