// SPDX-License-Identifier: MIT
/*
 * Printing results: an aligned table (default), CSV, or one JSON document.
 * Only results and the run header go to stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/json.h"
#include "bench.h"

static const char *const status_names[] = {
	[RES_OK] = "ok", [RES_UNAVAILABLE] = "unavailable",
	[RES_SKIPPED] = "skipped", [RES_INFO] = "info",
};

const char *bench_metric(enum bench_mode m)
{
	switch (m) {
	case MODE_HOST: return "gb_per_s";
	case MODE_ALLOC: return "seconds_per_gib";
	case MODE_DRM: return "lat_ns";
	default: return "";
	}
}

const char *result_metric(const struct result *r)
{
	return r->metric ? r->metric : bench_metric(r->mode);
}

/* The short "cuda: ..." form: a GPU mode's device or whole-mode row. */
static int gpu_summary_row(const struct result *r)
{
	return (r->mode == MODE_CUDA || r->mode == MODE_HSA ||
		r->mode == MODE_VULKAN || r->mode == MODE_RDMA ||
		r->mode == MODE_STORAGE) &&
	       (r->status == RES_INFO ||
		(r->status == RES_UNAVAILABLE && !r->size_bytes));
}

/* ---- table ------------------------------------------------------------- */

static const char *node_str(int node, char buf[12])
{
	if (node < 0)
		return "n/a";
	snprintf(buf, 12, "%d", node);
	return buf;
}

static void table_header(const struct header *h)
{
	char n1[12], n2[12];

	printf("# gpubuf-bench\n");
	printf("# kernel:   %s\n", h->kernel);
	printf("# cpu:      %s\n", h->cpu);
	printf("# backend:  %s\n", h->backend);
	printf("# driver:   %s\n", h->driver);
	printf("# library:  %s\n", h->library);
	printf("# numa:     online %s; gpubuf page on node %s%s, anonymous page on node %s\n",
	       h->numa_online, node_str(h->numa_gpubuf, n1),
	       h->node_requested >= 0 ? " (--node: every gpubuf buffer there)" : "",
	       node_str(h->numa_anon, n2));
	printf("# cuda:     %s\n", h->cuda);
	printf("# hsa:      %s\n", h->hsa);
	printf("# emulated: %s\n", h->emulated ? h->emulated_why : "no");
	printf("# units:    GB/s = 1e9 bytes/s; median [min..max] of the repetitions\n");
}

/* The column line of the modes whose rows cuda_row() prints. */
static void value_columns(void)
{
	printf("%-14s %-13s %10s %10s %10s %10s %-6s %4s %5s\n", "op",
	       "memory", "size", "value", "min", "max", "unit", "reps", "node");
}

static void table_mode_title(const struct bench *b, enum bench_mode m,
			     const struct result *first)
{
	switch (m) {
	case MODE_HOST:
		printf("# host: CPU bandwidth, GB/s, %d thread(s); copy counts bytes copied once\n",
		       b->o.threads);
		printf("%-6s %-8s %10s %10s %10s %10s %4s %5s\n", "op", "memory",
		       "size", "GB/s", "min", "max", "reps", "node");
		break;
	case MODE_ALLOC:
		printf("# alloc: allocate + map + touch one byte per page; free timed separately\n");
		printf("%-20s %10s %10s %10s %10s %10s %10s %5s %4s %5s\n",
		       "memory", "size", "s/GiB", "min", "max", "alloc_ms",
		       "free_ms", "pmd%", "reps", "node");
		break;
	case MODE_DRM:
		printf("# drm: PRIME import latency, ns, into %s\n",
		       first->reason);
		printf("%-20s %10s %10s %10s %10s %5s\n", "op", "size",
		       "lat_ns", "min", "max", "reps");
		break;
	case MODE_CUDA:
		printf("# cuda: copy and zero-copy GB/s; GEMV/GEMM ms per operation (with effective\n"
		       "# GB/s or GFLOP/s); cuMemHostRegister s/GiB. Event-timed loops on a\n"
		       "# non-blocking stream, median [min..max] of the samples\n");
		value_columns();
		break;
	case MODE_HSA:
		printf("# hsa: hsa_amd_memory_async_copy GB/s to/from a device-pool buffer, one copy\n"
		       "# in flight, host-timed; pageable = lock + copy + unlock per copy\n");
		value_columns();
		break;
	case MODE_VULKAN:
		printf("# vulkan: libgpubuf's SPIR-V GEMV (f32, square A of the size shown) on gpubuf\n"
		       "# memory in place vs A copied into device memory first, the host reading A,\n"
		       "# the device reading A (a streaming-read shader: its own read ceiling),\n"
		       "# OpenBLAS's sgemv on it; a 512x512 GEMM and OpenBLAS's sgemm; gpubuf_vk_import\n"
		       "# + release; ms per operation, host-timed around synchronous calls. Latency,\n"
		       "# us per call with its p99: an empty submission and its fence, a 1x1 GEMV,\n"
		       "# and a 1M-element vector add (a GEMV with k = 1) repeated 1000 times\n");
		value_columns();
		break;
	case MODE_STORAGE:
		printf("# storage: a file into pinned memory, GB/s and CPU seconds per GB, the page\n"
		       "# cache dropped before each sample; read_direct is gpubuf_read_file()\n"
		       "# (O_DIRECT where aligned, io_uring), read_copy pread + memcpy, mmap_copy\n"
		       "# mmap + memcpy; on an emulated disk only the ratios mean anything\n");
		value_columns();
		break;
	case MODE_RDMA:
		printf("# rdma: RDMA WRITE/READ over one RC queue pair to the peer's memory of the\n"
		       "# same kind, up to 16 in flight, GB/s; *_lat: microseconds until one 8-byte\n"
		       "# operation completes (a round trip); gpubuf and mlock samples interleaved\n");
		value_columns();
		break;
	default:
		break;
	}
}

