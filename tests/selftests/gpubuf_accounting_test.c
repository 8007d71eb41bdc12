// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: gpubuf memory is charged to the caller's memory cgroup; a
 * cgroup limit is an ENOMEM for the caller, never an OOM kill, whether it
 * is hit allocating or mapping; a killed or refused allocation or mapping
 * leaves no pages or counters behind, and a kill ends it promptly.
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

#define CGROOT "/sys/fs/cgroup"

static unsigned long long cg_current(const char *cg)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/memory.current", cg);
	return gb_read_u64(path);
}

FIXTURE(memcg) {
	char path[128];
};

FIXTURE_SETUP(memcg)
{
	snprintf(self->path, sizeof(self->path), CGROOT "/gpubuf-test-%d",
		 getpid());
	ASSERT_EQ(0, gb_write_str(CGROOT "/cgroup.subtree_control", "+memory"))
		TH_LOG("cgroup2 with the memory controller is mounted by the test bed");
	ASSERT_EQ(0, mkdir(self->path, 0755));
	if (gb_cg_write(self->path, "memory.max", "32M")) {
		/* The teardown does not run after a failed setup. */
		rmdir(self->path);
		ASSERT_TRUE(0) TH_LOG("cannot limit %s", self->path);
	}
}

FIXTURE_TEARDOWN(memcg)
{
	/* A test that failed while inside the cgroup leaves it first. */
	gb_write_str(CGROOT "/cgroup.procs", "0");
	rmdir(self->path);
}

/*
 * Exit codes of the child that runs inside the cgroup: 0 all good,
 * 10 + n for the n-th failed expectation.
 */
static int child_in_cgroup(const char *cg)
{
	unsigned long long before, charged, after;
	int dev, fd, ret;

	if (gb_cg_write(cg, "cgroup.procs", "0"))
		return 10;
	dev = gb_open();
	if (dev < 0)
		return 11;
	/* Four times the limit: the caller gets ENOMEM and survives. */
	ret = gb_alloc(dev, 128 * SZ_1M);
	if (ret != -ENOMEM)
		return 12;
	/* Within the limit it works and is charged to this cgroup. */
	before = cg_current(cg);
	fd = gb_alloc(dev, 8 * SZ_1M);
	if (fd < 0)
		return 13;
	charged = cg_current(cg);
	if (charged < before + 8 * SZ_1M)
		return 14;
	close(fd);
	after = cg_current(cg);
	if (after > before + SZ_1M / 2)
		return 15;
	close(dev);
	return 0;
}

/* Run @child(@cg) in a forked process; its wait status, or -1. */
static int run_child(int (*child)(const char *cg), const char *cg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(child(cg));
	return waitpid(pid, &status, 0) == pid ? status : -1;
}

/*
 * In a child: join the cgroup @cg, open the device into *@dev and allocate
 * @len bytes. The buffer's fd, or minus the child's exit code for the step
 * that failed: @base, @base + 1 or @base + 2.
 */
static int child_join_and_alloc(const char *cg, size_t len, int *dev,
				int base)
{
	int fd;

	if (gb_cg_write(cg, "cgroup.procs", "0"))
		return -base;
	*dev = gb_open();
	if (*dev < 0)
		return -(base + 1);
	fd = gb_alloc(*dev, len);
	return fd < 0 ? -(base + 2) : fd;
}

/*
 * A buffer allocated inside a cgroup other than the root maps, with 2 MiB
 * entries, and again after MADV_DONTNEED. Until 5.11 its charged pages
 * carried a page type kept where the page's mappings are counted.
 * Exit codes: 0 all good, 30 + n for the n-th failed expectation.
 */
static int child_maps_charged_buffer(const char *cg)
{
	const size_t len = 4 * SZ_1M;
	uint64_t *p;
	int dev, fd, thp;
	size_t i;

	fd = child_join_and_alloc(cg, len, &dev, 30);
	if (fd < 0)
		return -fd;
	/* Charged pages map with PMDs like any others. */
	p = gb_map_at(fd, len, PROT_READ | PROT_WRITE, 0, 0);
	if (p == MAP_FAILED)
		return 33;
	for (i = 0; i < len / 8; i += SZ_4K / 8)
		p[i] = i + 1;
	thp = gb_thp_allowed();
	if (thp < 0)
		return 37;
	if (thp && gb_smaps_bytes(p, len, "FilePmdMapped") != len)
		return 36;
	if (madvise(p, len, MADV_DONTNEED))
		return 34;
	for (i = 0; i < len / 8; i += SZ_4K / 8)
		if (p[i] != i + 1)
			return 35;
	munmap(p, len);
	close(fd);
	close(dev);
	return 0;
}

