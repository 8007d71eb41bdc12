// SPDX-License-Identifier: MIT
/*
 * storage: a file into pinned memory, four ways, GB/s and CPU seconds per
 * GB (user + system time of the whole process over the sample):
 *  - read_direct, gpubuf: gpubuf_read_file() straight into a gpubuf buffer
 *    (O_DIRECT where aligned, io_uring);
 *  - read_direct, malloc: the same reads into page-aligned malloc() memory
 *    (what one would get without a pinned destination);
 *  - read_copy, gpubuf: buffered pread(2) into malloc() memory, then
 *    memcpy() into a gpubuf buffer (what loaders do today);
 *  - mmap_copy, gpubuf: mmap(2) of the file, memcpy() into a gpubuf buffer.
 * The file's pages are dropped from the page cache (fdatasync, then
 * posix_fadvise(POSIX_FADV_DONTNEED), which any owner of a descriptor may
 * ask) before every sample, so each reads the device. Ratios of times from
 * interleaved pairs: read_copy_vs_read_direct and
 * mmap_copy_vs_read_direct (how many times longer the copying path takes).
 * On an emulated disk (a QEMU guest) only ratios mean anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpubuf/tools.h>	/* gpubuf_read_mem() */

#include "bench.h"

static const uint64_t storage_default_sizes[] = { 16 * MIB, 256 * MIB };

enum st_way { ST_DIRECT, ST_DIRECT_MALLOC, ST_READ_COPY, ST_MMAP_COPY,
	      ST_COUNT };
static const char *const st_ops[ST_COUNT] = {
	"read_direct", "read_direct", "read_copy", "mmap_copy" };
static const char *const st_mems[ST_COUNT] = {
	"gpubuf", "malloc", "gpubuf", "gpubuf" };

struct storage {
	struct bench *b;
	int fd;
	char path[4096];
	int made;		/* the file is ours: unlink it at the end */
	struct gpubuf_io_opts io;
	struct gpubuf *buf;	/* the destination, the largest size */
	void *mem;		/* page-aligned malloc() memory of that size */
	char last[160];		/* what the last direct read reported */
	uint64_t ratio_size;	/* ratios here have the plain names */
};

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Out of the page cache, so that the next read goes to the device. */
static void drop_cache(int fd)
{
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* One read of size bytes one way: ms, CPU seconds; 0 or -errno and why. */
static int st_sample(struct storage *s, enum st_way w, uint64_t size,
		     double *ms, double *cpu, char *why, size_t len)
{
	struct gpubuf_io_result res;
	double c0;
	uint64_t t0;
	int err = 0;

	drop_cache(s->fd);
	c0 = cpu_seconds();
	t0 = now_ns();
	if (w == ST_DIRECT || w == ST_DIRECT_MALLOC) {
		err = w == ST_DIRECT ?
		      gpubuf_read_file(s->buf, 0, s->fd, 0, size, &s->io, &res) :
		      gpubuf_read_mem(s->mem, size, s->fd, 0, &s->io, &res);
		if (err)
			snprintf(why, len, "%s", gpubuf_last_error());
		else
			snprintf(s->last, sizeof(s->last),
				 "%s, %llu of %llu bytes by O_DIRECT",
				 res.method == GPUBUF_IO_URING_FIXED ?
				 "io_uring, registered buffer" :
				 res.method == GPUBUF_IO_URING ? "io_uring" :
				 "pread", (unsigned long long)res.direct_bytes,
				 (unsigned long long)size);
	} else if (w == ST_READ_COPY) {
		uint64_t off = 0;

		while (!err && off < size) {
			ssize_t n = pread(s->fd, (char *)s->mem + off,
					  size - off, (off_t)off);

			if (n <= 0) {
				err = n < 0 ? -errno : -ENODATA;
				snprintf(why, len, "pread: %s", strerror(-err));
			}
			off += n > 0 ? (uint64_t)n : 0;
		}
		if (!err)
			memcpy(gpubuf_ptr(s->buf), s->mem, size);
	} else {
		void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, s->fd, 0);

		if (p == MAP_FAILED) {
			err = -errno;
			snprintf(why, len, "mmap: %s", strerror(errno));
		} else {
			memcpy(gpubuf_ptr(s->buf), p, size);
			munmap(p, size);
		}
	}
	*ms = (double)(now_ns() - t0) / 1e6;
	*cpu = cpu_seconds() - c0;
	return err;
}

