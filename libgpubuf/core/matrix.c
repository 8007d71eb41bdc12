// SPDX-License-Identifier: MIT
/*
 * Dense matrix views. Every bound is checked with overflow-checked
 * arithmetic, because rows, cols, ld and offset come from callers and a
 * wrapped product would make an out-of-bounds view look valid.
 *
 * Empty matrices (rows or cols 0) are valid views: they have no elements,
 * their offset must still lie within the buffer, and ld >= max(1, inner).
 * gpubuf_matrix_alloc() refuses them because a buffer cannot be empty.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/internal.h"

GPUBUF_EXPORT size_t gpubuf_dtype_size(enum gpubuf_dtype dtype)
{
	switch (dtype) {
	case GPUBUF_DTYPE_I8:
	case GPUBUF_DTYPE_U8:
		return 1;
	case GPUBUF_DTYPE_F16:
	case GPUBUF_DTYPE_BF16:
	case GPUBUF_DTYPE_I16:
	case GPUBUF_DTYPE_U16:
		return 2;
	case GPUBUF_DTYPE_F32:
	case GPUBUF_DTYPE_I32:
	case GPUBUF_DTYPE_U32:
		return 4;
	case GPUBUF_DTYPE_F64:
	case GPUBUF_DTYPE_I64:
	case GPUBUF_DTYPE_U64:
	case GPUBUF_DTYPE_COMPLEX64:
		return 8;
	case GPUBUF_DTYPE_COMPLEX128:
		return 16;
	}
	return 0;
}

/* Elements along the contiguous direction, and the number of those runs. */
static size_t gpubuf_inner(const struct gpubuf_matrix *m)
{
	return m->layout == GPUBUF_ROW_MAJOR ? m->cols : m->rows;
}

static size_t gpubuf_outer(const struct gpubuf_matrix *m)
{
	return m->layout == GPUBUF_ROW_MAJOR ? m->rows : m->cols;
}

/* -EINVAL: malformed description; -ERANGE: does not fit in its buffer. */
int gpubuf_matrix_check(const struct gpubuf_matrix *m)
{
	size_t es, inner, outer, t, end;

	if (!m || !m->buf)
		return -EINVAL;
	es = gpubuf_dtype_size(m->dtype);
	if (!es || (m->layout != GPUBUF_ROW_MAJOR &&
		    m->layout != GPUBUF_COL_MAJOR))
		return -EINVAL;
	inner = gpubuf_inner(m);
	outer = gpubuf_outer(m);
	if (m->ld < inner || m->ld < 1)
		return -EINVAL;
	/* Buffers start page aligned, so this is absolute alignment too. */
	if (m->offset % es)
		return -EINVAL;
	if (m->offset > m->buf->size)
		return -ERANGE;
	if (!inner || !outer)
		return 0;
	/* end = offset + ((outer - 1) * ld + inner) * es */
	if (__builtin_mul_overflow(outer - 1, m->ld, &t) ||
	    __builtin_add_overflow(t, inner, &t) ||
	    __builtin_mul_overflow(t, es, &t) ||
	    __builtin_add_overflow(t, m->offset, &end) ||
	    end > m->buf->size)
		return -ERANGE;
	return 0;
}

GPUBUF_EXPORT int gpubuf_matrix_view(struct gpubuf *buf, size_t offset,
				     enum gpubuf_dtype dtype, size_t rows,
				     size_t cols, size_t ld,
				     enum gpubuf_layout layout,
				     struct gpubuf_matrix *out)
{
	struct gpubuf_matrix m = {
		.buf = buf, .offset = offset, .rows = rows, .cols = cols,
		.ld = ld, .dtype = dtype, .layout = layout,
	};
	int err;

	if (!out)
		return -EINVAL;
	err = gpubuf_matrix_check(&m);
	if (err)
		return err;
	*out = m;
	return 0;
}

/*
 * The leading dimension is padded so each row (col-major: column) starts
 * on an align boundary. align is capped at the page size because that is
 * all the alignment an mmap() base guarantees.
 */