TEST_F(memcg, buffer_allocated_in_a_cgroup_maps)
{
	int status;

	status = run_child(child_maps_charged_buffer, self->path);
	ASSERT_NE(-1, status);
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("child killed by signal %d", WTERMSIG(status));
	}
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, gb_stat("live_buffers"));
}

TEST_F(memcg, limit_is_enomem_not_oom_kill)
{
	unsigned long long bytes = gb_stat("live_bytes");
	unsigned long long failed, peak;
	int status, dev, fd;

	/* A peak above what the child will hold: only refusals could raise it. */
	dev = gb_open();
	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, 16 * SZ_1M);
	ASSERT_LE(0, fd);
	close(fd);
	close(dev);
	peak = gb_stat("peak_bytes");
	failed = gb_stat("failed_allocs");

	status = run_child(child_in_cgroup, self->path);
	ASSERT_NE(-1, status);
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("child killed by signal %d", WTERMSIG(status));
	}
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, gb_cg_read_key(self->path, "memory.events", "oom_kill"));
	EXPECT_EQ(bytes, gb_stat("live_bytes"));
	EXPECT_EQ(failed + 1, gb_stat("failed_allocs"));
	/* The refused 128 MiB never existed, so it is not a peak. */
	EXPECT_EQ(peak, gb_stat("peak_bytes"));
	/* Everything charged by the refused and the freed buffer is gone. */
	EXPECT_GT(4 * SZ_1M, cg_current(self->path));
}

/*
 * A child in the cgroup asks again and again for @big bytes, which the
 * cgroup refuses after charging its limit; the parent allocates small
 * buffers meanwhile. Each refused request holds its reservation against
 * max_total_bytes while it fails, but it never existed: peak_bytes must
 * not see it.
 */
