// SPDX-License-Identifier: MIT
/*
 * hsa mode: the timed operations. HSA has no stream events, so a sample
 * is timed on the host clock: op->iters copies, each submitted with
 * hsa_amd_memory_async_copy once the previous one signalled completion
 * (one copy in flight, as on one in-order stream). The wait for each
 * completion costs microseconds against milliseconds of copying at the
 * default 512 MiB.
 *
 * Host memory is always named by the address the GPU agent uses for it:
 * a lock's agent pointer, or the pool pointer of the fine-grained
 * system pool. Pageable memory has none: each of its copies is
 * hsa_amd_memory_lock_to_pool (the call libgpubuf locks gpubuf buffers
 * with), the copy, and hsa_amd_memory_unlock, all inside the timing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa.h"

int hm_iters(size_t bytes)
{
	uint64_t n = bytes ? GIB / bytes : 1;

	return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

void hm_why(char *buf, size_t len, const char *what, int err)
{
	const char *msg = gpubuf_last_error();

	if (msg && msg[0])
		snprintf(buf, len, "%s", msg);
	else
		snprintf(buf, len, "%s: %s", what, gpubuf_strerror(err));
}

int hm_fail(const struct hsa_bench *hb, hsa_status_t s, const char *what,
	    char *why, size_t len)
{
	int err = gpubuf_hsa_fail(hb->hsa, s, what);

	hm_why(why, len, what, err);
	return err;
}

/* Pageable memory: locked for this copy only, like gpubuf buffers are. */
static int hm_lock(struct hsa_bench *hb, const struct hm_op *op, void **p,
		   char *why, size_t len)
{
	const struct gpubuf_hsa *hsa = hb->hsa;
	hsa_agent_t gpu = hb->gpu;
	hsa_status_t s;

	if (hsa->have_pool)
		s = hsa->hsa_amd_memory_lock_to_pool(op->host->ptr, op->bytes,
						     &gpu, 1, hsa->pool, 0, p);
	else
		s = hsa->hsa_amd_memory_lock(op->host->ptr, op->bytes, &gpu, 1,
					     p);
	if (s == HSA_STATUS_SUCCESS)
		return 0;
	return hm_fail(hb, s, hsa->have_pool ? "hsa_amd_memory_lock_to_pool" :
		       "hsa_amd_memory_lock", why, len);
}

/* One copy: hsa.h. */
int hm_copy(struct hsa_bench *hb, const struct hm_op *op, char *why,
	    size_t len)
{
	const struct gpubuf_hsa *hsa = hb->hsa;
	void *host = op->host->agent_ptr;
	hsa_signal_value_t v;
	hsa_status_t s;
	int err = 0;

	if (!host) {
		err = hm_lock(hb, op, &host, why, len);
		if (err)
			return err;
	}
	hsa->hsa_signal_store_relaxed(hb->sig, 1);
	if (op->h2d)
		s = hsa->hsa_amd_memory_async_copy(op->dev, hb->gpu, host,
						   hsa->cpu, op->bytes, 0,
						   NULL, hb->sig);
	else
		s = hsa->hsa_amd_memory_async_copy(host, hsa->cpu, op->dev,
						   hb->gpu, op->bytes, 0, NULL,
						   hb->sig);
	if (s != HSA_STATUS_SUCCESS) {
		err = hm_fail(hb, s, "hsa_amd_memory_async_copy", why, len);
	} else {
		/* A wait may return early; the value says when it is done. */
		do
			v = hsa->hsa_signal_wait_scacquire(hb->sig,
							   HSA_SIGNAL_CONDITION_LT,
							   1, UINT64_MAX,
							   HSA_WAIT_STATE_BLOCKED);
		while (v > 0);
		if (v < 0) {
			snprintf(why, len, "hsa_amd_memory_async_copy: completion signal %lld (the copy failed)",
				 (long long)v);
			err = -EIO;
		}
	}
	if (!op->host->agent_ptr) {
		s = hsa->hsa_amd_memory_unlock(op->host->ptr);
		if (s != HSA_STATUS_SUCCESS && !err)
			err = hm_fail(hb, s, "hsa_amd_memory_unlock", why, len);
	}
	return err;
}

/* One sample: op->iters copies, GB/s (1e9 bytes/s) on the host clock. */
static int hm_sample(struct hsa_bench *hb, const struct hm_op *op,
		     double *gbps, char *why, size_t len)
{
	uint64_t t0 = now_ns(), t;
	int i, err;

	for (i = 0; i < op->iters; i++) {
		err = hm_copy(hb, op, why, len);
		if (err)
			return err;
	}
	t = now_ns() - t0;
	if (!t) {
		snprintf(why, len, "%d copies took no measurable time",
			 op->iters);
		return -ERANGE;
	}
	*gbps = (double)op->bytes * op->iters / (double)t;
	return 0;
}

struct result *hm_row_skip(struct hsa_bench *hb, const char *op,
			   const char *mem, uint64_t size, const char *why)
{
	struct result *r = result_add(hb->b, MODE_HSA, RES_SKIPPED);

	snprintf(r->op, sizeof(r->op), "%s", op);
	snprintf(r->memory, sizeof(r->memory), "%s", mem);
	r->size_bytes = size;
	result_reason(r, "%s", why);
	return r;
}

void hm_row(struct hsa_bench *hb, const struct hm_op *op, uint64_t size)
{
	double *v = calloc(hb->reps, sizeof(double)), x = 0;
	char why[256] = "out of memory for the measurement", sz[32];
	struct result *r;
	int i, err = v ? 0 : -ENOMEM;

	fmt_size(sz, sizeof(sz), size);
	progress("hsa: %-4s %-13s %s", op->op, op->mem, sz);
	for (i = 0; !err && i < hb->warmup + hb->reps; i++) {
		err = hm_sample(hb, op, &x, why, sizeof(why));
		if (!err && i >= hb->warmup)
			v[i - hb->warmup] = x;
	}
	if (err) {
		hm_row_skip(hb, op->op, op->mem, size, why);
		free(v);
		return;
	}
	r = result_add(hb->b, MODE_HSA, RES_OK);
	snprintf(r->op, sizeof(r->op), "%s", op->op);
	snprintf(r->memory, sizeof(r->memory), "%s", op->mem);
	r->size_bytes = size;
	r->threads = 1;
	r->reps = hb->reps;
	r->numa_node = op->numa_node;
	r->metric = "gb_per_s";
	stats(v, hb->reps, &r->med, &r->min, &r->max);
	free(v);
}

void hm_ratio(struct hsa_bench *hb, int idx, const struct hm_op *a,
	      const struct hm_op *b)
{
	double *v = calloc(2 * (size_t)hb->reps, sizeof(double)), x;
	const struct hm_op *side[2] = { a, b };
	char why[256];
	int i, s, err;

	if (!v) {
		ratio_fail(&hb->b->rat[idx], "out of memory for the measurement");
		return;
	}
	progress("hsa: ratio %s", hb->b->rat[idx].name);
	for (i = 0; i < hb->warmup + hb->reps; i++) {
		for (s = 0; s < 2; s++) {
			err = hm_sample(hb, side[s], &x, why, sizeof(why));
			if (err) {
				ratio_fail(&hb->b->rat[idx],
					   "interleaved run: %s %s: %s",
					   side[s]->op, side[s]->mem, why);
				goto out;
			}
			if (i >= hb->warmup)
				v[2 * (i - hb->warmup) + s] = x;
		}
	}
	ratio_pairs(&hb->b->rat[idx], v, hb->reps);
out:
	free(v);
}
