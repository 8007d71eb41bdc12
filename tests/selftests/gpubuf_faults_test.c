// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: every allocation and user copy of gpubuf's paths failed in
 * turn, with the kernel's systematic fault injection (fail-nth; the debug
 * kernel of make check-debug has it, Debian's does not and every test here
 * skips there, saying so). For ALLOC at each chunk size, with and without
 * the reserve, on a NUMA node and strict; open of /dev/gpubuf; INFO and
 * VERSION; mmap and the
 * first write of a 4 KiB and a 2 MiB mapping; the dma-buf sync; a vgem
 * PRIME import and its GEM close; the release; the reserve_bytes knob; the
 * reserve's shrinker; module load and unload, split into the loader's
 * sites and gpubuf's init's (RDMA registration over rxe: tests/rdma): the
 * Nth allocation or copy of the call fails, N = 1, 2, ... until the call
 * no longer reaches the fault. The reserve's fill worker, which no task's
 * fail-nth reaches, through the module's own fault attribute. After each failure the call
 * answered a documented errno (or coped), the module's counters are back
 * where they were, no descriptor or mapping is left, and the same call
 * then succeeds. The runner checks dmesg (no WARN, BUG or KASAN report)
 * and, on the debug kernel, kmemleak. Each test prints the fault sites
 * its loop reached.
 */
#include <sys/stat.h>

#include "gpubuf_helpers.h"
#include "gpubuf_reserve.h"
#include "kselftest_harness.h"
#include "gpubuf_faults.h"

#define SZ_64K	(64 * SZ_4K)

static const int alloc_errnos[] = { ENOMEM, EFAULT, EINTR, 0 };
static const int copy_errnos[] = { EFAULT, ENOMEM, 0 };
static const int map_errnos[] = { ENOMEM, EFAULT, EAGAIN, 0 };

struct alloc_arg {
	int dev;
	uint64_t size;
	int node;
	uint32_t flags;
	int fd;
};

static int do_alloc(void *p)
{
	struct alloc_arg *a = p;
	struct gpubuf_alloc req;

	gb_alloc_req(&req, a->size);
	req.numa_node = a->node;
	req.flags = a->flags;
	if (gb_ioctl(a->dev, GPUBUF_IOC_ALLOC, &req))
		return -errno;
	a->fd = req.fd;
	return 0;
}

static void undo_close(void *p)
{
	struct alloc_arg *a = p;

	close(a->fd);
	a->fd = -1;
}

static void alloc_loop(struct __test_metadata *_metadata, uint64_t size,
		       int node, uint32_t flags, const char *what)
{
	struct alloc_arg a = { .dev = gb_open(), .size = size, .node = node,
			       .flags = flags, .fd = -1 };
	struct fault_op op = { what, do_alloc, undo_close, alloc_errnos, &a };

	ASSERT_LE(0, a.dev);
	fault_loop(_metadata, &op);
	close(a.dev);
}

TEST(alloc_4k) { alloc_loop(_metadata, SZ_4K, GPUBUF_NUMA_ANY, 0, "ALLOC 4 KiB"); }
TEST(alloc_64k) { alloc_loop(_metadata, SZ_64K, GPUBUF_NUMA_ANY, 0, "ALLOC 64 KiB"); }
TEST(alloc_2m) { alloc_loop(_metadata, SZ_2M, GPUBUF_NUMA_ANY, 0, "ALLOC 2 MiB"); }
TEST(alloc_mixed) { alloc_loop(_metadata, SZ_2M + SZ_64K + SZ_4K, GPUBUF_NUMA_ANY, 0, "ALLOC 2 MiB + 64 KiB + 4 KiB"); }
TEST(alloc_node_strict)
{
	alloc_loop(_metadata, SZ_2M + SZ_4K, 0, GPUBUF_ALLOC_NUMA_STRICT,
		   "ALLOC on node 0, strict");
}

TEST(alloc_from_the_reserve)
{
	if (access("/proc/thread-self/fail-nth", F_OK))
		SKIP(return, "no /proc/thread-self/fail-nth: this kernel has no CONFIG_FAULT_INJECTION");
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 8 * SZ_1M));
	ASSERT_EQ(0, rsv_wait_zeroed());
	alloc_loop(_metadata, 4 * SZ_1M + SZ_4K, GPUBUF_NUMA_ANY, 0,
		   "ALLOC from the reserve");
	gb_set_param("reserve_bytes", 0);
}

