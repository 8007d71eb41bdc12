// SPDX-License-Identifier: MIT
/*
 * CSR sparse matrices: three arrays in one buffer.
 *
 * Error split, shared by view and validate:
 *   -EINVAL     malformed description (dtypes, misaligned or overlapping
 *               arrays, flags) or inconsistent structure (row_ptr[0] != 0,
 *               decreasing row_ptr, row_ptr[rows] != nnz, unsorted row)
 *   -ERANGE     something points outside its range: an array past the end
 *               of the buffer, a row pointer above nnz, a column index
 *               outside [0, cols)
 *   -EOVERFLOW  rows, cols or nnz not representable in the index type
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/internal.h"

static bool gpubuf_index_ok(enum gpubuf_dtype t)
{
	return t == GPUBUF_DTYPE_I32 || t == GPUBUF_DTYPE_I64;
}

/* Byte range [off, *end) of n elements of es bytes; false on overflow. */
static bool gpubuf_extent(size_t off, size_t n, size_t es, size_t *end)
{
	size_t t;

	return !__builtin_mul_overflow(n, es, &t) &&
	       !__builtin_add_overflow(off, t, end);
}

static bool gpubuf_overlap(size_t a0, size_t a1, size_t b0, size_t b1)
{
	return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}

static int gpubuf_csr_check(const struct gpubuf_csr *c)
{
	size_t is, vs, rp_end, ci_end, v_end, rows1;
	size_t max;

	if (!c || !c->buf || !gpubuf_index_ok(c->index_dtype))
		return -EINVAL;
	vs = gpubuf_dtype_size(c->value_dtype);
	is = gpubuf_dtype_size(c->index_dtype);
	if (!vs || c->row_ptr_offset % is || c->col_idx_offset % is ||
	    c->values_offset % vs)
		return -EINVAL;
	max = c->index_dtype == GPUBUF_DTYPE_I32 ? INT32_MAX : INT64_MAX;
	if (c->rows > max || c->cols > max || c->nnz > max)
		return -EOVERFLOW;
	rows1 = c->rows + 1;	/* rows <= INT64_MAX: no wrap */
	if (!gpubuf_extent(c->row_ptr_offset, rows1, is, &rp_end) ||
	    !gpubuf_extent(c->col_idx_offset, c->nnz, is, &ci_end) ||
	    !gpubuf_extent(c->values_offset, c->nnz, vs, &v_end) ||
	    rp_end > c->buf->size || ci_end > c->buf->size ||
	    v_end > c->buf->size)
		return -ERANGE;
	if (gpubuf_overlap(c->row_ptr_offset, rp_end, c->col_idx_offset,
			   ci_end) ||
	    gpubuf_overlap(c->row_ptr_offset, rp_end, c->values_offset,
			   v_end) ||
	    gpubuf_overlap(c->col_idx_offset, ci_end, c->values_offset,
			   v_end))
		return -EINVAL;
	return 0;
}

GPUBUF_EXPORT int gpubuf_csr_view(struct gpubuf *buf, size_t rows,
				  size_t cols, size_t nnz,
				  enum gpubuf_dtype value_dtype,
				  enum gpubuf_dtype index_dtype,
				  size_t row_ptr_offset, size_t col_idx_offset,
				  size_t values_offset, struct gpubuf_csr *out)
{
	struct gpubuf_csr c = {
		.buf = buf, .rows = rows, .cols = cols, .nnz = nnz,
		.value_dtype = value_dtype, .index_dtype = index_dtype,
		.row_ptr_offset = row_ptr_offset,
		.col_idx_offset = col_idx_offset,
		.values_offset = values_offset,
	};
	int err;

	if (!out)
		return -EINVAL;
	err = gpubuf_csr_check(&c);
	if (err)
		return err;
	*out = c;
	return 0;
}

GPUBUF_EXPORT int gpubuf_csr_alloc(struct gpubuf_ctx *ctx, size_t rows,
				   size_t cols, size_t nnz,
				   enum gpubuf_dtype value_dtype,
				   enum gpubuf_dtype index_dtype,
				   struct gpubuf_csr *out)
{
	GPUBUF_KEEP_ERRNO;
	size_t is = gpubuf_dtype_size(index_dtype);
	size_t vs = gpubuf_dtype_size(value_dtype);
	size_t max, rp_end, ci_off, ci_end, v_off, v_end;
	struct gpubuf *buf;
	int err;

