// SPDX-License-Identifier: MIT
/* Placeholder: kernel loading and launches are being written. */
#include <errno.h>

#include "cuda_driver.h"
#include "internal.h"

GPUBUF_EXPORT int gpubuf_cuda_gemv(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *x,
				   double beta,
				   const struct gpubuf_cuda_matrix *y,
				   void *stream)
{
	(void)alpha, (void)a, (void)x, (void)beta, (void)y, (void)stream;
	return -EOPNOTSUPP;
}

GPUBUF_EXPORT int gpubuf_cuda_gemm(double alpha,
				   const struct gpubuf_cuda_matrix *a,
				   const struct gpubuf_cuda_matrix *b,
				   double beta,
				   const struct gpubuf_cuda_matrix *c,
				   void *stream)
{
	(void)alpha, (void)a, (void)b, (void)beta, (void)c, (void)stream;
	return -EOPNOTSUPP;
}