/* A buffer to work on, made before the loop. */
struct buf_arg {
	int dev, fd, vgem;
	uint32_t handle;
	char *p;
	size_t len, off;
};

static int buf_setup(struct buf_arg *b, size_t len)
{
	memset(b, 0, sizeof(*b));
	b->vgem = -1;
	b->p = MAP_FAILED;
	b->len = len;
	b->dev = gb_open();
	if (b->dev < 0)
		return b->dev;
	b->fd = gb_alloc(b->dev, len);
	return b->fd < 0 ? b->fd : 0;
}

static void buf_teardown(struct buf_arg *b)
{
	if (b->p != MAP_FAILED)
		munmap(b->p, b->len);
	if (b->vgem >= 0)
		close(b->vgem);
	close(b->fd);
	close(b->dev);
}

static int do_info(void *p)
{
	struct buf_arg *b = p;
	struct gpubuf_info info;

	return gb_info(b->dev, b->fd, &info);
}

static int do_version(void *p)
{
	struct buf_arg *b = p;
	struct gpubuf_version v = { 0 };

	return gb_ioctl(b->dev, GPUBUF_IOC_VERSION, &v) ? -errno : 0;
}

static void undo_nothing(void *p)
{
	(void)p;
}

/*
 * open() of /dev/gpubuf allocates the file's record (f9f12c3: what its
 * ALLOCs hold, for fdinfo): ENOMEM, and nothing left open, when it fails.
 * EFAULT: the VFS's own copy of the path name (getname()) failed before
 * gpubuf was reached, an injected user-copy failure or an allocation of
 * the page fault that copy takes; open(2) documents it. Seen at faults 3
 * and 4 on the debug kernel (CONFIG_FAULT_INJECTION_USERCOPY).
 */
static const int open_errnos[] = { ENOMEM, EFAULT, 0 };

static int do_open_dev(void *p)
{
	int fd = gb_open();

	if (fd < 0)
		return fd;
	*(int *)p = fd;
	return 0;
}

static void undo_open_dev(void *p)
{
	close(*(int *)p);
	*(int *)p = -1;
}

TEST(open_of_the_device)
{
	int fd = -1;
	struct fault_op op = { "open of /dev/gpubuf", do_open_dev,
			       undo_open_dev, open_errnos, &fd };

	fault_loop(_metadata, &op);
}

TEST(info_and_version)
{
	struct buf_arg b;
	struct fault_op info = { "INFO", do_info, undo_nothing, copy_errnos, &b };
	struct fault_op version = { "VERSION", do_version, undo_nothing,
				    copy_errnos, &b };

	ASSERT_EQ(0, buf_setup(&b, SZ_1M));
	fault_loop(_metadata, &info);
	fault_loop(_metadata, &version);
	buf_teardown(&b);
}

static int do_mmap(void *p)
{
	struct buf_arg *b = p;

	b->p = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	return b->p == MAP_FAILED ? -errno : 0;
}

static void undo_munmap(void *p)
{
	struct buf_arg *b = p;

	munmap(b->p, b->len);
	b->p = MAP_FAILED;
}

/* The first write of [off, off + 4 KiB): a PTE, or with off 0 a PMD. */
static int do_touch(void *p)
{
	struct buf_arg *b = p;
	size_t len = b->off ? SZ_4K : SZ_2M;

	return madvise(b->p + b->off, len, MADV_POPULATE_WRITE) ? -errno : 0;
}

static void undo_zap(void *p)
{
	struct buf_arg *b = p;

	madvise(b->p, b->len, MADV_DONTNEED);
}

TEST(mmap_and_first_touch)
{
	struct buf_arg b;
	struct fault_op map = { "mmap", do_mmap, undo_munmap, map_errnos, &b };
	struct fault_op pte = { "first write, 4 KiB entry", do_touch, undo_zap,
				map_errnos, &b };
	struct fault_op pmd = { "first write, 2 MiB entry", do_touch, undo_zap,
				map_errnos, &b };

	ASSERT_EQ(0, buf_setup(&b, 2 * SZ_2M));
	fault_loop(_metadata, &map);
	b.p = gb_map_at(b.fd, b.len, PROT_READ | PROT_WRITE, 0, 0);
	ASSERT_NE(MAP_FAILED, b.p);
	b.off = SZ_2M + SZ_4K;		/* a 4 KiB entry */
	fault_loop(_metadata, &pte);
	b.off = 0;			/* a 2 MiB entry where THP allows */
	fault_loop(_metadata, &pmd);
	buf_teardown(&b);
}

