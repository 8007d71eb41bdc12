// SPDX-License-Identifier: MIT
/*
 * cuda: the host<->GPU paths gpubuf exists for, on one NVIDIA GPU, at each
 * size (default 512 MiB):
 *  - cuMemHostRegister + unregister of a whole gpubuf buffer and of touched
 *    anonymous memory, seconds per GiB;
 *  - copy-engine H2D and D2H between a cuMemAlloc buffer and gpubuf memory
 *    registered with gpubuf_cuda_register, cuMemHostAlloc memory (the
 *    anchor: the driver's own pinned memory), pageable malloc memory and,
 *    when the context is the module's, a memfd-backend gpubuf buffer;
 *  - SM zero-copy read and write of the registered gpubuf buffer;
 *  - GEMV of a host-resident f32 matrix: in place (zero-copy) against a
 *    copy to the device (from pageable or pinned memory) + the same GEMV;
 *  - GEMM on zero-copy operands: gpubuf_cuda_gemm, and cuBLAS if it loads.
 * GEMV and GEMM rows: cuda_gemm.c; timing, rows and interleaved ratios:
 * cuda_ops.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../common/sysinfo.h"
#include "bench.h"

static struct result *cuda_unavailable(struct bench *b, const char *why)
{
	struct result *r = result_add(b, MODE_CUDA, RES_UNAVAILABLE);

	snprintf(r->op, sizeof(r->op), "all");
	snprintf(r->memory, sizeof(r->memory), "-");
	result_reason(r, "%s", why);
	return r;
}

#ifndef GPUBUF_HAVE_CUDA

int mode_cuda(struct bench *b)
{
	cuda_unavailable(b, "gpubuf-bench was built without CUDA support");
	return EXIT_UNSUPPORTED;
}

#else /* GPUBUF_HAVE_CUDA */

#include "../common/gpuprobe.h"
#include "../common/pcilink.h"
#include "cuda.h"

static const uint64_t cuda_default_sizes[] = { 512 * MIB };

/* ---- memory -------------------------------------------------------------- */

static void cu_host_get(struct cuda_bench *cb, enum cu_mem k,
			struct cu_size *s)
{
	struct gpubuf_ctx *ctx = k == CM_MEMFD ? cb->memfd : cb->b->ctx;
	struct cu_host *h = &s->h[k];
	CUresult r;
	int err;

	if (k == CM_PINNED) {
		r = cb->cu->cuMemHostAlloc(&h->ptr, s->size, 0);
		if (r) {
			h->ptr = NULL;
			err = gpubuf_cu_fail(cb->cu, r, "cuMemHostAlloc");
			cu_why(h->why, sizeof(h->why), "cuMemHostAlloc", err);
			return;
		}
	} else if (k == CM_PAGEABLE) {
		h->ptr = malloc(s->size);
		if (!h->ptr) {
			snprintf(h->why, sizeof(h->why), "malloc: out of memory");
			return;
		}
	} else if (!ctx) {
		snprintf(h->why, sizeof(h->why), "%s", cb->memfd_why);
		return;
	} else {
		err = gpubuf_alloc(ctx, s->size, BENCH_ALLOC(cb->b), &h->gb);
		if (err) {
			h->gb = NULL;
			snprintf(h->why, sizeof(h->why), "gpubuf_alloc: %s",
				 gpubuf_strerror(err));
			return;
		}
		h->ptr = gpubuf_ptr(h->gb);
	}
	memset(h->ptr, 0x3c, s->size);	/* touched before anything is timed */
	h->node = sys_numa_node_of(h->ptr);
}

/* The gpubuf kinds are measured registered, or not at all. */
static void cu_host_register(struct cuda_bench *cb, struct cu_host *h)
{
	char e[192];
	int err;

	if (!h->gb)
		return;
	err = gpubuf_cuda_register(h->gb, cb->dev, 0, &h->devptr);
	if (!err) {
		h->registered = 1;
		return;
	}
	cu_why(e, sizeof(e), "gpubuf_cuda_register", err);
	snprintf(h->why, sizeof(h->why), "gpubuf_cuda_register: %s", e);
	gpubuf_unref(h->gb);
	h->gb = NULL;
	h->ptr = NULL;
}

