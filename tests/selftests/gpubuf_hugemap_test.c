// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: 2 MiB (PMD) CPU mappings of gpubuf's 2 MiB pages. A mapping
 * placed at a 2 MiB-aligned address for a 2 MiB-aligned buffer offset must
 * be mapped with PMD entries (smaps FilePmdMapped), stay correct through
 * everything that splits or copies page tables (partial munmap, 4 KiB
 * MADV_DONTNEED, mprotect, mremap, fork) and stay pinnable. What makes it
 * cheaper to pin and to fault in is checked structurally (which entries map
 * it); how much cheaper is measured and logged as ratios within one guest
 * run, never asserted: docs/kernel.md quotes them.
 */
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>

#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

/* Offset of the first page in [from, to) of @p whose stamp is wrong, or -1. */
static long long check_range(const char *p, size_t from, size_t to,
			     uint64_t seed)
{
	size_t off;

	for (off = from; off < to; off += SZ_4K)
		if (*(const uint64_t *)(p + off) != seed * 1000003 + off)
			return off;
	return -1;
}

static long long check_stamp(const char *p, size_t len, uint64_t seed)
{
	return check_range(p, 0, len, seed);
}

static long long pmd_bytes(const void *p, size_t len)
{
	return gb_smaps_bytes(p, len, "FilePmdMapped");
}


static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A new buffer, mapped at a 2 MiB-aligned address and populated. */
struct placed_buf {
	int dev;
	int fd;
	size_t len;
	char *p;
};

static void placed_buf_get(struct __test_metadata *_metadata,
			   struct placed_buf *b, size_t len)
{
	b->len = len;
	b->dev = gb_open();
	ASSERT_LE(0, b->dev);
	b->fd = gb_alloc(b->dev, len);
	ASSERT_LE(0, b->fd);
	b->p = gb_map_at(b->fd, len, PROT_READ | PROT_WRITE, 0, 0);
	ASSERT_NE(MAP_FAILED, b->p);
	ASSERT_EQ(0, gb_populate(b->p, len));
}

static void placed_buf_put(struct placed_buf *b)
{
	munmap(b->p, b->len);
	close(b->fd);
	close(b->dev);
}

FIXTURE(huge) {
	struct placed_buf b;
};

FIXTURE_SETUP(huge)
{
	placed_buf_get(_metadata, &self->b, 8 * SZ_1M);
	if (gb_thp_allowed() > 0)
		ASSERT_EQ(self->b.len, pmd_bytes(self->b.p, self->b.len));
	gb_stamp_pages(self->b.p, self->b.len, 7);
}

FIXTURE_TEARDOWN(huge)
{
	placed_buf_put(&self->b);
}

/* The vma stays what GUP and HMM need, and is not special. */
TEST_F(huge, vma_is_plain_and_hugepage)
{
	EXPECT_EQ(0, gb_vma_has_flag(self->b.p, "pf"));
	EXPECT_EQ(0, gb_vma_has_flag(self->b.p, "io"));
	EXPECT_EQ(0, gb_vma_has_flag(self->b.p, "mx"));
	EXPECT_EQ(1, gb_vma_has_flag(self->b.p, "hg"));
	EXPECT_EQ(1, gb_vma_has_flag(self->b.p, "sh"));
}

TEST_F(huge, longterm_pin_and_hmm_across_pmds)
{
	uint64_t want = gb_stamp_pages(self->b.p, self->b.len, 11), got = 0;
	/* Starts and ends inside a PMD, spans two boundaries. */
	char *sub = self->b.p + SZ_2M - 16 * SZ_4K;
	size_t sub_len = 2 * SZ_2M + 32 * SZ_4K;
	uint64_t sub_want = 0;
	size_t off;

	ASSERT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, self->b.p, self->b.len,
			       &got, NULL));
	EXPECT_EQ(want, got);
	ASSERT_EQ(0, gb_probe_run(PINPROBE_OP_HMM_FAULT, self->b.p, self->b.len,
			       &got, NULL));
	EXPECT_EQ(want, got);
	for (off = 0; off < sub_len; off += SZ_4K)
		sub_want += *(uint64_t *)(sub + off);
	ASSERT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, sub, sub_len, &got,
			       NULL));
	EXPECT_EQ(sub_want, got);
	/* Pinning maps nothing differently. */
	if (gb_thp_allowed() > 0)
		EXPECT_EQ(self->b.len, pmd_bytes(self->b.p, self->b.len));
}