static int do_import(void *p)
{
	struct buf_arg *b = p;

	return vgem_import(b->vgem, b->fd, &b->handle);
}

static void undo_gem_close(void *p)
{
	struct buf_arg *b = p;

	vgem_close_handle(b->vgem, b->handle);
}

static int do_sync(void *p)
{
	struct buf_arg *b = p;
	int ret = gb_sync(b->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW);

	return ret ? ret : gb_sync(b->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW);
}

TEST(vgem_import_and_sync)
{
	struct buf_arg b;
	struct fault_op import = { "vgem PRIME import (attach, map)", do_import,
				   undo_gem_close, alloc_errnos, &b };
	struct fault_op sync = { "DMA_BUF_IOCTL_SYNC with an importer", do_sync,
				 undo_nothing, copy_errnos, &b };

	ASSERT_EQ(0, buf_setup(&b, SZ_2M + SZ_4K));
	b.vgem = vgem_open();
	if (b.vgem < 0) {
		buf_teardown(&b);
		SKIP(return, "no vgem card");
	}
	fault_loop(_metadata, &import);
	ASSERT_EQ(0, do_import(&b));
	fault_loop(_metadata, &sync);
	undo_gem_close(&b);
	buf_teardown(&b);
}

/* The release runs in close(), as the fd is the buffer's last reference. */
static int do_release(void *p)
{
	struct alloc_arg *a = p;

	close(a->fd);
	a->fd = -1;
	return 0;
}

static void undo_realloc(void *p)
{
	struct alloc_arg *a = p;

	a->fd = gb_alloc(a->dev, a->size);
}

TEST(release)
{
	struct alloc_arg a = { .dev = gb_open(), .size = SZ_2M + SZ_4K };
	struct fault_op op = { "release", do_release, undo_realloc,
			       alloc_errnos, &a };

	ASSERT_LE(0, a.dev);
	a.fd = gb_alloc(a.dev, a.size);
	ASSERT_LE(0, a.fd);
	/* The loop's snapshots see the buffer allocated again each time. */
	fault_loop(_metadata, &op);
	close(a.fd);
	close(a.dev);
}

static int do_resize(void *p)
{
	return gb_set_param("reserve_bytes", *(unsigned long long *)p);
}

static void undo_resize(void *p)
{
	(void)p;
	gb_set_param("reserve_bytes", 0);
	rsv_wait_zeroed();
}

TEST(reserve_knob)
{
	unsigned long long bytes = 8 * SZ_1M;
	struct fault_op op = { "reserve_bytes write", do_resize, undo_resize,
			       copy_errnos, &bytes };

	fault_loop(_metadata, &op);
	EXPECT_EQ(0, gb_param("reserve_bytes"));
}

/*
 * The reserve's shrinker, run by drop_caches as reclaim runs it, with any
 * allocation or copy on the way failed: every chunk leaves the reserve only
 * as counted in reserve_shrunk_bytes, none is lost or counted twice. The
 * counters are read outside the armed call (their reads are fault sites
 * too): by the undo, which then fills the reserve again.
 */
struct shrink_arg {
	unsigned long long target, owned, shrunk;
	int lost;
};

static unsigned long long rsv_owned(void)
{
	return gb_stat("reserve_ready_bytes") +
	       gb_stat("reserve_zeroing_bytes") +
	       gb_stat("reserve_used_bytes");
}

