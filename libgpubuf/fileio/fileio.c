// SPDX-License-Identifier: MIT
/*
 * File I/O straight into and out of a buffer's pages.
 *
 * A buffer's mapping is struct-page backed (the module's and memfd's
 * alike), so O_DIRECT can pin it and a disk can DMA into it: no page
 * cache, no bounce copy. O_DIRECT needs the file offset, the length and
 * the memory address aligned; the transfer is cut into pieces: an
 * unaligned head and tail go through the page cache on the caller's fd,
 * the aligned middle through a second descriptor reopened with O_DIRECT,
 * in requests of request_bytes, queue_depth of them in flight on an
 * io_uring of this call's own. The buffer is registered with the ring
 * where the kernel lets it (6.1 refuses registered buffers over file
 * mappings with EOPNOTSUPP; later kernels take them), plain io_uring
 * reads and writes where not, and pread(2)/pwrite(2) where io_uring is
 * missing or refused (ENOSYS, a seccomp filter, io_uring_disabled).
 *
 * A failure stops new requests, waits for those in flight (the kernel
 * must be done with the memory before the call returns) and reports the
 * prefix of the range known to be in place. Nothing here is global: each
 * call has its own ring and descriptor, so threads may read into
 * different parts of one buffer at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef GPUBUF_HAVE_URING
#include <liburing.h>
#endif

#include "core/internal.h"

#define GPUBUF_IO_DEPTH		16
#define GPUBUF_IO_MAX_DEPTH	4096
#define GPUBUF_IO_REQUEST	(1u << 20)
#define GPUBUF_IO_UNIT		4096	/* request_bytes' unit, O_DIRECT's least */
/* io_uring registers at most 1 GiB per iovec. */
#define GPUBUF_IO_FIXED_SPAN	(1ul << 30)

/*
 * The transfer: count runs of len bytes, the buffer's at mem, mem + stride,
 * ...; the file's packed from file on. A buffer range is one run, a
 * matrix one per row (column) unless it is packed.
 */
struct fio_runs {
	size_t mem, stride, len, count;
	uint64_t file;
};

struct fio_piece {
	size_t mem;
	uint64_t file;
	size_t len, done;
	uint64_t pos;		/* where in the transfer it starts */
	bool direct;
	enum { FIO_FREE, FIO_READY, FIO_INFLIGHT } state;
};

struct fio {
	char *base;		/* the memory: a buffer's mapping */
	size_t size;
	char *reg;		/* start of the registered spans, page aligned */
	bool write;
	int fd;			/* the caller's: buffered */
	int dfd;		/* the same file with O_DIRECT, or -1 */
	size_t align;		/* O_DIRECT's alignment while dfd >= 0 */
	unsigned int depth;
	size_t request;
	struct fio_runs r;
	size_t run, run_at;	/* the next piece's run, and where in it */
	uint64_t pos;		/* transfer position of the next piece */
	uint64_t total;
	uint64_t bad;		/* the first byte not known in place */
	uint64_t direct;
	int err;
	uint32_t method;
};

static size_t fio_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Can this run's memory and file line up on the alignment at all? */
static bool fio_run_aligns(const struct fio *f)
{
	uintptr_t mem = (uintptr_t)f->base + f->r.mem;

	/* Run i starts at mem + i * stride and file + i * len. */
	return (f->r.count == 1 || (f->r.stride - f->r.len) % f->align == 0) &&
	       mem % f->align == f->r.file % f->align;
}

/* The next piece of the transfer, in order; false when none is left. */
static bool fio_next(struct fio *f, struct fio_piece *p)
{
	while (f->run < f->r.count) {
		size_t left = f->r.len - f->run_at, n = left;
		uint64_t file = f->r.file + (uint64_t)f->run * f->r.len +
				f->run_at;
		bool direct = false;

		if (!left) {
			f->run++;
			f->run_at = 0;
			continue;
		}
		if (f->dfd >= 0 && fio_run_aligns(f)) {
			size_t head = (f->align - file % f->align) % f->align;

			if (head) {
				n = fio_min(head, left);
			} else if (left >= f->align) {
				n = left / f->align * f->align;
				direct = true;
			}
		}
		n = fio_min(n, f->request);
		*p = (struct fio_piece){
			.mem = f->r.mem + f->run * f->r.stride + f->run_at,
			.file = file, .len = n, .pos = f->pos, .direct = direct,
		};
		f->run_at += n;
		f->pos += n;
		return true;
	}
	return false;
}

