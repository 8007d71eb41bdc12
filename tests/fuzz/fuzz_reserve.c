// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf fuzzer: the reserve of zeroed 2 MiB pages and held chunks.
 * Threads resize reserve_bytes while the others allocate (to 0, to whole
 * and odd sizes, above half of RAM, to things that are not numbers), run
 * every shrinker with drop_caches, and keep buffers pinned past their
 * release through gpubuf_pinprobe's PIN_HOLD, as an RDMA MR does: the
 * released buffer's chunks are then held, and the data they carry must
 * still be there when the pin is dropped (a held chunk is never zeroed or
 * lent). Every fresh buffer of 2 MiB or more is asked with INFO how much
 * the reserve lent it, which is the run's count of reserve takes.
 *
 * Sysfs and the probe are reached with raw syscalls and stack buffers
 * only: nothing in a worker allocates from the heap (see fuzz.h).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/gpubuf.h>

#include "../testmod/gpubuf_pinprobe.h"
#include "fuzz.h"

static const int alloc_soft_errnos[] = {
	ENOSPC, ENOMEM, EINTR, EMFILE, ENFILE, 0
};

static int fz_errno_in(long err, const int *set)
{
	for (; *set; set++)
		if (-err == *set)
			return 1;
	return 0;
}

/* One unsigned number from a sysfs or proc file; 0, or a negative errno. */
int fz_sysfs_read(struct fz_thread *t, const char *path, uint64_t *v)
{
	char text[32];
	uint64_t x = 0;
	long fd, n, i;

	fd = fz_sys(t, SC_RESERVE, open(path, O_RDONLY | O_CLOEXEC));
	if (fd < 0)
		return fd;
	n = fz_sys(t, SC_RESERVE, read(fd, text, sizeof(text) - 1));
	fz_sys(t, SC_RESERVE, close(fd));
	if (n <= 0)
		return n < 0 ? n : -EIO;
	for (i = 0; i < n && text[i] >= '0' && text[i] <= '9'; i++)
		x = x * 10 + (text[i] - '0');
	if (!i)
		return -EIO;
	*v = x;
	return 0;
}

/* Write @text to @path in one write(); 0, or a negative errno. */
static long fz_sysfs_write(struct fz_thread *t, const char *path,
			   const char *text)
{
	size_t len = strlen(text);
	long fd, n;

	fd = fz_sys(t, SC_RESERVE, open(path, O_WRONLY | O_CLOEXEC));
	if (fd < 0)
		return fd;
	n = fz_sys(t, SC_RESERVE, write(fd, text, len));
	fz_sys(t, SC_RESERVE, close(fd));
	if (n >= 0 && (size_t)n != len)
		return -EIO;
	return n < 0 ? n : 0;
}

static int fz_utoa(char *buf, size_t size, uint64_t v)
{
	return snprintf(buf, size, "%llu\n", (unsigned long long)v);
}

/*
 * The reserve's counters, read while everyone else works on it. What holds
 * at any moment: whole 2 MiB pages; the free ones (ready, being zeroed)
 * never more than the largest reserve_bytes can be; the lent ones and the
 * held bytes within max_total_bytes, which counts both.
 */
static void fz_reserve_counters(struct fz_thread *t)
{
	static const char *const names[] = {
		"reserve_ready_bytes", "reserve_zeroing_bytes",
		"reserve_used_bytes", "held_bytes",
	};
	uint64_t v[4];
	char path[96];
	unsigned int i;

	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), FZ_SYSFS "%s", names[i]);
		if (fz_sysfs_read(t, path, &v[i])) {
			fz_violation(t, "%s unreadable", path);
			return;
		}
	}
	t->rsv.counter_reads++;
	for (i = 0; i < 3; i++)
		if (v[i] % FZ_CHUNK)
			fz_violation(t, "%s %llu: not whole 2 MiB pages",
				     names[i], (unsigned long long)v[i]);
	if (v[0] > fz_cfg.half_ram || v[1] > fz_cfg.half_ram)
		fz_violation(t, "reserve: %llu bytes ready, %llu zeroing, above half of RAM (%llu)",
			     (unsigned long long)v[0],
			     (unsigned long long)v[1],
			     (unsigned long long)fz_cfg.half_ram);
	if (v[2] > fz_cfg.max_total_bytes || v[3] > fz_cfg.max_total_bytes)
		fz_violation(t, "reserve_used_bytes %llu or held_bytes %llu above max_total_bytes %llu",
			     (unsigned long long)v[2],
			     (unsigned long long)v[3],
			     (unsigned long long)fz_cfg.max_total_bytes);
}