/* A hole punched into one PMD leaves the others and all data alone. */
TEST_F(huge, partial_munmap_splits_one_pmd)
{
	char *hole = self->b.p + SZ_2M + 64 * SZ_4K;

	ASSERT_EQ(0, munmap(hole, SZ_4K));
	if (gb_thp_allowed() > 0)
		EXPECT_EQ(self->b.len - SZ_2M,
			  pmd_bytes(self->b.p, self->b.len));
	EXPECT_EQ(-1, check_range(self->b.p, 0, hole - self->b.p, 7));
	EXPECT_EQ(-1, check_range(self->b.p, hole - self->b.p + SZ_4K, self->b.len,
				  7));
	ASSERT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, hole + SZ_4K,
			       SZ_2M, NULL, NULL));
	/* Teardown unmaps both halves. */
	munmap(self->b.p, hole - self->b.p);
	munmap(hole + SZ_4K, self->b.p + self->b.len - hole - SZ_4K);
	self->b.p = mmap(NULL, SZ_4K, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	self->b.len = SZ_4K;
}

TEST_F(huge, madv_dontneed_of_4k_inside_a_pmd)
{
	char *page = self->b.p + 3 * SZ_2M + 5 * SZ_4K;

	ASSERT_EQ(0, madvise(page, SZ_4K, MADV_DONTNEED));
	EXPECT_EQ(-1, check_stamp(self->b.p, self->b.len, 7));
	*(volatile uint64_t *)page = 1;
	EXPECT_EQ(1, *(volatile uint64_t *)page);
	*(uint64_t *)page = 7 * 1000003 + (page - self->b.p);
	/* A whole aligned 2 MiB comes back as one PMD on the next fault. */
	ASSERT_EQ(0, madvise(self->b.p, self->b.len, MADV_DONTNEED));
	ASSERT_EQ(0, gb_populate(self->b.p, self->b.len));
	EXPECT_EQ(-1, check_stamp(self->b.p, self->b.len, 7));
	if (gb_thp_allowed() > 0)
		EXPECT_EQ(self->b.len, pmd_bytes(self->b.p, self->b.len));
}

TEST_F(huge, mprotect_of_part_of_a_pmd)
{
	char *ro = self->b.p + SZ_2M + SZ_4K;

	ASSERT_EQ(0, mprotect(ro, 4 * SZ_4K, PROT_READ));
	EXPECT_EQ(-1, check_stamp(self->b.p, self->b.len, 7));
	/* Writable around the read-only pages. */
	*(volatile uint64_t *)(ro - SZ_4K) += 0;
	*(volatile uint64_t *)(ro + 4 * SZ_4K) += 0;
	ASSERT_EQ(0, mprotect(ro, 4 * SZ_4K, PROT_READ | PROT_WRITE));
	gb_stamp_pages(self->b.p, self->b.len, 8);
	EXPECT_EQ(-1, check_stamp(self->b.p, self->b.len, 8));
	/* A whole PMD made read-only and back keeps its data. */
	ASSERT_EQ(0, mprotect(self->b.p, SZ_2M, PROT_READ));
	EXPECT_EQ(-1, check_stamp(self->b.p, self->b.len, 8));
	ASSERT_EQ(0, mprotect(self->b.p, SZ_2M, PROT_READ | PROT_WRITE));
	gb_stamp_pages(self->b.p, SZ_2M, 8);
	ASSERT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, self->b.p, self->b.len,
			       NULL, NULL));
}

TEST_F(huge, mremap_moves_the_mapping)
{
	char *to = gb_map_at(-1, self->b.len, PROT_NONE, 0, 0);
	char *q;

	ASSERT_NE(MAP_FAILED, to);
	q = mremap(self->b.p, self->b.len, self->b.len, MREMAP_MAYMOVE | MREMAP_FIXED,
		   to);
	ASSERT_EQ(to, q);
	self->b.p = q;
	EXPECT_EQ(-1, check_stamp(self->b.p, self->b.len, 7));
	ASSERT_EQ(0, gb_populate(self->b.p, self->b.len));
	if (gb_thp_allowed() > 0)
		EXPECT_EQ(self->b.len, pmd_bytes(self->b.p, self->b.len));
	/* Growing stays refused (VM_DONTEXPAND). */
	EXPECT_EQ(MAP_FAILED, mremap(self->b.p, self->b.len, 2 * self->b.len,
				     MREMAP_MAYMOVE));
}

