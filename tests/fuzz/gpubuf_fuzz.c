// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf_fuzz: an ioctl and syscall fuzzer for /dev/gpubuf and its dma-buf
 * fds, run as root in the test guest. Several threads each run a seeded
 * random mix of the operations in fuzz_*.c until together they made the
 * requested number of syscalls; then everything is closed and the
 * module's counters must return to zero. Prints TAP; the seed printed
 * first repeats the run's choices (thread interleaving aside).
 *
 * Usage: gpubuf_fuzz [--calls N] [--seed S] [--threads T]
 */
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#define FZ_SYSFS	"/sys/class/misc/gpubuf/"
#define FZ_PARAMS	"/sys/module/gpubuf/parameters/"
/* Small limits make EFBIG and ENOSPC cheap and keep the guest's RAM safe. */
#define FZ_MAX_BUFFER	(4ULL << 20)
#define FZ_MAX_TOTAL	(96ULL << 20)
#define FZ_MAX_PRINTED	30

struct fz_config fz_cfg;
static int fz_printed;

static const char *const fz_sc_names[SC_COUNT] = {
	[SC_ALLOC] = "alloc", [SC_INFO] = "info", [SC_VERSION] = "version",
	[SC_BADCMD] = "bad-ioctl", [SC_MMAP] = "mmap", [SC_MUNMAP] = "munmap",
	[SC_MREMAP] = "mremap", [SC_MPROTECT] = "mprotect",
	[SC_MADVISE] = "madvise", [SC_SYNC] = "dmabuf-sync",
	[SC_DMABUF] = "dmabuf-name/syncfile", [SC_FILEOP] = "fileop",
	[SC_VGEM] = "vgem", [SC_CLOSE] = "close", [SC_DUP] = "dup",
	[SC_SOCK] = "scm-rights", [SC_FORK] = "fork/wait", [SC_OTHER] = "other",
};

const char *fz_sc_name(enum fz_sc sc)
{
	return fz_sc_names[sc];
}

/* snprintf and write only: forked children print through here too. */
void fz_violation(struct fz_thread *t, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	t->violations++;
	if (__atomic_fetch_add(&fz_printed, 1, __ATOMIC_RELAXED) >= FZ_MAX_PRINTED)
		return;
	n = snprintf(line, sizeof(line), "# VIOLATION (thread %d, pid %d, seed %llu): ",
		     t->idx, getpid(), (unsigned long long)fz_cfg.seed);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(1, line, n) < 0)
		t->violations++;
}

void fz_check_errno(struct fz_thread *t, const char *what, long err,
		    const int *allowed)
{
	const int *a;

	if (err >= 0)
		return;
	for (a = allowed; *a; a++)
		if (-err == *a)
			return;
	fz_violation(t, "%s failed with %s, not a documented error", what,
		     strerror(-err));
}

static void fz_op_recv_any(struct fz_thread *t)
{
	fz_op_recv(t);
}

struct fz_op {
	void (*run)(struct fz_thread *t);
	unsigned int weight;
};

static const struct fz_op fz_ops[] = {
	{ fz_op_alloc, 14 }, { fz_op_info, 10 }, { fz_op_version, 3 },
	{ fz_op_badcmd, 3 }, { fz_op_mmap, 12 }, { fz_op_munmap, 6 },
	{ fz_op_mremap, 4 }, { fz_op_mprotect, 3 }, { fz_op_madvise, 6 },
	{ fz_op_touch, 6 }, { fz_op_sync, 6 }, { fz_op_dmabuf_misc, 3 },
	{ fz_op_fileop, 5 }, { fz_op_vgem, 7 }, { fz_op_close, 7 },
	{ fz_op_dup, 2 }, { fz_op_other_fd, 2 }, { fz_op_send, 3 },
	{ fz_op_recv_any, 3 },
};

static long fz_thread_calls(const struct fz_thread *t)
{
	long n = 0;
	int i;

	for (i = 0; i < SC_COUNT; i++)
		n += t->calls[i];
	return n;
}

static void fz_run_one(struct fz_thread *t)
{
	static unsigned int total;
	unsigned int i, pick;

	if (!total)
		for (i = 0; i < sizeof(fz_ops) / sizeof(fz_ops[0]); i++)
			__atomic_add_fetch(&total, fz_ops[i].weight, __ATOMIC_RELAXED);
	/* fork copies every mapping's page tables: rare. */
	if (fz_one_in(t, 2000)) {
		fz_op_fork(t);
		return;
	}
	pick = fz_below(t, __atomic_load_n(&total, __ATOMIC_RELAXED));
	for (i = 0; pick >= fz_ops[i].weight; i++)
		pick -= fz_ops[i].weight;
	fz_ops[i].run(t);
}

static void *fz_worker(void *arg)
{
	struct fz_thread *t = arg;

	while (fz_thread_calls(t) < t->budget)
		fz_run_one(t);
	fz_thread_cleanup(t);
	return NULL;
}

