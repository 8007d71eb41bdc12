// SPDX-License-Identifier: MIT

package gpubuf

// #include <stdlib.h>
// #include "gpubufgo.h"
import "C"

import (
	"errors"
	"syscall"
)

// Error is a failure reported by libgpubuf: the C function that failed, its
// errno and the library's explanation. errors.Is matches the errno, so
// errors.Is(err, syscall.EACCES) and errors.Is(err, fs.ErrNotExist) work as
// they do for os errors.
type Error struct {
	Op     string        // the libgpubuf function, e.g. "gpubuf_alloc"
	Errno  syscall.Errno // positive errno value
	Text   string        // gpubuf_strerror(3) of Errno
	Detail string        // the library's own text, e.g. a GPU runtime's error name; may be empty
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Op + ": " + e.Text + " (" + e.Detail + ")"
	}
	return e.Op + ": " + e.Text
}

// Unwrap gives the errno, which is what errors.Is and errors.As compare.
func (e *Error) Unwrap() error { return e.Errno }

// ErrClosed is returned (or, from methods without an error result, the
// panic value) when a Context, Pool, Buffer, owning Matrix or device view
// is used after Close, or a buffer after Pool.Put.
var ErrClosed = errors.New("gpubuf: use of a closed object")

// newError turns a negative errno returned by libgpubuf into an *Error.
func newError(op string, ret C.int, detail string) error {
	if ret == 0 {
		return nil
	}
	errno := syscall.Errno(-ret)
	if ret > 0 {
		errno = syscall.Errno(ret)
	}
	return &Error{Op: op, Errno: errno, Text: C.GoString(C.gpubuf_strerror(-C.int(errno))), Detail: detail}
}

// msgText is what a helper left in its message buffer.
func msgText(m *C.struct_gbgo_msg) string {
	return C.GoString(&m.text[0])
}

// Strerror is gpubuf_strerror(3): the library's text for an errno value
// (either sign).
func Strerror(errno syscall.Errno) string {
	return C.GoString(C.gpubuf_strerror(-C.int(errno)))
}

// LibraryVersion is the running libgpubuf's version.
func LibraryVersion() (major, minor, patch int) {
	return int(C.gpubuf_version_major()), int(C.gpubuf_version_minor()), int(C.gpubuf_version_patch())
}
