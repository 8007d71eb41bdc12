// SPDX-License-Identifier: MIT
/*
 * Description: dense matrix views: bounds and overflow rejection,
 * alignment of gpubuf_matrix_alloc(), sub-views, transposes, element
 * conversion, and a property test of random view chains against naive
 * index arithmetic.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "tap.h"

static const enum gpubuf_dtype t_dtypes[] = {
	GPUBUF_DTYPE_F16, GPUBUF_DTYPE_BF16, GPUBUF_DTYPE_F32,
	GPUBUF_DTYPE_F64, GPUBUF_DTYPE_I8, GPUBUF_DTYPE_U8, GPUBUF_DTYPE_I16,
	GPUBUF_DTYPE_U16, GPUBUF_DTYPE_I32, GPUBUF_DTYPE_U32,
	GPUBUF_DTYPE_I64, GPUBUF_DTYPE_U64, GPUBUF_DTYPE_COMPLEX64,
	GPUBUF_DTYPE_COMPLEX128,
};
#define T_NDTYPES (sizeof(t_dtypes) / sizeof(t_dtypes[0]))

static int dtype_sizes(void)
{
	static const size_t want[] = { 2, 2, 4, 8, 1, 1, 2, 2, 4, 4, 8, 8,
				       8, 16 };

	for (size_t i = 0; i < T_NDTYPES; i++)
		T_EQ(gpubuf_dtype_size(t_dtypes[i]), want[i]);
	T_EQ(gpubuf_dtype_size((enum gpubuf_dtype)0), 0);
	T_EQ(gpubuf_dtype_size((enum gpubuf_dtype)99), 0);
	return T_PASS;
}

static int view_accepts_exact_fit(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;
	struct gpubuf *buf;
	size_t sz;

	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	sz = gpubuf_size(buf);
	/* Last element ends exactly at the end of the buffer. */
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, sz / 128, 32, 32,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_CHECK(gpubuf_matrix_data(&m) == gpubuf_ptr(buf));
	T_CHECK((char *)gpubuf_matrix_elem(&m, m.rows - 1, 31) + 4 ==
		(char *)gpubuf_ptr(buf) + sz);
	T_CHECK(gpubuf_matrix_elem(&m, m.rows, 0) == NULL);
	T_CHECK(gpubuf_matrix_elem(&m, 0, 32) == NULL);
	T_EQ(gpubuf_matrix_view(buf, 4, GPUBUF_DTYPE_F32, sz / 128, 32, 32,
				GPUBUF_ROW_MAJOR, &m), -ERANGE);
	/* ld padding beyond the last row's cols does not need to fit. */
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_U8, 2, 10, sz - 10,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_U8, 2, 11, sz - 10,
				GPUBUF_ROW_MAJOR, &m), -ERANGE);
	T_EQ(gpubuf_refcount(buf), 1);	/* views borrow */
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int view_rejects_bad_geometry(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, sentinel;
	struct gpubuf *buf;
	const size_t H = SIZE_MAX / 2 + 1;

	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	memset(&sentinel, 0xa5, sizeof(sentinel));
	m = sentinel;
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 4, 8, 7,
				GPUBUF_ROW_MAJOR, &m), -EINVAL);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 8, 4, 7,
				GPUBUF_COL_MAJOR, &m), -EINVAL);
	T_EQ(gpubuf_matrix_view(buf, 2, GPUBUF_DTYPE_F32, 1, 1, 1,
				GPUBUF_ROW_MAJOR, &m), -EINVAL);
	T_EQ(gpubuf_matrix_view(buf, 8, GPUBUF_DTYPE_COMPLEX128, 1, 1, 1,
				GPUBUF_ROW_MAJOR, &m), -EINVAL);
	T_EQ(gpubuf_matrix_view(buf, 4100, GPUBUF_DTYPE_F32, 1, 1, 1,
				GPUBUF_ROW_MAJOR, &m), -ERANGE);
	T_EQ(gpubuf_matrix_view(buf, SIZE_MAX - 3, GPUBUF_DTYPE_F32, 1, 1, 1,
				GPUBUF_ROW_MAJOR, &m), -ERANGE);
	/* Products that wrap must not look small. */
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, H + 1, 1, 2,
				GPUBUF_ROW_MAJOR, &m), -ERANGE);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F64, 1, H, H,
				GPUBUF_ROW_MAJOR, &m), -ERANGE);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_U8, SIZE_MAX, SIZE_MAX,
				SIZE_MAX, GPUBUF_COL_MAJOR, &m), -ERANGE);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_U8, 2, SIZE_MAX,
				SIZE_MAX, GPUBUF_ROW_MAJOR, &m), -ERANGE);
	T_EQ(gpubuf_matrix_view(buf, 0, (enum gpubuf_dtype)0, 1, 1, 1,
				GPUBUF_ROW_MAJOR, &m), -EINVAL);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 1, 1, 1,
				(enum gpubuf_layout)7, &m), -EINVAL);
	T_EQ(gpubuf_matrix_view(NULL, 0, GPUBUF_DTYPE_F32, 1, 1, 1,
				GPUBUF_ROW_MAJOR, &m), -EINVAL);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 1, 1, 1,
				GPUBUF_ROW_MAJOR, NULL), -EINVAL);
	T_CHECK(memcmp(&m, &sentinel, sizeof(m)) == 0);	/* untouched */
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int empty_views_are_valid(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, s;
	struct gpubuf *buf;

	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	T_EQ(gpubuf_matrix_view(buf, 4096, GPUBUF_DTYPE_F32, 0, 5, 5,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_CHECK(gpubuf_matrix_elem(&m, 0, 0) == NULL);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 3, 0, 0,
				GPUBUF_ROW_MAJOR, &m), -EINVAL);	/* ld 0 */
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 3, 0, 1,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_EQ(gpubuf_matrix_view(buf, 0, GPUBUF_DTYPE_F32, 4, 4, 4,
				GPUBUF_ROW_MAJOR, &m), 0);
	T_EQ(gpubuf_matrix_sub(&m, 4, 4, 0, 0, &s), 0);
	T_EQ(s.rows, 0);
	T_CHECK(s.offset <= gpubuf_size(buf));
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int alloc_aligns_every_row_and_column(void)
{
	static const size_t cols[] = { 1, 3, 7, 33, 257 };
	static const size_t rows[] = { 1, 5 };
	static const size_t aligns[] = { 0, 1, 64, 4096 };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;

	for (size_t d = 0; d < T_NDTYPES; d++)
	for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
	for (int lay = 0; lay < 2; lay++)
	for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++) {
		size_t es = gpubuf_dtype_size(t_dtypes[d]);
		size_t al = aligns[a] == 1 ? es : aligns[a];
		size_t want = al ? al : 256, runs;

		T_EQ(gpubuf_matrix_alloc(ctx, t_dtypes[d], rows[r], cols[c],
					 (enum gpubuf_layout)lay, al, &m), 0);
		T_EQ(gpubuf_refcount(m.buf), 1);
		T_CHECK(m.ld >= (lay == GPUBUF_ROW_MAJOR ? cols[c] : rows[r]));
		T_CHECK(m.ld * es - (lay == GPUBUF_ROW_MAJOR ? cols[c] : rows[r]) * es < want);
		runs = lay == GPUBUF_ROW_MAJOR ? rows[r] : cols[c];
		for (size_t i = 0; i < runs; i++) {
			void *p = lay == GPUBUF_ROW_MAJOR ?
				  gpubuf_matrix_elem(&m, i, 0) :
				  gpubuf_matrix_elem(&m, 0, i);
			T_CHECK(p != NULL);
			T_EQ((uintptr_t)p % want, 0);
		}
		T_CHECK(gpubuf_matrix_elem(&m, rows[r] - 1, cols[c] - 1) != NULL);
		gpubuf_matrix_release(&m);
		T_CHECK(m.buf == NULL);
	}
	gpubuf_close(ctx);
	return T_PASS;
}

