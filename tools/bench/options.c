// SPDX-License-Identifier: MIT
/* gpubuf-bench command line: modes, options, sizes. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/sysinfo.h"
#include "bench.h"

static const char *const mode_names[MODE_COUNT] = {
	[MODE_HOST] = "host",
	[MODE_ALLOC] = "alloc",
	[MODE_DRM] = "drm",
	[MODE_CUDA] = "cuda",
	[MODE_HSA] = "hsa",
	[MODE_VULKAN] = "vulkan",
	[MODE_RDMA] = "rdma",
	[MODE_STORAGE] = "storage",
};

const char *mode_name(enum bench_mode m)
{
	return m < MODE_COUNT ? mode_names[m] : "?";
}

void bench_usage(FILE *f)
{
	fputs(
"usage: gpubuf-bench MODE... [options]\n"
"\n"
"modes (several may be given; 'all' runs every one):\n"
"  host    read/write/copy bandwidth: gpubuf vs malloc vs mlock'd anonymous\n"
"          vs hugetlb memory, over a size sweep\n"
"  alloc   allocate + map + first touch, seconds per GiB: gpubuf vs\n"
"          anonymous mmap + mlock (one populating walk each)\n"
"  drm     PRIME import latency of gpubuf dma-bufs into a DRM device\n"
"          (module backend only)\n"
"  cuda    on an NVIDIA GPU: copy-engine H2D/D2H from gpubuf (registered),\n"
"          cuMemHostAlloc, pageable and memfd memory; zero-copy read/write;\n"
"          GEMV zero-copy vs copy + GEMV; cuMemHostRegister cost; GEMM\n"
"          (gpubuf kernels, and cuBLAS when libcublas loads)\n"
"  hsa     on an AMD GPU agent: hsa_amd_memory_async_copy H2D/D2H from gpubuf\n"
"          (locked), fine-grained system pool, pageable (lock + copy +\n"
"          unlock per copy) and memfd memory; never run on AMD hardware\n"
"  vulkan  on a Vulkan device (--device: its index): libgpubuf's GEMV on gpubuf\n"
"          memory in place vs copy into device memory + GEMV; import cost\n"
"          (Mesa's lavapipe is a CPU, not a GPU, and the output says so)\n"
"  rdma    RDMA WRITE/READ bandwidth and small-operation latency to another\n"
"          machine over one RC queue pair: gpubuf buffers vs mlock'd anonymous\n"
"          memory, interleaved (needs --peer HOST here and --serve there)\n"
"  storage a file into pinned memory: gpubuf_read_file() (O_DIRECT, io_uring)\n"
"          into a gpubuf buffer and into malloc memory, pread + memcpy and\n"
"          mmap + memcpy into a gpubuf buffer; GB/s and CPU s/GB\n"
"\n"
"options:\n"
"  --sizes LIST       comma-separated sizes with K/M/G suffixes (powers of 1024)\n"
"                     default: host 4K,16K,64K,256K,1M,4M,16M,64M,256M;\n"
"                     alloc 64M,256M,1G,4G; drm 4K,64K,1M,16M,64M; cuda, hsa 512M;\n"
"                     vulkan 16M,256M; rdma 4K,64K,1M,4M; storage 16M,256M\n"
"  --size SIZE        one size, the same as --sizes SIZE (cuda, hsa: 512M)\n"
"  --max-size SIZE    drop sizes above SIZE; a mode left with none uses\n"
"                     SIZE itself (default: no limit); rdma --serve: the\n"
"                     largest size a peer may measure (default: the largest\n"
"                     of --sizes, else 4M)\n"
"  --ratio-size SIZE  host, alloc, cuda, hsa: size at which the ratios are taken,\n"
"                     from interleaved pairs of both sides at that size\n"
"                     (default: 256M when swept, else the largest size swept)\n"
"  --threads N        host: threads splitting each buffer (default 1)\n"
"  --reps N           timed repetitions, median/min/max reported, and pairs\n"
"                     per ratio (default: host 5, alloc 3, drm 100, cuda, hsa 5)\n"
"  --warmup N         untimed repetitions (or pairs) first (default: host 1,\n"
"                     alloc 1, drm 10, cuda, hsa 1)\n"
"  --rep-bytes SIZE   host: bytes moved per repetition; small buffers are\n"
"                     walked repeatedly (default 64M)\n"
"  --drm-card PATH    DRM device for drm (default: first /dev/dri/card*)\n"
"  --device N         CUDA device ordinal for cuda, GPU agent index (in\n"
"                     enumeration order) for hsa (default 0)\n"
"  --node N           every gpubuf buffer on NUMA node N only (strict), to\n"
"                     measure local against remote memory (default: the\n"
"                     allocating thread's policy)\n"
"  --peer HOST        rdma: measure against 'gpubuf-bench rdma --serve' on HOST\n"
"  --serve            rdma: wait for one --peer run and serve its memory\n"
"  --ib-dev NAME      rdma: RDMA device (default: the first one)\n"
"  --tcp-port PORT    rdma: the side channel's TCP port (default 7472)\n"
"  --tcp-timeout SEC  rdma: give up when the other side is silent that long,\n"
"                     or a connection takes longer (default 60)\n"
"  --bind ADDR        rdma --serve: listen on ADDR (default: the address of\n"
"                     the RDMA port's network device; 0.0.0.0 or :: for\n"
"                     every interface)\n"
"  --ops LIST         rdma --peer: write, read or write,read (default): what\n"
"                     is measured, and all the server's rkeys allow\n"
"  --file PATH        storage: the file to read (default: a file of the largest\n"
"                     size made in $TMPDIR or /var/tmp and removed after)\n"
"  --queue-depth N    storage: requests in flight (default 16)\n"
"  --block-size SIZE  storage: bytes per request, 4K units (default 1M)\n"
"  --json             one JSON document on stdout\n"
"  --json-file FILE   also write that JSON document into FILE, from the same\n"
"                     run as what stdout shows\n"
"  --csv              CSV on stdout, one header line\n"
"  --plot FILE        draw bandwidth against size into FILE.png or FILE.svg\n"
"                     with gnuplot (default: no plot)\n"
"  -h, --help         this text\n"
"\n"
"Results go to stdout, everything else to stderr. GB/s are 1e9 bytes/s.\n"
"Environment: GPUBUF_BACKEND=module|memfd|auto selects the backend.\n"
"Exit status: 0 a mode ran, none failed; 1 failure; 2 usage; 77 every mode\n"
"unsupported (host, alloc, drm: no /dev/gpubuf with GPUBUF_BACKEND=module;\n"
"cuda: no NVIDIA driver or GPU, or built without CUDA support; hsa: no\n"
"usable ROCm runtime or GPU agent, or built without HSA support; rdma: no\n"
"--peer/--serve, no libibverbs or RDMA device, or built without it).\n",
	      f);
}

static int parse_size_list(struct bench_opts *o, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	o->nr_sizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->nr_sizes == MAX_SIZES) {
			err = -E2BIG;
			break;
		}
		err = parse_size(tok, &o->sizes[o->nr_sizes++]);
		if (err)
			break;
	}
	free(copy);
	return err ? err : (o->nr_sizes ? 0 : -EINVAL);
}

/* Whether NUMA node n is online (node 0 on a kernel without NUMA). */
static int node_online(int n)
{
	char path[64];

	if (access("/sys/devices/system/node", F_OK))
		return n == 0;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n);
	return access(path, F_OK) == 0;
}