TEST_F(huge, forked_child_writes_through_pmds)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		gb_stamp_pages(self->b.p, self->b.len, 9);
		_exit(check_stamp(self->b.p, self->b.len, 9) == -1 ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-1, check_stamp(self->b.p, self->b.len, 9));
}

/*
 * The buffer's pages are never on an LRU list, so mlock() has nothing to
 * do, and must not mark them (PG_mlocked would outlive the mapping).
 */
TEST_F(huge, mlock_leaves_the_vma_unlocked)
{
	EXPECT_EQ(0, mlock(self->b.p, self->b.len));
	EXPECT_EQ(0, gb_vma_has_flag(self->b.p, "lo"));
	EXPECT_EQ(0, munlock(self->b.p, self->b.len));
	EXPECT_EQ(-1, check_stamp(self->b.p, self->b.len, 7));
}

/* The wrong alignment costs PMDs, nothing else. */
TEST(misplaced_mappings_use_4k_entries)
{
	const size_t len = 8 * SZ_1M;
	struct placed_buf b;
	int fd;
	char *q;

	placed_buf_get(_metadata, &b, len);
	fd = b.fd;
	gb_stamp_pages(b.p, len, 3);
	/* Address 4 KiB past alignment: no PMD fits. */
	q = gb_map_at(fd, len - SZ_4K, PROT_READ | PROT_WRITE, 0, SZ_4K);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, gb_populate(q, len - SZ_4K));
	EXPECT_EQ(0, pmd_bytes(q, len - SZ_4K));
	EXPECT_EQ(-1, check_stamp(q, len - SZ_4K, 3));
	munmap(q, len - SZ_4K);
	/* Aligned address, offset 4 KiB: still none. */
	q = gb_map_at(fd, len - SZ_4K, PROT_READ | PROT_WRITE, SZ_4K, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, gb_populate(q, len - SZ_4K));
	EXPECT_EQ(0, pmd_bytes(q, len - SZ_4K));
	EXPECT_EQ(3 * 1000003 + SZ_4K, *(uint64_t *)q);
	munmap(q, len - SZ_4K);
	/* Aligned address, offset 2 MiB: PMDs again. */
	q = gb_map_at(fd, len - SZ_2M, PROT_READ | PROT_WRITE, SZ_2M, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, gb_populate(q, len - SZ_2M));
	if (gb_thp_allowed() > 0)
		EXPECT_EQ(len - SZ_2M, pmd_bytes(q, len - SZ_2M));
	EXPECT_EQ(3 * 1000003 + SZ_2M, *(uint64_t *)q);
	munmap(q, len - SZ_2M);
	placed_buf_put(&b);
}

/* A read-only fd maps read-only PMDs. */
TEST(read_only_fd_maps_pmds)
{
	const size_t len = 4 * SZ_1M;
	struct gpubuf_alloc a;
	int dev = gb_open();
	char *p;

	ASSERT_LE(0, dev);
	gb_alloc_req(&a, len);
	a.fd_flags = O_RDONLY | O_CLOEXEC;
	ASSERT_EQ(0, gb_ioctl(dev, GPUBUF_IOC_ALLOC, &a));
	p = gb_map_at(a.fd, len, PROT_READ, 0, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, gb_populate_read(p, len));
	EXPECT_EQ(0, *(volatile uint64_t *)(p + SZ_2M));
	if (gb_thp_allowed() > 0)
		EXPECT_EQ(len, pmd_bytes(p, len));
	EXPECT_EQ(-1, mprotect(p, len, PROT_READ | PROT_WRITE));
	munmap(p, len);
	close(a.fd);
	close(dev);
}

/*
 * With THP "never" the kernel may refuse PMDs for files (6.1, 6.12 and 7.2
 * do not: their fault path maps a 2 MiB page it is handed whatever the
 * policy); either way the mapping must work and stay pinnable. The mode is
 * put back in the teardown, whatever the test did.
 */
FIXTURE(thp_never) {
	char mode[32];
};

FIXTURE_SETUP(thp_never)
{
	ASSERT_EQ(0, gb_thp_mode(self->mode, sizeof(self->mode)));
	ASSERT_EQ(0, gb_thp_set("never"));
}

