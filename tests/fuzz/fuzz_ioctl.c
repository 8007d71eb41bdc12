// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf fuzzer: the /dev/gpubuf ioctls with structured nasty values, the
 * structure size in the ioctl number too short, exact, or longer with a
 * zero or garbage tail, and arguments the kernel cannot read or write.
 * Where the uapi header decides the answer from the input alone, the
 * answer is predicted and checked; otherwise only that the errno is one
 * the header documents.
 */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/gpubuf.h>

#include "fuzz.h"

/* The same command with a caller structure of @size bytes. */
#define FZ_IOC_WITH_SIZE(cmd, size) \
	(((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) | \
	 ((unsigned long)(size) << _IOC_SIZESHIFT))

/* Documented errnos (<linux/gpubuf.h>), the common ones included. */
static const int alloc_errnos[] = {
	ENOTTY, EINVAL, E2BIG, EFAULT, EFBIG, ENOSPC, ENOMEM, EINTR, EMFILE,
	ENFILE, 0
};
static const int info_errnos[] = {
	ENOTTY, EINVAL, E2BIG, EFAULT, EBADF, ENODEV, 0
};
static const int version_errnos[] = { ENOTTY, EINVAL, EFAULT, 0 };
/* Errors that a request the header says is valid may still get. */
static const int alloc_soft_errnos[] = {
	ENOSPC, ENOMEM, EINTR, EMFILE, ENFILE, 0
};

enum fz_argloc {
	ARG_NORMAL,
	ARG_READONLY,	/* readable, not writable: copy-out fails */
	ARG_EDGE,	/* runs into the guard page: copy-in fails */
	ARG_NULL,
	ARG_KERNEL,	/* a kernel address */
};

static int errno_in(long err, const int *set)
{
	for (; *set; set++)
		if (-err == *set)
			return 1;
	return 0;
}

uint64_t fz_round_page(uint64_t v)
{
	return (v + fz_cfg.page - 1) & ~(uint64_t)(fz_cfg.page - 1);
}

uint64_t fz_nasty_u64(struct fz_thread *t)
{
	uint64_t page = fz_cfg.page;
	uint64_t limit = fz_cfg.max_buffer_bytes;

	switch (fz_below(t, 20)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return page - 1;
	case 3: return page;
	case 4: return page + 1;
	case 5: return 1ULL << 63;
	case 6: return ~0ULL;
	case 7: return ~0ULL - page + 1;	/* rounds up to 2^64: wraps */
	case 8: return ~0ULL - page + 2;
	case 9: return ~0ULL - 2 * page + 1;	/* the largest that rounds */
	case 10: return limit;
	case 11: return limit + 1;
	case 12: return limit - page + 1;
	case 13: return 1ULL << fz_below(t, 64);
	case 14: return (1ULL << fz_below(t, 64)) - 1;
	case 15: return fz_rand(t);
	case 16: return (uint64_t)fz_below(t, 1 << 20) * page;
	default: return 1 + fz_below(t, 256 << 10);
	}
}

/* Sizes a caller could put in the number: short, exact, long. */
static size_t fz_pick_usize(struct fz_thread *t, size_t ver0)
{
	switch (fz_below(t, 12)) {
	case 0: return fz_below(t, ver0);
	case 1: return ver0 - 1;
	case 2: return ver0 + 8 * (1 + fz_below(t, 4));
	case 3: return ver0 + 1 + fz_below(t, 64);
	case 4: return FZ_ARG_BYTES - 1;
	case 5: return ver0 + fz_below(t, FZ_ARG_BYTES - ver0);
	default: return ver0;
	}
}

static enum fz_argloc fz_pick_argloc(struct fz_thread *t)
{
	if (!fz_one_in(t, 8))
		return ARG_NORMAL;
	return (enum fz_argloc)(1 + fz_below(t, 4));
}

/*
 * Lay out @len bytes of @req plus a tail up to @usize at @loc. Returns the
 * pointer to hand the kernel and sets *@tail_dirty when the tail has a
 * non-zero byte.
 */
static void *fz_place_arg(struct fz_thread *t, enum fz_argloc loc,
			  const void *req, size_t len, size_t usize,
			  int *tail_dirty)
{
	unsigned char *p = t->arg;
	size_t n = len < usize ? len : usize;

	*tail_dirty = 0;
	if (loc == ARG_NULL)
		return NULL;
	if (loc == ARG_KERNEL)
		return (void *)0xffff880000000000ULL;
	memset(p, 0, usize);
	memcpy(p, req, n);
	if (usize > len && fz_one_in(t, 2)) {
		size_t at = len + fz_below(t, usize - len);

		p[at] = 1 + fz_below(t, 255);
		*tail_dirty = 1;
	}
	if (loc == ARG_READONLY) {
		/* The read-only page holds at most one page of argument. */
		if (usize > (size_t)fz_cfg.page)
			return p;
		mprotect(t->arg_ro, fz_cfg.page, PROT_READ | PROT_WRITE);
		memcpy(t->arg_ro, p, usize);
		mprotect(t->arg_ro, fz_cfg.page, PROT_READ);
		return t->arg_ro;
	}
	if (loc == ARG_EDGE && usize) {
		/* Start 1..usize-1 bytes short of the guard: always straddle. */
		unsigned char *end = t->arg + FZ_ARG_BYTES;
		size_t in = usize > 1 ? 1 + fz_below(t, usize - 1) : 0;

		memmove(end - in, p, in);
		return end - in;
	}
	return p;
}

static int fz_is_zero(const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len--)
		if (*c++)
			return 0;
	return 1;
}