TEST_F(memcg, refused_requests_never_reach_the_peak)
{
	unsigned long long max_buf = gb_param("max_buffer_bytes");
	unsigned long long max_total = gb_param("max_total_bytes");
	unsigned long long ram = gb_mem_total();
	unsigned long long big, peak;
	int dev, status, small = 0;
	pid_t pid;

	dev = gb_open();
	ASSERT_LE(0, dev);
	big = (gb_stat("peak_bytes") + 256 * SZ_1M) & ~(SZ_1M - 1);
	ASSERT_GT(ram, big + gb_stat("live_bytes") + 64 * SZ_1M);
	/* No ASSERT from here until the limits are restored. */
	EXPECT_EQ(0, gb_set_param("max_buffer_bytes", ram));
	EXPECT_EQ(0, gb_set_param("max_total_bytes", ram));

	pid = fork();
	if (pid == 0) {
		int i, ret = 0;

		if (gb_cg_write(self->path, "cgroup.procs", "0"))
			_exit(30);
		for (i = 0; i < 20 && !ret; i++)
			ret = gb_alloc(dev, big) == -ENOMEM ? 0 : 31;
		_exit(ret);
	}
	/*
	 * At least one small allocation whatever the two tasks' speeds; how
	 * many overlap the child's refused requests is only logged.
	 */
	do {
		int fd = gb_alloc(dev, SZ_4K);

		small += fd >= 0;
		close(fd);
	} while (pid > 0 && waitpid(pid, &status, WNOHANG) == 0);
	peak = gb_stat("peak_bytes");
	EXPECT_EQ(0, gb_set_param("max_buffer_bytes", max_buf));
	EXPECT_EQ(0, gb_set_param("max_total_bytes", max_total));
	close(dev);
	ASSERT_LT(0, pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_LT(0, small);
	TH_LOG("%d small buffers before the child's refused requests ended",
	       small);
	EXPECT_GT(big, peak) {
		TH_LOG("peak %llu after %d small buffers beside refused %llu-byte requests",
		       peak, small, big);
	}
}

/*
 * Buffers and vgem files of the import test: each file imports its own
 * buffer, because DMA-API debugging forbids two bidirectional mappings of
 * one page.
 */
#define IMPORTERS 8

/*
 * Kernel memory charged to @cg. memory.stat has a "kernel" line from 5.18
 * on; before it the whole charge, memory.current, stands in (the test does
 * nothing else that charges while it measures).
 */
static unsigned long long cg_kernel_bytes(const char *cg)
{
	unsigned long long kernel = gb_cg_read_key(cg, "memory.stat", "kernel");

	return kernel != ~0ULL ? kernel : cg_current(cg);
}

/*
 * memory.stat is flushed lazily, every 2 s on recent kernels and later on
 * a loaded machine: wait for the kernel charge to reach @want, up to 60 s,
 * a bound only a charge that never comes exceeds.
 */
static unsigned long long cg_kernel_bytes_reach(const char *cg,
						unsigned long long want)
{
	unsigned long long now = cg_kernel_bytes(cg);
	int i;

	for (i = 0; i < 120 && (now == ~0ULL || now < want); i++) {
		usleep(500 * 1000);
		now = cg_kernel_bytes(cg);
	}
	return now;
}

/*
 * Each importer's attachment carries its own scatterlist: for a 64 MiB
 * buffer mapped in vgem's 64 KiB segments, 1024 entries of 32 bytes in
 * eight pages. It is memory the importer made the kernel allocate, charged
 * to the importing task's cgroup like the buffer to the allocating one's.
 */
/* Up to 60 s of waiting for memory.stat: past the harness's default 30 s. */
TEST_F_TIMEOUT(memcg, importer_scatterlists_are_charged, 120)
{
	int vgem[IMPORTERS], fd[IMPORTERS], dev, i, n = 0;
	unsigned long long before, after;
	uint32_t handle;

	ASSERT_EQ(0, gb_cg_write(self->path, "memory.max", "max"));
	ASSERT_EQ(0, gb_cg_write(self->path, "cgroup.procs", "0"));
	dev = gb_open();
	ASSERT_LE(0, dev);
	for (i = 0; i < IMPORTERS; i++) {
		fd[i] = gb_alloc(dev, 64 * SZ_1M);
		ASSERT_LE(0, fd[i]);
		vgem[i] = vgem_open();
		ASSERT_LE(0, vgem[i]);
	}
	sleep(3);
	before = cg_kernel_bytes(self->path);
	for (i = 0; i < IMPORTERS; i++)
		n += !vgem_import(vgem[i], fd[i], &handle);
	/* 8 x 32 KiB of scatterlists; allow for whatever rounding. */
	after = cg_kernel_bytes_reach(self->path,
				      before + IMPORTERS * 24 * 1024ULL);
	for (i = 0; i < IMPORTERS; i++) {
		close(vgem[i]);
		close(fd[i]);
	}
	close(dev);
	ASSERT_EQ(0, gb_write_str(CGROOT "/cgroup.procs", "0"));
	ASSERT_EQ(IMPORTERS, n);
	ASSERT_NE(~0ULL, before);
	EXPECT_LE(before + IMPORTERS * 24 * 1024ULL, after) {
		TH_LOG("%d imports charged %lld bytes", n,
		       (long long)(after - before));
	}
}

/* Allocate @size-byte buffers until the cgroup refuses; count them. */
static int fill_cgroup(int dev, unsigned long long size)
{
	int fd, n = 0;

	while ((fd = gb_alloc(dev, size)) >= 0)
		n++;
	return fd == -ENOMEM ? n : fd;
}

/*
 * The same, keeping up to @max of the fds in @fds so that the caller can
 * give buffers back; the count kept, or a negative errno (-E2BIG when
 * more than @max fit).
 */
static int fill_keep(int dev, unsigned long long size, int *fds, int max)
{
	int fd, n = 0;

	while (n < max && (fd = gb_alloc(dev, size)) >= 0)
		fds[n++] = fd;
	if (n == max)
		return -E2BIG;
	return fd == -ENOMEM ? n : fd;
}

/*
 * Faults in a mapping allocate page tables, charged to the caller's cgroup:
 * 128 PTE tables for 256 MiB mapped with 4 KiB entries, and the first fault
 * allocates the upper levels before gpubuf is asked. With the cgroup filled
 * to its limit, mmap() must refuse with ENOMEM, or (when the few pages the
 * filling left are enough for its own check) populating must, as libgpubuf
 * populates; the child lives on either way.
 * Exit codes: 0 all good, 20 + n for the n-th failed expectation.
 */
static int child_maps_at_limit(const char *cg)
{
	const size_t len = 256 * SZ_1M;
	void *p;
	int dev, fd;

	fd = child_join_and_alloc(cg, len, &dev, 20);
	if (fd < 0)
		return -fd;
	/* Whatever room is left, down to a page. */
	if (fill_cgroup(dev, SZ_1M) < 0 || fill_cgroup(dev, SZ_4K) < 0)
		return 23;
	p = gb_map_at(fd, len, PROT_READ | PROT_WRITE, 0, SZ_4K);
	if (p != MAP_FAILED && !madvise(p, len, MADV_POPULATE_WRITE))
		return 24;
	/* Touching instead would meet the OOM killer, as any memory would. */
	if (p != MAP_FAILED && errno == EINVAL)
		return 40;
	if (errno != ENOMEM)
		return 25;
	return 0;
}

/*
 * With a few dozen pages of room left, populating a PMD-aligned mapping of 256
 * MiB needs about one page table and succeeds; a mapping placed 4 KiB off
 * needs 128 PTE tables and must fail with ENOMEM (MADV_POPULATE_WRITE, as
 * libgpubuf does), not OOM-kill. Exit codes as above.
 */
static int child_populates_near_limit(const char *cg)
{
	const size_t len = 256 * SZ_1M;
	int dev, fd, i, n, big[512], mid[64];
	void *p;

	fd = child_join_and_alloc(cg, len, &dev, 20);
	if (fd < 0)
		return -fd;
	/*
	 * Leave 256-330 KiB of room whatever the fill left before: fill with
	 * 1 MiB buffers, give one back, fill what that freed with 64 KiB
	 * ones (at least 15 fit), then give four of those back.
	 */
	n = fill_keep(dev, SZ_1M, big, 512);
	if (n < 1)
		return 23;
	close(big[0]);
	n = fill_keep(dev, 64 * 1024, mid, 64);
	if (n < 4)
		return 26;
	for (i = 0; i < 4; i++)
		close(mid[--n]);
	p = gb_map_at(fd, len, PROT_READ | PROT_WRITE, 0, 0);
	if (p == MAP_FAILED)
		return 27;
	if (madvise(p, len, MADV_POPULATE_WRITE))
		return errno == EINVAL ? 40 : 28;
	munmap(p, len);
	p = gb_map_at(fd, len - SZ_4K, PROT_READ | PROT_WRITE, 0, SZ_4K);
	if (p == MAP_FAILED)
		return 29;
	if (!madvise(p, len - SZ_4K, MADV_POPULATE_WRITE))
		return 24;
	if (errno != ENOMEM)
		return 25;
	munmap(p, len - SZ_4K);
	return 0;
}

/*
 * Run @child in the cgroup, limited to 320 MiB: it must exit 0 with no OOM
 * kill in the cgroup and no buffer left behind. Its exit code 40 means
 * the kernel has no MADV_POPULATE_WRITE (before 5.14): a skip.
 */
static void check_limit_child(struct __test_metadata *_metadata,
			      const char *cg, int (*child)(const char *cg))
{
	unsigned long long buffers = gb_stat("live_buffers");
	int status;

	ASSERT_EQ(0, gb_cg_write(cg, "memory.max", "320M"));
	status = run_child(child, cg);
	ASSERT_NE(-1, status);
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("child killed by signal %d", WTERMSIG(status));
	}
	if (WEXITSTATUS(status) == 40)
		SKIP(return, "no MADV_POPULATE_WRITE before Linux 5.14");
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, gb_cg_read_key(cg, "memory.events", "oom_kill"));
	EXPECT_EQ(buffers, gb_stat("live_buffers"));
}