	if (!ctx || !out || !vs || !gpubuf_index_ok(index_dtype))
		return -EINVAL;
	max = index_dtype == GPUBUF_DTYPE_I32 ? INT32_MAX : INT64_MAX;
	if (rows > max || cols > max || nnz > max)
		return -EOVERFLOW;
	if (!gpubuf_extent(0, rows + 1, is, &rp_end) ||
	    !gpubuf_align_up(rp_end, GPUBUF_CSR_ALIGN, &ci_off) ||
	    !gpubuf_extent(ci_off, nnz, is, &ci_end) ||
	    !gpubuf_align_up(ci_end, GPUBUF_CSR_ALIGN, &v_off) ||
	    !gpubuf_extent(v_off, nnz, vs, &v_end))
		return -EOVERFLOW;
	err = gpubuf_alloc(ctx, v_end, NULL, &buf);
	if (err)
		return err;
	err = gpubuf_csr_view(buf, rows, cols, nnz, value_dtype, index_dtype,
			      0, ci_off, v_off, out);
	if (err)	/* cannot happen: the layout above is valid */
		gpubuf_unref(buf);
	return err;
}

GPUBUF_EXPORT void gpubuf_csr_release(struct gpubuf_csr *csr)
{
	GPUBUF_KEEP_ERRNO;
	if (!csr)
		return;
	gpubuf_unref(csr->buf);
	memset(csr, 0, sizeof(*csr));
}

static void *gpubuf_csr_at(const struct gpubuf_csr *c, size_t off)
{
	return c && c->buf ? (char *)c->buf->ptr + off : NULL;
}

GPUBUF_EXPORT void *gpubuf_csr_row_ptr(const struct gpubuf_csr *csr)
{
	return gpubuf_csr_at(csr, csr ? csr->row_ptr_offset : 0);
}

GPUBUF_EXPORT void *gpubuf_csr_col_idx(const struct gpubuf_csr *csr)
{
	return gpubuf_csr_at(csr, csr ? csr->col_idx_offset : 0);
}

GPUBUF_EXPORT void *gpubuf_csr_values(const struct gpubuf_csr *csr)
{
	return gpubuf_csr_at(csr, csr ? csr->values_offset : 0);
}

/*
 * One load of entry i. The arrays live in shared memory by design: another
 * thread, process or device may write them while we validate. A relaxed
 * atomic load is a single access the compiler may neither repeat nor
 * split, so a value checked is the value used.
 */
static int64_t gpubuf_index(const void *base, size_t i, bool wide)
{
	if (wide)
		return __atomic_load_n((const int64_t *)base + i,
				       __ATOMIC_RELAXED);
	return __atomic_load_n((const int32_t *)base + i, __ATOMIC_RELAXED);
}

static int gpubuf_csr_fail(size_t *bad_row, size_t row, int err)
{
	if (bad_row)
		*bad_row = row;
	return err;
}

/*
 * Each row pointer is read once and carried forward as the next row's
 * start: reading row_ptr[r] again for row r could see a different value
 * than the one checked as row r - 1's end (issue 7: a concurrent writer
 * turned a checked 0 into a col_idx index of -100000000). The verdict is
 * about one snapshot of each entry, not the array as a whole.
 */
GPUBUF_EXPORT int gpubuf_csr_validate(const struct gpubuf_csr *csr,
				      unsigned int flags, size_t *bad_row)
{
	const void *rp, *ci;
	bool wide;
	int64_t nnz, cols, lo, hi, col, prev;
	int err;

	if (flags & ~GPUBUF_CSR_VALID_FLAGS)
		return -EINVAL;
	err = gpubuf_csr_check(csr);
	if (err)
		return err;
	rp = gpubuf_csr_row_ptr(csr);
	ci = gpubuf_csr_col_idx(csr);
	wide = csr->index_dtype == GPUBUF_DTYPE_I64;
	nnz = (int64_t)csr->nnz;
	cols = (int64_t)csr->cols;

	lo = gpubuf_index(rp, 0, wide);
	if (lo != 0)
		return gpubuf_csr_fail(bad_row, 0, -EINVAL);
	for (size_t r = 0; r < csr->rows; r++, lo = hi) {
		/* Invariant: 0 <= lo <= nnz, as checked. */
		hi = gpubuf_index(rp, r + 1, wide);
		if (hi < lo)
			return gpubuf_csr_fail(bad_row, r, -EINVAL);
		if (hi > nnz)
			return gpubuf_csr_fail(bad_row, r, -ERANGE);
		prev = -1;
		for (int64_t k = lo; k < hi; k++) {
			col = gpubuf_index(ci, (size_t)k, wide);
			if (col < 0 || col >= cols)
				return gpubuf_csr_fail(bad_row, r, -ERANGE);
			if ((flags & GPUBUF_CSR_CHECK_SORTED) && col <= prev)
				return gpubuf_csr_fail(bad_row, r, -EINVAL);
			prev = col;
		}
	}
	/* lo is row_ptr[rows] as read and range-checked above. */
	if (lo != nnz)
		return gpubuf_csr_fail(bad_row, csr->rows, -EINVAL);
	return 0;
}
