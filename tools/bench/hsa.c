// SPDX-License-Identifier: MIT
/*
 * hsa: copy-engine H2D and D2H with hsa_amd_memory_async_copy between a
 * buffer in one AMD GPU agent's coarse-grained (device) pool and, at each
 * size (default 512 MiB):
 *  - gpubuf memory locked with gpubuf_hsa_lock for that agent;
 *  - a block of the CPU's fine-grained system pool (the anchor: the
 *    runtime's own pinned host memory), with access allowed to the agent;
 *  - pageable malloc memory, locked and unlocked around every copy
 *    (hsa_ops.c says why that is the definition);
 *  - when the context is the module's, a memfd-backend gpubuf buffer.
 * Ratios, from interleaved pairs: gpubuf over the fine-grained pool and
 * over pageable memory, each direction. Then launch latency
 * (hsa_latency.c): an AQL dispatch and its signal, and a vector add. The runtime is libgpubuf's
 * (dlopen of libhsa-runtime64.so.1). Never run on AMD hardware: only the
 * stand-in runtime of tests/hsastub has driven it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/gpuprobe.h"
#include "../common/pcilink.h"
#include "../common/sysinfo.h"
#include "bench.h"

static struct result *hsa_unavailable(struct bench *b, const char *why)
{
	struct result *r = result_add(b, MODE_HSA, RES_UNAVAILABLE);

	snprintf(r->op, sizeof(r->op), "all");
	snprintf(r->memory, sizeof(r->memory), "-");
	r->device_count = -1;
	result_reason(r, "%s", why);
	return r;
}

#ifndef GPUBUF_HAVE_HSA

int mode_hsa(struct bench *b)
{
	hsa_unavailable(b, "gpubuf-bench was built without HSA support");
	return EXIT_UNSUPPORTED;
}

#else /* GPUBUF_HAVE_HSA */

#include "hsa.h"

static const uint64_t hsa_default_sizes[] = { 512 * MIB };

const char *const hm_names[HM_COUNT] = {
	"gpubuf", "fine_pool", "pageable", "gpubuf_memfd",
};

/* ---- memory -------------------------------------------------------------- */

/* A block of the CPU's fine-grained pool the GPU agent may access. */
static void hm_fine_get(struct hsa_bench *hb, struct hm_host *h,
			uint64_t size)
{
	const struct gpubuf_hsa *hsa = hb->hsa;
	hsa_agent_t gpu = hb->gpu;
	hsa_status_t s;
	void *p = NULL;

	if (!hsa->have_pool) {
		snprintf(h->why, sizeof(h->why),
			 "the CPU agent has no fine-grained global pool");
		return;
	}
	s = hsa->hsa_amd_memory_pool_allocate(hsa->pool, size, 0, &p);
	if (s != HSA_STATUS_SUCCESS) {
		hm_fail(hb, s, "hsa_amd_memory_pool_allocate", h->why,
			sizeof(h->why));
		return;
	}
	s = hsa->hsa_amd_agents_allow_access(1, &gpu, NULL, p);
	if (s != HSA_STATUS_SUCCESS) {
		hm_fail(hb, s, "hsa_amd_agents_allow_access", h->why,
			sizeof(h->why));
		hsa->hsa_amd_memory_pool_free(p);
		return;
	}
	h->ptr = h->agent_ptr = p;
}

/* A gpubuf buffer, touched, locked for the GPU agent. */
static void hm_gpubuf_lock(struct hsa_bench *hb, struct hm_host *h)
{
	uint64_t agent = hb->gpu.handle;
	char e[192];
	int err;

	err = gpubuf_hsa_lock(h->gb, &agent, 1, &h->agent_ptr);
	if (!err) {
		h->locked = 1;
		return;
	}
	hm_why(e, sizeof(e), "gpubuf_hsa_lock", err);
	snprintf(h->why, sizeof(h->why), "gpubuf_hsa_lock: %s", e);
	gpubuf_unref(h->gb);
	h->gb = NULL;
	h->ptr = h->agent_ptr = NULL;
}

static void hm_host_get(struct hsa_bench *hb, enum hm_mem k,
			struct hm_size *s)
{
	struct gpubuf_ctx *ctx = k == HM_MEMFD ? hb->memfd : hb->b->ctx;
	struct hm_host *h = &s->h[k];
	int err;