/*
 * A value with at least @decimals decimals and, below 1, three significant
 * digits: a slow link's 0.00042 GB/s or a 1/256 ms GEMV must not print as
 * 0.000.
 */
static void print_value(int width, int decimals, double v)
{
	double x = v < 0 ? -v : v;
	int i;

	if (x > 0 && x < 1) {
		for (i = 0; i < decimals; i++)
			x *= 10;
		for (; x < 100 && decimals < 12; x *= 10)
			decimals++;
	}
	printf("%*.*f", width, decimals, v);
}

static void cuda_row(const struct result *r, const char *sz,
		     const char *node)
{
	const char *m = result_metric(r);

	printf("%-14s %-13s %10s ", r->op, r->memory, sz);
	print_value(10, 3, r->med);
	putchar(' ');
	print_value(10, 3, r->min);
	putchar(' ');
	print_value(10, 3, r->max);
	printf(" %-6s %4d %5s",
	       !strcmp(m, "gb_per_s") ? "GB/s" : !strcmp(m, "ms") ? "ms" :
	       !strcmp(m, "us") ? "us" : "s/GiB", r->reps, node);
	if (r->rate_name) {
		printf("  ");
		print_value(0, 1, r->rate);
		if (!strcmp(r->rate_name, "p99_us"))
			printf(" us p99");
		else if (!strcmp(r->rate_name, "cpu_s_per_gb"))
			printf(" CPU s/GB%s%s", r->reason[0] ? ", " : "",
			       r->reason);
		else
			printf(" %s",
			       strcmp(r->rate_name, "gflop_per_s") ?
			       "GB/s effective" : "GFLOP/s");
	} else if (!strcmp(m, "seconds_per_gib"))
		printf("  register %.2f ms, unregister %.2f ms",
		       r->seconds * 1e3, r->free_seconds * 1e3);
	printf("\n");
}

static void table_row(const struct result *r)
{
	char sz[32], nb[12];
	const char *node = node_str(r->numa_node, nb);

	fmt_size(sz, sizeof(sz), r->size_bytes);
	if (gpu_summary_row(r)) {
		printf("%s: %s%s\n", mode_name(r->mode),
		       r->status == RES_UNAVAILABLE ? "unavailable: " : "",
		       r->reason);
		return;
	}
	if (r->status == RES_UNAVAILABLE || r->status == RES_SKIPPED) {
		/* "host: hugetlb: unavailable: ...", "drm: unavailable: ..." */
		printf("%s", mode_name(r->mode));
		if (r->mode != MODE_DRM || r->size_bytes)
			printf(": %s", r->memory);
		if (r->size_bytes)
			printf(" %s", sz);
		if (strcmp(r->op, "all"))
			printf(" %s", r->op);
		printf(": %s: %s\n", status_names[r->status], r->reason);
		return;
	}
	if (r->mode == MODE_HOST)
		printf("%-6s %-8s %10s %10.2f %10.2f %10.2f %4d %5s\n", r->op,
		       r->memory, sz, r->med, r->min, r->max, r->reps, node);
	else if (r->mode == MODE_ALLOC)
		printf("%-20s %10s %10.4f %10.4f %10.4f %10.2f %10.2f %5.1f %4d %5s\n",
		       r->memory, sz, r->med, r->min, r->max, r->seconds * 1e3,
		       r->free_seconds * 1e3, r->pmd_pct, r->reps, node);
	else if (r->mode == MODE_DRM)
		printf("%-20s %10s %10.0f %10.0f %10.0f %5d\n", r->op, sz,
		       r->med, r->min, r->max, r->reps);
	else if (r->mode == MODE_CUDA || r->mode == MODE_HSA ||
		 r->mode == MODE_VULKAN || r->mode == MODE_RDMA ||
		 r->mode == MODE_STORAGE)
		cuda_row(r, sz, node);
}

