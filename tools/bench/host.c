// SPDX-License-Identifier: MIT
/*
 * host: CPU read, write and copy bandwidth through each kind of memory.
 *
 * Every kind is touched before timing, so only steady-state bandwidth is
 * measured; first-touch cost is the alloc mode's subject. Each repetition
 * walks the buffer rep_bytes / size times (at least once) so small sizes
 * run long enough for the clock. With --threads N the buffer is split into
 * N contiguous parts, one per thread; threads start together at a barrier
 * and a repetition takes as long as its slowest thread.
 *
 * The gpubuf/other ratios are not read off the rows: after the sweep, at
 * the ratio size, each op runs gpubuf and the other memory in turns (one
 * round times A then B, with the same threads and walks), and each
 * round's two repetitions give one ratio.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../common/sysinfo.h"
#include "bench.h"

enum host_op { OP_READ, OP_WRITE, OP_COPY, OP_COUNT };
static const char *const op_names[OP_COUNT] = { "read", "write", "copy" };

enum host_kind { KIND_GPUBUF, KIND_MALLOC, KIND_MLOCK, KIND_HUGETLB,
		 KIND_COUNT };
static const char *const kind_names[KIND_COUNT] = {
	"gpubuf", "malloc", "mlock", "hugetlb"
};

struct membuf {
	void *ptr;
	size_t map_len;		/* mmap length, 0 when not mmap'd */
	struct gpubuf *gb;
};

static const uint64_t host_default_sizes[] = {
	4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB, 16 * MIB,
	64 * MIB, 256 * MIB,
};

/* ---- kernels: noinline plus a compiler barrier, so nothing is elided -- */

#define BARRIER() __asm__ __volatile__("" ::: "memory")

/*
 * Read must be bound by memory, not by the adder: one running sum makes
 * every load wait for the previous add (one 8-byte word per cycle, 20-28
 * GB/s here, less than memcpy moves). Eight independent sums over each
 * 64-byte line let the loads overlap, and gcc -O2 turns them into vector
 * adds (SSE2 paddq on x86-64, NEON on arm64). The total goes to a volatile
 * sink, so the loads cannot be dropped. words is a multiple of 8 except
 * for a last part, summed by the tail loop.
 */
__attribute__((noinline))
void bench_read_words(const uint64_t *p, size_t words)
{
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
	size_t i;

	for (i = 0; i + 8 <= words; i += 8) {
		s0 += p[i];
		s1 += p[i + 1];
		s2 += p[i + 2];
		s3 += p[i + 3];
		s4 += p[i + 4];
		s5 += p[i + 5];
		s6 += p[i + 6];
		s7 += p[i + 7];
	}
	for (; i < words; i++)
		s0 += p[i];
	bench_sink = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
}

__attribute__((noinline))
static void kern_write(uint64_t *p, size_t words, uint64_t v)
{
	size_t i;

	for (i = 0; i < words; i++)
		p[i] = v;
	BARRIER();
}

__attribute__((noinline))
static void kern_copy(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
	BARRIER();
}

/* ---- one timed measurement ------------------------------------------- */

/*
 * sets 1: one buffer pair, as in the sweep. sets 2: two buffer pairs taken
 * in turns, set 0 then set 1 in every round, for interleaved ratios.
 */
struct host_run {
	enum host_op op;
	char *src[2], *dst[2];
	int sets;
	size_t size;
	int threads;
	uint64_t iters;
	int total;		/* (warm-up + timed rounds) * sets */
	pthread_barrier_t bar;
	double *ns;		/* [total][threads] */
};

struct host_worker {
	struct host_run *run;
	int id;
};

static void *host_worker_fn(void *arg)
{
	struct host_worker *w = arg;
	struct host_run *r = w->run;
	size_t words = r->size / 8, per = words / r->threads;
	size_t lo, hi, len;
	uint64_t it, t0;
	int rep;

	per -= per % 8;		/* 64-byte aligned parts */
	lo = per * w->id;
	hi = w->id == r->threads - 1 ? words : lo + per;
	len = hi - lo;
	for (rep = 0; rep < r->total; rep++) {
		uint64_t *src = (uint64_t *)r->src[rep % r->sets];
		uint64_t *dst = (uint64_t *)r->dst[rep % r->sets];

		pthread_barrier_wait(&r->bar);
		t0 = now_ns();
		for (it = 0; it < r->iters; it++) {
			if (r->op == OP_READ)
				bench_read_words(src + lo, len);
			else if (r->op == OP_WRITE)
				kern_write(dst + lo, len, it + rep);
			else
				kern_copy(dst + lo, src + lo, len * 8);
			BARRIER();
		}
		r->ns[rep * r->threads + w->id] = (double)(now_ns() - t0);
	}
	return NULL;
}

