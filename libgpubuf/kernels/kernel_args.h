/* SPDX-License-Identifier: MIT */
/*
 * kernels/: the GEMV/GEMM source both GPU consumers build
 * (gpubuf_kernels.cu: nvcc for cuda/, hipcc for hsa/) and, here, the
 * device-independent half of gpubuf_cuda_gemv/gemm and
 * gpubuf_hsa_gemv/gemm: operand checks and the kernels' parameter lists.
 * One validator for both, so the CUDA and the HSA entry points refuse the
 * same operands with the same errno, in every build (with or without the
 * runtime's headers or the kernels), before any runtime is loaded.
 */
#ifndef GPUBUF_KERNEL_ARGS_H
#define GPUBUF_KERNEL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpubuf.h"

/*
 * An operand in some GPU's address space: struct gpubuf_cuda_matrix and
 * struct gpubuf_hsa_matrix copied field by field (device is the CUDA
 * ordinal or the HSA GPU agent index).
 */
struct gpubuf_kmat {
	uint64_t ptr;
	size_t rows;
	size_t cols;
	size_t ld;
	enum gpubuf_dtype dtype;
	enum gpubuf_layout layout;
	int device;
	unsigned int flags;	/* GPUBUF_KMAT_READ_ONLY */
};

/* The GPU may only read it (both public READ_ONLY flags are this bit). */
#define GPUBUF_KMAT_READ_ONLY	(1u << 0)

/*
 * gpubuf_kernels.cu's parameter lists, in order, 8 bytes each: these
 * structures are the CUDA params[] targets and the HSA kernarg segments.
 */
struct gpubuf_gemv_args {
	uint64_t m, k;
	double alpha;
	uint64_t a, ars, acs;
	uint64_t x, incx;
	double beta;
	uint64_t y, incy;
};

struct gpubuf_gemm_args {
	uint64_t m, n, k;
	double alpha;
	uint64_t a, ars, acs;
	uint64_t b, brs, bcs;
	double beta;
	uint64_t c, crs, ccs;
};

_Static_assert(sizeof(struct gpubuf_gemv_args) == 11 * 8, "gemv params");
_Static_assert(sizeof(struct gpubuf_gemm_args) == 14 * 8, "gemm params");

#define GPUBUF_GEMV_NARGS	11
#define GPUBUF_GEMM_NARGS	14

/* params[i] = the i-th 8-byte field of args, as cuLaunchKernel takes them. */
static inline void gpubuf_kargs_params(void *args, unsigned int n,
				       void **params)
{
	for (unsigned int i = 0; i < n; i++)
		params[i] = (char *)args + 8 * i;
}

/*
 * Check y = alpha A x + beta y (fn names the caller in the error text)
 * and fill its parameters. 0, or -EINVAL (NULL, dtype other than f32/f64
 * or not a's, another device, bad layout or ld, misaligned or NULL
 * address, shapes, output overlapping an input), -EROFS (read-only y),
 * -EOVERFLOW (an operand past 64-bit addresses), with gpubuf_last_error()
 * saying which. An empty y (m == 0) is valid: nothing to launch.
 */
int gpubuf_kargs_gemv(const char *fn, double alpha,
		      const struct gpubuf_kmat *a,
		      const struct gpubuf_kmat *x, double beta,
		      const struct gpubuf_kmat *y,
		      struct gpubuf_gemv_args *out);

/* C = alpha A B + beta C, likewise; an empty C is nothing to launch. */
int gpubuf_kargs_gemm(const char *fn, double alpha,
		      const struct gpubuf_kmat *a,
		      const struct gpubuf_kmat *b, double beta,
		      const struct gpubuf_kmat *c,
		      struct gpubuf_gemm_args *out);

/*
 * Whether the GEMV kernel walks A by columns (one lane per row, a block
 * covering a wavefront of rows) rather than by rows (a wavefront per row),
 * as gpubuf_gemv_by_cols() in gpubuf_kernels.cu decides.
 */
static inline bool gpubuf_kargs_gemv_by_cols(const struct gpubuf_gemv_args *g)
{
	return g->ars < g->acs || (g->ars == g->acs && g->k < g->m);
}

