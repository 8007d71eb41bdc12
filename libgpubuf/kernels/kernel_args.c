// SPDX-License-Identifier: MIT
/*
 * Operand checks and parameter lists of the GEMV/GEMM entry points, shared
 * by cuda_kernels.c and hsa_kernels.c (kernel_args.h says why). Compiled
 * in every build: the checks need no GPU runtime.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/internal.h"
#include "kernels/kernel_args.h"

__attribute__((format(printf, 2, 3)))
static int gpubuf_kargs_bad(int err, const char *fmt, ...)
{
	char text[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	gpubuf_error_set("%s", text);
	return err;
}

/* An operand as the kernels take it, and the bytes it spans. */
struct gpubuf_kop {
	uint64_t ptr;
	uint64_t rs, cs;	/* element strides of rows and columns */
	uint64_t lo, hi;	/* [lo, hi) spanned; lo == hi when empty */
};

/*
 * matrix.c's rules on a device view (layout, ld >= max(1, inner)), plus
 * f32 or f64, the dtype and device of the first operand (a, checked
 * first), an aligned non-zero address when there are elements, and an
 * extent within 64-bit addresses.
 */
static int gpubuf_kargs_operand(const char *fn, const char *name,
				const struct gpubuf_kmat *m,
				const struct gpubuf_kmat *first,
				struct gpubuf_kop *op)
{
	uint64_t last, t, es;
	bool row;

	if (!m)
		return gpubuf_kargs_bad(-EINVAL, "%s: %s is NULL", fn, name);
	if (m->dtype != GPUBUF_DTYPE_F32 && m->dtype != GPUBUF_DTYPE_F64)
		return gpubuf_kargs_bad(-EINVAL,
					"%s: %s dtype %d is not f32 or f64",
					fn, name, (int)m->dtype);
	if (m->dtype != first->dtype || m->device != first->device)
		return gpubuf_kargs_bad(-EINVAL,
					"%s: %s differs from a in dtype or device",
					fn, name);
	if (m->layout != GPUBUF_ROW_MAJOR && m->layout != GPUBUF_COL_MAJOR)
		return gpubuf_kargs_bad(-EINVAL, "%s: %s has no valid layout",
					fn, name);
	row = m->layout == GPUBUF_ROW_MAJOR;
	es = gpubuf_dtype_size(m->dtype);
	if (m->ld < 1 || m->ld < (row ? m->cols : m->rows))
		return gpubuf_kargs_bad(-EINVAL, "%s: %s has ld %zu < %zu", fn,
					name, m->ld, row ? m->cols : m->rows);
	op->ptr = op->lo = op->hi = m->ptr;
	op->rs = row ? m->ld : 1;
	op->cs = row ? 1 : m->ld;
	if (!m->rows || !m->cols)
		return 0;
	/* A misaligned access would fault and poison the context or queue. */
	if (!m->ptr || m->ptr % es)
		return gpubuf_kargs_bad(-EINVAL,
					"%s: %s address 0x%llx is 0 or misaligned",
					fn, name, (unsigned long long)m->ptr);
	/* hi = ptr + ((rows - 1) * rs + (cols - 1) * cs + 1) * es */
	if (__builtin_mul_overflow(m->rows - 1, op->rs, &last) ||
	    __builtin_mul_overflow(m->cols - 1, op->cs, &t) ||
	    __builtin_add_overflow(last, t, &last) ||
	    __builtin_add_overflow(last, 1, &t) ||
	    __builtin_mul_overflow(t, es, &t) ||
	    __builtin_add_overflow(t, m->ptr, &op->hi))
		return gpubuf_kargs_bad(-EOVERFLOW,
					"%s: %s extends past 64-bit addresses",
					fn, name);
	return 0;
}

/* An operand with one row or one column of len elements, and its step. */
static int gpubuf_kargs_vector(const char *fn, const char *name,
			       const struct gpubuf_kmat *v,
			       const struct gpubuf_kmat *first, size_t len,
			       struct gpubuf_kop *op, uint64_t *inc)
{
	int err = gpubuf_kargs_operand(fn, name, v, first, op);