static void st_row(struct storage *s, enum st_way w, uint64_t size)
{
	int reps = s->b->o.reps ? s->b->o.reps : 3;
	int warmup = s->b->o.warmup >= 0 ? s->b->o.warmup : 1;
	double *gbs = calloc((size_t)reps, sizeof(double));
	double *cpu = calloc((size_t)reps, sizeof(double));
	double ms, c, lo, hi;
	char why[256] = "out of memory";
	struct result *r;
	int i, err = gbs && cpu ? 0 : -ENOMEM;

	progress("storage: %s %s", st_ops[w], st_mems[w]);
	for (i = 0; !err && i < warmup + reps; i++) {
		err = st_sample(s, w, size, &ms, &c, why, sizeof(why));
		if (!err && i >= warmup) {
			gbs[i - warmup] = (double)size / (ms * 1e6);
			cpu[i - warmup] = c / ((double)size / 1e9);
		}
	}
	r = result_add(s->b, MODE_STORAGE, err ? RES_SKIPPED : RES_OK);
	snprintf(r->op, sizeof(r->op), "%s", st_ops[w]);
	snprintf(r->memory, sizeof(r->memory), "%s", st_mems[w]);
	r->size_bytes = size;
	r->threads = 1;
	r->reps = reps;
	r->numa_node = -1;
	if (err) {
		result_reason(r, "%s", why);
	} else {
		r->metric = "gb_per_s";
		stats(gbs, reps, &r->med, &r->min, &r->max);
		r->rate_name = "cpu_s_per_gb";
		stats(cpu, reps, &r->rate, &lo, &hi);
		if (w == ST_DIRECT || w == ST_DIRECT_MALLOC)
			result_reason(r, "%s", s->last);
	}
	free(gbs);
	free(cpu);
}

struct st_pair {
	struct storage *s;
	uint64_t size;
	enum st_way num;
};

static int st_ratio_sample(void *arg, int side, double *ms, char *why,
			   size_t len)
{
	struct st_pair *p = arg;
	double cpu;

	return st_sample(p->s, side ? ST_DIRECT : p->num, p->size, ms, &cpu,
			 why, len);
}

static void st_ratio(struct storage *s, enum st_way num, uint64_t size)
{
	char name[48];
	struct st_pair p = { s, size, num };
	int reps = s->b->o.reps ? s->b->o.reps : 3;
	int idx;

	/* At another size than the ratio size the name ends in it. */
	if (size == s->ratio_size)
		snprintf(name, sizeof(name), "%s_vs_read_direct", st_ops[num]);
	else
		snprintf(name, sizeof(name), "%s_vs_read_direct_%lluM",
			 st_ops[num], (unsigned long long)(size / MIB));
	idx = ratio_add(s->b, MODE_STORAGE, name, "gpubuf", size);
	if (!ratio_sides(s->b, &s->b->rat[idx], st_ops[num], "read_direct",
			 "gpubuf"))
		return;
	ratio_interleave(&s->b->rat[idx], 0, reps, st_ratio_sample, &p);
}

