// SPDX-License-Identifier: MIT
/*
 * Description: CSR layout in one buffer, descriptor checks, and
 * validation of good and of each kind of bad content.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "tap.h"

/*
 * 3 x 4 example:   [ 1 . 2 . ]
 *                  [ . . . . ]
 *                  [ . 3 . 4 ]
 */
static void t_fill(struct gpubuf_csr *c)
{
	static const int64_t rp[] = { 0, 2, 2, 4 }, ci[] = { 0, 2, 1, 3 };

	for (size_t i = 0; i < 4; i++) {
		if (c->index_dtype == GPUBUF_DTYPE_I64) {
			((int64_t *)gpubuf_csr_row_ptr(c))[i] = rp[i];
			((int64_t *)gpubuf_csr_col_idx(c))[i] = ci[i];
		} else {
			((int32_t *)gpubuf_csr_row_ptr(c))[i] = (int32_t)rp[i];
			((int32_t *)gpubuf_csr_col_idx(c))[i] = (int32_t)ci[i];
		}
		((float *)gpubuf_csr_values(c))[i] = (float)(i + 1);
	}
}

static void t_set(const struct gpubuf_csr *c, void *arr, size_t i, int64_t v)
{
	if (c->index_dtype == GPUBUF_DTYPE_I64)
		((int64_t *)arr)[i] = v;
	else
		((int32_t *)arr)[i] = (int32_t)v;
}

static int alloc_places_aligned_arrays(void)
{
	struct gpubuf_ctx *ctx = t_open();
	enum gpubuf_dtype it[] = { GPUBUF_DTYPE_I32, GPUBUF_DTYPE_I64 };
	struct gpubuf_csr c;

	for (int k = 0; k < 2; k++) {
		size_t is = gpubuf_dtype_size(it[k]);

		T_EQ(gpubuf_csr_alloc(ctx, 1000, 500, 3001,
				      GPUBUF_DTYPE_F64, it[k], &c), 0);
		T_EQ(gpubuf_refcount(c.buf), 1);
		T_EQ(c.row_ptr_offset % GPUBUF_CSR_ALIGN, 0);
		T_EQ(c.col_idx_offset % GPUBUF_CSR_ALIGN, 0);
		T_EQ(c.values_offset % GPUBUF_CSR_ALIGN, 0);
		T_CHECK(c.col_idx_offset >= c.row_ptr_offset + 1001 * is);
		T_CHECK(c.values_offset >= c.col_idx_offset + 3001 * is);
		T_CHECK(c.values_offset + 3001 * 8 <= gpubuf_size(c.buf));
		T_CHECK((char *)gpubuf_csr_values(&c) ==
			(char *)gpubuf_ptr(c.buf) + c.values_offset);
		/* Zeroed row_ptr is wrong only in its last entry. */
		size_t bad = 0;
		T_EQ(gpubuf_csr_validate(&c, 0, &bad), -EINVAL);
		T_EQ(bad, 1000);
		gpubuf_csr_release(&c);
		T_CHECK(c.buf == NULL);
	}
	T_EQ(gpubuf_csr_alloc(ctx, 0, 0, 0, GPUBUF_DTYPE_F32,
			      GPUBUF_DTYPE_I32, &c), 0);
	T_EQ(gpubuf_csr_validate(&c, GPUBUF_CSR_CHECK_SORTED, NULL), 0);
	gpubuf_csr_release(&c);
	gpubuf_close(ctx);
	return T_PASS;
}

static int alloc_rejects_bad_arguments(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_csr c;

	T_EQ(gpubuf_csr_alloc(ctx, 2, 2, 1, GPUBUF_DTYPE_F32,
			      GPUBUF_DTYPE_F32, &c), -EINVAL);
	T_EQ(gpubuf_csr_alloc(ctx, 2, 2, 1, (enum gpubuf_dtype)0,
			      GPUBUF_DTYPE_I32, &c), -EINVAL);
	T_EQ(gpubuf_csr_alloc(ctx, 2, 2, (size_t)INT32_MAX + 1,
			      GPUBUF_DTYPE_F32, GPUBUF_DTYPE_I32, &c), -EOVERFLOW);
	T_EQ(gpubuf_csr_alloc(ctx, 2, (size_t)INT32_MAX + 1, 1,
			      GPUBUF_DTYPE_F32, GPUBUF_DTYPE_I32, &c), -EOVERFLOW);
	T_EQ(gpubuf_csr_alloc(ctx, 2, 2, SIZE_MAX / 4, GPUBUF_DTYPE_F64,
			      GPUBUF_DTYPE_I64, &c), -EOVERFLOW);
	gpubuf_close(ctx);
	return T_PASS;
}