TEST_F(memcg, populate_near_limit_is_enomem_not_oom_kill)
{
	check_limit_child(_metadata, self->path, child_populates_near_limit);
}

TEST_F(memcg, map_and_populate_at_limit_is_enomem_not_oom_kill)
{
	check_limit_child(_metadata, self->path, child_maps_at_limit);
}

/*
 * The kernel's own copies into the mapping check the cgroup's room as
 * MADV_POPULATE_WRITE does (gpubuf(4), docs/kernel.md): at the limit a
 * read(2) into a part not yet faulted in fails with EFAULT instead of
 * OOM-killing the reader. The mapping is placed 4 KiB off 2 MiB, so each
 * 2 MiB-aligned stretch of it needs a PTE table of its own; with 256-330
 * KiB of room left, reads of one stretch each from /dev/zero go on until
 * one fails. With a buffer given back for room, the same read succeeds.
 * Exit codes: 0 all good, 20 + n for the n-th failed expectation.
 */
static int child_reads_at_limit(const char *cg)
{
	const size_t len = 256 * SZ_1M;
	int dev, fd, zero, i, n, big[512], mid[64], done = 0;
	ssize_t got = 0;
	size_t off;
	char *p;

	fd = child_join_and_alloc(cg, len, &dev, 20);
	if (fd < 0)
		return -fd;
	zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero < 0)
		return 23;
	/* Leave 256-330 KiB of room, as child_populates_near_limit() does. */
	n = fill_keep(dev, SZ_1M, big, 512);
	if (n < 2)
		return 24;
	close(big[--n]);
	i = fill_keep(dev, 64 * 1024, mid, 64);
	if (i < 4)
		return 25;
	close(mid[--i]);
	close(mid[--i]);
	close(mid[--i]);
	close(mid[--i]);
	p = gb_map_at(fd, len, PROT_READ | PROT_WRITE, 0, SZ_4K);
	if (p == MAP_FAILED)
		return 26;
	for (off = SZ_2M - SZ_4K; off + SZ_2M <= len; off += SZ_2M) {
		got = read(zero, p + off, SZ_2M);
		if (got != (ssize_t)SZ_2M)
			break;
		done++;
	}
	/* The limit was met, and only there: earlier reads went through. */
	if (off + SZ_2M > len)
		return 27;
	if (got != -1 || errno != EFAULT)
		return 28;
	if (!done)
		return 29;
	fprintf(stderr, "# %d stretches of 2 MiB read, then EFAULT\n", done);
	close(big[--n]);
	if (read(zero, p + off, SZ_2M) != (ssize_t)SZ_2M)
		return 30;
	munmap(p, len);
	return 0;
}

