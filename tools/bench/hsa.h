/* SPDX-License-Identifier: MIT */
/*
 * hsa mode internals, shared by hsa.c (setup, memories, rows, ratios) and
 * hsa_ops.c (one copy, samples, rows, interleaved ratios). Only built
 * when libhsa-runtime-dev's headers were found; the runtime is libgpubuf's
 * table, lent to its tools by <gpubuf/tools.h>.
 */
#ifndef GPUBUF_BENCH_HSA_H
#define GPUBUF_BENCH_HSA_H

#include <gpubuf/tools.h>

#include "bench.h"

struct hsa_bench {
	struct bench *b;
	const struct gpubuf_hsa *hsa;
	int dev;			/* GPU agent index (--device) */
	int count;			/* GPU agents */
	hsa_agent_t gpu;
	hsa_amd_memory_pool_t dev_pool;	/* the GPU's coarse-grained pool */
	int have_dev_pool;
	hsa_signal_t sig;		/* each copy's completion */
	int have_sig;
	int warmup, reps;
	struct gpubuf_ctx *memfd;	/* second context, memfd backend */
	char memfd_why[192];		/* why memfd is NULL */
};

/* Host memory kinds, per size. */
enum hm_mem { HM_GPUBUF, HM_FINE, HM_PAGEABLE, HM_MEMFD, HM_COUNT };
extern const char *const hm_names[HM_COUNT];	/* the memory column */

struct hm_host {
	void *ptr;		/* CPU address; NULL: not available, why says so */
	void *agent_ptr;	/* what copies name; NULL: lock per copy */
	struct gpubuf *gb;	/* the gpubuf kinds */
	int locked;		/* gpubuf kinds: gpubuf_hsa_lock held */
	int node;
	char why[224];
};

/* One size's memory; zeroed first, and hm_size_put() frees what is set. */
struct hm_size {
	uint64_t size;
	struct hm_host h[HM_COUNT];
	void *dbuf;		/* in the GPU's coarse-grained pool */
};

/* One timed operation: op->iters copies in one direction. */
struct hm_op {
	int h2d;
	const char *op, *mem;		/* the row's names */
	const struct hm_host *host;
	void *dev;
	size_t bytes;
	int iters;
	int numa_node;			/* of host memory, -1 unknown */
};

/* hsa_ops.c */
/* Copies per sample: as many as move about 1 GiB, 1 to 256. */
int hm_iters(size_t bytes);
/* Why a call failed: libgpubuf's last error, else "what: strerror". */
void hm_why(char *buf, size_t len, const char *what, int err);
/* A failed runtime call: its errno, with why from libgpubuf's text. */
int hm_fail(const struct hsa_bench *hb, hsa_status_t s, const char *what,
	    char *why, size_t len);
/* One copy of op->bytes in op's direction, finished when it returns 0. */
int hm_copy(struct hsa_bench *hb, const struct hm_op *op, char *why,
	    size_t len);
/* Warm-up samples, then reps timed ones: one result row. */
void hm_row(struct hsa_bench *hb, const struct hm_op *op, uint64_t size);
struct result *hm_row_skip(struct hsa_bench *hb, const char *op,
			   const char *mem, uint64_t size, const char *why);
/* a and b in turns, one ratio per pair, into ratio number idx. */
void hm_ratio(struct hsa_bench *hb, int idx, const struct hm_op *a,
	      const struct hm_op *b);

/* hsa_latency.c: launch latency rows after the copies. */
void hl_latency(struct hsa_bench *hb);

#endif
