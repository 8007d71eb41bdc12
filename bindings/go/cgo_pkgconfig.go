// SPDX-License-Identifier: MIT

//go:build !gpubuf_intree

package gpubuf

// The installed libgpubuf (libgpubuf-dev, make install): its gpubuf.pc
// gives the include and library paths.

// #cgo pkg-config: gpubuf
import "C"
