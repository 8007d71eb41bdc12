// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: gpubuf under load. Worker threads (8 by default) allocate,
 * map, write and verify, sync, PRIME-import into vgem, query, pass over
 * sockets, fork and free buffers at random for a set time; one thread
 * tries to unload gpubuf.ko all along, which must always be refused; a
 * process in a memory-limited cgroup fills it with buffers round after
 * round (ENOMEM, never an OOM kill) and now and then is deliberately
 * OOM-killed holding mapped and imported buffers; the reserve's keeper
 * (stress_reserve.c) resizes the reserve of 2 MiB pages under the
 * workers, holds pinned chunks of released buffers, and runs the machine
 * short of memory until the reserve's shrinker gives pages back. At the
 * end every check of the workers' data has passed, only the deliberate
 * OOM kills happened, the workers took from the reserve, the counters are
 * back to zero, nothing is held or lent, and the module unloads and loads
 * again.
 *
 * Usage: gpubuf_stress [--seconds S] [--threads N] [--seed X]
 *   S defaults to $GPUBUF_STRESS_SECONDS, else 25. GPUBUF_KO names the
 *   module file to load again after the unload check (skipped without it).
 * Prints TAP; the counts of what was done are comments.
 */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <time.h>

#include "gpubuf_stress.h"
#include "kselftest.h"

const char *const stress_count_names[SC_NR] = {
	[SC_ALLOC] = "alloc",
	[SC_ALLOC_RDONLY] = "of them read-only",
	[SC_EFBIG] = "EFBIG",
	[SC_ENOSPC] = "ENOSPC",
	[SC_ENOMEM] = "ENOMEM",
	[SC_BURST] = "bursts to max_total_bytes",
	[SC_MAP] = "mmap",
	[SC_MAP_ENOMEM] = "mmap ENOMEM",
	[SC_WRITE] = "pattern writes",
	[SC_VERIFY] = "verifies",
	[SC_WORDS] = "words checked",
	[SC_SYNC] = "syncs",
	[SC_IMPORT] = "vgem imports",
	[SC_IMPORT_ENOMEM] = "import ENOMEM",
	[SC_UNIMPORT] = "GEM closes",
	[SC_INFO] = "INFO",
	[SC_INFO_FOREIGN] = "INFO on vgem dma-bufs",
	[SC_PASS] = "fds passed",
	[SC_FORK] = "forks",
	[SC_CLOSE_FD] = "fds closed early",
	[SC_UNMAP] = "unmaps",
	[SC_FREE] = "frees",
	[SC_REOPEN] = "/dev/gpubuf reopens",
	[SC_RSV_BUFS] = "of them from the reserve",
	[SC_RSV_CHUNKS] = "2 MiB reserve pages lent",
};

static int stop_flag;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long printed;
/* Workers pause between steps while the reserve's keeper squeezes. */
static int pause_flag, paused_workers, running_workers;

int stress_stopping(void)
{
	return __atomic_load_n(&stop_flag, __ATOMIC_RELAXED);
}

void stress_worker_running(int delta)
{
	__atomic_add_fetch(&running_workers, delta, __ATOMIC_SEQ_CST);
}

/* Ask the workers to pause; return once all are between steps. */
void stress_pause_workers(void)
{
	__atomic_store_n(&pause_flag, 1, __ATOMIC_SEQ_CST);
	while (!stress_stopping() &&
	       __atomic_load_n(&paused_workers, __ATOMIC_SEQ_CST) <
	       __atomic_load_n(&running_workers, __ATOMIC_SEQ_CST))
		usleep(10000);
}

void stress_resume_workers(void)
{
	__atomic_store_n(&pause_flag, 0, __ATOMIC_SEQ_CST);
}

/* A worker between two steps: wait here while a pause is asked for. */
void stress_pause_point(void)
{
	if (!__atomic_load_n(&pause_flag, __ATOMIC_SEQ_CST))
		return;
	__atomic_add_fetch(&paused_workers, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&pause_flag, __ATOMIC_SEQ_CST) &&
	       !stress_stopping())
		usleep(10000);
	__atomic_sub_fetch(&paused_workers, 1, __ATOMIC_SEQ_CST);
}