	if (k == HM_FINE) {
		hm_fine_get(hb, h, s->size);
	} else if (k == HM_PAGEABLE) {
		h->ptr = malloc(s->size);
		if (!h->ptr)
			snprintf(h->why, sizeof(h->why), "malloc: out of memory");
	} else if (!ctx) {
		snprintf(h->why, sizeof(h->why), "%s", hb->memfd_why);
	} else if ((err = gpubuf_alloc(ctx, s->size, BENCH_ALLOC(hb->b),
				       &h->gb))) {
		h->gb = NULL;
		snprintf(h->why, sizeof(h->why), "gpubuf_alloc: %s",
			 gpubuf_strerror(err));
	} else {
		h->ptr = gpubuf_ptr(h->gb);
	}
	if (!h->ptr)
		return;
	memset(h->ptr, 0x3c, s->size);	/* touched before anything is timed */
	h->node = sys_numa_node_of(h->ptr);
	if (h->gb)
		hm_gpubuf_lock(hb, h);
}

static void hm_host_put(struct hsa_bench *hb, enum hm_mem k,
			struct hm_host *h)
{
	if (h->locked)
		gpubuf_hsa_unlock(h->gb);
	if (h->gb)
		gpubuf_unref(h->gb);
	else if (h->ptr && k == HM_FINE)
		hb->hsa->hsa_amd_memory_pool_free(h->ptr);
	else
		free(h->ptr);
	memset(h, 0, sizeof(*h));
}

static void hm_size_put(struct hsa_bench *hb, struct hm_size *s)
{
	int k;

	if (s->dbuf)
		hb->hsa->hsa_amd_memory_pool_free(s->dbuf);
	s->dbuf = NULL;
	for (k = 0; k < HM_COUNT; k++)
		hm_host_put(hb, k, &s->h[k]);
}

/* ---- rows and ratios ----------------------------------------------------- */

static void hm_copy_op(struct hm_size *s, int h2d, enum hm_mem k,
		       struct hm_op *op)
{
	memset(op, 0, sizeof(*op));
	op->h2d = h2d;
	op->op = h2d ? "h2d" : "d2h";
	op->mem = hm_names[k];
	op->host = &s->h[k];
	op->dev = s->dbuf;
	op->bytes = s->size;
	op->iters = hm_iters(s->size);
	op->numa_node = s->h[k].node;
}

static void hm_copy_rows(struct hsa_bench *hb, struct hm_size *s)
{
	struct hm_op op;
	int d, k;

	for (d = 1; d >= 0; d--) {
		for (k = 0; k < HM_COUNT; k++) {
			hm_copy_op(s, d, k, &op);
			if (s->h[k].ptr)
				hm_row(hb, &op, s->size);
			else
				hm_row_skip(hb, op.op, op.mem, s->size,
					    s->h[k].why);
		}
	}
}

/*
 * gpubuf over the fine-grained pool and over pageable memory, H2D and
 * D2H, from interleaved pairs. s NULL: the ratio size was not measured;
 * why: the size failed.
 */
static void hm_ratios(struct hsa_bench *hb, struct hm_size *s,
		      uint64_t size, const char *why)
{
	static const struct {
		const char *name;
		int h2d;
		enum hm_mem den;
	} defs[] = {
		{ "h2d_gpubuf_vs_fine_pool", 1, HM_FINE },
		{ "h2d_gpubuf_vs_pageable", 1, HM_PAGEABLE },
		{ "d2h_gpubuf_vs_fine_pool", 0, HM_FINE },
		{ "d2h_gpubuf_vs_pageable", 0, HM_PAGEABLE },
	};
	struct hm_op a, b;
	unsigned int i;
	int idx;

	for (i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		const char *op = defs[i].h2d ? "h2d" : "d2h";

		idx = ratio_add(hb->b, MODE_HSA, defs[i].name, "gpubuf", size);
		if (why) {
			ratio_fail(&hb->b->rat[idx], "%s", why);
			continue;
		}
		if (!ratio_sides(hb->b, &hb->b->rat[idx], op, op,
				 hm_names[defs[i].den]) || !s)
			continue;
		hm_copy_op(s, defs[i].h2d, HM_GPUBUF, &a);
		hm_copy_op(s, defs[i].h2d, defs[i].den, &b);
		hm_ratio(hb, idx, &a, &b);
	}
}

