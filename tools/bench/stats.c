// SPDX-License-Identifier: MIT
/* Timing, statistics, progress and the result list. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/sysinfo.h"
#include "bench.h"

volatile uint64_t bench_sink;

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int stats_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void stats(double *v, int n, double *med, double *min, double *max)
{
	if (n <= 0) {
		*med = *min = *max = 0;
		return;
	}
	qsort(v, n, sizeof(*v), stats_cmp);
	*min = v[0];
	*max = v[n - 1];
	*med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void fmt_size(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	uint64_t v = bytes;

	while (u < 4 && v >= 1024 && !(v % 1024)) {
		v /= 1024;
		u++;
	}
	if (u == 0 && bytes >= 1024) {
		/* not a multiple of 1 KiB: one decimal of the best unit */
		double d = (double)bytes;

		while (u < 4 && d >= 1024) {
			d /= 1024;
			u++;
		}
		snprintf(buf, len, "%.1f %s", d, units[u]);
		return;
	}
	snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
}

static struct {
	uint64_t start;
	int tty;
	int shown;
} prog;

void progress_start(void)
{
	prog.start = now_ns();
	prog.tty = isatty(STDERR_FILENO);
	prog.shown = 0;
}

void progress(const char *fmt, ...)
{
	va_list ap;

	if (!prog.tty || now_ns() - prog.start < 1000000000ULL)
		return;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	prog.shown = 1;
}

void progress_end(void)
{
	if (prog.shown)
		fputs("\r\033[K", stderr);
	prog.shown = 0;
}

struct result *result_add(struct bench *b, enum bench_mode mode,
			  enum result_status st)
{
	struct result *r;

	if (b->nr_res == b->cap_res) {
		int cap = b->cap_res ? 2 * b->cap_res : 64;
		struct result *n = realloc(b->res, cap * sizeof(*n));

		if (!n) {
			fprintf(stderr, "ERROR: out of memory for results\n");
			exit(EXIT_FAIL);
		}
		b->res = n;
		b->cap_res = cap;
	}
	r = &b->res[b->nr_res++];
	memset(r, 0, sizeof(*r));
	r->mode = mode;
	r->status = st;
	r->numa_node = -1;
	r->device_count = -1;
	return r;
}

/* The value at or below which pct % of the sorted v[0..n) lie. */
static double stats_pct(const double *v, int n, int pct)
{
	int i = (pct * n + 99) / 100 - 1;	/* ceil(pct n / 100) - 1 */

	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

struct result *result_latency(struct bench *b, enum bench_mode mode,
			      const char *op, const char *mem, uint64_t size,
			      double *us, int n)
{
	struct result *r = result_add(b, mode, RES_OK);

	snprintf(r->op, sizeof(r->op), "%s", op);
	snprintf(r->memory, sizeof(r->memory), "%s", mem);
	r->size_bytes = size;
	r->threads = 1;
	r->reps = n;
	r->metric = "us";
	stats(us, n, &r->med, &r->min, &r->max);
	r->seconds = r->med / 1e6;
	r->rate_name = "p99_us";
	r->rate = stats_pct(us, n, 99);
	return r;
}

void result_reason(struct result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

/*
 * The GPU modes keep four host buffers of a size at once: sizes below
 * 4 KiB, or whose four buffers would take more than 7/8 of MemAvailable,
 * get a reason in why and -1.
 */
int gpu_host_size_check(uint64_t size, char *why, size_t len)
{
	uint64_t avail = 0;
	char sz[32];

	fmt_size(sz, sizeof(sz), size);
	if (size < 4 * KIB) {
		snprintf(why, len, "%s is below the 4 KiB minimum", sz);
		return -1;
	}
	if (!sys_meminfo("MemAvailable", &avail) && 4 * size > avail / 8 * 7) {
		snprintf(why, len,
			 "four host buffers of %s exceed 7/8 of MemAvailable", sz);
		return -1;
	}
	return 0;
}
