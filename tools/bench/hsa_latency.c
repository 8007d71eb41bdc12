// SPDX-License-Identifier: MIT
/*
 * hsa mode's launch latency, the twin of cuda_latency.c: libgpubuf's GEMV
 * on 1 x 1 operands in the GPU agent's coarse-grained pool, run
 * synchronously (gpubuf_hsa_gemv() with signal 0: one AQL kernel dispatch
 * packet and the wait on its completion signal), in microseconds, median
 * and p99 of 1000 samples; and seed 002's 1M-element vector add (y = a x0
 * + y, a GEMV with k = 1) repeated 1000 times, or --reps times when given.
 * The operands are copied from a gpubuf buffer holding the byte 0x3c, a
 * finite normal f32, so the speed is data-blind. Host-timed. On the
 * stand-in runtime of the tests, whose queues complete packets without
 * running them, this measures the plumbing only; no AMD GPU has run it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa.h"

#define HL_SAMPLES	1000
#define HL_VADD_ELEMS	(1u << 20)
#define HL_VADD_REPS	1000
#define HL_VADD_BYTES	(4ULL * HL_VADD_ELEMS)

/* The source of every operand: a locked gpubuf buffer of 0x3c bytes. */
static int hl_source(struct hsa_bench *hb, struct hm_host *src, char *why,
		     size_t len)
{
	uint64_t agent = hb->gpu.handle;
	int err = gpubuf_alloc(hb->b->ctx, HL_VADD_BYTES, BENCH_ALLOC(hb->b),
			       &src->gb);

	if (err) {
		hm_why(why, len, "gpubuf_alloc", err);
		return err;
	}
	src->ptr = gpubuf_ptr(src->gb);
	memset(src->ptr, 0x3c, HL_VADD_BYTES);
	err = gpubuf_hsa_lock(src->gb, &agent, 1, &src->agent_ptr);
	if (err)
		hm_why(why, len, "gpubuf_hsa_lock", err);
	return err;
}

/* bytes of the agent's pool, copied from src; 0 or -errno with why. */
static int hl_dev_filled(struct hsa_bench *hb, const struct hm_host *src,
			 void **p, size_t bytes, char *why, size_t len)
{
	struct hm_op op = { .h2d = 1, .host = src, .bytes = bytes };
	hsa_status_t s;

	s = hb->hsa->hsa_amd_memory_pool_allocate(hb->dev_pool, bytes, 0, p);
	if (s != HSA_STATUS_SUCCESS) {
		*p = NULL;
		return hm_fail(hb, s, "hsa_amd_memory_pool_allocate", why,
			       len);
	}
	op.dev = *p;
	return hm_copy(hb, &op, why, len);
}

/* A column vector (or a 1 x 1 matrix) of f32 at an agent address. */
static struct gpubuf_hsa_matrix hl_view(const struct hsa_bench *hb, void *p,
					size_t rows)
{
	return (struct gpubuf_hsa_matrix){
		.agent_ptr = (uint64_t)(uintptr_t)p, .rows = rows, .cols = 1,
		.ld = rows, .dtype = GPUBUF_DTYPE_F32,
		.layout = GPUBUF_COL_MAJOR, .agent = hb->dev,
	};
}

/* n synchronous samples of y = A x + beta y, after the warm-up ones. */
static int hl_samples(struct hsa_bench *hb, void *const d[3], size_t rows,
		      double beta, int n, double *us, char *why, size_t len)
{
	struct gpubuf_hsa_matrix a = hl_view(hb, d[0], rows);
	struct gpubuf_hsa_matrix x = hl_view(hb, d[2], 1);
	struct gpubuf_hsa_matrix y = hl_view(hb, d[1], rows);
	int err = 0;

	for (int i = 0; !err && i < hb->warmup + n; i++) {
		uint64_t t0 = now_ns();

		err = gpubuf_hsa_gemv(1.0, &a, &x, beta, &y, 0);
		if (err)
			hm_why(why, len, "gpubuf_hsa_gemv", err);
		else if (i >= hb->warmup)
			us[i - hb->warmup] = (double)(now_ns() - t0) / 1e3;
	}
	return err;
}

/*
 * One row: A and y of rows elements, x of one, in the agent's pool, n
 * samples. The operands are freed here, whatever happened.
 */
static void hl_row(struct hsa_bench *hb, const struct hm_host *src,
		   const char *op, size_t rows, double beta, int n,
		   double *us)
{
	const size_t bytes[3] = { 4 * rows, 4 * rows, 4 };
	char why[256] = "";
	void *d[3] = { NULL };
	int err = 0;

	for (int i = 0; !err && i < 3; i++)
		err = hl_dev_filled(hb, src, &d[i], bytes[i], why,
				    sizeof(why));
	if (!err)
		err = hl_samples(hb, d, rows, beta, n, us, why, sizeof(why));
	if (err)
		hm_row_skip(hb, op, "device", bytes[0], why);
	else
		result_latency(hb->b, MODE_HSA, op, "device", bytes[0], us,
			       n);
	for (int i = 0; i < 3; i++)
		if (d[i])
			hb->hsa->hsa_amd_memory_pool_free(d[i]);
}

void hl_latency(struct hsa_bench *hb)
{
	int vadd_reps = hb->b->o.reps > 0 && hb->b->o.reps < HL_VADD_REPS ?
			hb->b->o.reps : HL_VADD_REPS;
	double *us = calloc(HL_SAMPLES, sizeof(double));
	struct hm_host src = { 0 };
	char why[256] = "out of memory for the measurement";
	int err = us ? 0 : -ENOMEM;

	progress("hsa: latency");
	if (!err)
		err = hl_source(hb, &src, why, sizeof(why));
	if (err) {
		hm_row_skip(hb, "launch_gemv_1x1", "device", 4, why);
		hm_row_skip(hb, "vadd_1m", "device", HL_VADD_BYTES, why);
	} else {
		hl_row(hb, &src, "launch_gemv_1x1", 1, 0, HL_SAMPLES, us);
		hl_row(hb, &src, "vadd_1m", HL_VADD_ELEMS, 1.0, vadd_reps, us);
	}
	if (src.gb)
		gpubuf_unref(src.gb);
	free(us);
}