static void cu_host_put(struct cuda_bench *cb, enum cu_mem k,
			struct cu_host *h)
{
	if (h->registered)
		gpubuf_cuda_unregister(h->gb, cb->dev);
	if (h->gb)
		gpubuf_unref(h->gb);
	else if (h->ptr && k == CM_PINNED)
		cb->cu->cuMemFreeHost(h->ptr);
	else
		free(h->ptr);
	memset(h, 0, sizeof(*h));
}

static void cu_size_put(struct cuda_bench *cb, struct cu_size *s)
{
	CUdeviceptr *d[] = { &s->dbuf, &s->x, &s->y };
	unsigned int i;
	int k;

	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		if (*d[i])
			cb->cu->cuMemFree(*d[i]);
		*d[i] = 0;
	}
	for (k = 0; k < CM_COUNT; k++)
		cu_host_put(cb, k, &s->h[k]);
}

/* ---- operations ---------------------------------------------------------- */

static void cu_copy_op(struct cu_size *s, enum cu_kind kind, enum cu_mem k,
		       struct cu_op *op)
{
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->op = kind == CK_H2D ? "h2d" : "d2h";
	op->mem = cm_names[k];
	op->host = s->h[k].ptr;
	op->dev = s->dbuf;
	op->bytes = s->size;
	op->iters = cu_iters(s->size);
	op->numa_node = s->h[k].node;
}

static void cu_zc_op(struct cu_size *s, enum cu_kind kind, struct cu_op *op)
{
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->op = kind == CK_ZC_READ ? "zc_read" : "zc_write";
	op->mem = cm_names[CM_GPUBUF];
	op->dev = s->h[CM_GPUBUF].devptr;
	op->bytes = s->size & ~(uint64_t)15;	/* 16-byte words */
	op->iters = cu_iters(s->size);
	op->numa_node = s->h[CM_GPUBUF].node;
}

/* ---- rows ---------------------------------------------------------------- */

/* cuMemHostRegister + cuMemHostUnregister of the whole range, host-timed. */
static void cu_register_row(struct cuda_bench *cb, const char *mem,
			    void *ptr, uint64_t size)
{
	const unsigned int flags = CU_MEMHOSTREGISTER_PORTABLE |
				   CU_MEMHOSTREGISTER_DEVICEMAP;
	const struct gpubuf_cu *cu = cb->cu;
	double *reg = calloc(cb->reps, sizeof(double));
	double *unreg = calloc(cb->reps, sizeof(double));
	char why[224] = "out of memory for the measurement";
	const char *what = NULL;
	struct result *r;
	CUresult cr = CUDA_SUCCESS;
	int i;

	for (i = 0; reg && unreg && i < cb->warmup + cb->reps; i++) {
		uint64_t t0 = now_ns(), t1, t2;

		cr = cu->cuMemHostRegister(ptr, size, flags);
		t1 = now_ns();
		if (cr) {
			what = "cuMemHostRegister";
			break;
		}
		cr = cu->cuMemHostUnregister(ptr);
		t2 = now_ns();
		if (cr) {
			what = "cuMemHostUnregister";
			break;
		}
		if (i >= cb->warmup) {
			reg[i - cb->warmup] = (t1 - t0) / 1e9;
			unreg[i - cb->warmup] = (t2 - t1) / 1e9;
		}
	}
	if (what)
		cu_why(why, sizeof(why), what, gpubuf_cu_fail(cu, cr, what));
	if (what || !reg || !unreg) {
		cu_row_skip(cb, "host_register", mem, size, why);
	} else {
		double lo, hi;

		r = result_add(cb->b, MODE_CUDA, RES_OK);
		snprintf(r->op, sizeof(r->op), "host_register");
		snprintf(r->memory, sizeof(r->memory), "%s", mem);
		r->size_bytes = size;
		r->threads = 1;
		r->reps = cb->reps;
		r->numa_node = sys_numa_node_of(ptr);
		r->metric = "seconds_per_gib";
		stats(unreg, cb->reps, &r->free_seconds, &lo, &hi);
		stats(reg, cb->reps, &r->seconds, &lo, &hi);
		r->med = r->seconds * GIB / size;
		r->min = lo * GIB / size;
		r->max = hi * GIB / size;
	}
	free(reg);
	free(unreg);
}

