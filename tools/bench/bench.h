/* SPDX-License-Identifier: MIT */
/*
 * gpubuf-bench internals: options, result records, timing helpers, and the
 * entry point of each mode. Modes append records; output.c prints them.
 */
#ifndef GPUBUF_BENCH_H
#define GPUBUF_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <gpubuf.h>

#define KIB	(1024ULL)
#define MIB	(1024ULL * KIB)
#define GIB	(1024ULL * MIB)

/* Exit codes shared by both tools. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_UNSUPPORTED = 77 };

enum bench_mode { MODE_HOST, MODE_ALLOC, MODE_DRM, MODE_CUDA, MODE_HSA,
		  MODE_VULKAN, MODE_RDMA, MODE_STORAGE, MODE_COUNT };

enum bench_format { FMT_TABLE, FMT_JSON, FMT_CSV };

#define MAX_SIZES	64

struct bench_opts {
	unsigned int modes;		/* bit per enum bench_mode */
	enum bench_format format;
	uint64_t sizes[MAX_SIZES];	/* --sizes; nr_sizes 0 = per mode */
	int nr_sizes;
	uint64_t max_size;		/* --max-size; 0 = none */
	uint64_t ratio_size;		/* --ratio-size; 0 = bench_ratio_size() */
	uint64_t rep_bytes;		/* bytes moved per host repetition */
	int rep_bytes_set;		/* --rep-bytes given */
	int threads;
	int reps;			/* 0 = the mode's default */
	int warmup;			/* -1 = the mode's default */
	const char *plot;
	const char *json_file;		/* --json-file: JSON here as well */
	const char *drm_card;
	int device;			/* --device: CUDA ordinal, HSA GPU agent index */
	int node;			/* --node: gpubuf buffers there; -1 none */
	const char *rdma_peer;		/* --peer HOST: measure against its --serve */
	int rdma_serve;			/* --serve: be the other side of one run */
	const char *ib_dev;		/* --ib-dev: RDMA device name; NULL = first */
	const char *tcp_port;		/* --tcp-port: the rdma side channel */
	const char *rdma_bind;		/* --bind ADDR: --serve listens there;
					 * NULL = the RDMA port's netdev */
	int tcp_timeout;		/* --tcp-timeout: side channel, seconds */
	unsigned int rdma_ops;		/* --ops: RDMA_OP_* bits; 0 = both */
	const char *storage_file;	/* --file: storage reads it; NULL = make one */
	int queue_depth;		/* --queue-depth: storage; 0 = libgpubuf's */
	uint64_t block_size;		/* --block-size: storage; 0 = libgpubuf's */
};

/* rdma: the operations a --peer run measures, and a server grants. */
#define RDMA_OP_WRITE	1u
#define RDMA_OP_READ	2u

enum result_status { RES_OK, RES_UNAVAILABLE, RES_SKIPPED, RES_INFO };

struct result {
	enum bench_mode mode;
	enum result_status status;
	char op[24];		/* read, write, copy, alloc_map_touch, ... */
	char memory[24];	/* gpubuf, malloc, mlock, hugetlb, ... */
	uint64_t size_bytes;
	int threads;
	int reps;
	int numa_node;		/* -1 unknown */
	const char *metric;	/* unit of med/min/max; NULL: bench_metric() */
	double med, min, max;	/* in result_metric() */
	double seconds;		/* alloc: median seconds of alloc+map+touch;
				 * cuda: of one register or one operation */
	double free_seconds;	/* alloc: median seconds of free/unmap;
				 * cuda: of one unregister */
	double pmd_pct;		/* alloc: % of the mapping with PMD entries,
				 * -1 unknown */
	const char *rate_name;	/* cuda: a rate derived from med, or NULL */
	double rate;
	char reason[384];	/* unavailable/skipped reason, or info text */
	char version[32];	/* cuda/hsa: runtime version */
	int device_count;	/* cuda/hsa */
};

struct header {
	char kernel[160];
	char cpu[320];
	char numa_online[64];
	int numa_gpubuf;	/* node of a gpubuf page, -1 n/a */
	int numa_anon;		/* node of an anonymous page, -1 n/a */
	int node_requested;	/* --node, -1 none */
	int emulated;
	char emulated_why[256];
	const char *backend;	/* "module", "memfd" or "none" */
	char driver[64];	/* "abi 1 (min 1), release 0.1.0" or n/a */
	char library[64];	/* run-time and compile-time versions */
	char cuda[448];
	char hsa[448];
	char open_error[256];	/* gpubuf_open_err() message, if it failed */
};

/*
 * A compass ratio, num's metric over another memory's at one size. Taken
 * from interleaved repetitions A, B, A, B, ... with one ratio per pair, so
 * a machine that speeds up or slows down during the run (turbo, a busy
 * neighbour, an emulator) moves both sides of each pair alike; separate
 * blocks of A and then B would put that drift into the ratio. med, min and
 * max are over the pair ratios. When ok is 0, reason says which side
 * could not be measured and why; the ratio is printed as unavailable.
 */