static void output_table(struct bench *b)
{
	int m, i;

	table_header(&b->hdr);
	for (m = 0; m < MODE_COUNT; m++) {
		const struct result *ok = NULL;
		int any = 0;

		for (i = 0; i < b->nr_res; i++) {
			if (b->res[i].mode != (enum bench_mode)m)
				continue;
			any = 1;
			if (!ok && b->res[i].status == RES_OK)
				ok = &b->res[i];
		}
		if (!any)
			continue;
		printf("\n");
		if (ok)
			table_mode_title(b, m, ok);
		for (i = 0; i < b->nr_res; i++)
			if (b->res[i].mode == (enum bench_mode)m)
				table_row(&b->res[i]);
	}
	if (!b->nr_rat)
		return;
	printf("\n# ratios: numerator / denominator, both at the size shown: median [min..max]\n"
	       "# of the ratios of N interleaved pairs (A, B, A, B, ...; one ratio per pair);\n"
	       "# bandwidth >1: numerator faster; s/GiB or time >1: numerator slower\n");
	for (i = 0; i < b->nr_rat; i++) {
		const struct ratio *rt = &b->rat[i];
		char sz[32];

		fmt_size(sz, sizeof(sz), rt->size_bytes);
		if (rt->ok)
			printf("%-36s %6.3f  at %s  [%.3f..%.3f] over %d pairs\n",
			       rt->name, rt->med, sz, rt->min, rt->max,
			       rt->pairs);
		else
			printf("%-36s unavailable at %s: %s\n", rt->name,
			       sz, rt->reason);
	}
}

/* ---- CSV --------------------------------------------------------------- */

/* Quotes a field when it holds a comma, quote or newline. */
static void csv_str(const char *s, const char *sep)
{
	if (strpbrk(s, ",\"\n")) {
		putchar('"');
		for (; *s; s++) {
			if (*s == '"')
				putchar('"');
			putchar(*s);
		}
		putchar('"');
	} else {
		fputs(s, stdout);
	}
	fputs(sep, stdout);
}

static void output_csv(struct bench *b)
{
	int i;

	printf("mode,op,memory,size_bytes,threads,reps,numa_node,metric,"
	       "median,min,max,seconds,free_seconds,status,reason\n");
	for (i = 0; i < b->nr_res; i++) {
		const struct result *r = &b->res[i];

		printf("%s,%s,%s,%llu,%d,%d,%d,%s,%.6g,%.6g,%.6g,%.6g,%.6g,",
		       mode_name(r->mode), r->op, r->memory,
		       (unsigned long long)r->size_bytes, r->threads, r->reps,
		       r->numa_node, result_metric(r), r->med, r->min,
		       r->max, r->seconds, r->free_seconds);
		csv_str(status_names[r->status], ",");
		csv_str(r->reason, "\n");
	}
	/* Ratios: threads and reps are the run's threads and pair count. */
	for (i = 0; i < b->nr_rat; i++) {
		const struct ratio *rt = &b->rat[i];

		printf("ratio,%s,%s,%llu,%d,%d,-1,ratio,%.6g,%.6g,%.6g,0,0,",
		       rt->name, rt->num, (unsigned long long)rt->size_bytes,
		       rt->threads, rt->pairs, rt->med, rt->min, rt->max);
		csv_str(rt->ok ? "ok" : "unavailable", ",");
		csv_str(rt->reason, "\n");
	}
}

/* ---- JSON -------------------------------------------------------------- */

static void json_node(struct json *j, const char *key, int node)
{
	if (node >= 0)
		json_int(j, key, node);
	else
		json_null(j, key);
}

static void json_header(struct json *j, const struct bench *b)
{
	const struct header *h = &b->hdr;

	json_obj_begin(j, "header");
	json_str(j, "tool", "gpubuf-bench");
	json_str(j, "kernel", h->kernel);
	json_str(j, "cpu", h->cpu);
	json_str(j, "backend", h->backend);
	json_str(j, "driver", h->driver);
	json_str(j, "library", h->library);
	json_str(j, "library_version_compiled", GPUBUF_VERSION_STRING);
	json_str(j, "numa_online", h->numa_online);
	json_node(j, "numa_node_gpubuf", h->numa_gpubuf);
	json_node(j, "numa_node_requested", h->node_requested);
	json_node(j, "numa_node_anon", h->numa_anon);
	json_str(j, "cuda", h->cuda);
	json_str(j, "hsa", h->hsa);
	json_bool(j, "emulated", h->emulated);
	if (h->emulated)
		json_str(j, "emulated_reason", h->emulated_why);
	json_int(j, "threads", b->o.threads);
	json_u64(j, "rep_bytes", b->o.rep_bytes);
	json_str(j, "gb_per_s_unit", "1e9 bytes per second");
	json_str(j, "clock", "CLOCK_MONOTONIC");
	json_obj_end(j);
}