/* The answer the header gives a request that was read in full. */
static int fz_alloc_expect(const struct gpubuf_alloc *r)
{
	int acc = r->fd_flags & O_ACCMODE;
	int strict = r->flags & GPUBUF_ALLOC_NUMA_STRICT;
	int node = r->numa_node;

	if (r->fd || r->reserved0 || r->reserved[0] || r->reserved[1])
		return -EINVAL;
	if (r->flags & ~GPUBUF_ALLOC_VALID_FLAGS)
		return -EINVAL;
	if (r->fd_flags & ~(O_CLOEXEC | O_ACCMODE) ||
	    (acc != O_RDONLY && acc != O_RDWR))
		return -EINVAL;
	if (node == GPUBUF_NUMA_ANY) {
		if (strict)
			return -EINVAL;
	} else if (node < 0 || node >= 64 ||
		   !(fz_cfg.online_nodes >> node & 1)) {
		return -EINVAL;
	} else if (strict && !(fz_cfg.memory_nodes >> node & 1)) {
		return -EINVAL;
	}
	if (!r->size || r->size > ~0ULL - (fz_cfg.page - 1))
		return -EINVAL;
	if (fz_round_page(r->size) > fz_cfg.max_buffer_bytes)
		return -EFBIG;
	return 0;
}

/* A mostly valid request with, now and then, one or more fields gone bad. */
static void fz_alloc_request(struct fz_thread *t, struct gpubuf_alloc *r)
{
	static const uint32_t fd_flags[] = {
		O_RDWR | O_CLOEXEC, O_RDWR, O_RDONLY, O_RDONLY | O_CLOEXEC,
		O_WRONLY, O_ACCMODE, O_RDWR | O_NONBLOCK, ~0U,
	};
	static const int32_t nodes[] = {
		GPUBUF_NUMA_ANY, 0, 1, -2, INT_MIN, INT_MAX, 1023, 1024, 63,
	};
	int bad = fz_below(t, 3) == 0;

	memset(r, 0, sizeof(*r));
	r->size = fz_one_in(t, 3) ? fz_nasty_u64(t) :
		  1 + fz_below(t, fz_one_in(t, 8) ? 4 << 20 : 64 << 10);
	r->fd_flags = fz_one_in(t, 4) ? O_RDONLY : O_RDWR | O_CLOEXEC;
	r->numa_node = fz_one_in(t, 4) ? 0 : GPUBUF_NUMA_ANY;
	if (r->numa_node == 0 && fz_one_in(t, 2))
		r->flags = GPUBUF_ALLOC_NUMA_STRICT;
	while (bad) {
		switch (fz_below(t, 7)) {
		case 0: r->flags = fz_one_in(t, 2) ? 1ULL << fz_below(t, 64) :
						     fz_rand(t); break;
		case 1: r->fd_flags = fz_one_in(t, 2) ?
				fd_flags[fz_below(t, 8)] :
				1U << fz_below(t, 32); break;
		case 2: r->numa_node = fz_one_in(t, 2) ?
				nodes[fz_below(t, 9)] : (int32_t)fz_rand(t); break;
		case 3: r->fd = fz_one_in(t, 2) ? 1 : (int32_t)fz_rand(t); break;
		case 4: r->reserved0 = 1U << fz_below(t, 32); break;
		case 5: r->reserved[fz_below(t, 2)] = 1ULL << fz_below(t, 64); break;
		default: r->size = fz_nasty_u64(t); break;
		}
		if (fz_one_in(t, 2))
			break;
	}
}