static int alloc_rejects_bad_arguments(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 4, 4,
				 GPUBUF_ROW_MAJOR, 3, &m), -EINVAL);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 4, 4,
				 GPUBUF_ROW_MAJOR, 2, &m), -EINVAL);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 4, 4,
				 GPUBUF_ROW_MAJOR, 1 << 30, &m), -EINVAL);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 0, 4,
				 GPUBUF_ROW_MAJOR, 0, &m), -EINVAL);
	T_EQ(gpubuf_matrix_alloc(ctx, (enum gpubuf_dtype)42, 4, 4,
				 GPUBUF_ROW_MAJOR, 0, &m), -EINVAL);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, SIZE_MAX / 2, 3,
				 GPUBUF_ROW_MAJOR, 0, &m), -EOVERFLOW);
	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, 2, SIZE_MAX / 8,
				 GPUBUF_ROW_MAJOR, 0, &m), -EOVERFLOW);
	gpubuf_close(ctx);
	return T_PASS;
}

static int matrix_ref_and_release(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, v;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 8, 8,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_sub(&m, 1, 1, 2, 2, &v), 0);
	T_EQ(gpubuf_matrix_ref(&v), 0);		/* v now owns one too */
	T_EQ(gpubuf_refcount(m.buf), 2);
	gpubuf_matrix_release(&m);
	T_EQ(gpubuf_refcount(v.buf), 1);
	*gpubuf_matrix_f32(&v, 1, 1) = 1.5f;	/* still mapped */
	gpubuf_matrix_release(&v);
	gpubuf_close(ctx);
	return T_PASS;
}