static void hm_one_size(struct hsa_bench *hb, uint64_t size, int ratios)
{
	struct hm_size *s = calloc(1, sizeof(*s));
	char why[256] = "out of memory", sz[32];
	hsa_status_t st;
	int k;

	fmt_size(sz, sizeof(sz), size);
	if (!s)
		goto fail;
	s->size = size;
	if (gpu_host_size_check(size, why, sizeof(why)))
		goto fail;
	hm_host_get(hb, HM_GPUBUF, s);
	if (!s->h[HM_GPUBUF].ptr) {
		snprintf(why, sizeof(why), "%s", s->h[HM_GPUBUF].why);
		goto fail;
	}
	for (k = HM_FINE; k < HM_COUNT; k++)
		hm_host_get(hb, k, s);
	st = hb->hsa->hsa_amd_memory_pool_allocate(hb->dev_pool, size, 0,
						   &s->dbuf);
	if (st != HSA_STATUS_SUCCESS) {
		s->dbuf = NULL;
		hm_fail(hb, st, "hsa_amd_memory_pool_allocate (device pool)",
			why, sizeof(why));
		goto fail;
	}
	hm_copy_rows(hb, s);
	if (ratios)
		hm_ratios(hb, s, size, NULL);
	hm_size_put(hb, s);
	free(s);
	return;

fail:
	hm_row_skip(hb, "all", "gpubuf", size, why);
	if (ratios)
		hm_ratios(hb, NULL, size, why);
	if (s)
		hm_size_put(hb, s);
	free(s);
}

/* ---- setup --------------------------------------------------------------- */

/* The first global, coarse-grained pool the runtime allocates from. */
static hsa_status_t hm_pool_cb(hsa_amd_memory_pool_t pool, void *data)
{
	struct hsa_bench *hb = data;
	const struct gpubuf_hsa *hsa = hb->hsa;
	hsa_amd_segment_t segment;
	uint32_t flags = 0;
	bool alloc = false;
	hsa_status_t s;

	s = hsa->hsa_amd_memory_pool_get_info(pool,
					      HSA_AMD_MEMORY_POOL_INFO_SEGMENT,
					      &segment);
	if (s != HSA_STATUS_SUCCESS || segment != HSA_AMD_SEGMENT_GLOBAL)
		return s;
	s = hsa->hsa_amd_memory_pool_get_info(pool,
					      HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
					      &flags);
	if (s == HSA_STATUS_SUCCESS)
		s = hsa->hsa_amd_memory_pool_get_info(pool,
						      HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED,
						      &alloc);
	if (s != HSA_STATUS_SUCCESS ||
	    !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) || !alloc)
		return s;
	hb->dev_pool = pool;
	hb->have_dev_pool = 1;
	return HSA_STATUS_INFO_BREAK;
}

static void hm_teardown(struct hsa_bench *hb)
{
	gpubuf_close(hb->memfd);
	hb->memfd = NULL;
	if (hb->have_sig)
		hb->hsa->hsa_signal_destroy(hb->sig);
	hb->have_sig = 0;
}

/* Device pool, signal, memfd context; 0 or a reason. */
static int hm_setup(struct hsa_bench *hb, char *why, size_t len)
{
	const struct gpubuf_hsa *hsa = hb->hsa;
	char msg[160] = "";
	hsa_status_t s;

	hb->gpu = hsa->gpus[hb->dev];
	if (!hsa->cpu.handle) {
		snprintf(why, len, "the HSA runtime lists no CPU agent to copy from");
		return -ENODEV;
	}
	s = hsa->hsa_amd_agent_iterate_memory_pools(hb->gpu, hm_pool_cb, hb);
	if (s != HSA_STATUS_SUCCESS && s != HSA_STATUS_INFO_BREAK)
		return hm_fail(hb, s, "hsa_amd_agent_iterate_memory_pools",
			       why, len);
	if (!hb->have_dev_pool) {
		snprintf(why, len, "GPU agent %d has no coarse-grained global pool to allocate from",
			 hb->dev);
		return -ENODEV;
	}
	s = hsa->hsa_signal_create(1, 0, NULL, &hb->sig);
	if (s != HSA_STATUS_SUCCESS)
		return hm_fail(hb, s, "hsa_signal_create", why, len);
	hb->have_sig = 1;
	if (gpubuf_backend(hb->b->ctx) == GPUBUF_BACKEND_MEMFD) {
		snprintf(hb->memfd_why, sizeof(hb->memfd_why),
			 "the context's backend is memfd, so the gpubuf rows are memfd memory (not measured twice)");
	} else if (gpubuf_open_err(&hb->memfd, GPUBUF_OPEN_FORCE_MEMFD |
				   GPUBUF_OPEN_IGNORE_ENV, msg, sizeof(msg))) {
		hb->memfd = NULL;
		snprintf(hb->memfd_why, sizeof(hb->memfd_why),
			 "gpubuf_open(GPUBUF_OPEN_FORCE_MEMFD): %s", msg);
	}
	return 0;
}