static void fio_fail(struct fio *f, struct fio_piece *p, int err)
{
	if (!f->err)
		f->err = err;
	if (p->pos + p->done < f->bad)
		f->bad = p->pos + p->done;
}

/*
 * O_DIRECT refused a piece (EINVAL: an alignment this file wants beyond
 * ours, or a short read that left the rest unaligned): that piece goes
 * buffered; refused at a piece's start, every later piece too.
 */
static void fio_direct_refused(struct fio *f, struct fio_piece *p)
{
	if (!p->done && f->dfd >= 0) {
		close(f->dfd);
		f->dfd = -1;
	}
	p->direct = false;
}

/* What a finished request did to its piece; false when it must go again. */
static bool fio_complete(struct fio *f, struct fio_piece *p, int res)
{
	if (res > 0) {
		p->done += (size_t)res;
		if (p->direct)
			f->direct += (uint64_t)res;
		return p->done == p->len;
	}
	if (res == -EINTR || res == -EAGAIN)
		return false;
	if (res == -EINVAL && p->direct) {
		fio_direct_refused(f, p);
		return false;
	}
	/* 0: a read at the end of the file, a write that made no progress. */
	fio_fail(f, p, res ? res : f->write ? -EIO : -ENODATA);
	return true;
}

static int fio_piece_fd(const struct fio *f, const struct fio_piece *p)
{
	return p->direct && f->dfd >= 0 ? f->dfd : f->fd;
}

static int fio_pread(struct fio *f)
{
	struct fio_piece p;

	f->method = GPUBUF_IO_PREAD;
	while (!f->err && fio_next(f, &p)) {
		bool finished = false;

		while (!finished) {
			char *mem = f->base + p.mem + p.done;
			size_t n = p.len - p.done;
			uint64_t at = p.file + p.done;
			ssize_t r;

			if (p.direct && f->dfd < 0)
				p.direct = false;
			r = f->write ? pwrite(fio_piece_fd(f, &p), mem, n, (off_t)at) :
				       pread(fio_piece_fd(f, &p), mem, n, (off_t)at);
			finished = fio_complete(f, &p, r < 0 ? -errno : (int)r);
		}
	}
	return f->err;
}

#ifdef GPUBUF_HAVE_URING
/* Queue piece p (slot index i) on the ring. */
static void fio_prep(struct fio *f, struct io_uring_sqe *sqe,
		     struct fio_piece *p, unsigned int i, bool fixed)
{
	char *mem = f->base + p->mem + p->done;
	unsigned int n = (unsigned int)(p->len - p->done);
	uint64_t at = p->file + p->done;
	size_t first = 0, last = 1;
	int fd;

	if (fixed) {
		first = (size_t)(mem - f->reg) / GPUBUF_IO_FIXED_SPAN;
		last = (size_t)(f->base + p->mem + p->len - 1 - f->reg) /
		       GPUBUF_IO_FIXED_SPAN;
	}
	if (p->direct && f->dfd < 0)
		p->direct = false;
	fd = fio_piece_fd(f, p);
	if (fixed && first == last) {
		if (f->write)
			io_uring_prep_write_fixed(sqe, fd, mem, n, at, (int)first);
		else
			io_uring_prep_read_fixed(sqe, fd, mem, n, at, (int)first);
	} else if (f->write) {
		io_uring_prep_write(sqe, fd, mem, n, at);
	} else {
		io_uring_prep_read(sqe, fd, mem, n, at);
	}
	io_uring_sqe_set_data64(sqe, i);
	p->state = FIO_INFLIGHT;
}

/*
 * Register the pages the transfer touches, in spans of at most 1 GiB (a
 * registration pins them: the whole of a large buffer would cost more
 * than a small read); whether the kernel took them.
 */
static bool fio_register(struct fio *f, struct io_uring *ring)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)f->base + f->r.mem;
	uintptr_t hi = lo + (f->r.count - 1) * f->r.stride + f->r.len;
	size_t bytes, n;
	struct iovec *iov;
	bool ok;

	lo &= ~(uintptr_t)(page - 1);
	hi = (hi + page - 1) & ~(uintptr_t)(page - 1);
	bytes = hi - lo;
	n = (bytes + GPUBUF_IO_FIXED_SPAN - 1) / GPUBUF_IO_FIXED_SPAN;
	iov = calloc(n, sizeof(*iov));
	if (!iov)
		return false;
	f->reg = (char *)lo;
	for (size_t i = 0; i < n; i++) {
		iov[i].iov_base = f->reg + i * GPUBUF_IO_FIXED_SPAN;
		iov[i].iov_len = fio_min(GPUBUF_IO_FIXED_SPAN,
					 bytes - i * GPUBUF_IO_FIXED_SPAN);
	}
	ok = n <= UINT_MAX && !io_uring_register_buffers(ring, iov,
							  (unsigned int)n);
	free(iov);
	return ok;
}