FIXTURE_TEARDOWN(thp_never)
{
	gb_thp_set(self->mode);
}

TEST_F(thp_never, mapping_still_works_and_pins)
{
	const size_t len = 4 * SZ_1M;
	uint64_t want, got = 0;
	struct placed_buf b;
	char *p;

	placed_buf_get(_metadata, &b, len);
	p = b.p;
	want = gb_stamp_pages(p, len, 5);
	EXPECT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, p, len, &got, NULL));
	EXPECT_EQ(want, got);
	EXPECT_EQ(0, gb_probe_run(PINPROBE_OP_HMM_FAULT, p, len, &got, NULL));
	EXPECT_EQ(want, got);
	ASSERT_EQ(0, madvise(p, len, MADV_DONTNEED));
	EXPECT_EQ(-1, check_stamp(p, len, 5));
	TH_LOG("THP never: %lld of %zu bytes PMD-mapped", pmd_bytes(p, len),
	       len);
	placed_buf_put(&b);
}

/*
 * Pages that last served as anonymous THPs come back with their old folio
 * index (a virtual page number). Recent kernels (Debian's 6.12 and 7.2)
 * map no PMD whose folio reaches past the file's size by that index, so
 * without gpubuf setting it, such a buffer got 0-25% of 64 MiB in 2 MiB
 * entries on 6.12, every page a 2 MiB page.
 */
TEST(pmds_after_anonymous_thp_was_freed)
{
	const size_t len = 64 * SZ_1M, anon_len = 256 * SZ_1M;
	struct placed_buf b;
	char *p;

	long long thp;

	if (gb_thp_allowed() <= 0)
		SKIP(return, "THP is \"never\": nothing maps with 2 MiB entries");
	p = gb_map_at(-1, anon_len, PROT_READ | PROT_WRITE, 0, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, madvise(p, anon_len, MADV_HUGEPAGE));
	ASSERT_EQ(0, gb_populate(p, anon_len));
	thp = gb_smaps_bytes(p, anon_len, "AnonHugePages");
	munmap(p, anon_len);
	/* Without THPs freed first there is no stale index to meet. */
	ASSERT_LE(anon_len / 2, thp);

	placed_buf_get(_metadata, &b, len);
	EXPECT_EQ(len, pmd_bytes(b.p, len));
	placed_buf_put(&b);
}

/* A counter of /proc/vmstat; 0 when absent. */
static unsigned long long vmstat(const char *key)
{
	unsigned long long v = 0, got;
	size_t klen = strlen(key);
	char line[128];
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ' ' &&
		    sscanf(line + klen, "%llu", &got) == 1)
			v = got;
	fclose(f);
	return v;
}

/* Read the whole range, one word per page, until @until (seconds). */
static void touch_until(const char *p, size_t len, double until)
{
	size_t off;

	while (now_s() < until)
		for (off = 0; off < len; off += SZ_4K)
			(void)((const volatile char *)p)[off];
}

#define NUMA_KNOBS 3
static const char *const numa_knob[NUMA_KNOBS] = {
	"/proc/sys/kernel/numa_balancing",
	"scan_delay_ms",
	"scan_period_min_ms",
};
/* The two tuning knobs: in procfs until 5.12, in debugfs after. */
static const char *const numa_knob_dir[] = {
	"/proc/sys/kernel/numa_balancing_",
	"/sys/kernel/debug/sched/numa_balancing/",
};

/*
 * Automatic NUMA balancing on, scanning at once and often. 5.10, 6.1 and
 * 6.12 scan a single-node guest too (the scans and their counters do not
 * need a second node to move to); Debian's 7.2 does not.
 */
FIXTURE(numa_balancing) {
	char path[NUMA_KNOBS][128];
	char old[NUMA_KNOBS][32];
};

