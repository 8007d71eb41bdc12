// SPDX-License-Identifier: MIT

package gpubuf

/*
#include <stdio.h>
#include "gpubufgo.h"

// One transfer and, on failure, the library's message from the same thread.
static int gbgo_io(struct gpubuf *buf, const struct gpubuf_matrix *m,
		   int write, size_t buf_offset, int fd, uint64_t file_offset,
		   size_t len, const struct gpubuf_io_opts *o,
		   struct gpubuf_io_result *res, struct gbgo_msg *msg)
{
	int ret;

	if (m)
		ret = write ? gpubuf_matrix_write_file(m, fd, file_offset, o, res) :
			      gpubuf_matrix_read_file(m, fd, file_offset, o, res);
	else
		ret = write ? gpubuf_write_file(buf, buf_offset, fd, file_offset,
						len, o, res) :
			      gpubuf_read_file(buf, buf_offset, fd, file_offset,
					       len, o, res);
	snprintf(msg->text, sizeof(msg->text), "%s", ret ? gpubuf_last_error() : "");
	return ret;
}
*/
import "C"

import (
	"errors"
	"os"
	"runtime"
)

// IOMethod is how a file transfer's requests went (gpubuf_read_file(3)).
type IOMethod int

const (
	IOPread      IOMethod = C.GPUBUF_IO_PREAD       // pread(2)/pwrite(2)
	IOURing      IOMethod = C.GPUBUF_IO_URING       // io_uring
	IOURingFixed IOMethod = C.GPUBUF_IO_URING_FIXED // io_uring, buffer registered
)

func (m IOMethod) String() string {
	switch m {
	case IOPread:
		return "pread"
	case IOURing:
		return "io_uring"
	case IOURingFixed:
		return "io_uring-fixed"
	}
	return "none"
}

// IOOptions tunes a file transfer; the zero value is libgpubuf's defaults
// (O_DIRECT where aligned, io_uring, 16 requests of 1 MiB in flight).
type IOOptions struct {
	Buffered     bool // never O_DIRECT
	NoURing      bool // pread/pwrite, one request at a time
	QueueDepth   int  // requests in flight, up to 4096; 0: 16
	RequestBytes int  // bytes per request, 4 KiB units; 0: 1 MiB
}

// IOResult is what a transfer did; Bytes is also set when it failed.
type IOResult struct {
	Bytes       int64    // the prefix of the range that is in place
	DirectBytes int64    // of it, moved with O_DIRECT
	Method      IOMethod // how the requests went
	Align       int      // O_DIRECT's alignment; 0 when not used
}

// ReadFile reads n bytes of f from fileOffset into the buffer at
// bufOffset, straight into its pages (gpubuf_read_file(3): O_DIRECT where
// offsets and memory line up, io_uring); f's own offset is left alone.
// A failure after the transfer began says in the result how much landed;
// a file that ends first is ENODATA.
func (b *Buffer) ReadFile(f *os.File, fileOffset int64, n, bufOffset int, o *IOOptions) (IOResult, error) {
	return fileIO(b.mem, nil, false, f, fileOffset, n, bufOffset, o)
}

// WriteFile writes n bytes of the buffer from bufOffset to f at fileOffset
// (gpubuf_write_file(3)); not durable before f.Sync.
func (b *Buffer) WriteFile(f *os.File, fileOffset int64, n, bufOffset int, o *IOOptions) (IOResult, error) {
	return fileIO(b.mem, nil, true, f, fileOffset, n, bufOffset, o)
}

// ReadFile fills the matrix from f, where its elements lie packed in its
// layout from fileOffset (gpubuf_matrix_read_file(3)); padding between
// rows (columns) is left alone.
func (m *Matrix) ReadFile(f *os.File, fileOffset int64, o *IOOptions) (IOResult, error) {
	return fileIO(m.mem, m, false, f, fileOffset, 0, 0, o)
}

// WriteFile writes the matrix's elements to f, packed, at fileOffset.
func (m *Matrix) WriteFile(f *os.File, fileOffset int64, o *IOOptions) (IOResult, error) {
	return fileIO(m.mem, m, true, f, fileOffset, 0, 0, o)
}

func fileIO(mem *memory, m *Matrix, write bool, f *os.File, fileOffset int64, n, bufOffset int, o *IOOptions) (IOResult, error) {
	var (
		res  C.struct_gpubuf_io_result
		msg  C.struct_gbgo_msg
		ret  C.int
		cerr error
	)
	op := "gpubuf_read_file"
	if write {
		op = "gpubuf_write_file"
	}
	if m != nil {
		op = "gpubuf_matrix_" + op[len("gpubuf_"):]
	}
	if fileOffset < 0 || n < 0 || bufOffset < 0 {
		return IOResult{}, errors.New("gpubuf: " + op + ": negative offset or length")
	}
	if f == nil {
		return IOResult{}, errors.New("gpubuf: " + op + ": no file")
	}
	opts := C.struct_gpubuf_io_opts{size: C.sizeof_struct_gpubuf_io_opts}
	if o != nil {
		if o.Buffered {
			opts.flags |= C.GPUBUF_IO_BUFFERED
		}
		if o.NoURing {
			opts.flags |= C.GPUBUF_IO_NO_URING
		}
		if o.QueueDepth < 0 || o.RequestBytes < 0 {
			return IOResult{}, errors.New("gpubuf: " + op + ": negative QueueDepth or RequestBytes")
		}
		opts.queue_depth = C.uint(o.QueueDepth)
		opts.request_bytes = C.size_t(o.RequestBytes)
	}
	// Close waits for the transfer: the kernel writes into the pages.
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if mem.closed.Load() {
		return IOResult{}, ErrClosed
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return IOResult{}, err
	}
	// A copy: &m.cm would point into a Go struct that holds Go pointers.
	var cm *C.struct_gpubuf_matrix
	if m != nil {
		view := m.cm
		cm = &view
	}
	if cerr = rc.Control(func(fd uintptr) {
		ret = C.gbgo_io(mem.buf, cm, boolInt(write), C.size_t(bufOffset), C.int(fd),
			C.uint64_t(fileOffset), C.size_t(n), &opts, &res, &msg)
	}); cerr != nil {
		return IOResult{}, cerr
	}
	runtime.KeepAlive(f)
	r := IOResult{Bytes: int64(res.bytes), DirectBytes: int64(res.direct_bytes),
		Method: IOMethod(res.method), Align: int(res.align)}
	return r, newError(op, ret, msgText(&msg))
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