/*
 * The pieces through an io_uring; -ENOSYS (or whatever setting one up
 * answered) before anything was queued, for the caller to fall back.
 */
static int fio_uring(struct fio *f)
{
	struct io_uring ring;
	struct fio_piece *slots;
	unsigned int inflight = 0;
	bool fixed, more = true;
	int ret;

	slots = calloc(f->depth, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	ret = io_uring_queue_init(f->depth, &ring, 0);
	if (ret < 0) {
		free(slots);
		return ret;
	}
	fixed = fio_register(f, &ring);
	f->method = fixed ? GPUBUF_IO_URING_FIXED : GPUBUF_IO_URING;
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;

		for (unsigned int i = 0; i < f->depth && !f->err; i++) {
			struct io_uring_sqe *sqe;

			if (slots[i].state == FIO_INFLIGHT)
				continue;
			if (slots[i].state == FIO_FREE &&
			    !(more = more && fio_next(f, &slots[i])))
				continue;
			sqe = io_uring_get_sqe(&ring);
			if (!sqe)
				break;
			fio_prep(f, sqe, &slots[i], i, fixed);
			inflight++;
		}
		if (!inflight)
			break;
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			/*
			 * Nothing more can be queued; what is in flight still
			 * completes, and is waited for below.
			 */
			if (!f->err)
				f->err = ret;
		}
		io_uring_for_each_cqe(&ring, head, cqe) {
			struct fio_piece *p = &slots[io_uring_cqe_get_data64(cqe)];

			seen++;
			inflight--;
			if (fio_complete(f, p, cqe->res))
				p->state = FIO_FREE;
			else
				p->state = FIO_READY;
		}
		io_uring_cq_advance(&ring, seen);
		if (f->err && inflight && !seen) {
			/* Wait for what is in flight; a signal only retries. */
			ret = io_uring_wait_cqe(&ring, &cqe);
			if (ret < 0 && ret != -EINTR && ret != -EAGAIN)
				break;	/* cannot happen with requests queued */
		}
		if (f->err && !inflight)
			break;
	}
	/* Pieces begun but not finished bound what is known in place. */
	for (unsigned int i = 0; i < f->depth; i++)
		if (slots[i].state != FIO_FREE)
			fio_fail(f, &slots[i], f->err ? f->err : -EIO);
	/*
	 * The registration's pins go with the ring's teardown, which the
	 * kernel runs in a worker after io_uring_queue_exit() returns: a
	 * buffer released right after this call is held (held_bytes) until
	 * then. Unregistering here first made 57-storage's next read hang on
	 * 7.2 (issue 50), so it is not done until that is understood.
	 */
	io_uring_queue_exit(&ring);
	free(slots);
	return f->err;
}
#else
/* Built without liburing: one request at a time, always. */
static int fio_uring(struct fio *f)
{
	(void)f;
	return -ENOSYS;
}
#endif

/*
 * The O_DIRECT descriptor: the caller's file opened again, so that its
 * own descriptor's flags (shared with every dup of it) stay as they are.
 * No /proc, or a file system without O_DIRECT: buffered only.
 */
static void fio_open_direct(struct fio *f, const struct stat *st)
{
	char path[40];
	int lbs = 0;

	f->dfd = -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	f->dfd = open(path, (f->write ? O_WRONLY : O_RDONLY) | O_DIRECT |
		      O_CLOEXEC | O_NOCTTY);
	if (f->dfd < 0)
		return;
	f->align = GPUBUF_IO_UNIT;
	/* A device whose logical blocks are larger than a page: theirs. */
	if (S_ISBLK(st->st_mode) && !ioctl(f->fd, BLKSSZGET, &lbs) &&
	    lbs > GPUBUF_IO_UNIT && gpubuf_is_pow2((size_t)lbs))
		f->align = (size_t)lbs;
}

