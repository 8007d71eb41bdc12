// SPDX-License-Identifier: MIT
/*
 * Description: gpubuf_cuda_gemv/gemm and gpubuf_hsa_gemv/gemm refuse the
 * same bad operands with the same errno and the same reason, in every
 * build (with or without CUDA, nvcc, HSA or hipcc) and before any GPU
 * runtime is loaded: one table of bad inputs run against both APIs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tap.h"

/* A valid 4x3 * 3 -> 4 problem and 4x3 * 3x4 -> 4x4, in f32 row-major. */
struct t_set {
	struct gpubuf_cuda_matrix a, x, y, b, c;
};

static void t_valid(struct t_set *s)
{
	s->a = (struct gpubuf_cuda_matrix){ 0x10000, 4, 3, 3, GPUBUF_DTYPE_F32,
					    GPUBUF_ROW_MAJOR, 0, 0 };
	s->x = (struct gpubuf_cuda_matrix){ 0x20000, 3, 1, 1, GPUBUF_DTYPE_F32,
					    GPUBUF_ROW_MAJOR, 0, 0 };
	s->y = (struct gpubuf_cuda_matrix){ 0x30000, 4, 1, 1, GPUBUF_DTYPE_F32,
					    GPUBUF_ROW_MAJOR, 0, 0 };
	s->b = (struct gpubuf_cuda_matrix){ 0x40000, 3, 4, 4, GPUBUF_DTYPE_F32,
					    GPUBUF_ROW_MAJOR, 0, 0 };
	s->c = (struct gpubuf_cuda_matrix){ 0x50000, 4, 4, 4, GPUBUF_DTYPE_F32,
					    GPUBUF_ROW_MAJOR, 0, 0 };
}

/* The same operand for an HSA agent: same fields, same meaning. */
static struct gpubuf_hsa_matrix t_hsa(const struct gpubuf_cuda_matrix *m)
{
	return (struct gpubuf_hsa_matrix){ m->devptr, m->rows, m->cols, m->ld,
					   m->dtype, m->layout, m->device,
					   m->flags };
}

enum t_op { T_GEMV, T_GEMM };

struct t_bad {
	const char *what;
	enum t_op op;
	void (*mutate)(struct t_set *s);
	int err;
	const char *reason;	/* after "gpubuf_<api>_<op>: " */
};

#define T_MUT(name, body) static void name(struct t_set *s) { body; }
T_MUT(x_too_long, s->x.rows = 4)
T_MUT(y_too_short, s->y.rows = 3)
T_MUT(x_f64, s->x.dtype = GPUBUF_DTYPE_F64)
T_MUT(a_i32, s->a.dtype = GPUBUF_DTYPE_I32)
T_MUT(a_layout, s->a.layout = (enum gpubuf_layout)7)
T_MUT(a_short_ld, s->a.ld = 2)
T_MUT(y_on_a, s->y.devptr = s->a.devptr)
T_MUT(x_misaligned, s->x.devptr += 1)
T_MUT(x_null, s->x.devptr = 0)
T_MUT(y_other_device, s->y.device = 1)
T_MUT(x_not_vector, s->x.cols = 2; s->x.ld = 2)
T_MUT(y_read_only, s->y.flags = GPUBUF_CUDA_MATRIX_READ_ONLY)
T_MUT(a_wraps, s->a.devptr = UINT64_MAX - 7)
T_MUT(b_wrong_rows, s->b.rows = 4; s->b.ld = 4)
T_MUT(c_wrong_cols, s->c.cols = 3; s->c.ld = 3)
T_MUT(c_read_only, s->c.flags = GPUBUF_CUDA_MATRIX_READ_ONLY)
T_MUT(c_on_b, s->c.devptr = s->b.devptr + 8)
T_MUT(b_f64, s->b.dtype = GPUBUF_DTYPE_F64)
T_MUT(valid, (void)s)

static const struct t_bad t_table[] = {
	{ "x longer than a's columns", T_GEMV, x_too_long, -EINVAL,
	  "x has 4 elements, not 3" },
	{ "y shorter than a's rows", T_GEMV, y_too_short, -EINVAL,
	  "y has 3 elements, not 4" },
	{ "x of another dtype", T_GEMV, x_f64, -EINVAL,
	  "x differs from a in dtype or device" },
	{ "a neither f32 nor f64", T_GEMV, a_i32, -EINVAL,
	  "a dtype" },
	{ "a with no layout", T_GEMV, a_layout, -EINVAL,
	  "a has no valid layout" },
	{ "a's ld below its columns", T_GEMV, a_short_ld, -EINVAL,
	  "a has ld 2 < 3" },
	{ "y over a", T_GEMV, y_on_a, -EINVAL,
	  "the output overlaps an input" },
	{ "x misaligned", T_GEMV, x_misaligned, -EINVAL,
	  "x address 0x20001 is 0 or misaligned" },
	{ "x at 0", T_GEMV, x_null, -EINVAL, "x address 0x0" },
	{ "y on another device", T_GEMV, y_other_device, -EINVAL,
	  "y differs from a in dtype or device" },
	{ "x not a vector", T_GEMV, x_not_vector, -EINVAL,
	  "x is 3x2, not a vector" },
	{ "y read-only", T_GEMV, y_read_only, -EROFS,
	  "y is read-only for the GPU" },
	{ "a past 64-bit addresses", T_GEMV, a_wraps, -EOVERFLOW,
	  "a extends past 64-bit addresses" },
	{ "b's rows not a's columns", T_GEMM, b_wrong_rows, -EINVAL,
	  "shapes 4x3 * 4x4 -> 4x4 do not fit" },
	{ "c's columns not b's", T_GEMM, c_wrong_cols, -EINVAL,
	  "shapes 4x3 * 3x4 -> 4x3 do not fit" },
	{ "c read-only", T_GEMM, c_read_only, -EROFS,
	  "c is read-only for the GPU" },
	{ "c over b", T_GEMM, c_on_b, -EINVAL,
	  "the output overlaps an input" },
	{ "b of another dtype", T_GEMM, b_f64, -EINVAL,
	  "b differs from a in dtype or device" },
};