static int fz_thread_init(struct fz_thread *t, int idx, int recv_sock)
{
	long page = fz_cfg.page;
	char *p;

	memset(t, 0, sizeof(*t));
	t->idx = idx;
	t->rng = fz_cfg.seed ^ (0x9E3779B97F4A7C15ULL * (idx + 1));
	if (!t->rng)
		t->rng = 1;
	t->sock = recv_sock;
	t->vgem = -1;
	/* The argument area, then a guard page nothing is ever mapped at. */
	p = mmap(NULL, FZ_ARG_BYTES + page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p + FZ_ARG_BYTES, page, PROT_NONE))
		return -1;
	t->arg = (unsigned char *)p;
	t->arg_ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t->child = mmap(NULL, sizeof(*t->child), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t->arg_ro == MAP_FAILED || t->child == MAP_FAILED)
		return -1;
	t->dev = open("/dev/gpubuf", O_RDWR | O_CLOEXEC);
	if (t->dev < 0)
		return -1;
	t->vgem = fz_vgem_open(t);
	t->closed_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(t->closed_fd);
	return 0;
}

static int fz_read_u64(const char *path, uint64_t *v)
{
	FILE *f = fopen(path, "r");
	unsigned long long x;
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%llu", &x) == 1;
	fclose(f);
	if (ok)
		*v = x;
	return ok ? 0 : -1;
}

static int fz_write_u64(const char *path, uint64_t v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%llu\n", (unsigned long long)v) > 0;
	return fclose(f) || !ok ? -1 : 0;
}

/* A sysfs node list ("0", "0-3,5") as a bit mask of nodes below 64. */
static unsigned long long fz_node_mask(const char *path)
{
	unsigned long long mask = 0;
	char line[256], *s = line;
	FILE *f = fopen(path, "r");

	if (!f)
		return 1;	/* no NUMA: node 0 only */
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	while (*s >= '0' && *s <= '9') {
		long a = strtol(s, &s, 10), b = a;

		if (*s == '-')
			b = strtol(s + 1, &s, 10);
		for (; a <= b && a < 64; a++)
			mask |= 1ULL << a;
		if (*s == ',')
			s++;
	}
	return mask;
}

/* Fds still in flight on the sockets are received and closed here. */
static void fz_drain_sockets(struct fz_thread *main_t, struct fz_thread *ts)
{
	int i;

	for (i = 0; i < fz_cfg.threads; i++) {
		main_t->sock = ts[i].sock;
		while (fz_op_recv(main_t) >= 0)
			fz_thread_cleanup(main_t);
		close(ts[i].sock);
		close(fz_cfg.socks[i]);
	}
}

/*
 * The final fput of an fd can be deferred: wait up to 60 s, a bound only
 * counters that never drain exceed.
 */
static int fz_counters_zero(uint64_t *buffers, uint64_t *bytes)
{
	int i;

	for (i = 0; i < 600; i++) {
		if (fz_read_u64(FZ_SYSFS "live_buffers", buffers) ||
		    fz_read_u64(FZ_SYSFS "live_bytes", bytes))
			return 0;
		if (!*buffers && !*bytes)
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

static void fz_usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--calls N] [--seed S] [--threads T]\n", prog);
	exit(2);
}

static void fz_parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "calls", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ 0 },
	};
	int c;

	fz_cfg.calls = 50000;
	fz_cfg.threads = 4;
	fz_cfg.seed = (uint64_t)time(NULL) * 2654435761ULL ^ getpid();
	while ((c = getopt_long(argc, argv, "c:s:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': fz_cfg.calls = strtol(optarg, NULL, 0); break;
		case 's': fz_cfg.seed = strtoull(optarg, NULL, 0); break;
		case 't': fz_cfg.threads = atoi(optarg); break;
		default: fz_usage(argv[0]);
		}
	}
	if (fz_cfg.calls < 1 || fz_cfg.threads < 1 || fz_cfg.threads > 64)
		fz_usage(argv[0]);
}

static void fz_report_calls(const struct fz_thread *ts, const struct fz_thread *main_t,
			    long *total, long *violations, long *touches)
{
	long calls[SC_COUNT] = { 0 }, fails[SC_COUNT] = { 0 };
	int i, j;

	*total = *violations = *touches = 0;
	for (i = 0; i <= fz_cfg.threads; i++) {
		const struct fz_thread *t = i < fz_cfg.threads ? &ts[i] : main_t;

		for (j = 0; j < SC_COUNT; j++) {
			calls[j] += t->calls[j];
			fails[j] += t->fails[j];
		}
		*violations += t->violations;
		*touches += t->touches;
	}
	printf("# syscalls by kind (failed):");
	for (j = 0; j < SC_COUNT; j++) {
		printf("%s %s %ld (%ld)", j % 6 ? "," : "\n#  ",
		       fz_sc_name(j), calls[j], fails[j]);
		*total += calls[j];
	}
	printf("\n# %ld loads/stores through mappings\n", *touches);
}

