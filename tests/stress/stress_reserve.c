// SPDX-License-Identifier: GPL-2.0-only
/*
 * The reserve's keeper, beside the workers, at nice -20: every few hundred
 * milliseconds it resizes reserve_bytes (to 0, whole and odd sizes up to
 * 128 MiB, text that is not a number), or keeps a buffer pinned past its
 * release through gpubuf_pinprobe's PIN_HOLD, as an RDMA MR does (its
 * chunks are then held, and their data must still be there when the pin
 * goes), or drops such a pin. A third into the run, and every
 * SQUEEZE_EVERY_S after, it squeezes: the workers pause between two steps
 * (so that they cannot take the reserve's free pages meanwhile), the
 * reserve gets SQUEEZE_FREE bytes free, and the machine's free memory goes
 * into the hugetlb pool, 32 MiB at a time (__GFP_RETRY_MAYFAIL: the kernel
 * reclaims for those pages but never OOM-kills), until the kernel's
 * reclaim calls the reserve's shrinker, which reserve_shrunk_bytes proves;
 * then the pool is given back at once. Where the pool stops short (no
 * 2 MiB block left to take), a child touches anonymous memory for the
 * rest, never more than leaves half of the reserve's free pages and the
 * pressure cgroup's memory.max to reclaim. Memory cgroup reclaim (the
 * pressure cgroup's) never calls that shrinker: it is not per-cgroup, its
 * pages being charged to nobody. At the second squeeze of a run of two
 * minutes or more, the reserve is first grown as far as it goes (a value
 * above what memory allows, clamped to half of RAM).
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "gpubuf_stress.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

/*
 * One squeeze takes some 20 s on a busy 2-core TCG host (the kernel
 * zeroes every page it allocates, init_on_alloc, huge pages too), the
 * workers paused meanwhile.
 */
#define SQUEEZE_EVERY_S		100
/* Free in the reserve for a squeeze (at least _MIN); huge pages a step. */
#define SQUEEZE_FREE		(256 * SZ_1M)
#define SQUEEZE_FREE_MIN	(64 * SZ_1M)
#define SQUEEZE_STEP_PAGES	16
#define NR_HUGEPAGES		"/proc/sys/vm/nr_hugepages"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * reserve_shrunk_bytes, read with raw syscalls and a stack buffer: the
 * squeezing child is a fork of a threaded process and must not take
 * malloc's lock.
 */