/* After a successful ALLOC: what the header promises about the new fd. */
static void fz_alloc_verify(struct fz_thread *t, const struct gpubuf_alloc *in,
			    const struct gpubuf_alloc *out, size_t usize,
			    const unsigned char *uarg)
{
	uint64_t want = fz_round_page(in->size);
	uint64_t size = 0;
	int fd = out->fd;

	if (out->size != want)
		fz_violation(t, "ALLOC size %llu returned %llu, want %llu",
			     (unsigned long long)in->size,
			     (unsigned long long)out->size,
			     (unsigned long long)want);
	if (usize > sizeof(*out) && !fz_is_zero(uarg + sizeof(*out),
						usize - sizeof(*out)))
		fz_violation(t, "ALLOC left non-zero bytes past its structure");
	if (fz_one_in(t, 4) && !fz_info_size(t, fd, &size) && size != want)
		fz_violation(t, "INFO size %llu of a fresh %llu-byte buffer",
			     (unsigned long long)size, (unsigned long long)want);
	/* A fresh buffer reads zero: map its first and last pages. */
	if (fz_one_in(t, 4)) {
		size_t len = want < 2 * (uint64_t)fz_cfg.page ? want :
			     (uint64_t)fz_cfg.page;
		int prot = PROT_READ | ((in->fd_flags & O_ACCMODE) == O_RDWR ?
					PROT_WRITE : 0);
		off_t offs[2] = { 0, (off_t)(want - len) };
		int i;

		for (i = 0; i < 2; i++) {
			char *p = (char *)fz_sys(t, SC_MMAP, (long)mmap(NULL, len,
					prot, MAP_SHARED, fd, offs[i]));

			if ((long)p < 0) {
				if (p != (char *)-ENOMEM)
					fz_violation(t, "mmap of a fresh buffer: %s",
						     strerror(-(long)p));
				break;
			}
			if (!fz_check_zero(t, p, len))
				fz_violation(t, "fresh %llu-byte buffer not zero at offset %lld",
					     (unsigned long long)want,
					     (long long)offs[i]);
			fz_sys(t, SC_MUNMAP, munmap(p, len));
			if (!offs[1])
				break;
		}
	}
}

void fz_op_alloc(struct fz_thread *t)
{
	struct gpubuf_alloc req, out;
	enum fz_argloc loc = fz_pick_argloc(t);
	size_t usize = fz_pick_usize(t, GPUBUF_ALLOC_SIZE_VER0);
	int dirty, expect;
	void *uarg;
	long ret;

	fz_alloc_request(t, &req);
	uarg = fz_place_arg(t, loc, &req, sizeof(req), usize, &dirty);
	if (loc == ARG_READONLY && uarg == t->arg)
		loc = ARG_NORMAL;
	ret = fz_sys(t, SC_ALLOC, ioctl(t->dev,
			FZ_IOC_WITH_SIZE(GPUBUF_IOC_ALLOC, usize), uarg));
	fz_check_errno(t, "ALLOC", ret, alloc_errnos);

	if (usize < GPUBUF_ALLOC_SIZE_VER0)
		expect = -EINVAL;
	else if (loc == ARG_NULL || loc == ARG_KERNEL || loc == ARG_EDGE)
		expect = -EFAULT;
	else if (dirty)
		expect = -E2BIG;
	else
		expect = fz_alloc_expect(&req);
	/* Read in, answered "valid": copy-out to a read-only page fails. */
	if (!expect && loc == ARG_READONLY)
		expect = -EFAULT;

	/* A tail read up to the guard can find its non-zero byte first. */
	if (loc == ARG_EDGE && dirty && ret == -E2BIG)
		expect = -E2BIG;
	if (expect && ret != expect && !(expect == -EFAULT && ret == -ENOMEM) &&
	    !(expect == -EFAULT && loc == ARG_READONLY &&
	      errno_in(ret, alloc_soft_errnos)))
		fz_violation(t, "ALLOC size %llu flags %#llx fd_flags %#x node %d usize %zu loc %d: got %ld, want %d",
			     (unsigned long long)req.size,
			     (unsigned long long)req.flags, req.fd_flags,
			     req.numa_node, usize, loc, ret, expect);
	if (!expect && ret && !errno_in(ret, alloc_soft_errnos))
		fz_violation(t, "valid ALLOC of %llu bytes failed: %ld",
			     (unsigned long long)req.size, ret);
	if (ret)
		return;
	if (expect) {
		/* It succeeded where it must not: do not leak the fd. */
		memcpy(&out, uarg, sizeof(out));
		fz_sys(t, SC_CLOSE, close(out.fd));
		return;
	}
	memcpy(&out, uarg, sizeof(out));
	fz_alloc_verify(t, &req, &out, usize, uarg);
	if (out.size >= FZ_CHUNK)
		fz_reserve_note_alloc(t, out.fd);
	if (fz_buf_add(t, out.fd, out.size,
		       (req.fd_flags & O_ACCMODE) == O_RDWR, 0) < 0)
		fz_sys(t, SC_CLOSE, close(out.fd));
}