FIXTURE_SETUP(numa_balancing)
{
	static const char *const want[NUMA_KNOBS] = { "1", "0", "100" };
	FILE *f;
	int i, d;

	if (access(numa_knob[0], W_OK))
		SKIP(return, "no %s (CONFIG_NUMA_BALANCING off)", numa_knob[0]);
	/* Left mounted: the guest's own debugfs, harmless to later suites. */
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	/* Find and read every knob before changing any. */
	for (i = 0; i < NUMA_KNOBS; i++) {
		self->path[i][0] = 0;
		for (d = 0; i && d < 2 && !self->path[i][0]; d++) {
			snprintf(self->path[i], sizeof(self->path[i]), "%s%s",
				 numa_knob_dir[d], numa_knob[i]);
			if (access(self->path[i], W_OK))
				self->path[i][0] = 0;
		}
		if (!i)
			snprintf(self->path[0], sizeof(self->path[0]), "%s",
				 numa_knob[0]);
		ASSERT_NE(0, self->path[i][0]) TH_LOG("no %s knob", numa_knob[i]);
		f = fopen(self->path[i], "r");
		ASSERT_NE(NULL, f);
		ASSERT_NE(NULL, fgets(self->old[i], sizeof(self->old[i]), f));
		fclose(f);
	}
	for (i = NUMA_KNOBS - 1; i >= 0; i--)
		if (gb_write_str(self->path[i], want[i]))
			break;
	if (i >= 0) {
		while (++i < NUMA_KNOBS)
			gb_write_str(self->path[i], self->old[i]);
		ASSERT_TRUE(0) TH_LOG("cannot write the NUMA balancing knobs");
	}
}

FIXTURE_TEARDOWN(numa_balancing)
{
	int i;

	for (i = 0; i < NUMA_KNOBS; i++)
		if (self->path[i][0] && self->old[i][0])
			gb_write_str(self->path[i], self->old[i]);
}

/*
 * NUMA balancing must leave the buffer's mapping alone: marking its
 * entries PROT_NONE would invalidate every HMM mirror and RDMA ODP
 * registration of the range, for pages that cannot migrate. Anonymous THP
 * memory in the same process, scanned as usual, shows that scanning ran.
 */
/*
 * Up to 60 s for the anonymous memory's scans (a bound for a slow guest,
 * so that a loaded machine does not turn the check into a skip), then
 * three times as long for the buffer's: up to 241 s.
 */
TEST_F_TIMEOUT(numa_balancing, scans_skip_the_buffer, 300)
{
	const size_t len = 64 * SZ_1M;
	unsigned long long base, huge;
	struct placed_buf b;
	double start, took;
	char *p;

	if (_metadata->skip)
		return;
	p = gb_map_at(-1, len, PROT_READ | PROT_WRITE, 0, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, madvise(p, len, MADV_HUGEPAGE));
	ASSERT_EQ(0, gb_populate(p, len));
	base = vmstat("numa_huge_pte_updates");
	start = now_s();
	do
		touch_until(p, len, now_s() + 0.2);
	while (vmstat("numa_huge_pte_updates") - base < len / SZ_2M &&
	       now_s() < start + 60);
	took = now_s() - start;
	huge = vmstat("numa_huge_pte_updates") - base;
	munmap(p, len);
	TH_LOG("anonymous THP: %llu PMD updates in %.1f s", huge, took);
	/* Debian's 7.2 does not scan at all with a single NUMA node. */
	if (huge < len / SZ_2M)
		SKIP(return, "NUMA balancing scanned no memory of this single-node guest in %.0f s: nothing to compare with",
		     took);

	placed_buf_get(_metadata, &b, len);
	p = b.p;
	base = vmstat("numa_huge_pte_updates");
	/* Three times as long as the anonymous memory needed. */
	touch_until(p, len, now_s() + 3 * took + 1);
	huge = vmstat("numa_huge_pte_updates") - base;
	TH_LOG("gpubuf: %llu PMD updates in %.1f s", huge, 3 * took + 1);
	EXPECT_EQ(0, huge);
	if (gb_thp_allowed() > 0)
		EXPECT_EQ(len, pmd_bytes(p, len));
	placed_buf_put(&b);
}

/*
 * Allocate, map and touch every page of @len bytes the library's way
 * (ALLOC, placed mmap, MADV_POPULATE_WRITE); seconds taken, and in *@share
 * the % of the mapping in 2 MiB entries. A failure fails the test.
 */
/*
 * Allocate, map and touch @len: the time it took, the share of the mapping
 * held by PMD entries in *@share and, when @huge is not NULL, the share of
 * the buffer in 2 MiB pages (INFO's huge_bytes) in *@huge.
 */
static double gpubuf_first_touch(struct __test_metadata *_metadata,
				 size_t len, double *share, double *huge)
{
	double t = now_s();
	struct gpubuf_info info;
	struct placed_buf b;
	size_t off;

	placed_buf_get(_metadata, &b, len);
	for (off = 0; off < len; off += SZ_4K)
		b.p[off] = 1;
	t = now_s() - t;
	*share = 100.0 * pmd_bytes(b.p, len) / len;
	if (huge)
		*huge = gb_info(b.dev, b.fd, &info) ? -1 :
			100.0 * info.huge_bytes / len;
	placed_buf_put(&b);
	return t;
}