uint64_t stress_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* Count a failure on @fails; print the first 30 of the whole run. */
void stress_fail(unsigned long *fails, const char *fmt, ...)
{
	va_list ap;

	if (fails)
		__atomic_add_fetch(fails, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&print_lock);
	if (printed++ < 30) {
		printf("# ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		fflush(stdout);
	}
	pthread_mutex_unlock(&print_lock);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int is_refusal(int ret)
{
	/* 6.1 answers EWOULDBLOCK for a busy module; older kernels EBUSY. */
	return ret == -EWOULDBLOCK || ret == -EBUSY;
}

struct stress_rmmod {
	pthread_t thread;
	uint64_t rng;
	unsigned long attempts;
	unsigned long refused;
	unsigned long fails;
};

/*
 * Try to unload gpubuf.ko every few milliseconds. The main thread holds
 * /dev/gpubuf and a buffer open all along, so every attempt must be
 * refused, and refusing must disturb nothing.
 */
static void *rmmod_main(void *arg)
{
	struct stress_rmmod *r = arg;

	while (!stress_stopping()) {
		int ret = gb_unload_module("gpubuf");

		r->attempts++;
		if (is_refusal(ret))
			r->refused++;
		else
			stress_fail(&r->fails, "rmmod: delete_module while buffers live: %s",
				    ret ? strerror(-ret) : "it unloaded");
		usleep(1000 + stress_rand(&r->rng) % 20000);
	}
	return NULL;
}

/*
 * The run lasts its seconds and then until every result below has had
 * something to judge: a data check, an rmmod attempt, a fill round ended
 * by the cgroup, every deliberate OOM round. So a slow machine runs
 * longer instead of failing; a run still short of one QUOTA_WAIT_S seconds
 * past its time stops anyway, says what it lacked, and its results fail.
 */
#define QUOTA_WAIT_S 240

static unsigned long load(const unsigned long *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static int quota_met(const struct stress_config *cfg,
		     const struct stress_worker *w,
		     const struct stress_rmmod *r,
		     const struct stress_pressure *p,
		     const struct stress_reserve *k, const char **missing)
{
	unsigned long verifies = 0, takes = 0;
	int i;

	for (i = 0; i < cfg->threads; i++) {
		verifies += load(&w[i].n[SC_VERIFY]);
		takes += load(&w[i].n[SC_RSV_BUFS]);
	}
	*missing = !verifies ? "data check" :
		   !load(&r->attempts) ? "rmmod attempt" :
		   k->ready && !takes ? "buffer from the reserve" :
		   k->ready && !load(&k->held_releases) ?
			"buffer released while pinned" :
		   k->ready && !load(&k->squeezes_shrunk) ?
			"reserve shrunk under memory pressure" :
		   !p->ready ? NULL :
		   !load(&p->enomem_rounds) ? "fill round ended by the cgroup" :
		   load(&p->oom_rounds) < (unsigned long)cfg->oom_rounds ?
			"end to the deliberate OOM rounds" : NULL;
	return !*missing;
}

/* Wait up to 60 s for the counters to drain (fput can be deferred). */
static int counters_drain(unsigned long long *buffers,
			  unsigned long long *bytes)
{
	int i;

	for (i = 0; i < 600; i++) {
		*buffers = gb_stat("live_buffers");
		*bytes = gb_stat("live_bytes");
		if (!*buffers && !*bytes)
			return 1;
		usleep(100000);
	}
	return 0;
}

static void print_counts(struct stress_worker *w, int threads)
{
	unsigned long sum[SC_NR] = { 0 };
	int i, c;

	for (i = 0; i < threads; i++)
		for (c = 0; c < SC_NR; c++)
			sum[c] += w[i].n[c];
	for (c = 0; c < SC_NR; c++)
		ksft_print_msg("%-26s %lu\n", stress_count_names[c], sum[c]);
}

/* Unload with nothing live, load GPUBUF_KO again, allocate once. */
static void unload_reload(void)
{
	int ret, dev, fd, i;

	if (!getenv("GPUBUF_KO")) {
		ksft_test_result_skip("gpubuf.ko unloads and loads again after the run (no GPUBUF_KO)\n");
		return;
	}
	ret = gb_unload_module("gpubuf");
	if (ret) {
		ksft_test_result_fail("gpubuf.ko unloads after the run: %s\n",
				      strerror(-ret));
		return;
	}
	ret = gb_load_module("GPUBUF_KO", "");
	for (i = 0; !ret && i < 300 && access(GPUBUF_DEVICE_PATH, F_OK); i++)
		usleep(100000);
	dev = ret ? ret : gb_open();
	fd = dev < 0 ? dev : gb_alloc(dev, SZ_1M);
	if (fd >= 0)
		close(fd);
	if (dev >= 0)
		close(dev);
	ksft_test_result(fd >= 0 && gb_stat("live_buffers") == 0,
			 "gpubuf.ko unloads after the run, loads again and allocates (%s)\n",
			 fd >= 0 ? "ok" : strerror(-fd));
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--seconds S] [--threads N] [--seed X]\n",
		prog);
	exit(2);
}

static void parse_args(int argc, char **argv, struct stress_config *cfg)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("GPUBUF_STRESS_SECONDS");
	int c;

	cfg->seconds = env ? atoi(env) : 25;
	cfg->threads = 8;
	cfg->seed = time(NULL) ^ getpid();
	while ((c = getopt_long(argc, argv, "s:t:r:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			cfg->seconds = atoi(optarg);
			break;
		case 't':
			cfg->threads = atoi(optarg);
			break;
		case 'r':
			cfg->seed = strtoull(optarg, NULL, 0);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (cfg->seconds < 1 || cfg->threads < 1 || cfg->threads > 64)
		usage(argv[0]);
	if (!cfg->seed)
		cfg->seed = 1;
	/* Small enough limits that the workers meet them in a 2 GiB guest. */
	cfg->max_buffer = 32 * SZ_1M;
	cfg->max_total = 512 * SZ_1M;
	cfg->cg_max = 96 * SZ_1M;
	/* One OOM kill a minute, at most six: each report fills the log. */
	cfg->oom_rounds = 1 + cfg->seconds / 60;
	if (cfg->oom_rounds > 6)
		cfg->oom_rounds = 6;
}

int main(int argc, char **argv)
{
	struct stress_config cfg;
	struct stress_pressure pressure = { .cfg = &cfg };
	struct stress_reserve keeper = { .cfg = &cfg };
	struct stress_rmmod rmmod = { 0 };
	unsigned long long old_buffer, old_total, buffers, bytes;
	unsigned long long kills_before, kills_after;
	unsigned long fails = 0, forks = 0, verifies = 0, takes = 0;
	char why[320];
	int settled, rsv_ret;
	struct stress_worker *w;
	int dev, anchor, i, ret;
	double start, next_note;
	const char *missing;

	parse_args(argc, argv, &cfg);
	ksft_print_header();
	ksft_set_plan(10);
	ksft_print_msg("%d threads, %d s, seed %#llx, max_buffer_bytes %llu MiB, max_total_bytes %llu MiB, cgroup memory.max %llu MiB, %d OOM rounds\n",
		       cfg.threads, cfg.seconds, (unsigned long long)cfg.seed,
		       cfg.max_buffer >> 20, cfg.max_total >> 20,
		       cfg.cg_max >> 20, cfg.oom_rounds);

	dev = gb_open();
	if (dev < 0)
		ksft_exit_fail_msg("open %s: %s\n", GPUBUF_DEVICE_PATH,
				   strerror(-dev));
	/* Held until the end: nothing may unload the module meanwhile. */
	anchor = gb_alloc(dev, SZ_4K);
	old_buffer = gb_param("max_buffer_bytes");
	old_total = gb_param("max_total_bytes");
	ret = gb_set_param("max_buffer_bytes", cfg.max_buffer);
	if (!ret)
		ret = gb_set_param("max_total_bytes", cfg.max_total);
	if (!ret)
		ret = stress_pressure_setup(&pressure);
	rsv_ret = stress_reserve_setup(&keeper);
	ksft_test_result(anchor >= 0 && !ret && !rsv_ret,
			 "setup: a held buffer, the limits, cgroup %s (%s), reserve_bytes and %s (%s)\n",
			 pressure.cg, ret ? strerror(-ret) : "ok",
			 PINPROBE_DEVICE_PATH,
			 rsv_ret ? strerror(-rsv_ret) : "ok");
	kills_before = gb_cg_read_key("/proc", "vmstat", "oom_kill");

	w = calloc(cfg.threads, sizeof(*w));
	if (!w)
		ksft_exit_fail_msg("out of memory\n");
	rmmod.rng = cfg.seed ^ 0xa5a5a5a5;
	start = now_s();
	for (i = 0; i < cfg.threads; i++) {
		w[i].id = i;
		w[i].cfg = &cfg;
		w[i].rng = cfg.seed + 0x9e3779b97f4a7c15ULL * (i + 1);
		if (pthread_create(&w[i].thread, NULL, stress_worker_main, &w[i]))
			ksft_exit_fail_msg("pthread_create failed\n");
	}
	if (pthread_create(&rmmod.thread, NULL, rmmod_main, &rmmod))
		ksft_exit_fail_msg("pthread_create failed\n");
	if (pressure.ready &&
	    pthread_create(&pressure.thread, NULL, stress_pressure_main, &pressure))
		ksft_exit_fail_msg("pthread_create failed\n");
	if (keeper.ready &&
	    pthread_create(&keeper.thread, NULL, stress_reserve_main, &keeper))
		ksft_exit_fail_msg("pthread_create failed\n");

	next_note = start + 30;
	while (now_s() < start + cfg.seconds ||
	       (!quota_met(&cfg, w, &rmmod, &pressure, &keeper, &missing) &&
		now_s() < start + cfg.seconds + QUOTA_WAIT_S)) {
		usleep(200000);
		if (now_s() >= next_note) {
			ksft_print_msg("%.0f s: %llu live buffers, %llu MiB\n",
				       now_s() - start, gb_stat("live_buffers"),
				       gb_stat("live_bytes") >> 20);
			next_note += 30;
		}
	}
	if (!quota_met(&cfg, w, &rmmod, &pressure, &keeper, &missing))
		ksft_print_msg("after %.0f s still no %s: stopping anyway\n",
			       now_s() - start, missing);
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
	for (i = 0; i < cfg.threads; i++) {
		pthread_join(w[i].thread, NULL);
		fails += w[i].fails;
		forks += w[i].n[SC_FORK];
		verifies += w[i].n[SC_VERIFY];
		takes += w[i].n[SC_RSV_BUFS];
	}
	pthread_join(rmmod.thread, NULL);
	if (pressure.ready)
		pthread_join(pressure.thread, NULL);
	if (keeper.ready)
		pthread_join(keeper.thread, NULL);
	ksft_print_msg("ran %.1f s\n", now_s() - start);
	print_counts(w, cfg.threads);
	ksft_print_msg("rmmod attempts %lu; pressure rounds %lu: %lu ENOMEM (%lu also at mmap), %lu ENOSPC, %lu of %lu deliberate OOM kills\n",
		       rmmod.attempts, pressure.rounds, pressure.enomem_rounds,
		       pressure.map_enomem, pressure.enospc_rounds,
		       pressure.oom_killed, pressure.oom_rounds);
	ksft_print_msg("reserve: %lu resizes (%lu to 0, %lu above half of RAM), %lu non-numbers refused; %lu buffers released while pinned (%lu seen in held_bytes), %lu pins dropped after their data was checked; %lu squeezes (%llu MiB into the hugetlb pool, %llu MiB of anonymous memory at most), %lu of them made the shrinker give back %llu MiB, %lu skipped\n",
		       keeper.resizes, keeper.resize_zero, keeper.over,
		       keeper.resize_refused, keeper.held_releases,
		       keeper.held_seen, keeper.unpins, keeper.squeezes,
		       keeper.squeezed_huge >> 20, keeper.squeezed_anon >> 20,
		       keeper.squeezes_shrunk, keeper.shrunk_bytes >> 20,
		       keeper.squeezes_skipped);

	ksft_test_result(!fails && verifies,
			 "workers: every operation answered as documented and every data check passed (%lu verifies, %lu forks, %lu failures)\n",
			 verifies, forks, fails);
	ksft_test_result(!rmmod.fails && rmmod.attempts,
			 "rmmod refused all %lu attempts while buffers were live\n",
			 rmmod.attempts);
	ksft_test_result(pressure.ready && !pressure.fails &&
			 pressure.enomem_rounds,
			 "memory-limited cgroup: %lu fill rounds ended in ENOMEM or ENOSPC, none OOM-killed\n",
			 pressure.rounds - pressure.oom_rounds);
	ksft_test_result(pressure.ready && pressure.oom_rounds &&
			 pressure.oom_killed == pressure.oom_rounds,
			 "memory-limited cgroup: the %lu deliberate OOM rounds were killed by its OOM killer\n",
			 pressure.oom_rounds);
	kills_after = gb_cg_read_key("/proc", "vmstat", "oom_kill");
	ksft_test_result(kills_after - kills_before == pressure.oom_killed,
			 "no OOM kill but the deliberate ones (%llu in all)\n",
			 kills_after - kills_before);
	ksft_test_result(keeper.ready && !keeper.fails && takes &&
			 keeper.resizes && keeper.held_releases &&
			 keeper.unpins == keeper.held_releases &&
			 keeper.squeezes_shrunk,
			 "reserve: %lu resizes while the workers allocated, %lu buffers took from it, %lu released while pinned kept their data, the shrinker gave back %llu MiB under memory pressure (%lu failures)\n",
			 keeper.resizes, takes, keeper.held_releases,
			 keeper.shrunk_bytes >> 20, keeper.fails);

	close(anchor);
	close(dev);
	free(w);
	gb_set_param("max_buffer_bytes", old_buffer);
	gb_set_param("max_total_bytes", old_total);
	stress_pressure_teardown(&pressure);
	ksft_test_result(counters_drain(&buffers, &bytes),
			 "live_buffers and live_bytes back to zero (%llu, %llu)\n",
			 buffers, bytes);
	settled = keeper.ready && stress_reserve_settles(&keeper, why, sizeof(why));
	ksft_test_result(settled,
			 "nothing held or lent at the end, and the reserve fills and empties on request (%s)\n",
			 keeper.ready ? why : "no reserve");
	unload_reload();
	ksft_finished();
}