static int sub_and_transpose_known_addresses(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m, s, t, ts;
	char *base;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, 10, 6,
				 GPUBUF_ROW_MAJOR, 64, &m), 0);
	T_EQ(m.ld, 8);				/* 6 * 8 B padded to 64 B */
	base = gpubuf_ptr(m.buf);
	T_EQ(gpubuf_matrix_sub(&m, 2, 3, 4, 2, &s), 0);
	T_EQ(s.offset, (2 * 8 + 3) * 8);
	T_CHECK(gpubuf_matrix_elem(&s, 3, 1) == base + ((5 * 8) + 4) * 8);
	T_EQ(gpubuf_matrix_transpose(&s, &t), 0);
	T_EQ(t.rows, 2);
	T_EQ(t.cols, 4);
	T_EQ(t.layout, GPUBUF_COL_MAJOR);
	T_CHECK(gpubuf_matrix_elem(&t, 1, 3) == gpubuf_matrix_elem(&s, 3, 1));
	T_CHECK(gpubuf_matrix_f64(&t, 0, 2) == gpubuf_matrix_f64(&s, 2, 0));
	T_EQ(gpubuf_matrix_sub(&t, 1, 1, 1, 3, &ts), 0);
	T_CHECK(gpubuf_matrix_data(&ts) == gpubuf_matrix_elem(&s, 1, 1));
	T_EQ(gpubuf_matrix_sub(&s, 3, 0, 2, 1, &ts), -ERANGE);
	T_EQ(gpubuf_matrix_sub(&s, 0, 1, 1, 2, &ts), -ERANGE);
	T_EQ(gpubuf_matrix_sub(&s, SIZE_MAX, 0, 2, 1, &ts), -ERANGE);
	T_EQ(gpubuf_matrix_sub(&s, 1, 0, SIZE_MAX, 1, &ts), -ERANGE);
	T_EQ(gpubuf_matrix_sub(&s, 0, 0, 1, 1, NULL), -EINVAL);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

static int get_set_convert(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;
	uint16_t *h;
	double v;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F16, 1, 16,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	h = gpubuf_matrix_data(&m);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, 1.0), 0);
	T_EQ(h[0], 0x3c00);
	T_EQ(gpubuf_matrix_set(&m, 0, 1, -2.0), 0);
	T_EQ(h[1], 0xc000);
	T_EQ(gpubuf_matrix_set(&m, 0, 2, 65504.0), 0);
	T_EQ(h[2], 0x7bff);
	T_EQ(gpubuf_matrix_set(&m, 0, 3, 65520.0), 0);	/* rounds to inf */
	T_EQ(h[3], 0x7c00);
	T_EQ(gpubuf_matrix_set(&m, 0, 4, ldexp(1, -24)), 0);
	T_EQ(h[4], 0x0001);
	T_EQ(gpubuf_matrix_set(&m, 0, 5, 1.0 / 3), 0);
	T_EQ(h[5], 0x3555);
	T_EQ(gpubuf_matrix_set(&m, 0, 6, 1.0 + ldexp(1, -11)), 0);
	T_EQ(h[6], 0x3c00);				/* tie to even */
	T_EQ(gpubuf_matrix_set(&m, 0, 7, NAN), 0);
	T_EQ(h[7] & 0x7c00, 0x7c00);
	T_CHECK(h[7] & 0x3ff);
	T_EQ(gpubuf_matrix_set(&m, 0, 8, -0.0), 0);
	T_EQ(h[8], 0x8000);
	T_EQ(gpubuf_matrix_get(&m, 0, 5, &v), 0);
	T_CHECK(v == 0.333251953125);
	T_EQ(gpubuf_matrix_get(&m, 0, 4, &v), 0);
	T_CHECK(v == ldexp(1, -24));
	T_EQ(gpubuf_matrix_get(&m, 0, 16, &v), -ERANGE);
	T_EQ(gpubuf_matrix_set(&m, 1, 0, 0), -ERANGE);
	gpubuf_matrix_release(&m);

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_BF16, 1, 2,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	h = gpubuf_matrix_data(&m);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, 1.0), 0);
	T_EQ(h[0], 0x3f80);
	T_EQ(gpubuf_matrix_set(&m, 0, 1, 3.140625), 0);
	T_EQ(h[1], 0x4049);
	T_EQ(gpubuf_matrix_get(&m, 0, 1, &v), 0);
	T_CHECK(v == 3.140625);
	gpubuf_matrix_release(&m);

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_I8, 1, 1,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, 127), 0);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, 128), -ERANGE);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, -129), -ERANGE);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, NAN), -ERANGE);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, -128), 0);
	T_EQ(*gpubuf_matrix_i8(&m, 0, 0), -128);
	gpubuf_matrix_release(&m);

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_U64, 1, 1,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, -1), -ERANGE);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, ldexp(1, 64)), -ERANGE);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, ldexp(1, 63)), 0);
	T_CHECK(*(uint64_t *)gpubuf_matrix_data(&m) == 1ull << 63);
	gpubuf_matrix_release(&m);

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_COMPLEX64, 1, 1,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	T_EQ(gpubuf_matrix_set(&m, 0, 0, 1), -EINVAL);
	T_EQ(gpubuf_matrix_get(&m, 0, 0, &v), -EINVAL);
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Issue 7 item 11: gpubuf_matrix_set() on f32 did (float)value, which ISO
 * C leaves undefined beyond the float range. The result is now defined as
 * IEEE 754 round-to-nearest gives it (and as f16/bf16 already did).
 */