static int fio_opts(const struct gpubuf_io_opts *in, struct gpubuf_io_opts *o)
{
	static const struct gpubuf_io_opts defaults = GPUBUF_IO_OPTS_INIT;
	int err;

	*o = defaults;
	if (!in)
		return 0;
	err = gpubuf_ext_copy(o, sizeof(*o), in, in->size,
			      offsetof(struct gpubuf_io_opts, reserved));
	if (err)
		return err;
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]); i++)
		if (o->reserved[i])
			return -EINVAL;
	if ((o->flags & ~(GPUBUF_IO_BUFFERED | GPUBUF_IO_NO_URING)) ||
	    o->queue_depth > GPUBUF_IO_MAX_DEPTH ||
	    o->request_bytes % GPUBUF_IO_UNIT ||
	    o->request_bytes > (size_t)INT_MAX / GPUBUF_IO_UNIT * GPUBUF_IO_UNIT)
		return -EINVAL;
	return 0;
}

/*
 * Everything the calls share: checks, then the transfer. The memory is
 * [base, base + size): a buffer's mapping, or the tools' own memory.
 */
static int fio_transfer(void *base, size_t size, bool readonly, bool write,
			int fd, const struct fio_runs *r,
			const struct gpubuf_io_opts *opts,
			struct gpubuf_io_result *res, const char *fn)
{
	struct fio f = { .base = base, .size = size, .write = write, .fd = fd,
			 .dfd = -1, .r = *r, .bad = UINT64_MAX };
	struct gpubuf_io_opts o;
	struct stat st;
	uint64_t end;
	int err, fl;

	if (res)
		memset(res, 0, sizeof(*res));
	err = fio_opts(opts, &o);
	if (err) {
		gpubuf_error_set("%s: bad options (size, flags, queue_depth up to %d, request_bytes in 4 KiB units, reserved fields)",
				 fn, GPUBUF_IO_MAX_DEPTH);
		return err;
	}
	if (__builtin_mul_overflow(r->len, r->count, &f.total) ||
	    __builtin_add_overflow(r->file, f.total, &end) ||
	    end > (uint64_t)INT64_MAX) {
		gpubuf_error_set("%s: the file range passes the largest file offset", fn);
		return -EINVAL;
	}
	if (fd < 0 || fstat(fd, &st) || (fl = fcntl(fd, F_GETFL)) < 0) {
		gpubuf_error_set("%s: fd %d is not an open file", fn, fd);
		return -EBADF;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		gpubuf_error_set("%s: fd %d is neither a regular file nor a block device", fn, fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -ESPIPE;
	}
	if ((fl & O_ACCMODE) == (write ? O_RDONLY : O_WRONLY)) {
		gpubuf_error_set("%s: fd %d is open for %s only", fn, fd,
				 write ? "reading" : "writing");
		return -EBADF;
	}
	if (write && (fl & O_APPEND)) {
		/* pwrite(2) on O_APPEND appends, whatever the offset. */
		gpubuf_error_set("%s: fd %d is O_APPEND: writes would not land at their offsets", fn, fd);
		return -EINVAL;
	}
	if (!write && readonly) {
		gpubuf_error_set("%s: the buffer is mapped read-only", fn);
		return -EACCES;
	}
	if (!f.total)
		return 0;
	f.depth = o.queue_depth ? o.queue_depth : GPUBUF_IO_DEPTH;
	f.request = o.request_bytes ? o.request_bytes : GPUBUF_IO_REQUEST;
	if (!(o.flags & GPUBUF_IO_BUFFERED))
		fio_open_direct(&f, &st);
	if (f.dfd >= 0 && f.request % f.align)
		f.request = (f.request / f.align + 1) * f.align;
	err = -ENOSYS;
	if (!(o.flags & GPUBUF_IO_NO_URING))
		err = fio_uring(&f);
	/* No ring to be had, and nothing queued yet: one request at a time. */
	if (err && !f.pos)
		err = fio_pread(&f);
	if (res) {
		res->bytes = err ? fio_min(f.bad, f.pos) : f.total;
		res->direct_bytes = f.direct;
		res->method = f.method;
		res->align = f.dfd >= 0 || f.direct ? (uint32_t)f.align : 0;
	}
	if (f.dfd >= 0)
		close(f.dfd);
	if (err)
		gpubuf_error_set("%s: %s at byte %llu of %llu: %s", fn,
				 write ? "writing" : "reading",
				 (unsigned long long)fio_min(f.bad, f.pos),
				 (unsigned long long)f.total, strerror(-err));
	return err;
}

static int fio_buffer(struct gpubuf *buf, size_t buf_offset, int fd,
		      uint64_t file_offset, size_t len, bool write,
		      const struct gpubuf_io_opts *opts,
		      struct gpubuf_io_result *res, const char *fn)
{
	struct fio_runs r = { .mem = buf_offset, .len = len, .count = 1,
			      .file = file_offset };
	size_t end;