static void cu_register_rows(struct cuda_bench *cb, struct cu_size *s)
{
	void *anon;

	progress("cuda: host_register %llu", (unsigned long long)s->size);
	cu_register_row(cb, "gpubuf", s->h[CM_GPUBUF].ptr, s->size);
	anon = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED) {
		cu_row_skip(cb, "host_register", "anon_mmap", s->size,
			    "mmap: out of memory");
		return;
	}
	memset(anon, 0x3c, s->size);	/* touched first */
	cu_register_row(cb, "anon_mmap", anon, s->size);
	munmap(anon, s->size);
}

static void cu_copy_rows(struct cuda_bench *cb, struct cu_size *s)
{
	static const enum cu_kind dirs[] = { CK_H2D, CK_D2H };
	struct cu_op op;
	unsigned int d;
	int k;

	for (d = 0; d < 2; d++) {
		for (k = 0; k < CM_COUNT; k++) {
			cu_copy_op(s, dirs[d], k, &op);
			if (s->h[k].ptr)
				cu_row(cb, &op, s->size);
			else
				cu_row_skip(cb, op.op, op.mem, s->size,
					    s->h[k].why);
		}
	}
	cu_zc_op(s, CK_ZC_READ, &op);
	cu_row(cb, &op, s->size);
	cu_zc_op(s, CK_ZC_WRITE, &op);
	cu_row(cb, &op, s->size);
}

/* ---- ratios -------------------------------------------------------------- */

/*
 * The three ratios, from interleaved pairs (cu_ratio): gpubuf H2D over
 * cuMemHostAlloc H2D; zero-copy read over the copy engine's H2D of the
 * same gpubuf memory; zero-copy GEMV time over pageable copy + GEMV time.
 * s NULL: the ratio size was not measured; why: the size failed.
 */
static void cu_ratios(struct cuda_bench *cb, struct cu_size *s,
		      uint64_t size, const char *why)
{
	static const struct {
		const char *name, *num_op, *den_op, *den;
	} defs[] = {
		{ "h2d_gpubuf_vs_memhostalloc", "h2d", "h2d", "memhostalloc" },
		{ "zc_read_vs_h2d_gpubuf", "zc_read", "h2d", "gpubuf" },
		{ "gemv_zerocopy_vs_pageable_copy", "gemv_zerocopy",
		  "gemv_copy", "pageable" },
	};
	struct cu_op a, b;
	unsigned int i;
	int idx;

	for (i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		idx = ratio_add(cb->b, MODE_CUDA, defs[i].name, "gpubuf", size);
		if (why) {
			ratio_fail(&cb->b->rat[idx], "%s", why);
			continue;
		}
		if (!ratio_sides(cb->b, &cb->b->rat[idx], defs[i].num_op,
				 defs[i].den_op, defs[i].den) || !s)
			continue;
		if (i == 0) {
			cu_copy_op(s, CK_H2D, CM_GPUBUF, &a);
			cu_copy_op(s, CK_H2D, CM_PINNED, &b);
		} else if (i == 1) {
			cu_zc_op(s, CK_ZC_READ, &a);
			cu_copy_op(s, CK_H2D, CM_GPUBUF, &b);
		} else {
			cu_fill(s, s->mbytes);
			cu_gemv_op(s, CM_GPUBUF, &a);
			cu_gemv_op(s, CM_PAGEABLE, &b);
		}
		cu_ratio(cb, idx, &a, &b);
	}
}

/* ---- one size, the mode -------------------------------------------------- */