/* INFO of @fd with a clean request; 0 and the size, or a negative errno. */
int fz_info_size(struct fz_thread *t, int fd, uint64_t *size)
{
	struct gpubuf_info info = { .fd = fd };
	long ret = fz_sys(t, SC_INFO, ioctl(t->dev, GPUBUF_IOC_INFO, &info));

	fz_check_errno(t, "INFO", ret, info_errnos);
	if (!ret)
		*size = info.size;
	return ret;
}

/* An fd for INFO: one of ours (answer known), or anything else. */
static int fz_info_target(struct fz_thread *t, struct fz_buf **own)
{
	*own = NULL;
	if (t->nbufs && fz_below(t, 3)) {
		*own = &t->bufs[fz_below(t, t->nbufs)];
		return (*own)->fd;
	}
	return fz_any_fd(t);
}

static void fz_info_verify(struct fz_thread *t, const struct gpubuf_info *out,
			   const struct fz_buf *own, size_t usize,
			   const unsigned char *uarg)
{
	if (out->flags & ~GPUBUF_ALLOC_VALID_FLAGS || !out->nr_chunks ||
	    out->nr_chunks > out->size / fz_cfg.page || out->reserved0 ||
	    out->huge_bytes > out->size || out->reserve_bytes > out->huge_bytes ||
	    out->huge_bytes % (2 << 20) || out->size % fz_cfg.page)
		fz_violation(t, "INFO answer inconsistent: size %llu flags %#llx chunks %u",
			     (unsigned long long)out->size,
			     (unsigned long long)out->flags, out->nr_chunks);
	if (own && out->size != own->size)
		fz_violation(t, "INFO size %llu, buffer has %llu",
			     (unsigned long long)out->size,
			     (unsigned long long)own->size);
	if (usize > sizeof(*out) && !fz_is_zero(uarg + sizeof(*out),
						usize - sizeof(*out)))
		fz_violation(t, "INFO left non-zero bytes past its structure");
}

void fz_op_info(struct fz_thread *t)
{
	struct gpubuf_info req = { 0 }, out;
	enum fz_argloc loc = fz_pick_argloc(t);
	size_t usize = fz_pick_usize(t, GPUBUF_INFO_SIZE_VER0);
	struct fz_buf *own;
	int dirty, bad_field = 0, expect = 1;	/* 1: not predicted */
	void *uarg;
	long ret;

	req.fd = fz_info_target(t, &own);
	if (fz_one_in(t, 6)) {
		bad_field = 1;
		if (fz_one_in(t, 2))
			req.reserved0 = 1U << fz_below(t, 32);
		else if (fz_one_in(t, 2))
			req.huge_bytes = fz_nasty_u64(t) | 1;
		else
			req.reserve_bytes = fz_nasty_u64(t) | 1;
	}
	/* Output fields carry garbage in: the driver must ignore it. */
	if (fz_one_in(t, 3)) {
		req.size = fz_rand(t);
		req.flags = fz_rand(t);
		req.numa_node = (int32_t)fz_rand(t);
		req.nr_chunks = (uint32_t)fz_rand(t);
	}
	uarg = fz_place_arg(t, loc, &req, sizeof(req), usize, &dirty);
	if (loc == ARG_READONLY && uarg == t->arg)
		loc = ARG_NORMAL;
	ret = fz_sys(t, SC_INFO, ioctl(t->dev,
			FZ_IOC_WITH_SIZE(GPUBUF_IOC_INFO, usize), uarg));
	fz_check_errno(t, "INFO", ret, info_errnos);

	if (usize < GPUBUF_INFO_SIZE_VER0)
		expect = -EINVAL;
	else if (loc == ARG_NULL || loc == ARG_KERNEL || loc == ARG_EDGE)
		expect = -EFAULT;
	else if (dirty)
		expect = -E2BIG;
	else if (bad_field)
		expect = -EINVAL;
	else if (own)
		expect = loc == ARG_READONLY ? -EFAULT : 0;
	if (loc == ARG_EDGE && dirty && ret == -E2BIG)
		expect = -E2BIG;
	if (expect != 1 && ret != expect)
		fz_violation(t, "INFO usize %zu loc %d own %d: got %ld, want %d",
			     usize, loc, own != NULL, ret, expect);
	if (!ret && loc == ARG_NORMAL) {
		memcpy(&out, uarg, sizeof(out));
		fz_info_verify(t, &out, own, usize, uarg);
	}
}

