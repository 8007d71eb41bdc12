// SPDX-License-Identifier: MIT

//go:build gpubuf_intree

package gpubuf

// This tree's libgpubuf (make lib), for the binding's own tests: the
// header and the generated version header from the tree, the shared
// library from libgpubuf/build, found at run time through RUNPATH (or
// LD_LIBRARY_PATH, which the guest run sets).

// #cgo CFLAGS: -I${SRCDIR}/../../libgpubuf/include -I${SRCDIR}/../../libgpubuf/build/include
// #cgo LDFLAGS: -L${SRCDIR}/../../libgpubuf/build -lgpubuf -Wl,-rpath,${SRCDIR}/../../libgpubuf/build
import "C"