TEST_F(memcg, read_into_the_mapping_at_limit_is_efault_not_oom_kill)
{
	check_limit_child(_metadata, self->path, child_reads_at_limit);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Map @len bytes of @fd with 4 KiB entries (the address 4 KiB off 2 MiB
 * alignment, the slowest case) and fault them all in as libgpubuf does.
 */
static void *map_populated(int fd, size_t len)
{
	void *p = gb_map_at(fd, len, PROT_READ | PROT_WRITE, 0, SZ_4K);

	if (p != MAP_FAILED && gb_populate(p, len)) {
		munmap(p, len);
		return MAP_FAILED;
	}
	return p;
}

/*
 * Faults task @pid has made so far, minor and major (/proc/PID/stat
 * fields 10 and 12: a fault retried after dropping mmap_lock counts as
 * major), or -1.
 */
static long long task_faults(pid_t pid)
{
	unsigned long long minflt, majflt;
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: skip to its end. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu %*u %llu",
			 &minflt, &majflt) != 2)
		return -1;
	return minflt + majflt;
}

struct kill_trial {
	long long faults_before;	/* the child's, before it mapped */
	long long faults_at_kill;	/* the child's when it was killed */
	long long faults;		/* all the faults it made (wait4) */
	int populated;			/* its populate had returned: no verdict */
	double death_s;			/* from the kill to the reap, logged */
};

/*
 * Fork a child that writes a byte on a pipe, maps @len bytes of @fd with
 * 4 KiB entries, populates them, writes a second byte and waits. Once the
 * first byte came, SIGKILL it when it has made @kill_at faults more (or
 * once the second byte came); reap it with wait4(), whose rusage counts
 * every fault it made, and note whether its populate had returned. 0, or
 * -1 if the child did not die of the kill.
 */
static int kill_populating_child(int fd, size_t len, long long kill_at,
				 struct kill_trial *t)
{
	struct rusage ru = { 0 };
	siginfo_t info;
	int done[2], status;
	double killed;
	char byte;
	pid_t pid;

	if (pipe2(done, O_CLOEXEC | O_NONBLOCK))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(done[0]);
		close(done[1]);
		return -1;
	}
	if (pid == 0) {
		close(done[0]);
		if (write(done[1], "m", 1) != 1 ||
		    map_populated(fd, len) == MAP_FAILED ||
		    write(done[1], "d", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(done[1]);
	/* The first byte: what the child faulted before it began to map. */
	t->faults_before = -1;
	do {
		info.si_pid = 0;
		if (read(done[0], &byte, 1) == 1) {
			t->faults_before = task_faults(pid);
			break;
		}
		usleep(200);
	} while (!waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) &&
		 !info.si_pid);
	for (;;) {
		t->faults_at_kill = task_faults(pid);
		info.si_pid = 0;
		if (t->faults_before < 0 || t->faults_at_kill < 0 ||
		    t->faults_at_kill - t->faults_before >= kill_at ||
		    waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) ||
		    info.si_pid)
			break;
		usleep(200);
	}
	killed = now_s();
	kill(pid, SIGKILL);
	if (wait4(pid, &status, 0, &ru) != pid)
		status = 0;
	t->death_s = now_s() - killed;
	t->populated = read(done[0], &byte, 1) == 1;
	close(done[0]);
	t->faults = ru.ru_minflt + ru.ru_majflt;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : -1;
}

