// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf_fuzz: an ioctl and syscall fuzzer for /dev/gpubuf and its dma-buf
 * fds, run as root in the test guest. Several threads each run a seeded
 * random mix of the operations in fuzz_*.c until together they made the
 * requested number of syscalls; then everything is closed and the
 * module's counters must return to zero. The reserve of 2 MiB pages is on
 * from the start and resized, shrunk and lent to held chunks all along
 * (fuzz_reserve.c); at the end nothing is held or lent, the reserve
 * fills and empties on request, and the run must have taken from it.
 * Prints TAP; the seed printed first repeats the run's choices (thread
 * interleaving aside).
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

#include "../testmod/gpubuf_pinprobe.h"
#include "fuzz.h"

/* Small limits make EFBIG and ENOSPC cheap and keep the guest's RAM safe. */
#define FZ_MAX_BUFFER	(4ULL << 20)
#define FZ_MAX_TOTAL	(96ULL << 20)
#define FZ_MAX_PRINTED	30
/* The reserve at the start, so that the first large buffers take from it. */
#define FZ_RESERVE_START	(32ULL << 20)
/* What the end check fills it to, and empties it from. */
#define FZ_RESERVE_CHECK	(16ULL << 20)

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
	[SC_RESERVE] = "reserve/drop_caches", [SC_PIN] = "pinprobe",
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
	{ fz_op_recv_any, 3 }, { fz_op_reserve, 1 }, { fz_op_hold, 1 },
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

