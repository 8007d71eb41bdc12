/* SPDX-License-Identifier: MIT */
/* kargs.c's interface, for C and C++: the kernels' parameters by name. */
#ifndef GPUBUF_SIMT_KARGS_H
#define GPUBUF_SIMT_KARGS_H

#include <stdint.h>

#include "gpubuf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct simt_gemv_args {
	uint64_t m, k;
	double alpha;
	uint64_t a, ars, acs, x, incx;
	double beta;
	uint64_t y, incy;
};

struct simt_gemm_args {
	uint64_t m, n, k;
	double alpha;
	uint64_t a, ars, acs, b, brs, bcs;
	double beta;
	uint64_t c, crs, ccs;
};

int simt_kargs_gemv(double alpha, const struct gpubuf_cuda_matrix *a,
		    const struct gpubuf_cuda_matrix *x, double beta,
		    const struct gpubuf_cuda_matrix *y,
		    struct simt_gemv_args *out);
int simt_kargs_gemm(double alpha, const struct gpubuf_cuda_matrix *a,
		    const struct gpubuf_cuda_matrix *b, double beta,
		    const struct gpubuf_cuda_matrix *c,
		    struct simt_gemm_args *out);

#ifdef __cplusplus
}
#endif

#endif /* GPUBUF_SIMT_KARGS_H */