#define KILL_TRIALS 3

/*
 * Populating a large mapping faults every page in through gpubuf's fault
 * handler, one fault per 4 KiB entry here, with mmap_lock held; a task
 * killed meanwhile must stop there, not finish the whole range first.
 * What the child did is counted, not timed: killed a tenth of the way in
 * by its own fault count, it must have made fewer faults in its whole
 * life than the range has pages. A trial whose populate returned before
 * the kill landed gives no verdict; the next one kills earlier, but never
 * before a hundredth of the way. The times (a full populate, a death) are
 * logged, not compared (docs/testing.md). Before 5.14 (no
 * MADV_POPULATE_WRITE) the helper populates by touching from user space,
 * and the test shows no more than that a kill stops that loop.
 * Up to eleven populates of 768 MiB, a second each on a KASAN/DEBUG_PAGEALLOC
 * kernel: more than the harness's default 30 s in all.
 */
FIXTURE(slow) {};
FIXTURE_SETUP(slow) {}
FIXTURE_TEARDOWN(slow) {}

TEST_F_TIMEOUT(slow, killed_populate_stops_faulting, 300)
{
	unsigned long long buffers = gb_stat("live_buffers");
	long long pages, kill_at, most = 0;
	int dev, fd, tries, verdicts = 0;
	size_t len = 768 * SZ_1M;
	struct kill_trial t;
	double populate_s;
	void *p;

	if (len > gb_param("max_buffer_bytes"))
		len = gb_param("max_buffer_bytes") & ~(SZ_1M - 1);
	pages = len / SZ_4K;
	kill_at = pages / 10;
	dev = gb_open();
	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, len);
	ASSERT_LE(0, fd);
	populate_s = now_s();
	p = map_populated(fd, len);
	populate_s = now_s() - populate_s;
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, len);
	for (tries = 0; tries < 10 && verdicts < KILL_TRIALS; tries++) {
		ASSERT_EQ(0, kill_populating_child(fd, len, kill_at, &t));
		ASSERT_LE(0, t.faults_before);
		ASSERT_LE(0, t.faults_at_kill);
		if (t.populated) {
			kill_at = kill_at / 2 > pages / 100 ? kill_at / 2 :
							      pages / 100;
			continue;
		}
		verdicts++;
		if (t.faults - t.faults_before > most)
			most = t.faults - t.faults_before;
		EXPECT_GT(pages, t.faults - t.faults_before) {
			TH_LOG("killed at %lld faults (%lld before mapping), it made %lld for %lld pages",
			       t.faults_at_kill, t.faults_before, t.faults,
			       pages);
		}
	}
	TH_LOG("measured: %zu MiB: populate %.3f s; killed at %lld faults, at most %lld of %lld pages faulted, last death %.3f s after the kill",
	       len >> 20, populate_s, t.faults_at_kill - t.faults_before, most,
	       pages, t.death_s);
	EXPECT_EQ(KILL_TRIALS, verdicts) {
		TH_LOG("populate returned before the kill in %d of %d trials",
		       tries - verdicts, tries);
	}
	close(fd);
	close(dev);
	EXPECT_EQ(buffers, gb_stat("live_buffers"));
}

TEST(killed_allocation_leaves_nothing)
{
	unsigned long long buffers = gb_stat("live_buffers");
	unsigned long long bytes = gb_stat("live_bytes");
	int status, i;
	pid_t pid;

	/* Kill a child in the middle of a large allocation, several times. */
	for (i = 0; i < 3; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			int dev = gb_open();

			for (;;)
				close(gb_alloc(dev, 512 * SZ_1M));
		}
		usleep(200000 + i * 150000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
	}
	EXPECT_EQ(buffers, gb_stat("live_buffers"));
	EXPECT_EQ(bytes, gb_stat("live_bytes"));
}

TEST_HARNESS_MAIN