static void cu_one_size(struct cuda_bench *cb, uint64_t size, int ratios)
{
	struct cu_size *s = calloc(1, sizeof(*s));
	char why[256] = "out of memory", sz[32];
	int k;

	fmt_size(sz, sizeof(sz), size);
	if (!s)
		goto fail;
	s->size = size;
	if (gpu_host_size_check(size, why, sizeof(why)))
		goto fail;
	cu_host_get(cb, CM_GPUBUF, s);
	if (!s->h[CM_GPUBUF].ptr)
		goto fail_host;
	cu_register_rows(cb, s);	/* before the library registers it */
	cu_host_register(cb, &s->h[CM_GPUBUF]);
	if (!s->h[CM_GPUBUF].registered)
		goto fail_host;
	for (k = CM_PINNED; k < CM_COUNT; k++)
		cu_host_get(cb, k, s);
	cu_host_register(cb, &s->h[CM_MEMFD]);
	if (cu_dev_get(cb, &s->dbuf, size, why, sizeof(why)) ||
	    cu_gemv_setup(cb, s, why, sizeof(why)))
		goto fail;
	cu_copy_rows(cb, s);
	cu_gemv_rows(cb, s);
	cu_gemm_rows(cb, s);
	if (ratios)
		cu_ratios(cb, s, size, NULL);
	cu_size_put(cb, s);
	free(s);
	return;

fail_host:
	snprintf(why, sizeof(why), "%s", s->h[CM_GPUBUF].why);
fail:
	cu_row_skip(cb, "all", "gpubuf", size, why);
	if (ratios)
		cu_ratios(cb, NULL, size, why);
	if (s)
		cu_size_put(cb, s);
	free(s);
}

static void cu_teardown(struct cuda_bench *cb)
{
	const struct gpubuf_cu *cu = cb->cu;
	int i;

	cu_blas_close(cb);
	gpubuf_close(cb->memfd);
	cb->memfd = NULL;
	if (cb->sink)
		cu->cuMemFree(cb->sink);
	for (i = 0; i < 2; i++)
		if (cb->ev[i])
			cu->cuEventDestroy(cb->ev[i]);
	if (cb->st)
		cu->cuStreamDestroy(cb->st);
	if (cb->entered)
		gpubuf_cu_leave(cu, cb->dev);
}

/* Context, stream, events, sink, memfd context, cuBLAS; 0 or a reason. */
static int cu_setup(struct cuda_bench *cb, char *why, size_t len)
{
	const struct gpubuf_cu *cu = cb->cu;
	const char *what = "cuStreamCreate";
	char msg[160] = "";
	CUcontext ctx;
	CUresult r;
	int err;

	err = gpubuf_cu_enter(cu, cb->dev, &ctx);
	if (err) {
		cu_why(why, len, "gpubuf_cu_enter", err);
		return err;
	}
	cb->entered = 1;
	r = cu->cuStreamCreate(&cb->st, CU_STREAM_NON_BLOCKING);
	if (!r) {
		what = "cuEventCreate";
		r = cu->cuEventCreate(&cb->ev[0], CU_EVENT_DEFAULT);
	}
	if (!r)
		r = cu->cuEventCreate(&cb->ev[1], CU_EVENT_DEFAULT);
	if (!r) {
		what = "cuMemAlloc";
		r = cu->cuMemAlloc(&cb->sink, 16);
	}
	if (r) {
		err = gpubuf_cu_fail(cu, r, what);
		cu_why(why, len, what, err);
		return err;
	}
	/*
	 * The kernels load (and may be JIT-compiled) on first use: not in a
	 * timed sample, even with --warmup 0. A failure here is reported by
	 * each row that needs them.
	 */
	(void)gpubuf_cu_kernels_load(cu, cb->dev);
	if (gpubuf_backend(cb->b->ctx) == GPUBUF_BACKEND_MEMFD) {
		snprintf(cb->memfd_why, sizeof(cb->memfd_why),
			 "the context's backend is memfd, so the gpubuf rows are memfd memory (not measured twice)");
	} else if (gpubuf_open_err(&cb->memfd, GPUBUF_OPEN_FORCE_MEMFD |
				   GPUBUF_OPEN_IGNORE_ENV, msg, sizeof(msg))) {
		cb->memfd = NULL;
		snprintf(cb->memfd_why, sizeof(cb->memfd_why),
			 "gpubuf_open(GPUBUF_OPEN_FORCE_MEMFD): %s", msg);
	}
	cu_blas_open(cb);
	return 0;
}

