// SPDX-License-Identifier: MIT

// Package testc is C the gpubuf tests call through cgo (test files cannot
// use cgo themselves): a stand-in for a BLAS routine that takes raw
// pointers, and the counters of libgpubuf's stand-in GPU runtimes.
package testc

/*
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

// C = alpha * A B + beta * C, row-major with leading dimensions: the
// calling convention of cblas_dgemm(CblasRowMajor, NoTrans, NoTrans, ...).
static void testc_dgemm(int m, int n, int k, double alpha, const double *a,
			int lda, const double *b, int ldb, double beta,
			double *c, int ldc)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			double s = 0;

			for (int p = 0; p < k; p++)
				s += a[i * lda + p] * b[p * ldb + j];
			c[i * ldc + j] = alpha * s + beta * c[i * ldc + j];
		}
}

// A counter function of an already loaded library, or -1000 when absent.
static int testc_stub_count(const char *lib, const char *sym)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	int (*f)(void);

	if (!h)
		return -1000;
	f = (int (*)(void))dlsym(h, sym);
	return f ? f() : -1000;
}

static int testc_stub_violations(const char *lib, const char *sym, char *msg,
				 size_t len)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	int (*f)(char *, size_t);

	if (!h)
		return -1000;
	f = (int (*)(char *, size_t))dlsym(h, sym);
	return f ? f(msg, len) : -1000;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Dgemm computes c = alpha*a*b + beta*c on row-major slices with leading
// dimensions, in C, from the slices' first elements as a BLAS would.
func Dgemm(m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	C.testc_dgemm(C.int(m), C.int(n), C.int(k), C.double(alpha),
		(*C.double)(unsafe.Pointer(&a[0])), C.int(lda),
		(*C.double)(unsafe.Pointer(&b[0])), C.int(ldb), C.double(beta),
		(*C.double)(unsafe.Pointer(&c[0])), C.int(ldc))
}

// StubCount calls int sym(void) of the loaded library lib (a stand-in
// runtime libgpubuf has dlopen()ed).
func StubCount(lib, sym string) (int, error) {
	cl, cs := C.CString(lib), C.CString(sym)
	defer C.free(unsafe.Pointer(cl))
	defer C.free(unsafe.Pointer(cs))
	n := int(C.testc_stub_count(cl, cs))
	if n == -1000 {
		return 0, fmt.Errorf("%s is not loaded or has no %s", lib, sym)
	}
	return n, nil
}

// StubViolations is a stand-in's count of misuses and its first message.
func StubViolations(lib, sym string) (int, string, error) {
	cl, cs := C.CString(lib), C.CString(sym)
	defer C.free(unsafe.Pointer(cl))
	defer C.free(unsafe.Pointer(cs))
	var msg [256]C.char
	n := int(C.testc_stub_violations(cl, cs, &msg[0], C.size_t(len(msg))))
	if n == -1000 {
		return 0, "", fmt.Errorf("%s is not loaded or has no %s", lib, sym)
	}
	return n, C.GoString(&msg[0]), nil
}