static unsigned long long shrunk_now(void)
{
	char text[32], *p = text;
	unsigned long long v = 0;
	ssize_t n;
	int fd = open(GPUBUF_SYSFS "reserve_shrunk_bytes", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ~0ULL;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return ~0ULL;
	text[n] = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	return p == text ? ~0ULL : v;
}

/* What writing @v to reserve_bytes must leave there. */
static unsigned long long reserve_value(const struct stress_reserve *r,
					unsigned long long v)
{
	if (v > r->half_ram)
		v = r->half_ram;
	return v & ~(SZ_2M - 1);
}

int stress_reserve_setup(struct stress_reserve *r)
{
	r->rng = r->cfg->seed ^ 0x7265736572766521ULL;
	r->half_ram = gb_mem_total() / 2;
	r->old_reserve = gb_param("reserve_bytes");
	r->held_before = gb_stat("held_bytes");
	if (r->old_reserve == ~0ULL || r->held_before == ~0ULL)
		return -ENOENT;
	if (access(PINPROBE_DEVICE_PATH, R_OK | W_OK))
		return -errno;
	r->ready = 1;
	return 0;
}

/*
 * Set the reserve to @v and check what the knob then says (only this
 * thread writes it during the run), and that the reserve keeps no more
 * than that: no more ready pages, and no more free ones but the one page
 * the zero worker may hold across the resize, which it frees once zeroed
 * (kernel.md). ready is read before zeroing: a page the worker finishes
 * in between is then missed, never counted twice.
 */
static int resize(struct stress_reserve *r, unsigned long long v)
{
	unsigned long long want = reserve_value(r, v), back, ready, zeroing;
	int ret = gb_set_param("reserve_bytes", v);

	if (ret) {
		stress_fail(&r->fails, "reserve: reserve_bytes = %llu: %s", v,
			    strerror(-ret));
		return ret;
	}
	r->resizes++;
	r->resize_zero += !want;
	back = gb_param("reserve_bytes");
	ready = gb_stat("reserve_ready_bytes");
	zeroing = gb_stat("reserve_zeroing_bytes");
	if (back != want)
		stress_fail(&r->fails, "reserve: reserve_bytes = %llu reads %llu, not %llu",
			    v, back, want);
	else if (ready > want || ready + zeroing > want + SZ_2M)
		stress_fail(&r->fails, "reserve: %llu bytes ready and %llu zeroing, over reserve_bytes %llu",
			    ready, zeroing, want);
	return 0;
}

static void random_resize(struct stress_reserve *r)
{
	/* "\n" is the empty value: a write() of no bytes never reaches it. */
	static const char *const junk[] = { "lots", "-1", "\n", "2M" };
	uint64_t x = stress_rand(&r->rng);
	int ret;

	switch (x % 8) {
	case 0:
		resize(r, 0);
		break;
	case 1:
		resize(r, 1 + (x >> 8) % (128 * SZ_1M));	/* rounds down */
		break;
	case 2:
		if ((x >> 8) % 4 == 0) {
			ret = gb_write_str(GPUBUF_PARAMS "reserve_bytes",
					   junk[(x >> 16) % 4]);
			r->resize_refused++;
			if (ret != -EINVAL)
				stress_fail(&r->fails, "reserve: reserve_bytes took a non-number: %s",
					    ret ? strerror(-ret) : "accepted");
			break;
		}
		/* fall through */
	default:
		resize(r, SZ_2M * (1 + (x >> 8) % 64));
		break;
	}
}

/*
 * A buffer of 2 or 4 MiB mapped at a 2 MiB boundary (carved out of a
 * PROT_NONE reservation), stamped, pinned, unmapped and closed: held.
 */
static void hold_new(struct stress_reserve *r, int dev)
{
	struct pinprobe_req req = { .op = PINPROBE_OP_PIN_HOLD };
	struct stress_hold *h = &r->holds[r->nholds];
	uint64_t size = SZ_2M << (stress_rand(&r->rng) % 2);
	unsigned long long held = 0, mine = r->held_before + size;
	uintptr_t at;
	char *area, *p;
	int fd, probe, i;

	fd = gb_alloc(dev, size);
	if (fd == -ENOMEM || fd == -ENOSPC)
		return;
	if (fd < 0) {
		stress_fail(&r->fails, "reserve: ALLOC of %llu bytes to pin: %s",
			    (unsigned long long)size, strerror(-fd));
		return;
	}
	area = mmap(NULL, size + SZ_2M, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	at = ((uintptr_t)area + SZ_2M - 1) & ~(uintptr_t)(SZ_2M - 1);
	p = area == MAP_FAILED ? MAP_FAILED :
	    mmap((void *)at, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0);
	if (p == MAP_FAILED) {
		if (errno != ENOMEM)
			stress_fail(&r->fails, "reserve: mmap of a buffer to pin: %s",
				    strerror(errno));
		if (area != MAP_FAILED)
			munmap(area, size + SZ_2M);
		close(fd);
		return;
	}
	h->sum = gb_stamp_pages(p, size, stress_rand(&r->rng) | 1);
	probe = open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	req.addr = (uintptr_t)p;
	req.len = size;
	if (probe < 0 || gb_ioctl(probe, PINPROBE_IOC_RUN, &req)) {
		if (errno != ENOMEM)
			stress_fail(&r->fails, "reserve: PIN_HOLD of %llu bytes: %s",
				    (unsigned long long)size, strerror(errno));
		if (probe >= 0)
			close(probe);
		probe = -1;
	} else if (req.checksum != h->sum) {
		stress_fail(&r->fails, "reserve: PIN_HOLD reads %#llx, the buffer holds %#llx",
			    (unsigned long long)req.checksum,
			    (unsigned long long)h->sum);
	}
	/* The release: the mapping and the only fd go while pinned. */
	munmap(area, size + SZ_2M);
	close(fd);
	if (probe < 0)
		return;
	h->probe = probe;
	h->addr = (uintptr_t)p;
	h->size = size;
	r->nholds++;
	r->held_releases++;
	/*
	 * Only this thread holds, so held_bytes is ours: at once, or once a
	 * child of a worker or of the pressure thread that inherited this
	 * fd (or the probe's of a pin dropped before) has exited.
	 */
	for (i = 0; i < r->nholds - 1; i++)
		mine += r->holds[i].size;
	for (i = 0; i < 600; i++) {
		held = gb_stat("held_bytes");
		if (held == mine)
			break;
		usleep(100000);
	}
	if (held == mine)
		r->held_seen++;
	else
		stress_fail(&r->fails, "reserve: held_bytes %llu with %llu bytes pinned after release",
			    held, mine);
}

static void hold_drop(struct stress_reserve *r, int i)
{
	struct stress_hold *h = &r->holds[i];
	struct pinprobe_req req = { .addr = h->addr, .len = h->size,
				    .op = PINPROBE_OP_HELD_SUM };
	int ret = gb_ioctl(h->probe, PINPROBE_IOC_RUN, &req);

	if (ret)
		stress_fail(&r->fails, "reserve: HELD_SUM: %s", strerror(-ret));
	else if (req.checksum != h->sum)
		stress_fail(&r->fails, "reserve: a held buffer's pages changed while pinned (sum %#llx, stamped %#llx): zeroed or lent",
			    (unsigned long long)req.checksum,
			    (unsigned long long)h->sum);
	close(h->probe);
	r->unpins++;
	r->holds[i] = r->holds[--r->nholds];
}

/*
 * The squeezing child: touch anonymous memory, 1 MiB at a time, until
 * reserve_shrunk_bytes moves past @before (exit 0), or @limit bytes were
 * touched without it (exit 1: memory was freed elsewhere meanwhile). First
 * in line for the OOM killer, should it come to that.
 */
static void __attribute__((noreturn)) squeeze_child(unsigned long long limit,
						    unsigned long long before)
{
	size_t step = SZ_1M, off, i;
	char *p;

	gb_write_str("/proc/self/oom_score_adj", "1000");
	p = mmap(NULL, limit, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		_exit(2);
	madvise(p, limit, MADV_NOHUGEPAGE);
	for (off = 0; off + step <= limit; off += step) {
		if (madvise(p + off, step, MADV_POPULATE_WRITE))
			for (i = 0; i < step; i += SZ_4K)
				p[off + i] = 1;
		if (shrunk_now() > before)
			_exit(0);
	}
	_exit(1);
}

/*
 * Huge pages into the pool until the shrinker has given back, the pool
 * stops growing, or @limit bytes are in it. Returns the bytes taken and
 * leaves the pool as large as that: the caller empties it.
 */
static unsigned long long squeeze_hugetlb(struct stress_reserve *r,
					  unsigned long long base,
					  unsigned long long limit,
					  unsigned long long before)
{
	unsigned long long pages = base, got = base;
	char text[32];
	int ret;

	while ((pages - base) * SZ_2M < limit && shrunk_now() <= before) {
		pages += SQUEEZE_STEP_PAGES;
		snprintf(text, sizeof(text), "%llu", pages);
		ret = gb_write_str(NR_HUGEPAGES, text);
		got = gb_read_u64(NR_HUGEPAGES);
		if (ret || got == ~0ULL) {
			stress_fail(&r->fails, "reserve: nr_hugepages = %s: %s",
				    text, ret ? strerror(-ret) : "unreadable");
			return 0;
		}
		if (got < pages)
			break;
	}
	return (got - base) * SZ_2M;
}

static unsigned long long reserve_free(void)
{
	return gb_stat("reserve_ready_bytes") + gb_stat("reserve_zeroing_bytes");
}

/*
 * One squeeze, the workers paused. The huge pages may take the free
 * memory and half of the reserve's free pages: the pool never OOM-kills,
 * and the first shrink ends it. The anonymous memory, if the pool stopped
 * short, leaves the other half and the pressure cgroup's share besides.
 */
static void squeeze(struct stress_reserve *r)
{
	unsigned long long before, after, free_rsv, mem_free, huge, anon = 0;
	unsigned long long pool = gb_read_u64(NR_HUGEPAGES);
	unsigned long long margin = r->cfg->cg_max;
	int status = 0, over = !r->over && r->squeezes &&
			       r->cfg->seconds >= 120;
	pid_t pid;

	stress_pause_workers();
	if (resize(r, over ? ~0ULL :
		   gb_stat("reserve_used_bytes") + SQUEEZE_FREE))
		goto out;
	r->over += over;
	free_rsv = reserve_free();
	mem_free = gb_meminfo("MemFree");
	if (free_rsv < SQUEEZE_FREE_MIN || !mem_free) {
		r->squeezes_skipped++;
		goto out;
	}
	before = shrunk_now();
	huge = pool == ~0ULL ? 0 :
	       squeeze_hugetlb(r, pool, mem_free + free_rsv / 2, before);
	r->squeezed_huge += huge;
	if (shrunk_now() <= before) {
		mem_free = gb_meminfo("MemFree");
		free_rsv = reserve_free();
		if (mem_free + free_rsv / 2 > margin)
			anon = mem_free + free_rsv / 2 - margin;
	}
	if (anon) {
		pid = fork();
		if (pid == 0)
			squeeze_child(anon, before);
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			stress_fail(&r->fails, "reserve: squeeze: fork or wait: %s",
				    strerror(errno));
		else if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
			stress_fail(&r->fails, "reserve: the squeezing child %s %d",
				    WIFEXITED(status) ? "exited" : "died of signal",
				    WIFEXITED(status) ? WEXITSTATUS(status) :
							WTERMSIG(status));
		r->squeezed_anon += anon;
	}
	after = shrunk_now();
	if (pool != ~0ULL) {
		char text[32];
		int ret;

		snprintf(text, sizeof(text), "%llu", pool);
		ret = gb_write_str(NR_HUGEPAGES, text);
		if (ret)
			stress_fail(&r->fails, "reserve: nr_hugepages back to %s: %s",
				    text, strerror(-ret));
	}
	r->squeezes++;
	if (after > before) {
		r->squeezes_shrunk++;
		r->shrunk_bytes += after - before;
	}
out:
	stress_resume_workers();
}

void *stress_reserve_main(void *arg)
{
	struct stress_reserve *r = arg;
	double next_squeeze = now_s() + r->cfg->seconds / 3.0;
	int dev = gb_open();

	if (dev < 0) {
		stress_fail(&r->fails, "reserve: open %s: %s",
			    GPUBUF_DEVICE_PATH, strerror(-dev));
		return NULL;
	}
	/*
	 * First in line for the CPU (this thread only; its squeezing child
	 * too): it sleeps most of the time, and a squeeze starved by eight
	 * busy workers on a TCG guest's two CPUs took a minute.
	 */
	if (setpriority(PRIO_PROCESS, syscall(SYS_gettid), -20))
		stress_fail(&r->fails, "reserve: setpriority: %s",
			    strerror(errno));
	resize(r, 64 * SZ_1M);
	while (!stress_stopping()) {
		uint64_t x = stress_rand(&r->rng);

		usleep(50000 + x % 250000);
		if (now_s() >= next_squeeze && !stress_stopping()) {
			squeeze(r);
			next_squeeze = now_s() + SQUEEZE_EVERY_S;
			continue;
		}
		switch ((x >> 20) % 8) {
		case 0: case 1: case 2:
			random_resize(r);
			break;
		default:
			if (r->nholds == STRESS_HOLDS ||
			    (r->nholds && (x >> 24) % 2))
				hold_drop(r, (x >> 28) % r->nholds);
			else
				hold_new(r, dev);
			break;
		}
	}
	while (r->nholds)
		hold_drop(r, 0);
	close(dev);
	return NULL;
}

/*
 * At the end, everything closed: nothing held or lent (but what others
 * held before the run, normally nothing), the zeroing done, no more free
 * pages than reserve_bytes, and the reserve fills to a new size and
 * empties at 0. Then its old size comes back.
 */
int stress_reserve_settles(struct stress_reserve *r, char *why, size_t len)
{
	unsigned long long held = ~0ULL, held_bufs = ~0ULL, used = ~0ULL;
	unsigned long long zeroing = ~0ULL, ready, target, filled, left;
	int others = r->held_before != 0, i, ok = 0;

	for (i = 0; i < 600 && !ok; i++) {
		if (i)
			usleep(100000);
		held = gb_stat("held_bytes");
		held_bufs = gb_stat("held_buffers");
		used = gb_stat("reserve_used_bytes");
		zeroing = gb_stat("reserve_zeroing_bytes");
		ok = held == r->held_before && !zeroing &&
		     (others || (!held_bufs && !used));
	}
	ready = gb_stat("reserve_ready_bytes");
	target = gb_param("reserve_bytes");
	ok &= ready <= target;
	ok &= !gb_set_param("reserve_bytes", 32 * SZ_1M);
	filled = gb_stat("reserve_ready_bytes");
	ok &= !gb_set_param("reserve_bytes", 0);
	left = gb_stat("reserve_ready_bytes") + gb_stat("reserve_zeroing_bytes");
	ok &= filled == 32 * SZ_1M && !left;
	gb_set_param("reserve_bytes", r->old_reserve);
	snprintf(why, len, "held_bytes %llu (%llu before), held_buffers %llu, reserve_used_bytes %llu, zeroing %llu, ready %llu of reserve_bytes %llu; filled to %llu MiB of 32, %llu left at 0",
		 held, r->held_before, held_bufs, used, zeroing, ready, target,
		 filled >> 20, left);
	return ok;
}