int main(int argc, char **argv)
{
	uint64_t old_max_buffer = 0, old_max_total = 0, buffers, bytes;
	struct fz_thread *ts, main_t;
	pthread_t *tids;
	long total, violations, touches;
	struct timespec t0, t1;
	int i, limits_set, zero;

	fz_parse_args(argc, argv);
	/* Writes to pipes whose reader was closed: EPIPE, not death. */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	fz_cfg.page = sysconf(_SC_PAGESIZE);
	fz_cfg.online_nodes = fz_node_mask("/sys/devices/system/node/online");
	fz_cfg.memory_nodes = fz_node_mask("/sys/devices/system/node/has_memory");
	printf("TAP version 13\n1..3\n");
	printf("# gpubuf_fuzz --calls %ld --seed %llu --threads %d\n",
	       fz_cfg.calls, (unsigned long long)fz_cfg.seed, fz_cfg.threads);

	limits_set = !fz_read_u64(FZ_PARAMS "max_buffer_bytes", &old_max_buffer) &&
		     !fz_read_u64(FZ_PARAMS "max_total_bytes", &old_max_total) &&
		     !fz_write_u64(FZ_PARAMS "max_buffer_bytes", FZ_MAX_BUFFER) &&
		     !fz_write_u64(FZ_PARAMS "max_total_bytes", FZ_MAX_TOTAL);
	if (fz_read_u64(FZ_PARAMS "max_buffer_bytes", &fz_cfg.max_buffer_bytes)) {
		printf("Bail out! gpubuf is not loaded (no %s)\n", FZ_PARAMS);
		return 1;
	}
	fz_read_u64(FZ_PARAMS "max_total_bytes", &fz_cfg.max_total_bytes);
	if (fz_read_u64(FZ_SYSFS "live_buffers", &buffers) ||
	    fz_read_u64(FZ_SYSFS "live_bytes", &bytes))
		buffers = bytes = ~0ULL;
	printf("# before: live_buffers %llu live_bytes %llu; limits %llu per buffer, %llu in all%s\n",
	       (unsigned long long)buffers, (unsigned long long)bytes,
	       (unsigned long long)fz_cfg.max_buffer_bytes,
	       (unsigned long long)fz_cfg.max_total_bytes,
	       limits_set ? "" : " (not set by the fuzzer)");

	ts = calloc(fz_cfg.threads, sizeof(*ts));
	tids = calloc(fz_cfg.threads, sizeof(*tids));
	fz_cfg.socks = calloc(fz_cfg.threads, sizeof(int));
	if (!ts || !tids || !fz_cfg.socks)
		return 1;
	memset(&main_t, 0, sizeof(main_t));
	main_t.idx = -1;
	main_t.vgem = -1;
	main_t.dev = open("/dev/gpubuf", O_RDWR | O_CLOEXEC);
	for (i = 0; i < fz_cfg.threads; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			       0, sv) || fz_thread_init(&ts[i], i, sv[1])) {
			printf("Bail out! thread %d setup: %s\n", i, strerror(errno));
			return 1;
		}
		fz_cfg.socks[i] = sv[0];
		ts[i].budget = fz_cfg.calls / fz_cfg.threads +
			       (i < fz_cfg.calls % fz_cfg.threads);
		if (ts[i].vgem < 0 && !i)
			printf("# no vgem card: vgem operations skipped\n");
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < fz_cfg.threads; i++)
		if (pthread_create(&tids[i], NULL, fz_worker, &ts[i])) {
			printf("Bail out! pthread_create failed\n");
			return 1;
		}
	for (i = 0; i < fz_cfg.threads; i++)
		pthread_join(tids[i], NULL);
	fz_drain_sockets(&main_t, ts);
	for (i = 0; i < fz_cfg.threads; i++) {
		close(ts[i].dev);
		munmap(ts[i].child, sizeof(*ts[i].child));
	}
	close(main_t.dev);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	fz_report_calls(ts, &main_t, &total, &violations, &touches);
	printf("# %ld syscalls in %.1f s\n", total,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	printf("%s 1 - %ld calls made by %d threads (seed %llu)\n",
	       total >= fz_cfg.calls ? "ok" : "not ok", total, fz_cfg.threads,
	       (unsigned long long)fz_cfg.seed);
	printf("%s 2 - every errno documented and every checked invariant held (%ld violations)\n",
	       violations ? "not ok" : "ok", violations);
	zero = fz_counters_zero(&buffers, &bytes);
	printf("%s 3 - counters back to zero after everything was closed (live_buffers %llu, live_bytes %llu)\n",
	       zero ? "ok" : "not ok", (unsigned long long)buffers,
	       (unsigned long long)bytes);
	if (limits_set) {
		fz_write_u64(FZ_PARAMS "max_buffer_bytes", old_max_buffer);
		fz_write_u64(FZ_PARAMS "max_total_bytes", old_max_total);
	}
	return total >= fz_cfg.calls && !violations && zero ? 0 : 1;
}