	if (err)
		return err;
	if (v->rows != 1 && v->cols != 1)
		return gpubuf_kargs_bad(-EINVAL,
					"%s: %s is %zux%zu, not a vector", fn,
					name, v->rows, v->cols);
	/* One factor is 1: the product cannot overflow. */
	if (v->rows * v->cols != len)
		return gpubuf_kargs_bad(-EINVAL,
					"%s: %s has %zu elements, not %zu", fn,
					name, v->rows * v->cols, len);
	*inc = v->cols == 1 ? op->rs : op->cs;
	return 0;
}

/* Byte ranges, so conservative for interleaved strided views. */
static int gpubuf_kargs_no_overlap(const char *fn,
				   const struct gpubuf_kop *out,
				   const struct gpubuf_kop *in1,
				   const struct gpubuf_kop *in2)
{
	const struct gpubuf_kop *in[] = { in1, in2 };

	for (int i = 0; i < 2; i++)
		if (out->lo < out->hi && in[i]->lo < in[i]->hi &&
		    out->lo < in[i]->hi && in[i]->lo < out->hi)
			return gpubuf_kargs_bad(-EINVAL,
						"%s: the output overlaps an input",
						fn);
	return 0;
}

int gpubuf_kargs_gemv(const char *fn, double alpha,
		      const struct gpubuf_kmat *a,
		      const struct gpubuf_kmat *x, double beta,
		      const struct gpubuf_kmat *y,
		      struct gpubuf_gemv_args *out)
{
	struct gpubuf_kop oa, ox, oy;
	uint64_t incx, incy;
	int err;

	err = gpubuf_kargs_operand(fn, "a", a, a, &oa);
	if (!err)
		err = gpubuf_kargs_vector(fn, "x", x, a, a->cols, &ox, &incx);
	if (!err)
		err = gpubuf_kargs_vector(fn, "y", y, a, a->rows, &oy, &incy);
	if (!err && (y->flags & GPUBUF_KMAT_READ_ONLY))
		err = gpubuf_kargs_bad(-EROFS, "%s: y is read-only for the GPU",
				       fn);
	if (!err)
		err = gpubuf_kargs_no_overlap(fn, &oy, &oa, &ox);
	if (err)
		return err;
	*out = (struct gpubuf_gemv_args){
		.m = a->rows, .k = a->cols, .alpha = alpha,
		.a = oa.ptr, .ars = oa.rs, .acs = oa.cs,
		.x = ox.ptr, .incx = incx, .beta = beta,
		.y = oy.ptr, .incy = incy,
	};
	return 0;
}

int gpubuf_kargs_gemm(const char *fn, double alpha,
		      const struct gpubuf_kmat *a,
		      const struct gpubuf_kmat *b, double beta,
		      const struct gpubuf_kmat *c,
		      struct gpubuf_gemm_args *out)
{
	struct gpubuf_kop oa, ob, oc;
	int err;

	err = gpubuf_kargs_operand(fn, "a", a, a, &oa);
	if (!err)
		err = gpubuf_kargs_operand(fn, "b", b, a, &ob);
	if (!err)
		err = gpubuf_kargs_operand(fn, "c", c, a, &oc);
	if (err)
		return err;
	if (b->rows != a->cols || c->rows != a->rows || c->cols != b->cols)
		return gpubuf_kargs_bad(-EINVAL,
					"%s: shapes %zux%zu * %zux%zu -> %zux%zu do not fit",
					fn, a->rows, a->cols, b->rows, b->cols,
					c->rows, c->cols);
	if (c->flags & GPUBUF_KMAT_READ_ONLY)
		return gpubuf_kargs_bad(-EROFS, "%s: c is read-only for the GPU",
					fn);
	err = gpubuf_kargs_no_overlap(fn, &oc, &oa, &ob);
	if (err)
		return err;
	*out = (struct gpubuf_gemm_args){
		.m = a->rows, .n = b->cols, .k = a->cols, .alpha = alpha,
		.a = oa.ptr, .ars = oa.rs, .acs = oa.cs,
		.b = ob.ptr, .brs = ob.rs, .bcs = ob.cs, .beta = beta,
		.c = oc.ptr, .crs = oc.rs, .ccs = oc.cs,
	};
	return 0;
}
