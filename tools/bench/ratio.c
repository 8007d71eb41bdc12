// SPDX-License-Identifier: MIT
/*
 * Compass ratios from interleaved pairs (see struct ratio). The modes
 * measure them after their sweep, and only where the sweep measured both
 * sides at the ratio size, so an unavailable ratio points at the row that
 * says why.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int ratio_add(struct bench *b, enum bench_mode m, const char *name,
	      const char *num, uint64_t size)
{
	struct ratio *rt;

	if (b->nr_rat == b->cap_rat) {
		int cap = b->cap_rat ? 2 * b->cap_rat : 16;
		struct ratio *n = realloc(b->rat, cap * sizeof(*n));

		if (!n) {
			fprintf(stderr, "ERROR: out of memory for ratios\n");
			exit(EXIT_FAIL);
		}
		b->rat = n;
		b->cap_rat = cap;
	}
	rt = &b->rat[b->nr_rat];
	memset(rt, 0, sizeof(*rt));
	rt->mode = m;
	snprintf(rt->name, sizeof(rt->name), "%s", name);
	snprintf(rt->num, sizeof(rt->num), "%s", num);
	rt->size_bytes = size;
	rt->threads = 1;
	return b->nr_rat++;
}

static int ratio_row_ok(const struct bench *b, enum bench_mode m,
			const char *op, const char *mem, uint64_t size)
{
	int i;

	for (i = 0; i < b->nr_res; i++) {
		const struct result *r = &b->res[i];

		if (r->mode == m && r->status == RES_OK && r->size_bytes == size &&
		    !strcmp(r->op, op) && !strcmp(r->memory, mem) && r->med > 0)
			return 1;
	}
	return 0;
}

/* Why mem has no op measurement at size: its skipped/unavailable row. */
static void ratio_side_reason(const struct bench *b, enum bench_mode m,
			      const char *op, const char *mem, int name_op,
			      uint64_t size, char *out, size_t len)
{
	char sz[32], who[56];
	int i;

	fmt_size(sz, sizeof(sz), size);
	snprintf(who, sizeof(who), "%s%s%s", mem, name_op ? " " : "",
		 name_op ? op : "");
	for (i = 0; i < b->nr_res; i++) {
		const struct result *r = &b->res[i];

		if (r->mode != m || r->status == RES_OK ||
		    strcmp(r->memory, mem) ||
		    (r->size_bytes && r->size_bytes != size) ||
		    (strcmp(r->op, op) && strcmp(r->op, "all")))
			continue;
		snprintf(out, len, "%s at %s %s: %.200s", who, sz,
			 r->status == RES_SKIPPED ? "skipped" : "unavailable",
			 r->reason);
		return;
	}
	snprintf(out, len, "%s not measured at %s (not among the %s sizes)",
		 who, sz, mode_name(m));
}

int ratio_sides(const struct bench *b, struct ratio *rt, const char *num_op,
		const char *den_op, const char *den)
{
	int num_ok = ratio_row_ok(b, rt->mode, num_op, rt->num,
				  rt->size_bytes);
	int den_ok = ratio_row_ok(b, rt->mode, den_op, den, rt->size_bytes);
	/* Name the ops only when they differ, e.g. zero-copy read vs h2d. */
	int name_op = strcmp(num_op, den_op) != 0;
	char why[2][320];

	if (num_ok && den_ok)
		return 1;
	if (!num_ok)
		ratio_side_reason(b, rt->mode, num_op, rt->num, name_op,
				  rt->size_bytes, why[0], sizeof(why[0]));
	if (!den_ok)
		ratio_side_reason(b, rt->mode, den_op, den, name_op,
				  rt->size_bytes, why[1], sizeof(why[1]));
	snprintf(rt->reason, sizeof(rt->reason), "%s%s%s",
		 num_ok ? "" : why[0], !num_ok && !den_ok ? "; " : "",
		 den_ok ? "" : why[1]);
	return 0;
}

void ratio_fail(struct ratio *rt, const char *fmt, ...)
{
	va_list ap;

	rt->ok = 0;
	va_start(ap, fmt);
	vsnprintf(rt->reason, sizeof(rt->reason), fmt, ap);
	va_end(ap);
}

void ratio_interleave(struct ratio *rt, int warmup, int reps,
		      int (*sample)(void *arg, int side, double *ms,
				    char *why, size_t len),
		      void *arg)
{
	double *v = calloc(2 * (size_t)reps, sizeof(double));
	char why[256] = "";
	double ms;
	int i;

	if (!v) {
		ratio_fail(rt, "out of memory for the measurement");
		return;
	}
	progress("%s: ratio %s", mode_name(rt->mode), rt->name);
	for (i = 0; i < warmup + reps; i++)
		for (int side = 0; side < 2; side++) {
			if (sample(arg, side, &ms, why, sizeof(why))) {
				ratio_fail(rt, "interleaved run: %s", why);
				free(v);
				return;
			}
			if (i >= warmup)
				v[2 * (i - warmup) + side] = ms;
		}
	ratio_pairs(rt, v, reps);
	free(v);
}

void ratio_pairs(struct ratio *rt, const double *v, int n)
{
	double *pair = n > 0 ? calloc(n, sizeof(double)) : NULL;
	double *sorted = n > 0 ? calloc(n, sizeof(double)) : NULL;
	int i;

	if (!pair || !sorted) {
		ratio_fail(rt, "out of memory for the ratio");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!(v[2 * i] > 0) || !(v[2 * i + 1] > 0)) {
			ratio_fail(rt, "pair %d has a non-positive measurement",
				   i + 1);
			goto out;
		}
		pair[i] = sorted[i] = v[2 * i] / v[2 * i + 1];
	}
	stats(sorted, n, &rt->med, &rt->min, &rt->max);
	free(rt->pair);
	rt->pair = pair;
	pair = NULL;
	rt->pairs = n;
	rt->ok = 1;
	rt->reason[0] = '\0';
out:
	free(sorted);
	free(pair);
}

void ratio_free_all(struct bench *b)
{
	int i;

	for (i = 0; i < b->nr_rat; i++)
		free(b->rat[i].pair);
	free(b->rat);
	b->rat = NULL;
	b->nr_rat = b->cap_rat = 0;
}