static int do_shrink(void *p)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	int ret = 0;

	(void)p;
	if (fd < 0)
		return -errno;
	if (write(fd, "2", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

static void refill(struct shrink_arg *a)
{
	int i;

	gb_set_param("reserve_bytes", 0);
	gb_set_param("reserve_bytes", a->target);
	/* The fill runs in a worker. */
	for (i = 0; i < 3000 && rsv_owned() < a->target; i++)
		usleep(10000);
	rsv_wait_zeroed();
	a->owned = rsv_owned();
	a->shrunk = gb_stat("reserve_shrunk_bytes");
}

static void undo_refill(void *p)
{
	struct shrink_arg *a = p;
	unsigned long long owned = rsv_owned();
	unsigned long long shrunk = gb_stat("reserve_shrunk_bytes") - a->shrunk;

	if (owned + shrunk != a->owned) {
		printf("# shrinker: the reserve owned %llu, then %llu with %llu shrunk\n",
		       a->owned, owned, shrunk);
		a->lost++;
	}
	refill(a);
}

TEST(reserve_shrinker)
{
	struct shrink_arg a = { .target = 8 * SZ_1M };
	struct fault_op op = { "reserve shrinker (drop_caches)", do_shrink,
			       undo_refill, copy_errnos, &a };
	unsigned long long shrunk;

	if (access("/proc/thread-self/fail-nth", F_OK))
		SKIP(return, "no /proc/thread-self/fail-nth: this kernel has no CONFIG_FAULT_INJECTION");
	refill(&a);
	ASSERT_EQ(a.target, a.owned);
	shrunk = gb_stat("reserve_shrunk_bytes");
	ASSERT_LT(0, fault_loop(_metadata, &op));
	EXPECT_EQ(0, a.lost);
	/* It did shrink, in this loop: at least the run without a fault. */
	EXPECT_LE(shrunk + a.target, gb_stat("reserve_shrunk_bytes"));
	gb_set_param("reserve_bytes", 0);
	rsv_wait_zeroed();
	EXPECT_EQ(0, rsv_owned());
}

/*
 * The fill worker, which fail-nth cannot reach (it runs in a kworker),
 * through the module's fault attribute: its first k chunk allocations
 * succeed and every later one fails (space = k chunks, times = -1), for
 * each k up to the target. The write of reserve_bytes still returns, the
 * reserve owns exactly the k chunks, the log says how much was set aside,
 * and with the attribute off the same write fills it completely.
 */
#define FAIL_FILL "/sys/kernel/debug/gpubuf/fail_reserve_fill/"

static int fail_fill_set(const char *knob, long long v)
{
	char path[128], text[32];

	snprintf(path, sizeof(path), FAIL_FILL "%s", knob);
	snprintf(text, sizeof(text), "%lld", v);
	return gb_write_str(path, text);
}

/* Whether the log, since @kmsg was opened, has a line containing @text. */
static int kmsg_has(int kmsg, const char *text)
{
	char rec[2048];
	int found = 0;
	ssize_t n;

	while ((n = read(kmsg, rec, sizeof(rec) - 1)) != 0) {
		if (n < 0) {
			if (errno == EPIPE)	/* overwritten records: go on */
				continue;
			break;			/* EAGAIN: nothing more */
		}
		rec[n] = '\0';
		found |= strstr(rec, text) != NULL;
	}
	return found;
}

static int kmsg_open_at_end(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

TEST(reserve_fill_worker)
{
	const unsigned long long chunk = SZ_2M, target = 8 * chunk;
	char line[96];
	int k, sites = 0;

	if (access(FAIL_FILL, F_OK))
		SKIP(return, "no " FAIL_FILL ": this kernel has no CONFIG_FAULT_INJECTION_DEBUG_FS (the debug kernel of make check-debug has)");
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 0));
	rsv_wait_zeroed();
	ASSERT_EQ(0, rsv_owned());
	ASSERT_EQ(0, fail_fill_set("verbose", 0));
	ASSERT_EQ(0, fail_fill_set("interval", 1));
	for (k = 0; k < (int)(target / chunk); k++) {
		int kmsg = kmsg_open_at_end();

		ASSERT_LE(0, kmsg);
		/* space counts down by a chunk per allocation; at 0 it fails. */
		ASSERT_EQ(0, fail_fill_set("space", k * chunk + 1));
		ASSERT_EQ(0, fail_fill_set("times", -1));
		ASSERT_EQ(0, fail_fill_set("probability", 100));
		ASSERT_EQ(0, gb_set_param("reserve_bytes", target));
		ASSERT_EQ(0, fail_fill_set("probability", 0));
		rsv_wait_zeroed();
		EXPECT_EQ(k * chunk, rsv_owned()) TH_LOG("chunk %d failed", k + 1);
		snprintf(line, sizeof(line), "reserve: %llu of %llu MiB of 2 MiB pages set aside",
			 k * chunk >> 20, target >> 20);
		EXPECT_TRUE(kmsg_has(kmsg, line)) TH_LOG("no \"%s\" in the log", line);
		close(kmsg);
		ASSERT_EQ(0, gb_set_param("reserve_bytes", 0));
		rsv_wait_zeroed();
		EXPECT_EQ(0, rsv_owned());
		sites++;
	}
	/* The attribute off: the same write fills the whole target. */
	ASSERT_EQ(0, gb_set_param("reserve_bytes", target));
	rsv_wait_zeroed();
	EXPECT_EQ(target, rsv_owned());
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 0));
	rsv_wait_zeroed();
	EXPECT_EQ(0, rsv_owned());
	TH_LOG("reserve fill worker: %d fault sites", sites);
}