/* Run row on one API; 0 and its last error text, or the errno. */
static int t_call(const struct t_bad *row, int hsa, char *why, size_t len)
{
	struct t_set s;
	int err;

	t_valid(&s);
	row->mutate(&s);
	if (!hsa && row->op == T_GEMV)
		err = gpubuf_cuda_gemv(1, &s.a, &s.x, 0, &s.y, NULL);
	else if (!hsa)
		err = gpubuf_cuda_gemm(1, &s.a, &s.b, 0, &s.c, NULL);
	else {
		struct gpubuf_hsa_matrix a = t_hsa(&s.a), x = t_hsa(&s.x),
			y = t_hsa(&s.y), b = t_hsa(&s.b), c = t_hsa(&s.c);

		err = row->op == T_GEMV ?
			gpubuf_hsa_gemv(1, &a, &x, 0, &y, 0) :
			gpubuf_hsa_gemm(1, &a, &b, 0, &c, 0);
	}
	snprintf(why, len, "%s", gpubuf_last_error());
	return err;
}

static int same_refusals_for_cuda_and_hsa(void)
{
	char cw[256], hw[256], want[128];

	for (size_t i = 0; i < sizeof(t_table) / sizeof(t_table[0]); i++) {
		const struct t_bad *r = &t_table[i];
		const char *op = r->op == T_GEMV ? "gemv" : "gemm";
		int ce = t_call(r, 0, cw, sizeof(cw));
		int he = t_call(r, 1, hw, sizeof(hw));

		if (ce != r->err || he != r->err) {
			printf("# %s: CUDA %d (%s), HSA %d (%s), want %d\n",
			       r->what, ce, cw, he, hw, r->err);
			return T_FAIL;
		}
		snprintf(want, sizeof(want), "gpubuf_cuda_%s: %s", op, r->reason);
		if (strncmp(cw, want, strlen(want)))
			printf("# %s: \"%s\" does not start \"%s\"\n", r->what, cw, want);
		T_CHECK(!strncmp(cw, want, strlen(want)));
		snprintf(want, sizeof(want), "gpubuf_hsa_%s: %s", op, r->reason);
		T_CHECK(!strncmp(hw, want, strlen(want)));
		/* The same text after the function's name. */
		T_CHECK(!strcmp(strchr(cw, ':'), strchr(hw, ':')));
	}
	return T_PASS;
}

/* NULL operands: -EINVAL from both, for each position. */
static int null_operands_refused_by_both(void)
{
	struct t_set s;
	struct gpubuf_hsa_matrix a, x, y;

	t_valid(&s);
	a = t_hsa(&s.a), x = t_hsa(&s.x), y = t_hsa(&s.y);
	T_EQ(gpubuf_cuda_gemv(1, NULL, &s.x, 0, &s.y, NULL), -EINVAL);
	T_EQ(gpubuf_hsa_gemv(1, NULL, &x, 0, &y, 0), -EINVAL);
	T_EQ(gpubuf_cuda_gemv(1, &s.a, &s.x, 0, NULL, NULL), -EINVAL);
	T_EQ(gpubuf_hsa_gemv(1, &a, &x, 0, NULL, 0), -EINVAL);
	T_EQ(gpubuf_cuda_gemm(1, &s.a, NULL, 0, &s.c, NULL), -EINVAL);
	T_EQ(gpubuf_hsa_gemm(1, &a, NULL, 0, &y, 0), -EINVAL);
	T_CHECK(strstr(gpubuf_last_error(), "gpubuf_hsa_gemm: b is NULL"));
	return T_PASS;
}

/*
 * None of the refusals loaded a GPU runtime: the checks come first in
 * every build, so even the valid operands' answer (no runtime, no
 * kernels or no support) names no bad operand.
 */
static int checks_come_before_any_runtime(void)
{
	const struct t_bad v = { "valid", T_GEMV, valid, 0, "" };
	char why[256];
	void *h;
	int err;

	T_EQ(same_refusals_for_cuda_and_hsa(), T_PASS);
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	T_CHECK(h == NULL);
	h = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);
	T_CHECK(h == NULL);
	err = t_call(&v, 1, why, sizeof(why));
	printf("# valid HSA operands here: %s (%s)\n", gpubuf_strerror(err), why);
	T_CHECK(err == -ENODEV || err == -EOPNOTSUPP);
	T_CHECK(!strstr(why, "gpubuf_hsa_gemv:"));
	err = t_call(&v, 0, why, sizeof(why));
	printf("# valid CUDA operands here: %s (%s)\n", gpubuf_strerror(err), why);
	T_CHECK(err == -ENODEV || err == -EOPNOTSUPP);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(checks_come_before_any_runtime),
		T_TEST(same_refusals_for_cuda_and_hsa),
		T_TEST(null_operands_refused_by_both),
	};

	return T_RUN(tests);
}