static void json_metric(struct json *j, const struct result *r)
{
	const char *m = result_metric(r);
	char key[40];

	json_dbl(j, m, r->med);
	snprintf(key, sizeof(key), "%s_min", m);
	json_dbl(j, key, r->min);
	snprintf(key, sizeof(key), "%s_max", m);
	json_dbl(j, key, r->max);
}

static void json_result(struct json *j, const struct result *r)
{
	json_obj_begin(j, NULL);
	json_str(j, "mode", mode_name(r->mode));
	json_str(j, "op", r->op);
	json_str(j, "memory", r->memory);
	if (r->size_bytes)
		json_u64(j, "size_bytes", r->size_bytes);
	json_str(j, "status", status_names[r->status]);
	if (r->status == RES_OK) {
		json_int(j, "threads", r->threads);
		json_int(j, "reps", r->reps);
		if (r->mode != MODE_DRM)
			json_node(j, "numa_node", r->numa_node);
		json_metric(j, r);
		if (r->mode == MODE_ALLOC) {
			json_dbl(j, "seconds", r->seconds);
			json_dbl(j, "free_seconds", r->free_seconds);
			if (r->pmd_pct >= 0)
				json_dbl(j, "pmd_mapped_pct", r->pmd_pct);
		}
		if (r->mode == MODE_DRM)
			json_str(j, "device", r->reason);
		if (r->mode == MODE_CUDA && r->seconds > 0)
			json_dbl(j, "seconds", r->seconds);
		if (r->mode == MODE_CUDA && r->free_seconds > 0)
			json_dbl(j, "free_seconds", r->free_seconds);
		if (r->rate_name)
			json_dbl(j, r->rate_name, r->rate);
	} else if (gpu_summary_row(r)) {
		json_str(j, r->status == RES_INFO ? "info" : "reason",
			 r->reason);
		json_str(j, "version", r->version);
		if (r->device_count >= 0)
			json_int(j, "device_count", r->device_count);
	} else {
		json_str(j, "reason", r->reason);
	}
	json_obj_end(j);
}

static void json_ratio(struct json *j, const struct ratio *rt)
{
	int i;

	json_obj_begin(j, rt->name);
	json_str(j, "status", rt->ok ? "ok" : "unavailable");
	if (rt->ok) {
		json_dbl(j, "ratio", rt->med);
		json_dbl(j, "ratio_min", rt->min);
		json_dbl(j, "ratio_max", rt->max);
	}
	json_str(j, "numerator", rt->num);
	json_u64(j, "size_bytes", rt->size_bytes);
	json_str(j, "method", "interleaved pairs");
	json_int(j, "pairs", rt->pairs);
	if (rt->ok) {
		json_arr_begin(j, "pair_ratios");
		for (i = 0; i < rt->pairs; i++)
			json_dbl(j, NULL, rt->pair[i]);
		json_arr_end(j);
	} else {
		json_str(j, "reason", rt->reason);
	}
	json_obj_end(j);
}

static void output_json(struct bench *b, FILE *f)
{
	struct json j;
	int i;

	json_init(&j, f);
	json_obj_begin(&j, NULL);
	json_header(&j, b);
	json_arr_begin(&j, "results");
	for (i = 0; i < b->nr_res; i++)
		json_result(&j, &b->res[i]);
	json_arr_end(&j);
	json_obj_begin(&j, "ratios");
	for (i = 0; i < b->nr_rat; i++)
		json_ratio(&j, &b->rat[i]);
	json_obj_end(&j);
	json_obj_end(&j);
	json_finish(&j);
}

void output_results(struct bench *b)
{
	if (b->o.format == FMT_JSON)
		output_json(b, stdout);
	else if (b->o.format == FMT_CSV)
		output_csv(b);
	else
		output_table(b);
	fflush(stdout);
}

/* The JSON document into file too: one run gives both forms. */
int output_json_file(struct bench *b, const char *file)
{
	FILE *f = fopen(file, "w");
	int bad;

	if (!f) {
		fprintf(stderr, "ERROR: --json-file %s: %s\n", file,
			strerror(errno));
		return EXIT_FAIL;
	}
	output_json(b, f);
	bad = ferror(f);
	if (fclose(f) || bad) {
		fprintf(stderr, "ERROR: --json-file %s: write failed\n", file);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