	gpubuf_error_clear();
	if (res)
		memset(res, 0, sizeof(*res));
	if (!buf || __builtin_add_overflow(buf_offset, len, &end) ||
	    end > buf->size) {
		gpubuf_error_set("%s: no buffer, or the range passes its end", fn);
		return -EINVAL;
	}
	return fio_transfer(buf->ptr, buf->size,
			    buf->flags & GPUBUF_BUF_READONLY, write, fd, &r,
			    opts, res, fn);
}

GPUBUF_EXPORT int gpubuf_read_file(struct gpubuf *buf, size_t buf_offset,
				   int fd, uint64_t file_offset, size_t len,
				   const struct gpubuf_io_opts *opts,
				   struct gpubuf_io_result *res)
{
	GPUBUF_KEEP_ERRNO;
	return fio_buffer(buf, buf_offset, fd, file_offset, len, false, opts,
			  res, "gpubuf_read_file");
}

GPUBUF_EXPORT int gpubuf_write_file(struct gpubuf *buf, size_t buf_offset,
				    int fd, uint64_t file_offset, size_t len,
				    const struct gpubuf_io_opts *opts,
				    struct gpubuf_io_result *res)
{
	GPUBUF_KEEP_ERRNO;
	return fio_buffer(buf, buf_offset, fd, file_offset, len, true, opts,
			  res, "gpubuf_write_file");
}

static int fio_matrix(const struct gpubuf_matrix *m, int fd,
		      uint64_t file_offset, bool write,
		      const struct gpubuf_io_opts *opts,
		      struct gpubuf_io_result *res, const char *fn)
{
	size_t es, inner, outer;
	struct fio_runs r;

	gpubuf_error_clear();
	if (res)
		memset(res, 0, sizeof(*res));
	if (gpubuf_matrix_check(m)) {
		gpubuf_error_set("%s: not a valid matrix view", fn);
		return -EINVAL;
	}
	es = gpubuf_dtype_size(m->dtype);
	inner = m->layout == GPUBUF_ROW_MAJOR ? m->cols : m->rows;
	outer = m->layout == GPUBUF_ROW_MAJOR ? m->rows : m->cols;
	/* Checked by gpubuf_matrix_check(): these cannot overflow. */
	r = (struct fio_runs){ .mem = m->offset, .stride = m->ld * es,
			       .len = inner * es, .count = outer,
			       .file = file_offset };
	/* Packed: one run, so that pieces span rows. */
	if (m->ld == inner || outer <= 1)
		r = (struct fio_runs){ .mem = m->offset, .len = inner * outer * es,
				       .count = 1, .file = file_offset };
	return fio_transfer(m->buf->ptr, m->buf->size,
			    m->buf->flags & GPUBUF_BUF_READONLY, write, fd, &r,
			    opts, res, fn);
}

GPUBUF_EXPORT int gpubuf_matrix_read_file(const struct gpubuf_matrix *m,
					  int fd, uint64_t file_offset,
					  const struct gpubuf_io_opts *opts,
					  struct gpubuf_io_result *res)
{
	GPUBUF_KEEP_ERRNO;
	return fio_matrix(m, fd, file_offset, false, opts, res,
			  "gpubuf_matrix_read_file");
}

GPUBUF_EXPORT int gpubuf_matrix_write_file(const struct gpubuf_matrix *m,
					   int fd, uint64_t file_offset,
					   const struct gpubuf_io_opts *opts,
					   struct gpubuf_io_result *res)
{
	GPUBUF_KEEP_ERRNO;
	return fio_matrix(m, fd, file_offset, true, opts, res,
			  "gpubuf_matrix_write_file");
}

/* For the tools: the same reads into memory of their own (tools.h). */
GPUBUF_EXPORT int gpubuf_read_mem(void *mem, size_t len, int fd,
				  uint64_t file_offset,
				  const struct gpubuf_io_opts *opts,
				  struct gpubuf_io_result *res)
{
	GPUBUF_KEEP_ERRNO;
	struct fio_runs r = { .len = len, .count = 1, .file = file_offset };

	gpubuf_error_clear();
	if (res)
		memset(res, 0, sizeof(*res));
	if (!mem) {
		gpubuf_error_set("gpubuf_read_mem: no memory");
		return -EINVAL;
	}
	return fio_transfer(mem, len, false, false, fd, &r, opts, res,
			    "gpubuf_read_mem");
}