/*
 * The 1 GiB measurements raise max_buffer_bytes to 1 GiB (the default, half
 * of the guest's RAM, may be just below it) and switch THP to "always" for
 * the anonymous side; the teardown puts both back, whatever the test did.
 * Each takes minutes on a KASAN kernel under TCG.
 */
FIXTURE(measure) {
	unsigned long long max_buffer_bytes;
	char thp[32];
};

FIXTURE_SETUP(measure)
{
	self->max_buffer_bytes = gb_param("max_buffer_bytes");
	ASSERT_EQ(0, gb_thp_mode(self->thp, sizeof(self->thp)));
	if (gb_thp_allowed() <= 0)
		SKIP(return, "THP is \"never\": nothing maps with 2 MiB entries");
	if (self->max_buffer_bytes < (1ULL << 30))
		ASSERT_EQ(0, gb_set_param("max_buffer_bytes", 1ULL << 30));
}

FIXTURE_TEARDOWN(measure)
{
	if (self->max_buffer_bytes)
		gb_set_param("max_buffer_bytes", self->max_buffer_bytes);
	if (self->thp[0])
		gb_thp_set(self->thp);
}

TEST_F_TIMEOUT(measure, pmd_share_of_64m_and_1g, 300)
{
	double s64 = 0, s1g = 0, h64 = 0, h1g = 0, touch64_s, touch1g_s;

	if (_metadata->skip)
		return;
	touch64_s = gpubuf_first_touch(_metadata, 64 * SZ_1M, &s64, &h64);
	touch1g_s = gpubuf_first_touch(_metadata, 1ULL << 30, &s1g, &h1g);
	ASSERT_LE(0, touch64_s);
	ASSERT_LE(0, touch1g_s);
	TH_LOG("measured: PMD-mapped share: 64 MiB %.1f%%, 1 GiB %.1f%% (in 2 MiB pages: %.1f%%, %.1f%%)",
	       s64, s1g, h64, h1g);
	/* Every 2 MiB page the buffer got is mapped with one PMD entry. */
	EXPECT_EQ(h64, s64);
	EXPECT_EQ(h1g, s1g);
	/* A fresh guest has the 2 MiB pages for 64 MiB, and nearly for 1 GiB. */
	EXPECT_EQ(100.0, h64);
	EXPECT_LE(90.0, h1g);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define PIN_TRIALS 3

/* Median time of PIN_TRIALS long-term pins of [p, p + len), in ns. */
static uint64_t pin_ns(const void *p, size_t len)
{
	uint64_t ns[PIN_TRIALS];
	int i;

	for (i = 0; i < PIN_TRIALS; i++)
		if (gb_probe_run(PINPROBE_OP_PIN_LONGTERM, p, len, NULL, &ns[i]))
			return 0;
	qsort(ns, PIN_TRIALS, sizeof(ns[0]), cmp_u64);
	return ns[PIN_TRIALS / 2];
}

/*
 * Long-term pin of 1 GiB (what cuMemHostRegister does) through the test
 * module: the buffer mapped with PMDs, the same buffer mapped with 4 KiB
 * PTEs, and anonymous THP memory. Checked: every pin takes every page and
 * sees its stamp, and the pin walks what the test means it to walk (PMD
 * entries in the first mapping, before and after pinning; none in the
 * second). The times are logged as ratios, not compared.
 */
TEST_F_TIMEOUT(measure, longterm_pin_cost_of_1g, 600)
{
	const size_t len = 1ULL << 30, pin_len = len - SZ_4K;
	uint64_t pin2m_ns, pin4k_ns, pin_anon_ns, want, sum2m = 0, sum4k = 0;
	long long pmd_2m, pmd_2m_after, pmd_4k;
	struct placed_buf b;
	char *q, *anon;

	if (_metadata->skip)
		return;
	placed_buf_get(_metadata, &b, len);
	/* Both mappings start at buffer offset 0 and pin pin_len bytes. */
	want = gb_stamp_pages(b.p, pin_len, 7);
	/* The same buffer again, 4 KiB off alignment: 4 KiB entries. */
	q = gb_map_at(b.fd, pin_len, PROT_READ | PROT_WRITE, 0, SZ_4K);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, gb_populate(q, pin_len));
	pmd_2m = pmd_bytes(b.p, len);
	pmd_4k = pmd_bytes(q, pin_len);
	pin2m_ns = pin_ns(b.p, pin_len);
	pin4k_ns = pin_ns(q, pin_len);
	pmd_2m_after = pmd_bytes(b.p, len);
	EXPECT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, b.p, pin_len,
				  &sum2m, NULL));
	EXPECT_EQ(0, gb_probe_run(PINPROBE_OP_PIN_LONGTERM, q, pin_len,
				  &sum4k, NULL));
	EXPECT_EQ(want, sum2m);
	EXPECT_EQ(want, sum4k);
	TH_LOG("PMD-mapped %.1f%% (after the pins %.1f%%), 4K-mapped %.1f%%",
	       100.0 * pmd_2m / len, 100.0 * pmd_2m_after / len,
	       100.0 * pmd_4k / len);
	munmap(q, pin_len);
	placed_buf_put(&b);

	anon = gb_map_at(-1, len, PROT_READ | PROT_WRITE, 0, 0);
	ASSERT_NE(MAP_FAILED, anon);
	ASSERT_EQ(0, madvise(anon, len, MADV_HUGEPAGE));
	ASSERT_EQ(0, gb_populate(anon, len));
	pin_anon_ns = pin_ns(anon, pin_len);
	TH_LOG("anonymous THP: %.1f%% in huge pages",
	       100.0 * gb_smaps_bytes(anon, len, "AnonHugePages") / len);
	munmap(anon, len);

	ASSERT_NE(0, pin2m_ns);
	ASSERT_NE(0, pin4k_ns);
	ASSERT_NE(0, pin_anon_ns);
	TH_LOG("measured: 1 GiB long-term pin, medians of %d: 2M-mapped / 4K-mapped %.3f, 2M-mapped / anon THP %.3f",
	       PIN_TRIALS, (double)pin2m_ns / pin4k_ns,
	       (double)pin2m_ns / pin_anon_ns);
	EXPECT_LE((long long)(len / 10 * 9), pmd_2m);
	EXPECT_EQ(pmd_2m, pmd_2m_after);
	EXPECT_EQ(0, pmd_4k);
}