/* Wait up to 60 s for both files to read 0; 1 when they did. */
static int fz_wait_zero(const char *a, uint64_t *va, const char *b, uint64_t *vb)
{
	int i;

	for (i = 0; i < 600; i++) {
		if (fz_read_u64(a, va) || fz_read_u64(b, vb))
			return 0;
		if (!*va && !*vb)
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

/*
 * Once nothing is lent or held: the last zeroing finishes, the reserve has
 * no more than reserve_bytes, fills to a new size and empties at 0.
 * 1 when all of it held; @why says what was seen.
 */
static int fz_reserve_settles(char *why, size_t len)
{
	uint64_t used, zeroing, ready = ~0ULL, target = ~0ULL, filled = ~0ULL;
	uint64_t left = ~0ULL, left_zeroing = ~0ULL;
	int ok;

	ok = fz_wait_zero(FZ_SYSFS "reserve_used_bytes", &used,
			  FZ_SYSFS "reserve_zeroing_bytes", &zeroing);
	ok &= !fz_read_u64(FZ_SYSFS "reserve_ready_bytes", &ready) &&
	      !fz_read_u64(FZ_PARAMS "reserve_bytes", &target) &&
	      ready <= target;
	ok &= !fz_write_u64(FZ_PARAMS "reserve_bytes", FZ_RESERVE_CHECK) &&
	      !fz_read_u64(FZ_SYSFS "reserve_ready_bytes", &filled) &&
	      filled == FZ_RESERVE_CHECK;
	ok &= !fz_write_u64(FZ_PARAMS "reserve_bytes", 0) &&
	      !fz_read_u64(FZ_SYSFS "reserve_ready_bytes", &left) &&
	      !fz_read_u64(FZ_SYSFS "reserve_zeroing_bytes", &left_zeroing) &&
	      !left && !left_zeroing;
	snprintf(why, len, "used %llu, zeroing %llu, ready %llu of reserve_bytes %llu; filled to %llu of %llu; at 0: %llu ready, %llu zeroing",
		 (unsigned long long)used, (unsigned long long)zeroing,
		 (unsigned long long)ready, (unsigned long long)target,
		 (unsigned long long)filled, FZ_RESERVE_CHECK,
		 (unsigned long long)left, (unsigned long long)left_zeroing);
	return ok;
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
			    long *total, long *violations, long *touches,
			    struct fz_rsv_stats *rsv)
{
	long calls[SC_COUNT] = { 0 }, fails[SC_COUNT] = { 0 };
	long *sum = (long *)rsv;
	int i, j;
	size_t k;

	*total = *violations = *touches = 0;
	memset(rsv, 0, sizeof(*rsv));
	for (i = 0; i <= fz_cfg.threads; i++) {
		const struct fz_thread *t = i < fz_cfg.threads ? &ts[i] : main_t;
		const long *add = (const long *)&t->rsv;

		for (j = 0; j < SC_COUNT; j++) {
			calls[j] += t->calls[j];
			fails[j] += t->fails[j];
		}
		*violations += t->violations;
		*touches += t->touches;
		for (k = 0; k < sizeof(*rsv) / sizeof(long); k++)
			sum[k] += add[k];
	}
	printf("# syscalls by kind (failed):");
	for (j = 0; j < SC_COUNT; j++) {
		printf("%s %s %ld (%ld)", j % 6 ? "," : "\n#  ",
		       fz_sc_name(j), calls[j], fails[j]);
		*total += calls[j];
	}
	printf("\n# %ld loads/stores through mappings\n", *touches);
}

/* The number on the MemTotal line of /proc/meminfo, in bytes. */
static uint64_t fz_mem_total(void)
{
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static void fz_report_reserve(const struct fz_rsv_stats *r, uint64_t shrunk)
{
	printf("# reserve: %ld chunks of 2 MiB taken from it by %ld buffers; %ld resizes (%ld to 0, %ld above half of RAM), %ld non-numbers refused; %ld drop_caches, %ld of them gave reserve pages back, reserve_shrunk_bytes +%llu MiB\n",
	       r->take_chunks, r->take_bufs, r->resizes, r->resize_zero,
	       r->resize_over, r->resize_refused, r->shrinks, r->shrunk,
	       (unsigned long long)(shrunk >> 20));
	printf("# held: %ld buffers released while pinned (%ld seen in held_buffers right after), %ld pins dropped after their data was checked; %ld reads of the reserve's counters checked\n",
	       r->held_releases, r->held_seen, r->unpins, r->counter_reads);
}

int main(int argc, char **argv)
{
	uint64_t old_max_buffer = 0, old_max_total = 0, buffers, bytes;
	uint64_t old_reserve = 0, shrunk0 = 0, shrunk1 = 0, held, held_bufs;
	struct fz_thread *ts, main_t;
	struct fz_rsv_stats rsv;
	pthread_t *tids;
	long total, violations, touches;
	struct timespec t0, t1;
	int i, limits_set, zero, reserve_set, held_zero, settled, touched;
	char why[256];

	fz_parse_args(argc, argv);
	/* Writes to pipes whose reader was closed: EPIPE, not death. */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	fz_cfg.page = sysconf(_SC_PAGESIZE);
	fz_cfg.online_nodes = fz_node_mask("/sys/devices/system/node/online");
	fz_cfg.memory_nodes = fz_node_mask("/sys/devices/system/node/has_memory");
	fz_cfg.half_ram = fz_mem_total() / 2;
	printf("TAP version 13\n1..6\n");
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
	reserve_set = !fz_read_u64(FZ_PARAMS "reserve_bytes", &old_reserve) &&
		      !fz_write_u64(FZ_PARAMS "reserve_bytes", FZ_RESERVE_START);
	fz_read_u64(FZ_SYSFS "reserve_shrunk_bytes", &shrunk0);
	if (!reserve_set)
		printf("# the reserve could not be set (reserve_bytes): results 5 and 6 fail\n");
	if (access(PINPROBE_DEVICE_PATH, F_OK))
		printf("# no %s (gpubuf_pinprobe.ko): no chunk can be held, result 6 fails\n",
		       PINPROBE_DEVICE_PATH);
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

	fz_report_calls(ts, &main_t, &total, &violations, &touches, &rsv);
	fz_read_u64(FZ_SYSFS "reserve_shrunk_bytes", &shrunk1);
	fz_report_reserve(&rsv, shrunk1 - shrunk0);
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
	held_zero = fz_wait_zero(FZ_SYSFS "held_bytes", &held,
				 FZ_SYSFS "held_buffers", &held_bufs);
	printf("%s 4 - nothing held once every pin was dropped (held_bytes %llu, held_buffers %llu)\n",
	       held_zero ? "ok" : "not ok", (unsigned long long)held,
	       (unsigned long long)held_bufs);
	settled = reserve_set && fz_reserve_settles(why, sizeof(why));
	printf("%s 5 - the reserve's counters add up once nothing is lent: it fills and empties on request (%s)\n",
	       settled ? "ok" : "not ok", reserve_set ? why : "not set");
	touched = rsv.take_bufs && rsv.resizes && rsv.shrinks &&
		  rsv.held_releases && rsv.held_seen;
	printf("%s 6 - the run took from the reserve (%ld chunks), resized it (%ld), shrank it (%ld drop_caches) and held pinned chunks (%ld, %ld seen held)\n",
	       touched ? "ok" : "not ok", rsv.take_chunks, rsv.resizes,
	       rsv.shrinks, rsv.held_releases, rsv.held_seen);
	if (reserve_set)
		fz_write_u64(FZ_PARAMS "reserve_bytes", old_reserve);
	if (limits_set) {
		fz_write_u64(FZ_PARAMS "max_buffer_bytes", old_max_buffer);
		fz_write_u64(FZ_PARAMS "max_total_bytes", old_max_total);
	}
	return total >= fz_cfg.calls && !violations && zero && held_zero &&
	       settled && touched ? 0 : 1;
}
