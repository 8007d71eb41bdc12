// SPDX-License-Identifier: MIT
/*
 * alloc: what it costs to get touchable pinned memory. One repetition is
 * allocate + map + write one byte per page, timed as "seconds"; the free
 * (gpubuf_unref or munmap) that follows is timed on its own and reported
 * as "free_seconds", never added in.
 *
 * Each row pays for exactly one walk that populates the pages:
 *  - gpubuf, module backend: GPUBUF_IOC_ALLOC allocates and pins, and
 *    libgpubuf maps the dma-buf at a 2 MiB-aligned address and faults it
 *    in with one MADV_POPULATE_WRITE: one PMD entry per 2 MiB page.
 *  - gpubuf, memfd backend: memfd_create + ftruncate + mmap, then one
 *    mlock that faults in and locks each page.
 *  - anon_mlock: anonymous mmap without MAP_POPULATE, then one mlock that
 *    faults in (zeroes) and locks each page. mmap(MAP_POPULATE) + mlock
 *    would walk up to three times: the populate, mlock's pass over the
 *    present pages to lock them, and its own populate pass.
 *  - anon_thp_mlock: the same at a 2 MiB-aligned address after
 *    MADV_HUGEPAGE, so mlock populates with transparent huge pages: what
 *    users would pick instead of gpubuf for big pinned buffers.
 * The write per page then finds every page present: it is the first
 * access, not a fault. Each row also reports the share of its mapping
 * held by PMD (2 MiB) entries, read from /proc/self/smaps.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/sysinfo.h"
#include "bench.h"

enum alloc_kind { AK_GPUBUF, AK_ANON, AK_ANON_THP, AK_COUNT };
static const char *const ak_names[AK_COUNT] = {
	"gpubuf", "anon_mlock", "anon_thp_mlock"
};

#define PMD_BYTES	(2 * MIB)

static const uint64_t alloc_default_sizes[] = {
	64 * MIB, 256 * MIB, 1 * GIB, 4 * GIB,
};

struct alloc_one {
	struct gpubuf *gb;
	char *ptr;
};

static int alloc_get(struct bench *b, enum alloc_kind k, size_t size,
		     struct alloc_one *a)
{
	int err;

	memset(a, 0, sizeof(*a));
	if (k == AK_GPUBUF) {
		err = gpubuf_alloc(b->ctx, size, BENCH_ALLOC(b), &a->gb);
		if (err)
			return err;
		a->ptr = gpubuf_ptr(a->gb);
		return 0;
	}
	/* No MAP_POPULATE: mlock() populates, once (see the top). */
	if (k == AK_ANON) {
		a->ptr = mmap(NULL, size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	} else {
		/* Over-map by one PMD, then trim to a 2 MiB-aligned start. */
		char *raw = mmap(NULL, size + PMD_BYTES, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uintptr_t at = ((uintptr_t)raw + PMD_BYTES - 1) &
			       ~(uintptr_t)(PMD_BYTES - 1);

		a->ptr = raw;
		if (raw != MAP_FAILED) {
			if (at > (uintptr_t)raw)
				munmap(raw, at - (uintptr_t)raw);
			munmap((char *)at + size,
			       (uintptr_t)raw + PMD_BYTES - at);
			a->ptr = (char *)at;
			madvise(a->ptr, size, MADV_HUGEPAGE);
		}
	}
	if (a->ptr == MAP_FAILED) {
		a->ptr = NULL;
		return -errno;
	}
	if (mlock(a->ptr, size)) {
		err = -errno;
		munmap(a->ptr, size);
		a->ptr = NULL;
		return err;
	}
	return 0;
}

static void alloc_put(enum alloc_kind k, size_t size, struct alloc_one *a)
{
	if (k == AK_GPUBUF)
		gpubuf_unref(a->gb);
	else
		munmap(a->ptr, size);
}

/* A reason to skip this size, or 0. */
static int alloc_skip(struct bench *b, uint64_t size, char *why, size_t len)
{
	uint64_t avail = 0, lim = 0, total = 0, live = 0;
	char sz[32], s2[32];

	fmt_size(sz, sizeof(sz), size);
	if (gpubuf_backend(b->ctx) == GPUBUF_BACKEND_MODULE) {
		if (!sys_read_u64(GPUBUF_SYSFS_PARAMS "/max_buffer_bytes", &lim) &&
		    lim && size > lim) {
			fmt_size(s2, sizeof(s2), lim);
			snprintf(why, len, "%s above max_buffer_bytes (%s)",
				 sz, s2);
			return 1;
		}
		if (!sys_read_u64(GPUBUF_SYSFS_PARAMS "/max_total_bytes", &total) &&
		    !sys_read_u64(GPUBUF_SYSFS_CLASS "/live_bytes", &live) &&
		    total && size > total - (live < total ? live : total)) {
			fmt_size(s2, sizeof(s2), total);
			snprintf(why, len,
				 "%s above what max_total_bytes (%s) leaves",
				 sz, s2);
			return 1;
		}
	}
	if (!sys_meminfo("MemAvailable", &avail) && size > avail / 8 * 7) {
		fmt_size(s2, sizeof(s2), avail);
		snprintf(why, len, "%s above 7/8 of MemAvailable (%s)", sz, s2);
		return 1;
	}
	return 0;
}

/*
 * One allocate + map + touch, then the free; seconds of each. With @node,
 * also where the memory is and what share of it PMD entries map (%).
 */
static int alloc_once(struct bench *b, enum alloc_kind k, uint64_t size,
		      double *sec, double *fsec, int *node, double *pmd_pct)
{
	long ps = sysconf(_SC_PAGESIZE);
	struct alloc_one a;
	uint64_t t0, t1, t2, off;
	int err;

	t0 = now_ns();
	err = alloc_get(b, k, size, &a);
	if (err)
		return err;
	for (off = 0; off < size; off += ps)
		a.ptr[off] = 1;
	t1 = now_ns();
	if (node) {
		uint64_t rss, pmd;

		*node = sys_numa_node_of(a.ptr);
		*pmd_pct = sys_pmd_mapped(a.ptr, size, &rss, &pmd) ? -1 :
			   100.0 * pmd / size;
	}
	alloc_put(k, size, &a);
	t2 = now_ns();
	*sec = (t1 - t0) / 1e9;
	*fsec = (t2 - t1) / 1e9;
	return 0;
}

static void alloc_reason(struct result *r, enum alloc_kind k, uint64_t size,
			 int err)
{
	struct rlimit rl;

	result_reason(r, "%s: %s%s",
		      k == AK_GPUBUF ? "gpubuf_alloc" : "mmap+mlock",
		      gpubuf_strerror(err),
		      !getrlimit(RLIMIT_MEMLOCK, &rl) &&
		      rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < size ?
		      " (RLIMIT_MEMLOCK below the size?)" : "");
}

static void alloc_measure(struct bench *b, enum alloc_kind k, uint64_t size,
			  int warmup, int reps)
{
	double *sec = calloc(reps, sizeof(double));
	double *fsec = calloc(reps, sizeof(double));
	struct result *r = result_add(b, MODE_ALLOC, RES_OK);
	char sz[32];
	int rep, err = 0;

	snprintf(r->memory, sizeof(r->memory), "%s", ak_names[k]);
	snprintf(r->op, sizeof(r->op), "alloc_map_touch");
	r->size_bytes = size;
	r->reps = reps;
	r->threads = 1;
	fmt_size(sz, sizeof(sz), size);
	for (rep = 0; rep < warmup + reps && sec && fsec; rep++) {
		double s, fs;

		progress("alloc: %-19s %s rep %d/%d", ak_names[k], sz,
			 rep + 1, warmup + reps);
		err = alloc_once(b, k, size, &s, &fs,
				 rep == 0 ? &r->numa_node : NULL, &r->pmd_pct);
		if (err)
			break;
		if (rep >= warmup) {
			sec[rep - warmup] = s;
			fsec[rep - warmup] = fs;
		}
	}
	if (!sec || !fsec) {
		r->status = RES_SKIPPED;
		result_reason(r, "out of memory for the measurement");
	} else if (err) {
		r->status = RES_SKIPPED;
		alloc_reason(r, k, size, err);
	} else {
		double min, max;

		stats(fsec, reps, &r->free_seconds, &min, &max);
		stats(sec, reps, &r->seconds, &r->min, &r->max);
		r->med = r->seconds * GIB / size;
		r->min = r->min * GIB / size;
		r->max = r->max * GIB / size;
	}
	free(sec);
	free(fsec);
}

/*
 * A ratio: gpubuf and the anonymous kind @den allocated in turns at one
 * size, the seconds of each round's pair giving one ratio (see struct
 * ratio).
 */
static void alloc_ratio(struct bench *b, uint64_t size, int warmup, int reps,
			enum alloc_kind den)
{
	const enum alloc_kind kinds[2] = { AK_GPUBUF, den };
	char name[48];
	struct ratio *rt;
	double *v, fsec;
	char sz[32];
	int rep, k, err, i;

	snprintf(name, sizeof(name), "alloc_gpubuf_vs_%s", ak_names[den]);
	i = ratio_add(b, MODE_ALLOC, name, "gpubuf", size);
	rt = &b->rat[i];
	if (!ratio_sides(b, rt, "alloc_map_touch", "alloc_map_touch",
			 ak_names[den]))
		return;
	v = calloc(2 * (size_t)reps, sizeof(double));
	if (!v) {
		ratio_fail(rt, "out of memory for the measurement");
		return;
	}
	fmt_size(sz, sizeof(sz), size);
	for (rep = 0; rep < warmup + reps; rep++) {
		progress("alloc: %s %s round %d/%d", name, sz, rep + 1,
			 warmup + reps);
		for (k = 0; k < 2; k++) {
			double s;

			err = alloc_once(b, kinds[k], size, &s, &fsec, NULL,
					 NULL);
			if (err) {
				ratio_fail(rt, "interleaved run: %s at %s: %s",
					   ak_names[kinds[k]], sz,
					   gpubuf_strerror(err));
				goto out;
			}
			if (rep >= warmup)
				v[2 * (rep - warmup) + k] = s;
		}
	}
	ratio_pairs(rt, v, reps);
out:
	free(v);
}

int mode_alloc(struct bench *b)
{
	uint64_t sizes[MAX_SIZES];
	int reps = b->o.reps ? b->o.reps : 3;
	int warmup = b->o.warmup >= 0 ? b->o.warmup : 1;
	char why[192];
	int nr, i, k;

	k = bench_need_ctx(b, MODE_ALLOC);
	if (k != EXIT_OK)
		return k;
	nr = bench_sizes(&b->o, alloc_default_sizes,
			 sizeof(alloc_default_sizes) / sizeof(uint64_t), sizes);
	if (!nr) {
		fprintf(stderr, "ERROR: alloc: no size left under --max-size\n");
		return EXIT_FAIL;
	}
	progress_start();
	for (i = 0; i < nr; i++) {
		if (alloc_skip(b, sizes[i], why, sizeof(why))) {
			for (k = 0; k < AK_COUNT; k++) {
				struct result *r = result_add(b, MODE_ALLOC,
							      RES_SKIPPED);

				snprintf(r->memory, sizeof(r->memory), "%s",
					 ak_names[k]);
				snprintf(r->op, sizeof(r->op), "alloc_map_touch");
				r->size_bytes = sizes[i];
				result_reason(r, "%s", why);
			}
			continue;
		}
		for (k = 0; k < AK_COUNT; k++)
			alloc_measure(b, k, sizes[i], warmup, reps);
	}
	alloc_ratio(b, bench_ratio_size(&b->o, sizes, nr), warmup, reps,
		    AK_ANON);
	alloc_ratio(b, bench_ratio_size(&b->o, sizes, nr), warmup, reps,
		    AK_ANON_THP);
	progress_end();
	return EXIT_OK;
}