/* ceil(items / per), at most max. */
static inline uint64_t gpubuf_kargs_blocks(uint64_t items, uint64_t per,
					   uint64_t max)
{
	uint64_t b = items / per + (items % per != 0);

	return b > max ? max : b;
}

/* The public views as operands; NULL stays NULL for the checks to name. */
static inline const struct gpubuf_kmat *
gpubuf_kmat_cuda(const struct gpubuf_cuda_matrix *m, struct gpubuf_kmat *k)
{
	if (!m)
		return NULL;
	*k = (struct gpubuf_kmat){ m->devptr, m->rows, m->cols, m->ld,
				   m->dtype, m->layout, m->device, m->flags };
	return k;
}

static inline const struct gpubuf_kmat *
gpubuf_kmat_hsa(const struct gpubuf_hsa_matrix *m, struct gpubuf_kmat *k)
{
	if (!m)
		return NULL;
	*k = (struct gpubuf_kmat){ m->agent_ptr, m->rows, m->cols, m->ld,
				   m->dtype, m->layout, m->agent, m->flags };
	return k;
}

_Static_assert(GPUBUF_CUDA_MATRIX_READ_ONLY == GPUBUF_KMAT_READ_ONLY &&
	       GPUBUF_HSA_MATRIX_READ_ONLY == GPUBUF_KMAT_READ_ONLY,
	       "one read-only bit");

/*
 * The CUDA entry points' checks, shared by cuda_kernels.c and the builds
 * without CUDA or without kernels (cuda.c), which check first too.
 */
static inline int gpubuf_cuda_gemv_args(double alpha,
					const struct gpubuf_cuda_matrix *a,
					const struct gpubuf_cuda_matrix *x,
					double beta,
					const struct gpubuf_cuda_matrix *y,
					struct gpubuf_gemv_args *out)
{
	struct gpubuf_kmat ka, kx, ky;

	return gpubuf_kargs_gemv("gpubuf_cuda_gemv", alpha,
				 gpubuf_kmat_cuda(a, &ka),
				 gpubuf_kmat_cuda(x, &kx), beta,
				 gpubuf_kmat_cuda(y, &ky), out);
}

static inline int gpubuf_cuda_gemm_args(double alpha,
					const struct gpubuf_cuda_matrix *a,
					const struct gpubuf_cuda_matrix *b,
					double beta,
					const struct gpubuf_cuda_matrix *c,
					struct gpubuf_gemm_args *out)
{
	struct gpubuf_kmat ka, kb, kc;

	return gpubuf_kargs_gemm("gpubuf_cuda_gemm", alpha,
				 gpubuf_kmat_cuda(a, &ka),
				 gpubuf_kmat_cuda(b, &kb), beta,
				 gpubuf_kmat_cuda(c, &kc), out);
}

static inline int gpubuf_hsa_gemv_args(double alpha,
				       const struct gpubuf_hsa_matrix *a,
				       const struct gpubuf_hsa_matrix *x,
				       double beta,
				       const struct gpubuf_hsa_matrix *y,
				       struct gpubuf_gemv_args *out)
{
	struct gpubuf_kmat ka, kx, ky;

	return gpubuf_kargs_gemv("gpubuf_hsa_gemv", alpha,
				 gpubuf_kmat_hsa(a, &ka),
				 gpubuf_kmat_hsa(x, &kx), beta,
				 gpubuf_kmat_hsa(y, &ky), out);
}

static inline int gpubuf_hsa_gemm_args(double alpha,
				       const struct gpubuf_hsa_matrix *a,
				       const struct gpubuf_hsa_matrix *b,
				       double beta,
				       const struct gpubuf_hsa_matrix *c,
				       struct gpubuf_gemm_args *out)
{
	struct gpubuf_kmat ka, kb, kc;

	return gpubuf_kargs_gemm("gpubuf_hsa_gemm", alpha,
				 gpubuf_kmat_hsa(a, &ka),
				 gpubuf_kmat_hsa(b, &kb), beta,
				 gpubuf_kmat_hsa(c, &kc), out);
}

#endif /* GPUBUF_KERNEL_ARGS_H */