static int parse_int(const char *s, int min, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < min || v > 1000000)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int parse_mode(struct bench_opts *o, const char *s)
{
	int m;

	if (!strcmp(s, "all")) {
		o->modes = (1u << MODE_COUNT) - 1;
		return 0;
	}
	for (m = 0; m < MODE_COUNT; m++) {
		if (!strcmp(s, mode_names[m])) {
			o->modes |= 1u << m;
			return 0;
		}
	}
	return -EINVAL;
}

enum { OPT_SIZES = 256, OPT_SIZE, OPT_MAX_SIZE, OPT_RATIO_SIZE, OPT_THREADS, OPT_REPS, OPT_WARMUP,
       OPT_REP_BYTES, OPT_DRM_CARD, OPT_DEVICE, OPT_JSON, OPT_JSON_FILE, OPT_CSV, OPT_PLOT,
       OPT_PEER, OPT_SERVE, OPT_IB_DEV, OPT_TCP_PORT, OPT_TCP_TIMEOUT, OPT_BIND,
       OPT_OPS, OPT_NODE, OPT_FILE, OPT_QUEUE_DEPTH, OPT_BLOCK_SIZE };

static const struct option long_opts[] = {
	{ "sizes", required_argument, NULL, OPT_SIZES },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "ratio-size", required_argument, NULL, OPT_RATIO_SIZE },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "reps", required_argument, NULL, OPT_REPS },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "rep-bytes", required_argument, NULL, OPT_REP_BYTES },
	{ "drm-card", required_argument, NULL, OPT_DRM_CARD },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "json-file", required_argument, NULL, OPT_JSON_FILE },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "plot", required_argument, NULL, OPT_PLOT },
	{ "peer", required_argument, NULL, OPT_PEER },
	{ "serve", no_argument, NULL, OPT_SERVE },
	{ "ib-dev", required_argument, NULL, OPT_IB_DEV },
	{ "tcp-port", required_argument, NULL, OPT_TCP_PORT },
	{ "tcp-timeout", required_argument, NULL, OPT_TCP_TIMEOUT },
	{ "bind", required_argument, NULL, OPT_BIND },
	{ "ops", required_argument, NULL, OPT_OPS },
	{ "node", required_argument, NULL, OPT_NODE },
	{ "file", required_argument, NULL, OPT_FILE },
	{ "queue-depth", required_argument, NULL, OPT_QUEUE_DEPTH },
	{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int bench_bad(const char *what, const char *arg)
{
	fprintf(stderr, "ERROR: invalid %s: '%s'\n", what, arg);
	return EXIT_USAGE;
}

/*
 * Returns -1 to go on, or an exit status: 0 after --help, EXIT_USAGE.
 * Errors are printed here, the usage text by the caller.
 */
int bench_parse(struct bench_opts *o, int argc, char **argv)
{
	int c, i;

	memset(o, 0, sizeof(*o));
	o->threads = 1;
	o->warmup = -1;
	o->rep_bytes = 64 * MIB;
	o->tcp_port = "7472";
	o->tcp_timeout = 60;
	o->node = -1;
	opterr = 0;
	for (;;) {
		/* Modes and options may come in any order. */
		while (optind < argc && argv[optind][0] != '-') {
			if (parse_mode(o, argv[optind]))
				return bench_bad("mode", argv[optind]);
			optind++;
		}
		c = getopt_long(argc, argv, "+h", long_opts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case OPT_SIZES:
			if (parse_size_list(o, optarg))
				return bench_bad("--sizes", optarg);
			break;
		case OPT_SIZE:
			if (parse_size(optarg, &o->sizes[0]))
				return bench_bad("--size", optarg);
			o->nr_sizes = 1;
			break;
		case OPT_MAX_SIZE:
			if (parse_size(optarg, &o->max_size))
				return bench_bad("--max-size", optarg);
			break;
		case OPT_RATIO_SIZE:
			if (parse_size(optarg, &o->ratio_size))
				return bench_bad("--ratio-size", optarg);
			break;
		case OPT_REP_BYTES:
			if (parse_size(optarg, &o->rep_bytes))
				return bench_bad("--rep-bytes", optarg);
			o->rep_bytes_set = 1;
			break;
		case OPT_THREADS:
			if (parse_int(optarg, 1, &o->threads) || o->threads > 1024)
				return bench_bad("--threads", optarg);
			break;
		case OPT_REPS:
			if (parse_int(optarg, 1, &o->reps))
				return bench_bad("--reps", optarg);
			break;
		case OPT_WARMUP:
			if (parse_int(optarg, 0, &o->warmup))
				return bench_bad("--warmup", optarg);
			break;
		case OPT_DRM_CARD:
			o->drm_card = optarg;
			break;
		case OPT_DEVICE:
			if (parse_int(optarg, 0, &o->device))
				return bench_bad("--device", optarg);
			break;
		case OPT_NODE:
			if (parse_int(optarg, 0, &o->node) || o->node > 1023)
				return bench_bad("--node", optarg);
			if (!node_online(o->node)) {
				fprintf(stderr, "ERROR: --node %d: no such NUMA node online\n",
					o->node);
				return EXIT_USAGE;
			}
			break;
		case OPT_JSON:
			o->format = FMT_JSON;
			break;
		case OPT_JSON_FILE:
			o->json_file = optarg;
			break;
		case OPT_CSV:
			o->format = FMT_CSV;
			break;
		case OPT_PLOT:
			o->plot = optarg;
			break;
		case OPT_PEER:
			o->rdma_peer = optarg;
			break;
		case OPT_SERVE:
			o->rdma_serve = 1;
			break;
		case OPT_IB_DEV:
			o->ib_dev = optarg;
			break;
		case OPT_TCP_PORT:
			if (atoi(optarg) <= 0 || atoi(optarg) > 65535)
				return bench_bad("--tcp-port", optarg);
			o->tcp_port = optarg;
			break;
		case OPT_TCP_TIMEOUT:
			if (parse_int(optarg, 1, &o->tcp_timeout) || o->tcp_timeout > 86400)
				return bench_bad("--tcp-timeout", optarg);
			break;
		case OPT_BIND:
			o->rdma_bind = optarg;
			break;
		case OPT_FILE:
			o->storage_file = optarg;
			break;
		case OPT_QUEUE_DEPTH:
			if (parse_int(optarg, 1, &o->queue_depth) || o->queue_depth > 4096)
				return bench_bad("--queue-depth (1 to 4096)", optarg);
			break;
		case OPT_BLOCK_SIZE:
			if (parse_size(optarg, &o->block_size) || !o->block_size ||
			    o->block_size % 4096 || o->block_size > GIB)
				return bench_bad("--block-size (4K units, at most 1G)", optarg);
			break;
		case OPT_OPS:
			if (!strcmp(optarg, "write"))
				o->rdma_ops = RDMA_OP_WRITE;
			else if (!strcmp(optarg, "read"))
				o->rdma_ops = RDMA_OP_READ;
			else if (!strcmp(optarg, "write,read") || !strcmp(optarg, "read,write"))
				o->rdma_ops = RDMA_OP_WRITE | RDMA_OP_READ;
			else
				return bench_bad("--ops (write, read or write,read)", optarg);
			break;
		case 'h':
			bench_usage(stdout);
			return EXIT_OK;
		default:
			fprintf(stderr, "ERROR: unknown or incomplete option '%s'\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	for (i = optind; i < argc; i++)
		if (parse_mode(o, argv[i]))
			return bench_bad("mode", argv[i]);
	if (!o->modes) {
		fprintf(stderr, "ERROR: no mode given\n");
		return EXIT_USAGE;
	}
	if (o->rdma_peer && o->rdma_serve) {
		fprintf(stderr, "ERROR: --peer and --serve are the two sides of one rdma run: give one\n");
		return EXIT_USAGE;
	}
	if (o->rdma_bind && !o->rdma_serve) {
		fprintf(stderr, "ERROR: --bind is where 'rdma --serve' listens: give it with --serve\n");
		return EXIT_USAGE;
	}
	if (o->rdma_ops && o->rdma_serve) {
		fprintf(stderr, "ERROR: --ops is the measuring side's (--peer); the server grants what the peer asks for\n");
		return EXIT_USAGE;
	}
	return -1;
}

int bench_sizes(const struct bench_opts *o, const uint64_t *def, int nr_def,
		uint64_t *out)
{
	const uint64_t *src = o->nr_sizes ? o->sizes : def;
	int nr = o->nr_sizes ? o->nr_sizes : nr_def;
	int i, n = 0;

	for (i = 0; i < nr; i++)
		if (!o->max_size || src[i] <= o->max_size)
			out[n++] = src[i];
	/* "all --max-size 64K" still measures every mode, at 64K. */
	if (!n && nr)
		out[n++] = o->max_size;
	return n;
}

/*
 * A ratio compares two measurements of the same size, and that size is
 * chosen before anything is measured, so a side that fails there makes
 * the ratio "unavailable" instead of moving it to a size that worked (an
 * in-cache one, on a memfd backend under RLIMIT_MEMLOCK). 256M is the
 * default host and alloc sweep's out-of-cache size.
 */
uint64_t bench_ratio_size(const struct bench_opts *o, const uint64_t *sizes,
			  int nr)
{
	uint64_t largest = 0;
	int i;

	if (o->ratio_size)
		return o->ratio_size;
	for (i = 0; i < nr; i++) {
		if (sizes[i] == 256 * MIB)
			return sizes[i];
		if (sizes[i] > largest)
			largest = sizes[i];
	}
	return largest;
}