static int validate_accepts_good(void)
{
	struct gpubuf_ctx *ctx = t_open();
	enum gpubuf_dtype it[] = { GPUBUF_DTYPE_I32, GPUBUF_DTYPE_I64 };
	struct gpubuf_csr c;

	for (int k = 0; k < 2; k++) {
		T_EQ(gpubuf_csr_alloc(ctx, 3, 4, 4, GPUBUF_DTYPE_F32, it[k],
				      &c), 0);
		t_fill(&c);
		T_EQ(gpubuf_csr_validate(&c, 0, NULL), 0);
		T_EQ(gpubuf_csr_validate(&c, GPUBUF_CSR_CHECK_SORTED, NULL), 0);
		T_EQ(gpubuf_csr_validate(&c, 1u << 7, NULL), -EINVAL);
		gpubuf_csr_release(&c);
	}
	gpubuf_close(ctx);
	return T_PASS;
}

/* Each case breaks one rule of the example; want = (error, bad row). */
static int validate_rejects_each_defect(void)
{
	struct gpubuf_ctx *ctx = t_open();
	enum gpubuf_dtype it[] = { GPUBUF_DTYPE_I32, GPUBUF_DTYPE_I64 };
	struct {
		const char *what;
		int rp;		/* 1: row_ptr, 0: col_idx */
		size_t i;
		int64_t v;
		unsigned int flags;
		int err;
		size_t row;
	} cases[] = {
		{ "row_ptr[0] != 0", 1, 0, 1, 0, -EINVAL, 0 },
		{ "row_ptr decreasing", 1, 2, 1, 0, -EINVAL, 1 },
		{ "row_ptr above nnz", 1, 2, 5, 0, -ERANGE, 1 },
		{ "row_ptr[rows] != nnz", 1, 3, 3, 0, -EINVAL, 3 },
		{ "col >= cols", 0, 3, 4, 0, -ERANGE, 2 },
		{ "col negative", 0, 0, -1, 0, -ERANGE, 0 },
		{ "unsorted row", 0, 2, 3, GPUBUF_CSR_CHECK_SORTED, -EINVAL, 2 },
		{ "duplicate col", 0, 1, 0, GPUBUF_CSR_CHECK_SORTED, -EINVAL, 0 },
	};
	struct gpubuf_csr c;

	for (int k = 0; k < 2; k++) {
		T_EQ(gpubuf_csr_alloc(ctx, 3, 4, 4, GPUBUF_DTYPE_F32, it[k],
				      &c), 0);
		for (size_t n = 0; n < sizeof(cases) / sizeof(cases[0]); n++) {
			size_t row = 99;
			int err;

			t_fill(&c);
			t_set(&c, cases[n].rp ? gpubuf_csr_row_ptr(&c)
					      : gpubuf_csr_col_idx(&c),
			      cases[n].i, cases[n].v);
			err = gpubuf_csr_validate(&c, cases[n].flags, &row);
			if (err != cases[n].err || row != cases[n].row) {
				printf("# %s: got %d row %zu\n", cases[n].what,
				       err, row);
				return T_FAIL;
			}
		}
		/* Unsorted is fine when not asked for. */
		t_fill(&c);
		t_set(&c, gpubuf_csr_col_idx(&c), 2, 3);
		T_EQ(gpubuf_csr_validate(&c, 0, NULL), 0);
		gpubuf_csr_release(&c);
	}
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Issue 7 item 8: validate read row_ptr[r] once as row r - 1's end and
 * again as row r's start. A writer changing it in between (another
 * thread, process or the GPU: these buffers are shared by design) made it
 * index col_idx at -100000000 (SIGSEGV). Here a thread flips row pointers
 * between good and wild values while validate runs in a loop, for a
 * bounded time; every verdict must be one of the documented ones.
 */
/*
 * Row T_RACE_LONG has T_RACE_COLS entries, every other row one, so a
 * validator that reads row_ptr[T_RACE_LONG + 1] as that row's end and
 * again, after scanning the row, as the next row's start gives the writer
 * a wide window to change it in between.
 */
#define T_RACE_ROWS	64
#define T_RACE_LONG	31
#define T_RACE_COLS	4096
#define T_RACE_NNZ	(T_RACE_ROWS - 1 + T_RACE_COLS)
#define T_RACE_WILD	(-100000000)