/*
 * Module load with each allocation and copy of finit_module() failed in
 * turn: gpubuf's init unwinds what it made (the device, sysfs, the
 * shrinker, the workers), so the next load succeeds and kmemleak finds
 * nothing; then unload, the same. GPUBUF_KO names the module's file. The
 * module loader's own vmalloc() reports its failures with a call trace:
 * the runner excuses those inside the window announced here, unless they
 * name gpubuf (tests/vm/guest-tap.awk).
 */
struct load_arg {
	int init_failures;	/* loads that gpubuf's init refused */
};

/*
 * A failure inside gpubuf_init() says so in the log; one in the module
 * loader before it ran leaves no such line. That splits the loop's sites
 * into the loader's and those gpubuf's init reaches (its own, and the
 * driver core's and shrinker's allocations it makes).
 */
static int do_load(void *p)
{
	struct load_arg *a = p;
	int kmsg = kmsg_open_at_end();
	int ret = gb_load_module("GPUBUF_KO", "");

	if (ret && kmsg >= 0 && kmsg_has(kmsg, "gpubuf: not loaded: initialisation failed"))
		a->init_failures++;
	if (kmsg >= 0)
		close(kmsg);
	return ret;
}

static void undo_load(void *p)
{
	(void)p;
	gb_unload_module("gpubuf");
}

static int do_unload(void *p)
{
	(void)p;
	return gb_unload_module("gpubuf");
}

static void undo_unload(void *p)
{
	(void)p;
	gb_load_module("GPUBUF_KO", "");
}

static void kmsg(const char *text)
{
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror("/dev/kmsg");
		close(fd);
	}
}

FIXTURE(module) {};
FIXTURE_SETUP(module) {}
/* Closed here too, should an assertion end the test inside the window. */
FIXTURE_TEARDOWN(module)
{
	kmsg("gpubuf-faults: allocation failure window closed\n");
}

/*
 * 1333 loads of the KASAN module: 822 s alone on two cores (its window),
 * more than 1200 s with two other guests beside it (2026-12-07); the
 * debug kernel's suite limit is 2400 s.
 */
TEST_F_TIMEOUT(module, load_and_unload, 2100)
{
	static const int load_errnos[] = { ENOMEM, EFAULT, 0 };
	struct load_arg arg = { 0 };
	struct fault_op load = { "module load", do_load, undo_load,
				 load_errnos, &arg };
	int sites;
	struct fault_op unload = { "module unload", do_unload, undo_unload,
				   load_errnos, NULL };

	if (access("/proc/thread-self/fail-nth", F_OK))
		SKIP(return, "no /proc/thread-self/fail-nth: this kernel has no CONFIG_FAULT_INJECTION");
	ASSERT_NE(NULL, getenv("GPUBUF_KO"));
	ASSERT_EQ(0, gb_unload_module("gpubuf"));
	kmsg("gpubuf-faults: allocation failure reports expected\n");
	sites = fault_loop(_metadata, &load);
	EXPECT_LT(0, sites);
	kmsg("gpubuf-faults: allocation failure window closed\n");
	/* gpubuf's init allocates (its reserve's node array, the device). */
	EXPECT_LT(0, arg.init_failures);
	TH_LOG("module load: %d of the %d fault sites in gpubuf's init, %d in the module loader",
	       arg.init_failures, sites, sites - arg.init_failures);
	ASSERT_EQ(0, gb_load_module("GPUBUF_KO", ""));
	fault_loop(_metadata, &unload);
	/* Loaded for the suites after this one. */
	EXPECT_EQ(0, access("/dev/gpubuf", F_OK));
}

TEST_HARNESS_MAIN