/* The file to read: --file, else a pattern file of size bytes made here. */
static int st_open(struct storage *s, uint64_t size, char *why, size_t len)
{
	static char block[1 << 20];
	const char *dir = getenv("TMPDIR");
	struct stat st;
	int fd;

	if (s->b->o.storage_file) {
		snprintf(s->path, sizeof(s->path), "%s", s->b->o.storage_file);
		s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
		if (s->fd < 0 || fstat(s->fd, &st)) {
			snprintf(why, len, "open %.200s: %s", s->path, strerror(errno));
			return -1;
		}
		if ((uint64_t)st.st_size < size) {
			snprintf(why, len, "%.200s has %lld bytes, the sizes want %llu",
				 s->path, (long long)st.st_size,
				 (unsigned long long)size);
			return -1;
		}
		return 0;
	}
	snprintf(s->path, sizeof(s->path), "%s/gpubuf-bench-storage.XXXXXX",
		 dir && *dir ? dir : "/var/tmp");
	fd = mkstemp(s->path);
	if (fd < 0) {
		snprintf(why, len, "mkstemp %.200s: %s", s->path, strerror(errno));
		return -1;
	}
	s->made = 1;
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)(i * 131 + 7);
	for (uint64_t off = 0; off < size; off += sizeof(block)) {
		size_t n = size - off < sizeof(block) ? size - off : sizeof(block);

		if (pwrite(fd, block, n, (off_t)off) != (ssize_t)n) {
			snprintf(why, len, "writing %.200s: %s", s->path,
				 strerror(errno));
			close(fd);
			return -1;
		}
	}
	s->fd = fd;
	return 0;
}

int mode_storage(struct bench *b)
{
	struct storage s = { .b = b, .fd = -1,
			     .io = GPUBUF_IO_OPTS_INIT };
	uint64_t sizes[MAX_SIZES], largest = 0;
	char why[320] = "";
	struct result *r;
	int nr, i, rc;

	rc = bench_need_ctx(b, MODE_STORAGE);
	if (rc != EXIT_OK)
		return rc;
	nr = bench_sizes(&b->o, storage_default_sizes,
			 sizeof(storage_default_sizes) / sizeof(uint64_t), sizes);
	for (i = 0; i < nr; i++)
		largest = sizes[i] > largest ? sizes[i] : largest;
	s.ratio_size = bench_ratio_size(&b->o, sizes, nr);
	s.io.queue_depth = (unsigned int)b->o.queue_depth;
	s.io.request_bytes = (size_t)b->o.block_size;
	rc = EXIT_UNSUPPORTED;
	if (st_open(&s, largest, why, sizeof(why)))
		goto out;
	if (gpubuf_alloc(b->ctx, largest, BENCH_ALLOC(b), &s.buf) ||
	    posix_memalign(&s.mem, 4096, largest)) {
		snprintf(why, sizeof(why), "no %llu bytes of gpubuf and malloc memory",
			 (unsigned long long)largest);
		goto out;
	}
	memset(s.mem, 0, largest);
	r = result_add(b, MODE_STORAGE, RES_INFO);
	snprintf(r->op, sizeof(r->op), "file");
	snprintf(r->memory, sizeof(r->memory), "-");
	r->device_count = -1;
	result_reason(r, "%s%s, queue depth %u, requests of %llu bytes; the page cache dropped before each sample",
		      s.path, s.made ? " (made for the run)" : "",
		      s.io.queue_depth ? s.io.queue_depth : 16,
		      (unsigned long long)(s.io.request_bytes ?
					   s.io.request_bytes : MIB));
	progress_start();
	for (i = 0; i < nr; i++) {
		for (enum st_way w = ST_DIRECT; w < ST_COUNT; w++)
			st_row(&s, w, sizes[i]);
		st_ratio(&s, ST_READ_COPY, sizes[i]);
		st_ratio(&s, ST_MMAP_COPY, sizes[i]);
	}
	progress_end();
	rc = EXIT_OK;
out:
	if (rc != EXIT_OK) {
		r = result_add(b, MODE_STORAGE, RES_UNAVAILABLE);
		snprintf(r->op, sizeof(r->op), "all");
		snprintf(r->memory, sizeof(r->memory), "-");
		r->device_count = -1;
		result_reason(r, "%s", why);
	}
	gpubuf_unref(s.buf);
	free(s.mem);
	if (s.fd >= 0)
		close(s.fd);
	if (s.made)
		unlink(s.path);
	return rc;
}
