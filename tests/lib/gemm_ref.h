/* SPDX-License-Identifier: MIT */
/*
 * What the GPU GEMV/GEMM tests (cuda.c, vulkan.c) check results with:
 * deterministic operand values, a host view's element as a double, the
 * error bound of a dot product in the operand's dtype, and sub-views inside
 * padded parents. Needs tap.h.
 */
#ifndef GPUBUF_TEST_GEMM_REF_H
#define GPUBUF_TEST_GEMM_REF_H

#include <math.h>
#include <stdint.h>

/* Deterministic values with a mix of signs and magnitudes. */
static inline double t_val(size_t i, size_t j, unsigned int seed)
{
	uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(j * 40503u) ^
		     (seed * 2246822519u);

	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return ((double)(h % 2001) - 1000.0) / 256.0;
}

static inline void t_fill(const struct gpubuf_matrix *m, unsigned int seed)
{
	for (size_t r = 0; r < m->rows; r++)
		for (size_t c = 0; c < m->cols; c++)
			gpubuf_matrix_set(m, r, c, t_val(r, c, seed));
}

static inline double t_get(const struct gpubuf_matrix *m, size_t r,
			   size_t c)
{
	double v = 0;

	gpubuf_matrix_get(m, r, c, &v);
	return v;
}

/*
 * Error bound of a length-k dot product computed in the dtype, relative
 * to the magnitudes involved: |got - ref| <= 2 k u (|alpha| sum |a||b| +
 * |beta| |c|), u the unit roundoff (2^-24 for f32, 2^-53 for f64).
 */
static inline int t_close(double got, double ref, double mag, size_t k,
			  enum gpubuf_dtype dt)
{
	double u = dt == GPUBUF_DTYPE_F32 ? ldexp(1.0, -24) : ldexp(1.0, -53);

	return fabs(got - ref) <= 2.0 * (double)(k + 2) * u * mag;
}

struct t_shape {
	size_t m, n, k;
};

/*
 * A host matrix of rows x cols at (r0, c0) inside a larger, padded parent,
 * so the view is a sub-view with ld above its width and a non-zero offset.
 */
static inline int t_sub_alloc_at(struct gpubuf_ctx *ctx, enum gpubuf_dtype dt,
				 size_t rows, size_t cols,
				 enum gpubuf_layout lay, size_t r0, size_t c0,
				 struct gpubuf_matrix *parent,
				 struct gpubuf_matrix *out)
{
	int err = gpubuf_matrix_alloc(ctx, dt, rows + r0 + 1, cols + c0 + 2,
				      lay, 0, parent);

	if (err)
		return err;
	return gpubuf_matrix_sub(parent, r0, c0, rows, cols, out);
}

/* The same at (2, 3): an offset no vector load is aligned to. */
static inline int t_sub_alloc(struct gpubuf_ctx *ctx, enum gpubuf_dtype dt,
			      size_t rows, size_t cols,
			      enum gpubuf_layout lay,
			      struct gpubuf_matrix *parent,
			      struct gpubuf_matrix *out)
{
	return t_sub_alloc_at(ctx, dt, rows, cols, lay, 2, 3, parent, out);
}

#endif /* GPUBUF_TEST_GEMM_REF_H */