static int f32_set_beyond_range_is_defined(void)
{
	static const struct {
		double in;
		uint32_t bits;
	} cases[] = {
		{ 1e300, 0x7f800000 },			/* +inf */
		{ -1e300, 0xff800000 },			/* -inf */
		{ DBL_MAX, 0x7f800000 },
		{ INFINITY, 0x7f800000 },
		{ 0x1.ffffffp127, 0x7f800000 },		/* tie: to even, inf */
		{ 0x1.fffffefffffffp127, 0x7f7fffff },	/* just below: FLT_MAX */
		{ -0x1.fffffe8p127, 0xff7fffff },	/* -FLT_MAX */
		{ FLT_MAX, 0x7f7fffff },
		{ 1.0, 0x3f800000 },
		{ 1e-50, 0x00000000 },			/* underflow to 0 */
		{ -1e-50, 0x80000000 },			/* keeps the sign */
	};
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_matrix m;
	uint32_t bits;
	double v;

	T_EQ(gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F32, 1, 1,
				 GPUBUF_ROW_MAJOR, 0, &m), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T_EQ(gpubuf_matrix_set(&m, 0, 0, cases[i].in), 0);
		memcpy(&bits, gpubuf_matrix_data(&m), sizeof(bits));
		if (bits != cases[i].bits) {
			printf("# %a -> %#x, expected %#x\n", cases[i].in,
			       bits, cases[i].bits);
			return T_FAIL;
		}
	}
	T_EQ(gpubuf_matrix_set(&m, 0, 0, NAN), 0);
	T_EQ(gpubuf_matrix_get(&m, 0, 0, &v), 0);
	T_CHECK(isnan(v) && !signbit(v));
	T_EQ(gpubuf_matrix_set(&m, 0, 0, -NAN), 0);
	T_EQ(gpubuf_matrix_get(&m, 0, 0, &v), 0);
	T_CHECK(isnan(v) && signbit(v));
	gpubuf_matrix_release(&m);
	gpubuf_close(ctx);
	return T_PASS;
}

/* xorshift64*: fixed seed, so a failure reproduces. */
static uint64_t t_rng = 0x9e3779b97f4a7c15ull;

static uint64_t t_rand(uint64_t n)
{
	t_rng ^= t_rng >> 12;
	t_rng ^= t_rng << 25;
	t_rng ^= t_rng >> 27;
	return n ? (t_rng * 2685821657736338717ull) % n : 0;
}

/*
 * Naive model: a derived view maps its (i, j) to base element
 * (r0 + i, c0 + j), or (r0 + j, c0 + i) when transposed an odd number of
 * times. Addresses come from the base geometry with plain arithmetic.
 */
struct t_model {
	size_t r0, c0;
	int flipped;
};

static char *t_naive(const struct gpubuf_matrix *base,
		     const struct t_model *md, size_t i, size_t j)
{
	size_t br = md->r0 + (md->flipped ? j : i);
	size_t bc = md->c0 + (md->flipped ? i : j);
	size_t idx = base->layout == GPUBUF_ROW_MAJOR ? br * base->ld + bc
						     : bc * base->ld + br;

	return (char *)gpubuf_ptr(base->buf) + base->offset +
	       idx * gpubuf_dtype_size(base->dtype);
}