static void cu_info_row(struct cuda_bench *cb, int count)
{
	struct result *r = result_add(cb->b, MODE_CUDA, RES_INFO);
	char name[128] = "?", dev[32], link[224], kern[240];
	CUdevice d;

	if (cb->cu->cuDeviceGet(&d, cb->dev) == CUDA_SUCCESS &&
	    cb->cu->cuDeviceGetName(name, sizeof(name), d) != CUDA_SUCCESS)
		snprintf(name, sizeof(name), "?");
	snprintf(r->op, sizeof(r->op), "device");
	snprintf(r->memory, sizeof(r->memory), "-");
	snprintf(r->version, sizeof(r->version), "%d.%d",
		 cb->cu->driver_version / 1000,
		 cb->cu->driver_version % 1000 / 10);
	r->device_count = count;
	snprintf(dev, sizeof(dev), "cuda:%d", cb->dev);
	pci_link_text(dev, link, sizeof(link));
	gpu_kernels_text("cuda", cb->dev, kern, sizeof(kern));
	result_reason(r, "device %d of %d: %s, driver %s, backend %s; cuBLAS: %s%s; %s; link: %s",
		      cb->dev, count, name, r->version, cb->b->hdr.backend,
		      cb->blas ? "" : "unavailable: ", cb->blas_why,
		      kern[0] ? kern : "kernels: ?", link);
}

int mode_cuda(struct bench *b)
{
	struct cuda_bench cb = { .b = b };
	uint64_t sizes[MAX_SIZES], ratio_size;
	int count = 0, nr, i, rc, ratios = 0;
	char why[256];

	rc = gpubuf_cuda_device_count(&count);
	if (rc) {
		cu_why(why, sizeof(why), "gpubuf_cuda_device_count", rc);
		cuda_unavailable(b, why);
		return EXIT_UNSUPPORTED;
	}
	rc = bench_need_ctx(b, MODE_CUDA);
	if (rc != EXIT_OK)
		return rc;
	if (b->o.device >= count) {
		fprintf(stderr, "ERROR: cuda: no CUDA device %d (%d present)\n",
			b->o.device, count);
		return EXIT_FAIL;
	}
	if (gpubuf_cu_get(&cb.cu)) {
		cu_why(why, sizeof(why), "gpubuf_cu_get", -ENODEV);
		cuda_unavailable(b, why);
		return EXIT_UNSUPPORTED;
	}
	cb.dev = b->o.device;
	cb.reps = b->o.reps ? b->o.reps : 5;
	cb.warmup = b->o.warmup >= 0 ? b->o.warmup : 1;
	nr = bench_sizes(&b->o, cuda_default_sizes,
			 sizeof(cuda_default_sizes) / sizeof(uint64_t), sizes);
	if (cu_setup(&cb, why, sizeof(why))) {
		fprintf(stderr, "ERROR: cuda: %s\n", why);
		cu_teardown(&cb);
		return EXIT_FAIL;
	}
	cu_info_row(&cb, count);
	ratio_size = bench_ratio_size(&b->o, sizes, nr);
	progress_start();
	for (i = 0; i < nr; i++) {
		int take = sizes[i] == ratio_size && !ratios;

		ratios |= take;
		cu_one_size(&cb, sizes[i], take);
	}
	if (!ratios)
		cu_ratios(&cb, NULL, ratio_size, NULL);
	cu_latency(&cb);
	progress_end();
	cu_teardown(&cb);
	return EXIT_OK;
}

#endif /* GPUBUF_HAVE_CUDA */
