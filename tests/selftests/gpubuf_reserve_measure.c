// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: what the reserve of 2 MiB pages buys and costs, measured
 * in the guest and logged as "measured:" lines (ratios within one run;
 * under TCG nothing else means anything). Asserted is only what the
 * reserve promises: with it, a 1 GiB buffer on fragmented memory is all
 * 2 MiB pages.
 * - The share of a 1 GiB buffer in 2 MiB pages after memory was
 *   fragmented on purpose, without and with a reserve.
 * - alloc + map + first touch of 256 MiB, gpubuf with and without the
 *   reserve, against anonymous THP memory with MAP_POPULATE and mlock.
 * - What zeroing returned pages in the background costs a memory-bound
 *   task running meanwhile.
 */
#include <signal.h>
#include <sys/wait.h>

#include "gpubuf_helpers.h"
#include "gpubuf_reserve.h"
#include "kselftest_harness.h"

#define TRIALS 5

/*
 * In a child that holds it so until killed, fragment free memory: fill all
 * but @spare bytes of it with 4 KiB anonymous and shmem pages in turn, so
 * that neighbours in physical memory alternate, then free every anonymous
 * page. About half of the filled memory is free afterwards, in 4 KiB holes
 * between shmem pages (movable, but gpubuf never compacts for a buffer).
 * The child's pid, or -1; *@freed is the bytes it freed again.
 */