/*
 * Runs warm-up and timed rounds; gbps gets reps * sets values in run
 * order (round-major), each in GB/s.
 */
static int host_measure(struct host_run *r, int warmup, int reps,
			double *gbps)
{
	struct host_worker *w;
	pthread_t *tids;
	int i, t, err = 0;

	r->total = (warmup + reps) * r->sets;
	r->ns = calloc((size_t)r->total * r->threads, sizeof(double));
	w = calloc(r->threads, sizeof(*w));
	tids = calloc(r->threads, sizeof(*tids));
	if (!r->ns || !w || !tids ||
	    pthread_barrier_init(&r->bar, NULL, r->threads)) {
		err = -ENOMEM;
		goto out;
	}
	for (t = 0; t < r->threads; t++) {
		w[t].run = r;
		w[t].id = t;
	}
	/* Thread 0 is this thread. */
	for (t = 1; t < r->threads; t++) {
		err = pthread_create(&tids[t], NULL, host_worker_fn, &w[t]);
		if (err) {
			/* Started threads wait at the barrier for good. */
			fprintf(stderr, "ERROR: pthread_create: %s\n",
				strerror(err));
			exit(EXIT_FAIL);
		}
	}
	host_worker_fn(&w[0]);
	for (t = 1; t < r->threads; t++)
		pthread_join(tids[t], NULL);
	pthread_barrier_destroy(&r->bar);
	for (i = 0; i < reps * r->sets; i++) {
		const double *ns = r->ns + (size_t)(warmup * r->sets + i) *
					   r->threads;
		double slowest = 1;

		for (t = 0; t < r->threads; t++)
			if (ns[t] > slowest)
				slowest = ns[t];
		/* bytes per ns is 1e9 bytes per second: GB/s */
		gbps[i] = (double)r->size * (double)r->iters / slowest;
	}
out:
	free(tids);
	free(w);
	free(r->ns);
	return err;
}

/* ---- memory kinds ------------------------------------------------------ */

static uint64_t host_hugepage_size(void)
{
	uint64_t sz = 0;

	if (sys_meminfo("Hugepagesize", &sz) || !sz)
		sz = 2 * MIB;
	return sz;
}

/* Whole kind unavailable? Returns 1 and a reason. */
static int host_kind_unavailable(enum host_kind k, char *why, size_t len)
{
	uint64_t total = 0;

	if (k == KIND_HUGETLB &&
	    (sys_meminfo("HugePages_Total", &total) || !total)) {
		snprintf(why, len,
			 "no hugetlb pages reserved (HugePages_Total 0; see /proc/sys/vm/nr_hugepages)");
		return 1;
	}
	return 0;
}

static int host_alloc(struct bench *b, enum host_kind k, size_t size,
		      struct membuf *m, char *why, size_t len)
{
	uint64_t hp, free_pages = 0;
	int err;

	memset(m, 0, sizeof(*m));
	switch (k) {
	case KIND_GPUBUF:
		err = gpubuf_alloc(b->ctx, size, BENCH_ALLOC(b), &m->gb);
		if (err) {
			snprintf(why, len, "gpubuf_alloc: %s",
				 gpubuf_strerror(err));
			return err;
		}
		m->ptr = gpubuf_ptr(m->gb);
		break;
	case KIND_MALLOC:
		m->ptr = malloc(size);
		if (!m->ptr) {
			snprintf(why, len, "malloc: out of memory");
			return -ENOMEM;
		}
		break;
	case KIND_MLOCK:
	case KIND_HUGETLB:
		m->map_len = size;
		if (k == KIND_HUGETLB) {
			hp = host_hugepage_size();
			m->map_len = (size + hp - 1) / hp * hp;
			sys_meminfo("HugePages_Free", &free_pages);
			if (free_pages * hp < m->map_len) {
				snprintf(why, len,
					 "needs %zu huge pages, %llu free",
					 (size_t)(m->map_len / hp),
					 (unsigned long long)free_pages);
				return -ENOMEM;
			}
		}
		m->ptr = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS |
			      (k == KIND_HUGETLB ? MAP_HUGETLB : 0), -1, 0);
		if (m->ptr == MAP_FAILED) {
			err = -errno;
			m->ptr = NULL;
			snprintf(why, len, "mmap: %s", strerror(-err));
			return err;
		}
		if (k == KIND_MLOCK && mlock(m->ptr, m->map_len)) {
			err = -errno;
			snprintf(why, len,
				 "mlock: %s (RLIMIT_MEMLOCK; run as root or raise ulimit -l)",
				 strerror(-err));
			munmap(m->ptr, m->map_len);
			m->ptr = NULL;
			return err;
		}
		break;
	default:
		return -EINVAL;
	}
	memset(m->ptr, 0x5a, size);	/* first touch, outside the timing */
	return 0;
}