struct t_flipper {
	int32_t *rp;
	int32_t good;
	int stop;
	unsigned long flips;
};

static void *t_flip(void *arg)
{
	struct t_flipper *f = arg;
	int32_t *p = &f->rp[T_RACE_LONG + 1];

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		__atomic_store_n(p, T_RACE_WILD, __ATOMIC_RELAXED);
		__atomic_store_n(p, f->good, __ATOMIC_RELAXED);
		f->flips++;
	}
	return NULL;
}

static double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int validate_survives_concurrent_writer(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct t_flipper f = { 0 };
	unsigned long runs = 0, ok = 0, bad = 0;
	struct gpubuf_csr c;
	int32_t *rp, *ci, n = 0;
	pthread_t th;
	double end;
	int err = 0;

	T_EQ(gpubuf_csr_alloc(ctx, T_RACE_ROWS, T_RACE_COLS, T_RACE_NNZ,
			      GPUBUF_DTYPE_F32, GPUBUF_DTYPE_I32, &c), 0);
	rp = gpubuf_csr_row_ptr(&c);
	ci = gpubuf_csr_col_idx(&c);
	for (int32_t r = 0; r < T_RACE_ROWS; r++) {
		int32_t len = r == T_RACE_LONG ? T_RACE_COLS : 1;

		rp[r] = n;
		for (int32_t k = 0; k < len; k++)
			ci[n++] = k;
	}
	rp[T_RACE_ROWS] = n;
	T_EQ(n, T_RACE_NNZ);
	T_EQ(gpubuf_csr_validate(&c, GPUBUF_CSR_CHECK_SORTED, NULL), 0);

	f.rp = rp;
	f.good = rp[T_RACE_LONG + 1];
	T_EQ(pthread_create(&th, NULL, t_flip, &f), 0);
	end = t_now() + 1.0;
	while (runs < 1000000 && (runs % 256 || t_now() < end)) {
		err = gpubuf_csr_validate(&c, GPUBUF_CSR_CHECK_SORTED, NULL);
		if (err && err != -EINVAL && err != -ERANGE)
			break;
		runs++;
		err ? bad++ : ok++;
	}
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
	T_EQ(pthread_join(th, NULL), 0);
	printf("# %lu validations (%lu valid, %lu invalid), %lu flips\n",
	       runs, ok, bad, f.flips);
	T_CHECK(err == 0 || err == -EINVAL || err == -ERANGE);
	T_EQ(gpubuf_csr_validate(&c, GPUBUF_CSR_CHECK_SORTED, NULL), 0);
	gpubuf_csr_release(&c);
	gpubuf_close(ctx);
	return T_PASS;
}

static int view_checks_descriptor(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_csr c;
	struct gpubuf *buf;
	const enum gpubuf_dtype F = GPUBUF_DTYPE_F32, I = GPUBUF_DTYPE_I32;

	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	T_EQ(gpubuf_csr_view(buf, 3, 4, 4, F, I, 0, 64, 128, &c), 0);
	T_EQ(gpubuf_refcount(buf), 1);		/* borrowed */
	T_EQ(gpubuf_csr_view(buf, 3, 4, 4, F, I, 2, 64, 128, &c), -EINVAL);
	T_EQ(gpubuf_csr_view(buf, 3, 4, 4, F, I, 0, 8, 128, &c), -EINVAL);
	T_EQ(gpubuf_csr_view(buf, 3, 4, 4, F, I, 0, 64, 4084, &c), -ERANGE);
	T_EQ(gpubuf_csr_view(buf, 3, 4, 4, F, I, 0, SIZE_MAX - 3, 128, &c),
	     -ERANGE);
	T_EQ(gpubuf_csr_view(buf, 3, 4, 4, F, GPUBUF_DTYPE_U32, 0, 64, 128,
			     &c), -EINVAL);
	T_EQ(gpubuf_csr_view(buf, 3, 4, (size_t)INT32_MAX + 1, F, I, 0, 64,
			     128, &c), -EOVERFLOW);
	T_EQ(gpubuf_csr_view(NULL, 3, 4, 4, F, I, 0, 64, 128, &c), -EINVAL);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(alloc_places_aligned_arrays),
		T_TEST(alloc_rejects_bad_arguments),
		T_TEST(validate_accepts_good),
		T_TEST(validate_rejects_each_defect),
		T_TEST(validate_survives_concurrent_writer),
		T_TEST(view_checks_descriptor),
	};

	return T_RUN(tests);
}