GPUBUF_EXPORT int gpubuf_matrix_alloc_opts(struct gpubuf_ctx *ctx,
					   enum gpubuf_dtype dtype, size_t rows,
					   size_t cols,
					   enum gpubuf_layout layout,
					   size_t align,
					   const struct gpubuf_alloc_opts *opts,
					   struct gpubuf_matrix *out)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_matrix m = {
		.rows = rows, .cols = cols, .dtype = dtype, .layout = layout,
	};
	size_t es = gpubuf_dtype_size(dtype);
	size_t run, total;
	int err;

	if (!ctx || !out || !es || !rows || !cols ||
	    (layout != GPUBUF_ROW_MAJOR && layout != GPUBUF_COL_MAJOR))
		return -EINVAL;
	if (!align)
		align = 256;
	if (!gpubuf_is_pow2(align) || align < es || align > ctx->page_size)
		return -EINVAL;
	if (__builtin_mul_overflow(gpubuf_inner(&m), es, &run) ||
	    !gpubuf_align_up(run, align, &run) ||
	    __builtin_mul_overflow(gpubuf_outer(&m), run, &total))
		return -EOVERFLOW;
	m.ld = run / es;	/* exact: align is a multiple of es */
	err = gpubuf_alloc(ctx, total, opts, &m.buf);
	if (err)
		return err;
	*out = m;
	return 0;
}

GPUBUF_EXPORT int gpubuf_matrix_alloc(struct gpubuf_ctx *ctx,
				      enum gpubuf_dtype dtype, size_t rows,
				      size_t cols, enum gpubuf_layout layout,
				      size_t align, struct gpubuf_matrix *out)
{
	return gpubuf_matrix_alloc_opts(ctx, dtype, rows, cols, layout, align,
					NULL, out);
}

GPUBUF_EXPORT int gpubuf_matrix_ref(const struct gpubuf_matrix *m)
{
	int err = gpubuf_matrix_check(m);

	if (err)
		return err;
	gpubuf_ref(m->buf);
	return 0;
}

GPUBUF_EXPORT void gpubuf_matrix_release(struct gpubuf_matrix *m)
{
	GPUBUF_KEEP_ERRNO;
	if (!m)
		return;
	gpubuf_unref(m->buf);
	memset(m, 0, sizeof(*m));
}

GPUBUF_EXPORT int gpubuf_matrix_sub(const struct gpubuf_matrix *m,
				    size_t row0, size_t col0, size_t rows,
				    size_t cols, struct gpubuf_matrix *out)
{
	struct gpubuf_matrix s;
	size_t end, idx;
	int err;

	if (!out)
		return -EINVAL;
	err = gpubuf_matrix_check(m);
	if (err)
		return err;
	if (__builtin_add_overflow(row0, rows, &end) || end > m->rows ||
	    __builtin_add_overflow(col0, cols, &end) || end > m->cols)
		return -ERANGE;
	s = *m;
	s.rows = rows;
	s.cols = cols;
	/* An empty view has no (0,0); keep the parent's in-bounds offset. */
	if (rows && cols) {
		idx = m->layout == GPUBUF_ROW_MAJOR ? row0 * m->ld + col0
						    : col0 * m->ld + row0;
		/* Cannot overflow: (row0, col0) is inside the checked parent. */
		s.offset = m->offset + idx * gpubuf_dtype_size(m->dtype);
	}
	*out = s;
	return 0;
}

GPUBUF_EXPORT int gpubuf_matrix_transpose(const struct gpubuf_matrix *m,
					  struct gpubuf_matrix *out)
{
	struct gpubuf_matrix t;
	int err;

	if (!out)
		return -EINVAL;
	err = gpubuf_matrix_check(m);
	if (err)
		return err;
	t = *m;
	t.rows = m->cols;
	t.cols = m->rows;
	t.layout = m->layout == GPUBUF_ROW_MAJOR ? GPUBUF_COL_MAJOR
						 : GPUBUF_ROW_MAJOR;
	*out = t;
	return 0;
}

GPUBUF_EXPORT void *gpubuf_matrix_data(const struct gpubuf_matrix *m)
{
	if (!m || !m->buf)
		return NULL;
	return (char *)m->buf->ptr + m->offset;
}

