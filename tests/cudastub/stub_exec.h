/* SPDX-License-Identifier: MIT */
/*
 * The stand-in's kernel runner (stub_exec.cc), in plain C types: it is
 * compiled as C++ against tests/simt, without cuda.h.
 */
#ifndef CUSTUB_EXEC_H
#define CUSTUB_EXEC_H

#include <stddef.h>
#include <stdint.h>

/*
 * The parameter count of one of libgpubuf's kernels (every parameter an
 * 8-byte value) and which of them are device pointers (bit i: parameter
 * i; *nullable: those that may be 0); -1 for a kernel it does not know.
 */
int stub_exec_signature(const char *name, int *nparams, uint32_t *pointers,
			uint32_t *nullable);

/*
 * Run kernel name over grid x block with parameter values val, pointers
 * already host addresses: 0, or -1 with why (a barrier or shuffle not
 * every lane reached, an unknown kernel).
 */
int stub_exec_run(const char *name, const unsigned int grid[3],
		  const unsigned int block[3], const uint64_t *val, char *why,
		  size_t len);

#endif /* CUSTUB_EXEC_H */