static pid_t fragment_memory(unsigned long long spare,
			     unsigned long long *freed)
{
	unsigned long long fill = gb_meminfo("MemFree");
	int pipefd[2];
	pid_t pid;

	if (fill <= spare + 64 * SZ_1M || pipe(pipefd))
		return -1;
	fill = (fill - spare) / 2 & ~(SZ_4K - 1);	/* per kind */
	pid = fork();
	if (pid == 0) {
		int memfd = memfd_create("fragment", MFD_CLOEXEC);
		char *anon, *shm;
		size_t off;

		anon = mmap(NULL, fill, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (memfd < 0 || ftruncate(memfd, fill) || anon == MAP_FAILED)
			_exit(1);
		shm = mmap(NULL, fill, PROT_READ | PROT_WRITE, MAP_SHARED,
			   memfd, 0);
		if (shm == MAP_FAILED)
			_exit(1);
		madvise(anon, fill, MADV_NOHUGEPAGE);
		madvise(shm, fill, MADV_NOHUGEPAGE);
		for (off = 0; off < fill; off += SZ_4K) {
			anon[off] = 1;
			shm[off] = 1;
		}
		madvise(anon, fill, MADV_DONTNEED);
		if (write(pipefd[1], &fill, sizeof(fill)) != sizeof(fill))
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	if (pid > 0 && read(pipefd[0], freed, sizeof(*freed)) !=
		       sizeof(*freed)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(pipefd[0]);
	return pid;
}

static void fragment_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * The 1 GiB measurement raises max_buffer_bytes to 1 GiB (the default,
 * half of the guest's RAM, may be just below it); the teardown puts it and
 * the reserve back.
 */
FIXTURE(measure) {
	unsigned long long max_buffer_bytes;
	int dev;
};

FIXTURE_SETUP(measure)
{
	self->max_buffer_bytes = gb_param("max_buffer_bytes");
	if (self->max_buffer_bytes < (1ULL << 30))
		ASSERT_EQ(0, gb_set_param("max_buffer_bytes", 1ULL << 30));
	self->dev = gb_open();
	ASSERT_LE(0, self->dev);
}

FIXTURE_TEARDOWN(measure)
{
	gb_set_param("reserve_bytes", 0);
	if (self->max_buffer_bytes)
		gb_set_param("max_buffer_bytes", self->max_buffer_bytes);
	close(self->dev);
}

/* Fragment memory, allocate 1 GiB, return the % of it in 2 MiB pages. */
static double huge_share_of_1g(struct __test_metadata *_metadata, int dev,
			       unsigned long long *reserve_bytes)
{
	unsigned long long freed = 0, shrunk;
	struct gpubuf_info info;
	pid_t frag;
	int fd;

	/*
	 * Left unfragmented: 256 MiB, so that the fill stays above the
	 * zones' watermarks (min about 67 MiB, low 84 MiB in the 3 GiB
	 * guest). Below them, nothing of the fill can be reclaimed, and
	 * reclaim rightly takes the reserve's pages (or the OOM killer the
	 * test): a machine fragmented, not one out of memory. It bounds
	 * what the buddy allocator can still give in 2 MiB pages.
	 */
	shrunk = gb_stat("reserve_shrunk_bytes");
	frag = fragment_memory(256 * SZ_1M, &freed);
	if (frag < 0)
		return -1;
	TH_LOG("fragmented: %llu MiB freed in 4 KiB holes, %llu MiB free, %llu MiB of the reserve given back to reclaim meanwhile",
	       freed >> 20, gb_meminfo("MemFree") >> 20,
	       (gb_stat("reserve_shrunk_bytes") - shrunk) >> 20);
	fd = gb_alloc(dev, 1ULL << 30);
	if (fd < 0 || gb_info(dev, fd, &info)) {
		TH_LOG("1 GiB buffer on fragmented memory: %s", strerror(-fd));
		if (fd >= 0)
			close(fd);
		fragment_end(frag);
		return -1;
	}
	close(fd);
	fragment_end(frag);
	*reserve_bytes = info.reserve_bytes;
	TH_LOG("1 GiB buffer: %u contiguous runs, %llu MiB in 2 MiB pages, %llu MiB from the reserve",
	       info.nr_chunks, info.huge_bytes >> 20, info.reserve_bytes >> 20);
	return 100.0 * info.huge_bytes / info.size;
}

TEST_F_TIMEOUT(measure, huge_share_of_1g_on_fragmented_memory, 1500)
{
	unsigned long long from_reserve = 0;
	double without, with;

	ASSERT_EQ(0, gb_set_param("reserve_bytes", 0));
	without = huge_share_of_1g(_metadata, self->dev, &from_reserve);
	ASSERT_LE(0, without);

	/* Set aside while memory is still unfragmented, as at boot. */
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 1ULL << 30));
	ASSERT_EQ(1ULL << 30, gb_stat("reserve_ready_bytes"));
	with = huge_share_of_1g(_metadata, self->dev, &from_reserve);
	ASSERT_LE(0, with);
	TH_LOG("measured: 1 GiB buffer on fragmented memory, share in 2 MiB pages: without a reserve %.1f%%, with a 1 GiB reserve %.1f%%",
	       without, with);
	EXPECT_EQ(100.0, with);
	EXPECT_EQ(1ULL << 30, from_reserve);
}

/* Seconds for alloc + placed map + populate + a write per 4 KiB page. */
static double gpubuf_touch_s(int dev, size_t len, unsigned long long *rsv)
{
	struct gpubuf_info info = { 0 };
	double t = rsv_now();
	size_t off;
	char *p;
	int fd;

	fd = gb_alloc(dev, len);
	if (fd < 0)
		return -1;
	p = gb_map_at(fd, len, PROT_READ | PROT_WRITE, 0, 0);
	if (p == MAP_FAILED || gb_populate(p, len)) {
		close(fd);
		return -1;
	}
	for (off = 0; off < len; off += SZ_4K)
		p[off] = 1;
	t = rsv_now() - t;
	if (gb_info(dev, fd, &info))
		t = -1;
	*rsv = info.reserve_bytes;
	munmap(p, len);
	close(fd);
	return t;
}

static double anon_touch_s(size_t len)
{
	double t = rsv_now();
	size_t off;
	char *p;

	p = gb_map_at(-1, len, PROT_NONE, 0, 0);
	if (p == MAP_FAILED)
		return -1;
	p = mmap(p, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (mlock(p, len)) {
		munmap(p, len);
		return -1;
	}
	for (off = 0; off < len; off += SZ_4K)
		p[off] = 1;
	t = rsv_now() - t;
	munmap(p, len);
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

TEST_F_TIMEOUT(measure, alloc_map_touch_of_256m, 600)
{
	const size_t len = 256 * SZ_1M;
	double rsv[TRIALS], plain[TRIALS], anon[TRIALS];
	unsigned long long got;
	char thp[32];
	int i;

	ASSERT_EQ(0, gb_thp_mode(thp, sizeof(thp)));
	for (i = 0; i < TRIALS; i++) {
		ASSERT_EQ(0, gb_set_param("reserve_bytes", len));
		ASSERT_EQ(0, rsv_wait_zeroed());
		ASSERT_EQ(len, gb_stat("reserve_ready_bytes"));
		rsv[i] = gpubuf_touch_s(self->dev, len, &got);
		ASSERT_LT(0, rsv[i]);
		ASSERT_EQ(len, got);

		ASSERT_EQ(0, gb_set_param("reserve_bytes", 0));
		plain[i] = gpubuf_touch_s(self->dev, len, &got);
		ASSERT_LT(0, plain[i]);
		ASSERT_EQ(0, got);

		ASSERT_EQ(0, gb_thp_set("always"));
		anon[i] = anon_touch_s(len);
		ASSERT_EQ(0, gb_thp_set(thp));
		ASSERT_LT(0, anon[i]);
	}
	TH_LOG("measured: 256 MiB alloc+map+first touch, medians of %d: gpubuf from the reserve / anon THP (MAP_POPULATE+mlock) %.3f, gpubuf without it / anon THP %.3f, from the reserve / without it %.3f",
	       TRIALS, median(rsv, TRIALS) / median(anon, TRIALS),
	       median(plain, TRIALS) / median(anon, TRIALS),
	       median(rsv, TRIALS) / median(plain, TRIALS));
}

/* Seconds of one pass of memset over @len bytes at @p. */
static double memset_pass_s(char *p, size_t len, int value)
{
	double t = rsv_now();

	memset(p, value, len);
	__asm__ __volatile__("" : : "r"(p) : "memory");
	return rsv_now() - t;
}

#define PASSES 64
#define IDLE_PASSES 16
#define ROUNDS 5

/*
 * A memory-bound task (memset passes over 32 MiB) timed while the
 * reserve's worker zeroes 512 MiB that a buffer gave back, against the
 * same task alone just before and just after: the ratio of the median
 * pass times is what a refill costs the rest of the system. Under TCG
 * both vCPUs are host threads, so the ratio also carries whatever else
 * the host runs; the baseline around each round keeps slow drifts out.
 */
TEST_F_TIMEOUT(measure, background_zeroing_cost_to_a_memory_bound_task, 600)
{
	const size_t work_len = 32 * SZ_1M, rsv_len = 512 * SZ_1M;
	double idle[2 * IDLE_PASSES], busy[PASSES], ratios[ROUNDS], mid;
	int round, rounds = 0, i, n;
	char *work;

	work = mmap(NULL, work_len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, work);
	ASSERT_EQ(0, gb_set_param("reserve_bytes", rsv_len));
	ASSERT_EQ(rsv_len, gb_stat("reserve_ready_bytes"));
	for (round = 0; round < ROUNDS; round++) {
		unsigned long long got;
		double t;

		for (i = 0; i < IDLE_PASSES; i++)
			idle[i] = memset_pass_s(work, work_len, i);
		/* Take the whole reserve and give it back dirty. */
		t = gpubuf_touch_s(self->dev, rsv_len, &got);
		ASSERT_LT(0, t);
		ASSERT_EQ(rsv_len, got);
		for (n = 0; n < PASSES && gb_stat("reserve_zeroing_bytes"); n++)
			busy[n] = memset_pass_s(work, work_len, n);
		ASSERT_EQ(0, rsv_wait_zeroed());
		for (i = IDLE_PASSES; i < 2 * IDLE_PASSES; i++)
			idle[i] = memset_pass_s(work, work_len, i);
		/*
		 * How many passes fit into the zeroing is itself a speed:
		 * reported, never asserted. A round with none has no ratio.
		 */
		if (!n) {
			TH_LOG("round %d: the zeroing of 512 MiB ended before a first pass", round);
			continue;
		}
		ratios[rounds] = median(busy, n) / median(idle, 2 * IDLE_PASSES);
		TH_LOG("round %d: %d passes overlapped the zeroing of 512 MiB, median pass while zeroing / alone %.3f",
		       round, n, ratios[rounds]);
		rounds++;
	}
	if (rounds) {
		mid = median(ratios, rounds);	/* sorts ratios[] */
		TH_LOG("measured: memory-bound task (memset of 32 MiB) while the reserve zeroes 512 MiB in the background / alone: median of %d rounds %.3f (%.3f to %.3f)",
		       rounds, mid, ratios[0], ratios[rounds - 1]);
	} else {
		TH_LOG("not measured: no pass overlapped the zeroing in %d rounds", ROUNDS);
	}
	munmap(work, work_len);
}

TEST_HARNESS_MAIN