static int t_check_view(const struct gpubuf_matrix *base,
			const struct t_model *md,
			const struct gpubuf_matrix *v)
{
	size_t pts[6][2] = {
		{ 0, 0 }, { v->rows - 1, 0 }, { 0, v->cols - 1 },
		{ v->rows - 1, v->cols - 1 },
		{ t_rand(v->rows), t_rand(v->cols) },
		{ t_rand(v->rows), t_rand(v->cols) },
	};

	if (!v->rows || !v->cols)
		return gpubuf_matrix_elem(v, 0, 0) == NULL ? T_PASS : T_FAIL;
	for (int k = 0; k < 6; k++) {
		char *want = t_naive(base, md, pts[k][0], pts[k][1]);

		if (gpubuf_matrix_elem(v, pts[k][0], pts[k][1]) != want) {
			printf("# element (%zu,%zu) mismatch\n", pts[k][0],
			       pts[k][1]);
			return T_FAIL;
		}
		if (v->dtype == GPUBUF_DTYPE_F32 &&
		    (char *)gpubuf_matrix_f32(v, pts[k][0], pts[k][1]) != want)
			return T_FAIL;
	}
	if (gpubuf_matrix_data(v) != t_naive(base, md, 0, 0))
		return T_FAIL;
	if (gpubuf_matrix_elem(v, v->rows, 0) || gpubuf_matrix_elem(v, 0, v->cols))
		return T_FAIL;
	return T_PASS;
}

static int property_random_view_chains(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	size_t size;
	int accepted = 0, rejected = 0;

	T_EQ(gpubuf_alloc(ctx, 1 << 16, NULL, &buf), 0);
	size = gpubuf_size(buf);
	for (int it = 0; it < 20000; it++) {
		enum gpubuf_dtype dt = t_dtypes[t_rand(T_NDTYPES)];
		enum gpubuf_layout lay = (enum gpubuf_layout)t_rand(2);
		size_t es = gpubuf_dtype_size(dt);
		size_t rows = 1 + t_rand(64), cols = 1 + t_rand(64);
		size_t inner = lay == GPUBUF_ROW_MAJOR ? cols : rows;
		size_t outer = lay == GPUBUF_ROW_MAJOR ? rows : cols;
		size_t ld = inner + t_rand(16);
		size_t off = t_rand(size / es) * es;
		/* Small operands: 64 bits cannot wrap, even on 32-bit. */
		uint64_t end = off + ((uint64_t)(outer - 1) * ld + inner) * es;
		struct gpubuf_matrix base, v, n;
		struct t_model md = { 0, 0, 0 };
		int err = gpubuf_matrix_view(buf, off, dt, rows, cols, ld,
					     lay, &base);

		if (end > size) {	/* the model says it cannot fit */
			T_EQ(err, -ERANGE);
			rejected++;
			continue;
		}
		T_EQ(err, 0);
		accepted++;
		v = base;
		T_EQ(t_check_view(&base, &md, &v), T_PASS);
		for (int step = 0; step < 4; step++) {
			if (t_rand(3) == 0) {
				T_EQ(gpubuf_matrix_transpose(&v, &n), 0);
				md.flipped = !md.flipped;
			} else {
				size_t r0 = t_rand(v.rows + 2);
				size_t c0 = t_rand(v.cols + 2);
				size_t nr = t_rand(v.rows + 2);
				size_t nc = t_rand(v.cols + 2);

				err = gpubuf_matrix_sub(&v, r0, c0, nr, nc, &n);
				if (r0 + nr > v.rows || c0 + nc > v.cols) {
					T_EQ(err, -ERANGE);
					continue;
				}
				T_EQ(err, 0);
				if (!nr || !nc) {
					T_EQ(t_check_view(&base, &md, &n), T_PASS);
					break;
				}
				md.r0 += md.flipped ? c0 : r0;
				md.c0 += md.flipped ? r0 : c0;
			}
			v = n;
			T_EQ(t_check_view(&base, &md, &v), T_PASS);
		}
	}
	printf("# %d views accepted, %d rejected\n", accepted, rejected);
	T_CHECK(accepted > 1000 && rejected > 1000);	/* both sides exercised */
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(dtype_sizes),
		T_TEST(view_accepts_exact_fit),
		T_TEST(view_rejects_bad_geometry),
		T_TEST(empty_views_are_valid),
		T_TEST(alloc_aligns_every_row_and_column),
		T_TEST(alloc_rejects_bad_arguments),
		T_TEST(matrix_ref_and_release),
		T_TEST(sub_and_transpose_known_addresses),
		T_TEST(get_set_convert),
		T_TEST(f32_set_beyond_range_is_defined),
		T_TEST(property_random_view_chains),
	};

	return T_RUN(tests);
}