static void host_free(struct membuf *m)
{
	if (m->gb)
		gpubuf_unref(m->gb);
	else if (m->map_len)
		munmap(m->ptr, m->map_len);
	else
		free(m->ptr);
	memset(m, 0, sizeof(*m));
}

/* ---- the sweep --------------------------------------------------------- */

static void host_one_size(struct bench *b, enum host_kind k, uint64_t size,
			  int warmup, int reps)
{
	struct membuf src, dst;
	struct result *r;
	uint64_t avail = 0;
	char why[160] = "", sz[32];
	int op;

	fmt_size(sz, sizeof(sz), size);
	if (!sys_meminfo("MemAvailable", &avail) && 2 * size > avail / 8 * 7) {
		r = result_add(b, MODE_HOST, RES_SKIPPED);
		snprintf(r->memory, sizeof(r->memory), "%s", kind_names[k]);
		snprintf(r->op, sizeof(r->op), "all");
		r->size_bytes = size;
		result_reason(r, "two buffers of %s exceed 7/8 of MemAvailable",
			      sz);
		return;
	}
	if (host_alloc(b, k, size, &src, why, sizeof(why)) ||
	    host_alloc(b, k, size, &dst, why, sizeof(why))) {
		if (src.ptr)
			host_free(&src);
		r = result_add(b, MODE_HOST, RES_SKIPPED);
		snprintf(r->memory, sizeof(r->memory), "%s", kind_names[k]);
		snprintf(r->op, sizeof(r->op), "all");
		r->size_bytes = size;
		result_reason(r, "%s", why);
		return;
	}
	for (op = 0; op < OP_COUNT; op++) {
		struct host_run run = {
			.op = op, .src = { src.ptr }, .dst = { dst.ptr },
			.sets = 1, .size = size, .threads = b->o.threads,
		};
		double *gbps = calloc(reps, sizeof(double));

		progress("host: %-7s %-5s %s", kind_names[k], op_names[op], sz);
		run.iters = b->o.rep_bytes / size ? b->o.rep_bytes / size : 1;
		r = result_add(b, MODE_HOST, RES_OK);
		snprintf(r->memory, sizeof(r->memory), "%s", kind_names[k]);
		snprintf(r->op, sizeof(r->op), "%s", op_names[op]);
		r->size_bytes = size;
		r->threads = b->o.threads;
		r->reps = reps;
		r->numa_node = sys_numa_node_of(src.ptr);
		if (!gbps || host_measure(&run, warmup, reps, gbps)) {
			r->status = RES_SKIPPED;
			result_reason(r, "out of memory for the measurement");
		} else {
			stats(gbps, reps, &r->med, &r->min, &r->max);
		}
		free(gbps);
	}
	host_free(&dst);
	host_free(&src);
}

/* ---- ratios: gpubuf and another memory in turns ------------------------ */

static const enum host_kind ratio_dens[] = { KIND_MLOCK, KIND_MALLOC };
#define NR_DENS	2

/* The two buffers of one side, or a reason. */
static int host_ratio_pair(struct bench *b, enum host_kind k, uint64_t size,
			   struct membuf m[2], char *why, size_t len)
{
	char sz[32], err[160] = "";

	if (!host_alloc(b, k, size, &m[0], err, sizeof(err)) &&
	    !host_alloc(b, k, size, &m[1], err, sizeof(err)))
		return 0;
	if (m[0].ptr)
		host_free(&m[0]);
	fmt_size(sz, sizeof(sz), size);
	snprintf(why, len, "interleaved run: %s at %s: %s", kind_names[k], sz,
		 err);
	return -ENOMEM;
}

/* One op, gpubuf (set 0) against den (set 1), into ratio rt. */
static void host_ratio_run(struct bench *b, struct ratio *rt, enum host_op op,
			   struct membuf g[2], struct membuf d[2],
			   uint64_t size, int warmup, int reps)
{
	struct host_run run = {
		.op = op, .src = { g[0].ptr, d[0].ptr },
		.dst = { g[1].ptr, d[1].ptr }, .sets = 2, .size = size,
		.threads = b->o.threads,
	};
	double *gbps = calloc(2 * (size_t)reps, sizeof(double));

	run.iters = b->o.rep_bytes / size ? b->o.rep_bytes / size : 1;
	if (!gbps || host_measure(&run, warmup, reps, gbps))
		ratio_fail(rt, "out of memory for the measurement");
	else
		ratio_pairs(rt, gbps, reps);
	free(gbps);
}