/*
 * A new size for the reserve: 0, whole pages up to 32 MiB, odd sizes that
 * round down, now and then more than half of RAM (clamped to it: a fill
 * of up to half of the guest's memory, with reclaim and compaction), or a
 * text that is not a number.
 */
static void fz_resize(struct fz_thread *t)
{
	static const char *const junk[] = {
		"lots\n", "-1\n", "\n", "0x\n", "18446744073709551616\n",
		"2M\n",
	};
	char text[32];
	uint64_t v, back;
	int over = 0;
	long ret;

	switch (fz_below(t, 16)) {
	case 0: case 1:
		v = 0;
		break;
	case 2: case 3:
		v = 1 + fz_below(t, 48ULL << 20);
		break;
	case 4:
		ret = fz_sysfs_write(t, FZ_PARAMS "reserve_bytes",
				     junk[fz_below(t, 6)]);
		if (ret != -EINVAL && ret != -ERANGE)
			fz_violation(t, "reserve_bytes took a non-number: %ld",
				     ret);
		t->rsv.resize_refused++;
		return;
	case 5:
		/* Rare: filling half of a TCG guest's RAM takes seconds. */
		if (fz_one_in(t, 32)) {
			static const uint64_t big[] = {
				~0ULL, 1ULL << 50, 1ULL << 63,
			};

			over = 1;
			v = fz_one_in(t, 2) ? big[fz_below(t, 3)] :
			    fz_cfg.half_ram + FZ_CHUNK * (1 + fz_below(t, 64));
			break;
		}
		/* fall through */
	default:
		v = FZ_CHUNK * (1 + fz_below(t, 16));
		break;
	}
	fz_utoa(text, sizeof(text), v);
	ret = fz_sysfs_write(t, FZ_PARAMS "reserve_bytes", text);
	if (ret) {
		fz_violation(t, "reserve_bytes = %llu: %s",
			     (unsigned long long)v, strerror(-ret));
		return;
	}
	t->rsv.resizes++;
	t->rsv.resize_zero += v < FZ_CHUNK;
	t->rsv.resize_over += over;
	/* Another thread may have written since: only the rules are known. */
	if (fz_sysfs_read(t, FZ_PARAMS "reserve_bytes", &back))
		fz_violation(t, "reserve_bytes unreadable");
	else if (back % FZ_CHUNK || back > fz_cfg.half_ram)
		fz_violation(t, "reserve_bytes reads %llu: not whole 2 MiB pages within half of RAM (%llu)",
			     (unsigned long long)back,
			     (unsigned long long)fz_cfg.half_ram);
}

/* Every shrinker runs; the reserve's gives back what is free in it. */
static void fz_shrink(struct fz_thread *t)
{
	uint64_t before = 0, after = 0;
	long ret;

	fz_sysfs_read(t, FZ_SYSFS "reserve_shrunk_bytes", &before);
	ret = fz_sysfs_write(t, "/proc/sys/vm/drop_caches", "2\n");
	if (ret) {
		fz_violation(t, "drop_caches: %s", strerror(-ret));
		return;
	}
	t->rsv.shrinks++;
	if (!fz_sysfs_read(t, FZ_SYSFS "reserve_shrunk_bytes", &after) &&
	    after > before)
		t->rsv.shrunk++;
	if (after < before)
		fz_violation(t, "reserve_shrunk_bytes went back from %llu to %llu",
			     (unsigned long long)before,
			     (unsigned long long)after);
}

