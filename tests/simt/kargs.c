// SPDX-License-Identifier: MIT
/*
 * The library's own operand checks and kernel parameter lists
 * (libgpubuf/kernels/kernel_args.h), for the C++ CPU-kernel tests: what
 * gpubuf_cuda_gemv()/gemm() would pass to cuLaunchKernel, so the tests run
 * the kernels on exactly the parameters the library makes.
 */
#include "kernels/kernel_args.h"
#include "simt_kargs.h"

_Static_assert(sizeof(struct simt_gemv_args) == sizeof(struct gpubuf_gemv_args),
	       "gemv parameters");
_Static_assert(sizeof(struct simt_gemm_args) == sizeof(struct gpubuf_gemm_args),
	       "gemm parameters");

int simt_kargs_gemv(double alpha, const struct gpubuf_cuda_matrix *a,
		    const struct gpubuf_cuda_matrix *x, double beta,
		    const struct gpubuf_cuda_matrix *y,
		    struct simt_gemv_args *out)
{
	struct gpubuf_gemv_args g;
	int err = gpubuf_cuda_gemv_args(alpha, a, x, beta, y, &g);

	if (!err)
		*out = (struct simt_gemv_args){
			g.m, g.k, g.alpha, g.a, g.ars, g.acs, g.x, g.incx,
			g.beta, g.y, g.incy,
		};
	return err;
}

int simt_kargs_gemm(double alpha, const struct gpubuf_cuda_matrix *a,
		    const struct gpubuf_cuda_matrix *b, double beta,
		    const struct gpubuf_cuda_matrix *c,
		    struct simt_gemm_args *out)
{
	struct gpubuf_gemm_args g;
	int err = gpubuf_cuda_gemm_args(alpha, a, b, beta, c, &g);

	if (!err)
		*out = (struct simt_gemm_args){
			g.m, g.n, g.k, g.alpha, g.a, g.ars, g.acs, g.b, g.brs,
			g.bcs, g.beta, g.c, g.crs, g.ccs,
		};
	return err;
}