/* The same for anonymous THP memory with MAP_POPULATE and mlock. */
static double anon_first_touch(size_t len, double *share)
{
	double t = now_s();
	size_t off;
	char *p;

	/* The caller sets THP "always", so MAP_POPULATE itself gets THPs. */
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
	t = now_s() - t;
	*share = 100.0 * gb_smaps_bytes(p, len, "AnonHugePages") / len;
	munmap(p, len);
	return t;
}

TEST_F_TIMEOUT(measure, first_touch_cost_of_1g, 600)
{
	const size_t len = 1ULL << 30;
	double touch_gpubuf_s[PIN_TRIALS], touch_anon_s[PIN_TRIALS];
	double sg = 0, sa = 0;
	int i;

	if (_metadata->skip)
		return;
	for (i = 0; i < PIN_TRIALS; i++) {
		touch_gpubuf_s[i] = gpubuf_first_touch(_metadata, len, &sg, NULL);
		ASSERT_EQ(0, gb_thp_set("always"));
		touch_anon_s[i] = anon_first_touch(len, &sa);
		ASSERT_EQ(0, gb_thp_set(self->thp));
		if (touch_gpubuf_s[i] < 0 || touch_anon_s[i] < 0)
			break;
	}
	ASSERT_EQ(PIN_TRIALS, i);
	qsort(touch_gpubuf_s, PIN_TRIALS, sizeof(double), cmp_double);
	qsort(touch_anon_s, PIN_TRIALS, sizeof(double), cmp_double);
	TH_LOG("gpubuf %.1f%% PMD-mapped, anonymous %.1f%% THP", sg, sa);
	TH_LOG("measured: 1 GiB alloc+map+first touch, medians of %d: gpubuf / anon THP (MAP_POPULATE+mlock) %.3f",
	       PIN_TRIALS,
	       touch_gpubuf_s[PIN_TRIALS / 2] / touch_anon_s[PIN_TRIALS / 2]);
	EXPECT_LE(90.0, sg);
}

TEST_HARNESS_MAIN