void fz_op_reserve(struct fz_thread *t)
{
	switch (fz_below(t, 10)) {
	case 0: case 1:
		fz_resize(t);
		break;
	case 2:
		fz_shrink(t);
		break;
	default:
		fz_reserve_counters(t);
		break;
	}
}

/*
 * A fresh buffer of 2 MiB or more: how much of it the reserve lent, which
 * INFO says in whole 2 MiB pages, never more than its 2 MiB pages.
 */
void fz_reserve_note_alloc(struct fz_thread *t, int fd)
{
	struct gpubuf_info info = { .fd = fd };
	long ret = fz_sys(t, SC_INFO, ioctl(t->dev, GPUBUF_IOC_INFO, &info));

	if (ret) {
		fz_violation(t, "INFO of a fresh buffer: %ld", ret);
		return;
	}
	if (info.reserve_bytes % FZ_CHUNK || info.reserve_bytes > info.huge_bytes)
		fz_violation(t, "INFO: reserve_bytes %llu of %llu bytes in 2 MiB pages",
			     (unsigned long long)info.reserve_bytes,
			     (unsigned long long)info.huge_bytes);
	if (info.reserve_bytes) {
		t->rsv.take_bufs++;
		t->rsv.take_chunks += info.reserve_bytes / FZ_CHUNK;
	}
}

/* Stamp each page's first word; the sum HELD_SUM reads back. */
static uint64_t fz_stamp(struct fz_thread *t, char *p, uint64_t len)
{
	uint64_t seed = fz_rand(t) | 1, sum = 0, off;

	for (off = 0; off < len; off += fz_cfg.page) {
		uint64_t v = (seed ^ off) | 1;

		*(volatile uint64_t *)(p + off) = v;
		sum += v;
	}
	t->touches++;
	return sum;
}

/*
 * Map @fd's @len bytes, mostly at a 2 MiB boundary (one PMD per 2 MiB
 * page, as libgpubuf maps), else wherever mmap puts it (4 KiB entries).
 * The aligned place is carved out of a PROT_NONE reservation of our own,
 * so MAP_FIXED replaces nothing anyone else mapped. Returns the mapping
 * (or a negative errno) and, in *@area and *@area_len, what to munmap.
 */