GPUBUF_EXPORT void *gpubuf_matrix_elem(const struct gpubuf_matrix *m,
				       size_t r, size_t c)
{
	size_t idx;

	if (gpubuf_matrix_check(m) || r >= m->rows || c >= m->cols)
		return NULL;
	idx = m->layout == GPUBUF_ROW_MAJOR ? r * m->ld + c : c * m->ld + r;
	return (char *)m->buf->ptr + m->offset +
	       idx * gpubuf_dtype_size(m->dtype);
}

/* ---- small float formats, without libm ---- */

static double gpubuf_pow2(int k)
{
	uint64_t bits = (uint64_t)(k + 1023) << 52;	/* |k| <= 1022 here */
	double d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

static uint32_t gpubuf_rne(double q)	/* round half to even, q >= 0 */
{
	uint32_t i = (uint32_t)q;
	double frac = q - i;

	if (frac > 0.5 || (frac == 0.5 && (i & 1)))
		i++;
	return i;
}

/* IEEE-style binary format with mbits mantissa and ebits exponent bits. */
static uint16_t gpubuf_encode(double v, int mbits, int ebits)
{
	int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias, e;
	uint32_t sign = (uint32_t)!!signbit(v) << (mbits + ebits);
	uint32_t inf = ((1u << ebits) - 1) << mbits, n;
	double a = v < 0 ? -v : v;
	uint64_t bits;

	if (isnan(v))
		return sign | inf | (1u << (mbits - 1));
	if (a >= (2.0 - gpubuf_pow2(-(mbits + 1))) * gpubuf_pow2(bias))
		return sign | inf;
	if (a < gpubuf_pow2(emin))	/* subnormal; n may carry to normal */
		return sign | gpubuf_rne(a * gpubuf_pow2(mbits - emin));
	memcpy(&bits, &a, sizeof(bits));
	e = (int)((bits >> 52) & 0x7ff) - 1023;
	n = gpubuf_rne(a * gpubuf_pow2(mbits - e));
	/* n == 2 << mbits carries into the exponent, as it should. */
	return sign | ((((uint32_t)(e + bias)) << mbits) + n - (1u << mbits));
}

static double gpubuf_decode(uint32_t h, int mbits, int ebits)
{
	int bias = (1 << (ebits - 1)) - 1;
	uint32_t emask = (1u << ebits) - 1, e = (h >> mbits) & emask;
	uint32_t f = h & ((1u << mbits) - 1);
	double v;

	if (!e)
		v = f * gpubuf_pow2(1 - bias - mbits);
	else if (e == emask)
		v = f ? NAN : INFINITY;
	else
		v = (f + (1u << mbits)) * gpubuf_pow2((int)e - bias - mbits);
	return (h >> (mbits + ebits)) & 1 ? -v : v;
}

/*
 * double to float with the result ISO C leaves undefined defined: beyond
 * the float range, the IEEE 754 round-to-nearest result, as f16/bf16 get.
 * FLT_MAX + half an ulp (0x1.ffffffp127) and above, a tie rounding to the
 * even infinity, become +-inf; the rest above FLT_MAX rounds down to it.
 * NaN stays NaN with its sign. In range, the cast is defined.
 */
static float gpubuf_to_f32(double v)
{
	double a = v < 0 ? -v : v;

	if (isnan(v))
		return signbit(v) ? -NAN : NAN;
	if (a >= 0x1.ffffffp127)
		return v < 0 ? -INFINITY : INFINITY;
	if (a > FLT_MAX)
		return v < 0 ? -FLT_MAX : FLT_MAX;
	return (float)v;
}

/* Element address for get/set; complex dtypes have no double form. */
static int gpubuf_elem_scalar(const struct gpubuf_matrix *m, size_t r,
			      size_t c, void **p)
{
	int err = gpubuf_matrix_check(m);

	if (err)
		return err;
	if (m->dtype == GPUBUF_DTYPE_COMPLEX64 ||
	    m->dtype == GPUBUF_DTYPE_COMPLEX128)
		return -EINVAL;
	if (r >= m->rows || c >= m->cols)
		return -ERANGE;
	*p = gpubuf_matrix_elem(m, r, c);
	return 0;
}

union gpubuf_scalar {
	uint8_t u8; int8_t i8; uint16_t u16; int16_t i16;
	uint32_t u32; int32_t i32; uint64_t u64; int64_t i64;
	float f; double d;
};

GPUBUF_EXPORT int gpubuf_matrix_get(const struct gpubuf_matrix *m, size_t r,
				    size_t c, double *value)
{
	union gpubuf_scalar u;
	void *p;
	int err;

	if (!value)
		return -EINVAL;
	err = gpubuf_elem_scalar(m, r, c, &p);
	if (err)
		return err;
	memcpy(&u, p, gpubuf_dtype_size(m->dtype));
	switch (m->dtype) {
	case GPUBUF_DTYPE_F16: *value = gpubuf_decode(u.u16, 10, 5); break;
	case GPUBUF_DTYPE_BF16: *value = gpubuf_decode(u.u16, 7, 8); break;
	case GPUBUF_DTYPE_F32: *value = u.f; break;
	case GPUBUF_DTYPE_F64: *value = u.d; break;
	case GPUBUF_DTYPE_I8: *value = u.i8; break;
	case GPUBUF_DTYPE_U8: *value = u.u8; break;
	case GPUBUF_DTYPE_I16: *value = u.i16; break;
	case GPUBUF_DTYPE_U16: *value = u.u16; break;
	case GPUBUF_DTYPE_I32: *value = u.i32; break;
	case GPUBUF_DTYPE_U32: *value = u.u32; break;
	case GPUBUF_DTYPE_I64: *value = (double)u.i64; break;
	case GPUBUF_DTYPE_U64: *value = (double)u.u64; break;
	default: return -EINVAL;
	}
	return 0;
}

/* Integers: the value must lie in [lo, hi); it is truncated toward 0. */
#define GPUBUF_SET_INT(field, lo, hi)					\
	do {								\
		if (!(value >= (lo) && value < (hi)))			\
			return -ERANGE;					\
		u.field = (__typeof__(u.field))value;			\
	} while (0)

GPUBUF_EXPORT int gpubuf_matrix_set(const struct gpubuf_matrix *m, size_t r,
				    size_t c, double value)
{
	union gpubuf_scalar u;
	void *p;
	int err;

	err = gpubuf_elem_scalar(m, r, c, &p);
	if (err)
		return err;
	if (m->buf->flags & GPUBUF_BUF_READONLY)
		return -EROFS;
	switch (m->dtype) {
	case GPUBUF_DTYPE_F16: u.u16 = gpubuf_encode(value, 10, 5); break;
	case GPUBUF_DTYPE_BF16: u.u16 = gpubuf_encode(value, 7, 8); break;
	case GPUBUF_DTYPE_F32: u.f = gpubuf_to_f32(value); break;
	case GPUBUF_DTYPE_F64: u.d = value; break;
	case GPUBUF_DTYPE_I8: GPUBUF_SET_INT(i8, -0x1p7, 0x1p7); break;
	case GPUBUF_DTYPE_U8: GPUBUF_SET_INT(u8, 0, 0x1p8); break;
	case GPUBUF_DTYPE_I16: GPUBUF_SET_INT(i16, -0x1p15, 0x1p15); break;
	case GPUBUF_DTYPE_U16: GPUBUF_SET_INT(u16, 0, 0x1p16); break;
	case GPUBUF_DTYPE_I32: GPUBUF_SET_INT(i32, -0x1p31, 0x1p31); break;
	case GPUBUF_DTYPE_U32: GPUBUF_SET_INT(u32, 0, 0x1p32); break;
	case GPUBUF_DTYPE_I64: GPUBUF_SET_INT(i64, -0x1p63, 0x1p63); break;
	case GPUBUF_DTYPE_U64: GPUBUF_SET_INT(u64, 0, 0x1p64); break;
	default: return -EINVAL;
	}
	memcpy(p, &u, gpubuf_dtype_size(m->dtype));
	return 0;
}