void fz_op_version(struct fz_thread *t)
{
	struct gpubuf_version v;
	enum fz_argloc loc = fz_pick_argloc(t);
	size_t usize = fz_pick_usize(t, GPUBUF_VERSION_SIZE_VER0);
	int dirty, expect;
	void *uarg;
	long ret;

	/* Garbage in: VERSION is read-only for the driver, tail included. */
	memset(&v, 0xa5, sizeof(v));
	uarg = fz_place_arg(t, loc, &v, sizeof(v), usize, &dirty);
	if (loc == ARG_READONLY && uarg == t->arg)
		loc = ARG_NORMAL;
	ret = fz_sys(t, SC_VERSION, ioctl(t->dev,
			FZ_IOC_WITH_SIZE(GPUBUF_IOC_VERSION, usize), uarg));
	fz_check_errno(t, "VERSION", ret, version_errnos);

	if (usize < GPUBUF_VERSION_SIZE_VER0)
		expect = -EINVAL;
	else if (loc != ARG_NORMAL)
		expect = -EFAULT;
	else
		expect = 0;
	if (ret != expect)
		fz_violation(t, "VERSION usize %zu loc %d: got %ld, want %d",
			     usize, loc, ret, expect);
	if (ret)
		return;
	memcpy(&v, uarg, sizeof(v));
	if (v.abi != GPUBUF_ABI_VERSION || v.abi_min > v.abi || v.reserved ||
	    (usize > sizeof(v) && !fz_is_zero((char *)uarg + sizeof(v),
					      usize - sizeof(v))))
		fz_violation(t, "VERSION answer abi %u abi_min %u reserved %u",
			     v.abi, v.abi_min, v.reserved);
}

/*
 * Numbers /dev/gpubuf and dma-buf fds do not know: the gpubuf type with an
 * unused number or the wrong direction, other drivers' types. All ENOTTY.
 * DRM files are never the target: drm_ioctl() ignores the type and would
 * run whatever core ioctl has the same number.
 */
void fz_op_badcmd(struct fz_thread *t)
{
	static const unsigned int known[] = {
		GPUBUF_IOC_VERSION, GPUBUF_IOC_ALLOC, GPUBUF_IOC_INFO,
	};
	unsigned int dir, nr, type, size = fz_below(t, 64);
	unsigned long cmd;
	int fd = t->dev;
	long ret;

	switch (fz_below(t, 4)) {
	case 0:	/* an unused gpubuf number */
		cmd = _IOC(fz_below(t, 4), GPUBUF_IOC_MAGIC,
			   3 + fz_below(t, 253), size);
		break;
	case 1:	/* a known one in another direction */
		cmd = known[fz_below(t, 3)];
		dir = (_IOC_DIR(cmd) + 1 + fz_below(t, 3)) & 3;
		cmd = (cmd & ~(_IOC_DIRMASK << _IOC_DIRSHIFT)) |
		      ((unsigned long)dir << _IOC_DIRSHIFT);
		break;
	case 2:	/* another driver's type on /dev/gpubuf */
		type = fz_one_in(t, 2) ? 'b' : 'd';
		nr = fz_below(t, 256);
		cmd = _IOC(fz_below(t, 4), type, nr, size);
		break;
	default:	/* gpubuf's numbers, or unused dma-buf ones, on a dma-buf */
		if (!t->nbufs)
			return;
		fd = t->bufs[fz_below(t, t->nbufs)].fd;
		cmd = fz_one_in(t, 2) ? known[fz_below(t, 3)] :
		      _IOC(fz_below(t, 4), 'b', 4 + fz_below(t, 252), size);
		break;
	}
	memset(t->arg, 0, 64);
	ret = fz_sys(t, SC_BADCMD, ioctl(fd, cmd, t->arg));
	if (ret != -ENOTTY)
		fz_violation(t, "ioctl %#lx on fd %d: got %ld, want ENOTTY",
			     cmd, fd, ret);
}