static char *fz_hold_map(struct fz_thread *t, int fd, uint64_t len,
			 char **area, uint64_t *area_len)
{
	uintptr_t at;
	long ret;

	*area_len = len;
	if (fz_one_in(t, 4)) {
		ret = fz_sys(t, SC_MMAP, (long)mmap(NULL, len, PROT_READ |
				PROT_WRITE, MAP_SHARED, fd, 0));
		*area = (char *)ret;
		return (char *)ret;
	}
	*area_len = len + FZ_CHUNK;
	ret = fz_sys(t, SC_MMAP, (long)mmap(NULL, *area_len, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
	*area = (char *)ret;
	if (ret < 0 && ret > -4096)
		return (char *)ret;
	at = ((uintptr_t)ret + FZ_CHUNK - 1) & ~(uintptr_t)(FZ_CHUNK - 1);
	ret = fz_sys(t, SC_MMAP, (long)mmap((void *)at, len, PROT_READ |
			PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0));
	if (ret < 0 && ret > -4096)
		fz_sys(t, SC_MUNMAP, munmap(*area, *area_len));
	return (char *)ret;
}

/*
 * A buffer of whole 2 MiB pages (or one with a 4 KiB tail), mapped,
 * stamped, pinned by the probe, then unmapped and closed: released while
 * pinned, its chunks are held. The buffer is this function's alone (no
 * pool knows its fd), so nothing else of this process writes it.
 */
static void fz_hold_new(struct fz_thread *t)
{
	struct gpubuf_alloc req = { .fd_flags = O_RDWR | O_CLOEXEC,
				    .numa_node = GPUBUF_NUMA_ANY };
	struct pinprobe_req pin = { .op = PINPROBE_OP_PIN_HOLD };
	struct fz_hold *h = &t->holds[t->nholds];
	uint64_t held = 0, sum, area_len;
	long ret, probe;
	char *p, *area;

	switch (fz_below(t, 8)) {
	case 0:
		req.size = 2 * FZ_CHUNK;
		break;
	case 1:
		req.size = FZ_CHUNK + fz_cfg.page * (1 + fz_below(t, 16));
		break;
	default:
		req.size = FZ_CHUNK;
		break;
	}
	if (req.size > fz_cfg.max_buffer_bytes)
		req.size = FZ_CHUNK;
	ret = fz_sys(t, SC_ALLOC, ioctl(t->dev, GPUBUF_IOC_ALLOC, &req));
	if (ret) {
		if (!fz_errno_in(ret, alloc_soft_errnos))
			fz_violation(t, "ALLOC of %llu bytes to pin: %ld",
				     (unsigned long long)req.size, ret);
		return;
	}
	fz_reserve_note_alloc(t, req.fd);
	p = fz_hold_map(t, req.fd, req.size, &area, &area_len);
	if ((long)p < 0 && (long)p > -4096) {
		if ((long)p != -ENOMEM)
			fz_violation(t, "mmap of a buffer to pin: %ld", (long)p);
		fz_sys(t, SC_CLOSE, close(req.fd));
		return;
	}
	sum = fz_stamp(t, p, req.size);
	probe = fz_sys(t, SC_PIN, open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC));
	if (probe >= 0) {
		pin.addr = (uintptr_t)p;
		pin.len = req.size;
		ret = fz_sys(t, SC_PIN, ioctl(probe, PINPROBE_IOC_RUN, &pin));
		if (ret && ret != -ENOMEM && ret != -EINTR)
			fz_violation(t, "PIN_HOLD of a %llu-byte buffer: %ld",
				     (unsigned long long)req.size, ret);
		if (!ret && pin.checksum != sum)
			fz_violation(t, "PIN_HOLD reads %#llx, the buffer holds %#llx",
				     (unsigned long long)pin.checksum,
				     (unsigned long long)sum);
		if (ret) {
			fz_sys(t, SC_PIN, close(probe));
			probe = -1;
		}
	}
	/* The release: the mapping and the only fd go while pinned. */
	fz_sys(t, SC_MUNMAP, munmap(area, area_len));
	fz_sys(t, SC_CLOSE, close(req.fd));
	if (probe < 0)
		return;
	h->probe = probe;
	h->addr = (uintptr_t)p;
	h->size = req.size;
	h->sum = sum;
	t->nholds++;
	t->rsv.held_releases++;
	/*
	 * Held now, unless a child another thread forked at the wrong moment
	 * still has the fd: then when that child exits.
	 */
	if (!fz_sysfs_read(t, FZ_SYSFS "held_buffers", &held) && held)
		t->rsv.held_seen++;
}

/* The pinned data must be as stamped; then the pin goes. */
static void fz_hold_release(struct fz_thread *t, int i)
{
	struct pinprobe_req req = { .op = PINPROBE_OP_HELD_SUM };
	struct fz_hold *h = &t->holds[i];
	long ret;

	req.addr = h->addr;
	req.len = h->size;
	ret = fz_sys(t, SC_PIN, ioctl(h->probe, PINPROBE_IOC_RUN, &req));
	if (ret)
		fz_violation(t, "HELD_SUM: %ld", ret);
	else if (req.checksum != h->sum)
		fz_violation(t, "a held %llu-byte buffer's pages changed while pinned (sum %#llx, stamped %#llx): zeroed or lent",
			     (unsigned long long)h->size,
			     (unsigned long long)req.checksum,
			     (unsigned long long)h->sum);
	if (fz_sys(t, SC_PIN, close(h->probe)))
		fz_violation(t, "close of a pinprobe fd failed");
	t->rsv.unpins++;
	t->holds[i] = t->holds[--t->nholds];
}

void fz_op_hold(struct fz_thread *t)
{
	if (t->nholds == FZ_MAX_HOLDS || (t->nholds && fz_one_in(t, 2)))
		fz_hold_release(t, fz_below(t, t->nholds));
	else
		fz_hold_new(t);
}

void fz_hold_release_all(struct fz_thread *t)
{
	while (t->nholds)
		fz_hold_release(t, 0);
}