static void hm_info_row(struct hsa_bench *hb)
{
	const struct gpubuf_hsa *hsa = hb->hsa;
	struct result *r = result_add(hb->b, MODE_HSA, RES_INFO);
	uint16_t major = 0, minor = 0;
	char name[64] = "?", dev[32], link[224], kern[240];

	/* Agent names are 64 bytes, not always terminated. */
	if (hsa->hsa_agent_get_info(hb->gpu, HSA_AGENT_INFO_NAME, name) !=
	    HSA_STATUS_SUCCESS)
		snprintf(name, sizeof(name), "?");
	name[sizeof(name) - 1] = '\0';
	snprintf(r->op, sizeof(r->op), "device");
	snprintf(r->memory, sizeof(r->memory), "-");
	if (hsa->hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MAJOR, &major) ==
	    HSA_STATUS_SUCCESS &&
	    hsa->hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MINOR, &minor) ==
	    HSA_STATUS_SUCCESS)
		snprintf(r->version, sizeof(r->version), "%u.%u", major, minor);
	else
		snprintf(r->version, sizeof(r->version), "?");
	r->device_count = hb->count;
	snprintf(dev, sizeof(dev), "hsa:%d", hb->dev);
	pci_link_text(dev, link, sizeof(link));
	gpu_kernels_text("hsa", hb->dev, kern, sizeof(kern));
	result_reason(r, "GPU agent %d of %d: %s, HSA %s, backend %s; fine-grained system pool: %s; %s; link: %s",
		      hb->dev, hb->count, name, r->version, hb->b->hdr.backend,
		      hsa->have_pool ? "yes" : "none",
		      kern[0] ? kern : "kernels: ?", link);
}

int mode_hsa(struct bench *b)
{
	struct hsa_bench hb = { .b = b };
	uint64_t sizes[MAX_SIZES], ratio_size;
	int nr, i, rc, ratios = 0;
	char why[256];

	rc = gpubuf_hsa_agents(NULL, 0, &hb.count);
	if (rc) {
		hm_why(why, sizeof(why), "gpubuf_hsa_agents", rc);
		hsa_unavailable(b, why);
		return EXIT_UNSUPPORTED;
	}
	rc = bench_need_ctx(b, MODE_HSA);
	if (rc != EXIT_OK)
		return rc;
	if (b->o.device >= hb.count) {
		fprintf(stderr, "ERROR: hsa: no HSA GPU agent %d (%d present)\n",
			b->o.device, hb.count);
		return EXIT_FAIL;
	}
	if (gpubuf_hsa_get(&hb.hsa)) {
		hm_why(why, sizeof(why), "gpubuf_hsa_get", -ENODEV);
		hsa_unavailable(b, why);
		return EXIT_UNSUPPORTED;
	}
	hb.dev = b->o.device;
	hb.reps = b->o.reps ? b->o.reps : 5;
	hb.warmup = b->o.warmup >= 0 ? b->o.warmup : 1;
	nr = bench_sizes(&b->o, hsa_default_sizes,
			 sizeof(hsa_default_sizes) / sizeof(uint64_t), sizes);
	if (hm_setup(&hb, why, sizeof(why))) {
		fprintf(stderr, "ERROR: hsa: %s\n", why);
		hm_teardown(&hb);
		return EXIT_FAIL;
	}
	hm_info_row(&hb);
	ratio_size = bench_ratio_size(&b->o, sizes, nr);
	progress_start();
	for (i = 0; i < nr; i++) {
		int take = sizes[i] == ratio_size && !ratios;

		ratios |= take;
		hm_one_size(&hb, sizes[i], take);
	}
	if (!ratios)
		hm_ratios(&hb, NULL, ratio_size, NULL);
	hl_latency(&hb);
	progress_end();
	hm_teardown(&hb);
	return EXIT_OK;
}

#endif /* GPUBUF_HAVE_HSA */