struct ratio {
	enum bench_mode mode;
	char name[48];
	char num[24];		/* numerator's memory, e.g. "gpubuf" */
	uint64_t size_bytes;
	int threads;
	int ok;
	int pairs;
	double med, min, max;
	double *pair;		/* the pair ratios, in run order */
	char reason[656];
};

/* Global state of a run. */
struct bench {
	struct bench_opts o;
	struct gpubuf_ctx *ctx;	/* NULL when gpubuf_open() failed */
	/* every gpubuf buffer's options: --node's, strict (BENCH_ALLOC) */
	struct gpubuf_alloc_opts alloc;
	int open_rc;		/* gpubuf_open_err()'s -errno, 0 on success */
	struct header hdr;
	struct result *res;
	int nr_res, cap_res;
	struct ratio *rat;
	int nr_rat, cap_rat;
};

/* The options every gpubuf allocation of the run uses: NULL or --node's. */
#define BENCH_ALLOC(b) ((b)->o.node >= 0 ? &(b)->alloc : NULL)

/* options.c */
int bench_parse(struct bench_opts *o, int argc, char **argv);
void bench_usage(FILE *f);
const char *mode_name(enum bench_mode m);
/* Sizes for a mode: --sizes if given, else defaults; capped by --max-size. */
int bench_sizes(const struct bench_opts *o, const uint64_t *def, int nr_def,
		uint64_t *out);
/* Where ratios are taken: --ratio-size, else 256M if swept, else the largest. */
uint64_t bench_ratio_size(const struct bench_opts *o, const uint64_t *sizes,
			  int nr);

/* stats.c */
uint64_t now_ns(void);
/* Sorts v in place; writes median, min, max. */
void stats(double *v, int n, double *med, double *min, double *max);
/*
 * A latency row of n samples in microseconds (sorted in place): median
 * [min..max], and the 99th percentile as its p99_us rate.
 */
struct result *result_latency(struct bench *b, enum bench_mode mode,
			      const char *op, const char *mem, uint64_t size,
			      double *us, int n);
/* "4 KiB", "256 MiB", "1.5 GiB" */
void fmt_size(char *buf, size_t len, uint64_t bytes);
int gpu_host_size_check(uint64_t size, char *why, size_t len);
/* Progress on stderr when it is a terminal and the mode runs over 1 s. */
void progress_start(void);
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_end(void);
struct result *result_add(struct bench *b, enum bench_mode mode,
			  enum result_status st);
void result_reason(struct result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Read/write bytes so the compiler cannot drop the work. */
extern volatile uint64_t bench_sink;
/* host.c: the host mode's read kernel, the sum of words into bench_sink. */
void bench_read_words(const uint64_t *p, size_t words);

/* ratio.c */
/*
 * Appends a ratio record (unmeasured: ok 0, empty reason) and returns its
 * index; pointers into b->rat do not survive the next ratio_add().
 */
int ratio_add(struct bench *b, enum bench_mode m, const char *name,
	      const char *num, uint64_t size);
/*
 * Whether num has an ok row of num_op and den one of den_op at the ratio's
 * size; if not, the ratio's reason names each missing side and why (its
 * skipped or unavailable row, or that the size was not swept).
 */
int ratio_sides(const struct bench *b, struct ratio *rt, const char *num_op,
		const char *den_op, const char *den);
/* n interleaved pairs v[2i] (num) and v[2i + 1] (den): ok, or a reason. */
void ratio_pairs(struct ratio *rt, const double *v, int n);
/*
 * warmup untimed, then reps timed pairs of sample(arg, side): side 0 the
 * numerator, 1 the denominator, each 0 and a time in ms, or an error with
 * why; then ratio_pairs(). A failed sample fails the ratio with its why.
 */
void ratio_interleave(struct ratio *rt, int warmup, int reps,
		      int (*sample)(void *arg, int side, double *ms,
				    char *why, size_t len),
		      void *arg);
void ratio_fail(struct ratio *rt, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ratio_free_all(struct bench *b);

/* Each mode returns EXIT_OK, EXIT_FAIL or EXIT_UNSUPPORTED. */
int bench_need_ctx(struct bench *b, enum bench_mode m);
int mode_host(struct bench *b);
int mode_alloc(struct bench *b);
int mode_drm(struct bench *b);
int mode_cuda(struct bench *b);
int mode_hsa(struct bench *b);
int mode_vulkan(struct bench *b);
int mode_rdma(struct bench *b);
int mode_storage(struct bench *b);

/* sysinfo for the header (header.c) */
void header_collect(struct bench *b);

/* output.c */
const char *bench_metric(enum bench_mode m);
const char *result_metric(const struct result *r);
void output_results(struct bench *b);
int output_json_file(struct bench *b, const char *file);

/* plot.c */
int plot_write(struct bench *b, const char *file);

#endif