static void host_ratios(struct bench *b, uint64_t size, int warmup, int reps)
{
	struct membuf g[2] = { { 0 } }, d[2];
	int first = b->nr_rat, ready[OP_COUNT][NR_DENS];
	uint64_t avail = 0;
	char why[272] = "", name[48], sz[32];
	int op, k, need = 0;

	for (op = 0; op < OP_COUNT; op++) {
		for (k = 0; k < NR_DENS; k++) {
			const char *den = kind_names[ratio_dens[k]];
			int i;

			snprintf(name, sizeof(name), "%s_gpubuf_vs_%s",
				 op_names[op], den);
			i = ratio_add(b, MODE_HOST, name, "gpubuf", size);
			b->rat[i].threads = b->o.threads;
			ready[op][k] = ratio_sides(b, &b->rat[i], op_names[op],
						   op_names[op], den);
			need |= ready[op][k];
		}
	}
	if (!need)
		return;
	/* Both sides' buffers live at once: four of them. */
	fmt_size(sz, sizeof(sz), size);
	if (!sys_meminfo("MemAvailable", &avail) && 4 * size > avail / 8 * 7)
		snprintf(why, sizeof(why),
			 "interleaved run: four buffers of %s exceed 7/8 of MemAvailable",
			 sz);
	else
		host_ratio_pair(b, KIND_GPUBUF, size, g, why, sizeof(why));
	for (k = 0; k < NR_DENS; k++) {
		int have_d = 0;

		if (!ready[0][k] && !ready[1][k] && !ready[2][k])
			continue;
		if (!why[0] && !host_ratio_pair(b, ratio_dens[k], size, d, why,
						 sizeof(why)))
			have_d = 1;
		for (op = 0; op < OP_COUNT; op++) {
			struct ratio *rt = &b->rat[first + op * NR_DENS + k];

			if (!ready[op][k])
				continue;
			if (!have_d) {
				ratio_fail(rt, "%s", why);
				continue;
			}
			progress("host: ratio %-5s gpubuf/%s %s", op_names[op],
				 kind_names[ratio_dens[k]], sz);
			host_ratio_run(b, rt, op, g, d, size, warmup, reps);
		}
		if (have_d) {
			host_free(&d[1]);
			host_free(&d[0]);
		} else if (g[0].ptr) {
			why[0] = '\0';	/* only this denominator failed */
		}
	}
	if (g[0].ptr) {
		host_free(&g[1]);
		host_free(&g[0]);
	}
}

int mode_host(struct bench *b)
{
	uint64_t sizes[MAX_SIZES];
	int reps = b->o.reps ? b->o.reps : 5;
	int warmup = b->o.warmup >= 0 ? b->o.warmup : 1;
	int nr, i, k;
	char why[256];

	/* Every ratio this mode exists for has gpubuf as its numerator. */
	k = bench_need_ctx(b, MODE_HOST);
	if (k != EXIT_OK)
		return k;
	nr = bench_sizes(&b->o, host_default_sizes,
			 sizeof(host_default_sizes) / sizeof(uint64_t), sizes);
	if (!nr) {
		fprintf(stderr, "ERROR: host: no size left under --max-size\n");
		return EXIT_FAIL;
	}
	for (i = 0; i < nr; i++) {
		if (sizes[i] < 64ULL * b->o.threads) {
			fprintf(stderr,
				"ERROR: host: size %llu too small for %d threads (64 bytes each at least)\n",
				(unsigned long long)sizes[i], b->o.threads);
			return EXIT_FAIL;
		}
	}
	progress_start();
	for (k = 0; k < KIND_COUNT; k++) {
		if (host_kind_unavailable(k, why, sizeof(why))) {
			struct result *r = result_add(b, MODE_HOST,
						      RES_UNAVAILABLE);

			snprintf(r->memory, sizeof(r->memory), "%s",
				 kind_names[k]);
			snprintf(r->op, sizeof(r->op), "all");
			result_reason(r, "%s", why);
			continue;
		}
		for (i = 0; i < nr; i++)
			host_one_size(b, k, sizes[i], warmup, reps);
	}
	host_ratios(b, bench_ratio_size(&b->o, sizes, nr), warmup, reps);
	progress_end();
	return EXIT_OK;
}
