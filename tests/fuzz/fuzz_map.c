// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf fuzzer: CPU mappings of dma-buf fds at odd offsets, lengths,
 * protections and flags; partial munmap, mremap shrink/grow/move,
 * mprotect, madvise, and loads and stores through what is mapped. Each
 * thread tracks its mappings page-exactly and touches nothing else, and
 * never hands the kernel an address it might map over.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
#ifndef MADV_COLD
#define MADV_COLD		20
#define MADV_PAGEOUT		21
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23
#endif

/* mmap errnos: the header's for gpubuf, plus the mm core's own. */
static const int mmap_errnos[] = {
	EINVAL, EACCES, ENOMEM, EINTR, EOVERFLOW, EPERM, EOPNOTSUPP, EBADF,
	ENODEV, EAGAIN, 0
};

int fz_map_add(struct fz_thread *t, char *addr, size_t len, int prot,
	       const struct fz_buf *b)
{
	struct fz_map *m;

	if (t->nmaps == FZ_MAX_MAPS)
		return -1;
	m = &t->maps[t->nmaps++];
	m->addr = addr;
	m->len = len;
	m->prot = prot;
	m->buf_id = b ? b->id : 0;
	m->exclusive = b && !b->shared;
	return 0;
}

void fz_map_drop(struct fz_thread *t, int i)
{
	t->maps[i] = t->maps[--t->nmaps];
}

int fz_check_zero(struct fz_thread *t, const char *p, size_t len)
{
	size_t i;

	t->touches++;
	for (i = 0; i < len; i += sizeof(long))
		if (*(const long *)(p + i))
			return 0;
	return 1;
}

static size_t fz_pick_len(struct fz_thread *t, uint64_t size)
{
	uint64_t page = fz_cfg.page;

	switch (fz_below(t, 14)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return page - 1;
	case 3: return page + 1;
	case 4: return size + 1;
	case 5: return size + page;
	case 6: return fz_nasty_u64(t);
	case 7: return size - page ? size - page : page;
	case 8: case 9: return page * (1 + fz_below(t, size / page));
	default: return size;
	}
}

static off_t fz_pick_off(struct fz_thread *t, uint64_t size)
{
	uint64_t page = fz_cfg.page;

	switch (fz_below(t, 12)) {
	case 0: return page * fz_below(t, size / page);
	case 1: return size - page;
	case 2: return size;
	case 3: return 1 + fz_below(t, page - 1);	/* unaligned */
	case 4: return (off_t)(fz_nasty_u64(t) & ~(page - 1) & ~(1ULL << 63));
	case 5: return page;
	default: return 0;
	}
}

/* An own buffer's mapping the header says must work; else it must fail. */
static int fz_mmap_expect_ok(const struct fz_buf *b, size_t len, off_t off,
			     int prot, int flags)
{
	uint64_t page = fz_cfg.page;
	uint64_t pages = fz_round_page(len) / page;

	if (!len || len > (1ULL << 46) || off % page || off < 0)
		return 0;
	if ((uint64_t)off / page + pages > b->size / page)
		return 0;
	if (flags != MAP_SHARED && flags != MAP_SHARED_VALIDATE)
		return 0;
	if (prot & PROT_WRITE && !b->writable)
		return 0;
	return 1;
}

void fz_op_mmap(struct fz_thread *t)
{
	static const int prots[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE,
		PROT_WRITE, PROT_NONE, PROT_READ | PROT_EXEC,
	};
	static const int flag_sets[] = {
		MAP_SHARED, MAP_SHARED, MAP_SHARED, MAP_SHARED_VALIDATE,
		MAP_PRIVATE, MAP_SHARED | MAP_POPULATE, MAP_SHARED | MAP_LOCKED,
		MAP_SHARED | MAP_NORESERVE, MAP_PRIVATE | MAP_ANONYMOUS,
	};
	struct fz_buf *b = NULL;
	uint64_t size = 16 * fz_cfg.page;
	int fd, prot, flags, known;
	size_t len;
	off_t off;
	long ret;

	if (t->nbufs && fz_below(t, 8)) {
		b = &t->bufs[fz_below(t, t->nbufs)];
		fd = b->fd;
		size = b->size;
	} else {
		fd = fz_any_fd(t);
	}
	len = fz_pick_len(t, size);
	off = fz_pick_off(t, size);
	prot = prots[fz_below(t, 6)];
	flags = flag_sets[fz_below(t, 9)];
	/* Unknown flags with MAP_SHARED_VALIDATE: EOPNOTSUPP. */
	if (fz_one_in(t, 30))
		flags = MAP_SHARED_VALIDATE | 0x800000;
	/* The predictable cases: no exec, plain shared or private. */
	known = b && !(prot & PROT_EXEC) &&
		(flags == MAP_SHARED || flags == MAP_SHARED_VALIDATE ||
		 flags == MAP_PRIVATE);

	ret = fz_sys(t, SC_MMAP, (long)mmap(NULL, len, prot, flags, fd, off));
	if (ret < 0 && ret > -4096)
		fz_check_errno(t, "mmap", ret, mmap_errnos);
	if (known) {
		int want = fz_mmap_expect_ok(b, len, off, prot, flags);

		if (want && ret < 0 && ret > -4096 && ret != -ENOMEM &&
		    ret != -EINTR)
			fz_violation(t, "mmap len %zu off %lld prot %d of a %llu-byte buffer (%s) failed: %ld",
				     len, (long long)off, prot,
				     (unsigned long long)size,
				     b->writable ? "rw" : "ro", ret);
		if (!want && !(ret < 0 && ret > -4096))
			fz_violation(t, "mmap len %zu off %lld prot %d flags %#x of a %llu-byte buffer (%s) succeeded",
				     len, (long long)off, prot, flags,
				     (unsigned long long)size,
				     b->writable ? "rw" : "ro");
	}
	if (ret < 0 && ret > -4096)
		return;
	/* Only own buffers' in-range mappings are tracked and touched. */
	if (!known || !fz_mmap_expect_ok(b, len, off, prot, flags) ||
	    fz_map_add(t, (char *)ret, fz_round_page(len), prot, b))
		fz_sys(t, SC_MUNMAP, munmap((void *)ret, len));
}

/* A page-aligned subrange [*start, *start + *len) of mapping @m. */
static void fz_pick_range(struct fz_thread *t, const struct fz_map *m,
			  size_t *start, size_t *len)
{
	size_t pages = m->len / fz_cfg.page;
	size_t first = fz_below(t, pages);

	if (fz_one_in(t, 3)) {
		*start = 0;
		*len = m->len;
		return;
	}
	*start = first * fz_cfg.page;
	*len = (1 + fz_below(t, pages - first)) * fz_cfg.page;
}

void fz_op_munmap(struct fz_thread *t)
{
	struct fz_map *m;
	size_t start, len;
	int i;

	if (!t->nmaps)
		return;
	i = fz_below(t, t->nmaps);
	m = &t->maps[i];
	/* Nonsense first now and then: unaligned start, zero length. */
	if (fz_one_in(t, 10)) {
		long r = fz_sys(t, SC_MUNMAP, munmap(m->addr + 1 + fz_below(t, 100),
						      fz_cfg.page));

		if (r != -EINVAL)
			fz_violation(t, "munmap of an unaligned address: %ld", r);
		fz_sys(t, SC_MUNMAP, munmap(m->addr, 0));
		return;
	}
	fz_pick_range(t, m, &start, &len);
	if (fz_sys(t, SC_MUNMAP, munmap(m->addr + start, len))) {
		fz_violation(t, "munmap of a mapped range failed");
		return;
	}
	if (start && start + len < m->len) {
		/* A hole in the middle: the tail becomes its own mapping. */
		struct fz_map tail = *m;

		tail.addr += start + len;
		tail.len -= start + len;
		m->len = start;
		if (t->nmaps < FZ_MAX_MAPS)
			t->maps[t->nmaps++] = tail;
		else
			fz_sys(t, SC_MUNMAP, munmap(tail.addr, tail.len));
	} else if (start) {
		m->len = start;
	} else if (len < m->len) {
		m->addr += len;
		m->len -= len;
	} else {
		fz_map_drop(t, i);
	}
}

/* Move @m onto a placeholder this thread mapped, the only safe target. */
static void fz_mremap_move(struct fz_thread *t, struct fz_map *m)
{
	long ph = fz_sys(t, SC_MMAP, (long)mmap(NULL, m->len, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	long ret;

	if (ph < 0 && ph > -4096)
		return;
	ret = fz_sys(t, SC_MREMAP, (long)mremap(m->addr, m->len, m->len,
				MREMAP_MAYMOVE | MREMAP_FIXED, (void *)ph));
	if (ret == ph) {
		m->addr = (char *)ph;
		return;
	}
	/*
	 * The placeholder is left alone: mremap() may have unmapped it
	 * before failing, and another thread may have mapped there since.
	 * The mapping is one vma (see fz_op_madvise), so this is not
	 * expected to happen.
	 */
	fz_violation(t, "mremap move of a %zu-byte mapping: %ld", m->len, ret);
}

void fz_op_mremap(struct fz_thread *t)
{
	struct fz_map *m;
	size_t page = fz_cfg.page, new_len;
	long ret;
	int i;

	if (!t->nmaps)
		return;
	i = fz_below(t, t->nmaps);
	m = &t->maps[i];
	switch (fz_below(t, 5)) {
	case 0:	/* shrink in place */
		if (m->len == page)
			return;
		new_len = page * (1 + fz_below(t, m->len / page - 1));
		ret = fz_sys(t, SC_MREMAP, (long)mremap(m->addr, m->len,
							new_len, 0));
		if (ret == (long)m->addr)
			m->len = new_len;
		else
			fz_violation(t, "mremap shrink: %ld", ret);
		break;
	case 1:	/* grow: VM_DONTEXPAND refuses */
		new_len = m->len + page * (1 + fz_below(t, 4));
		ret = fz_sys(t, SC_MREMAP, (long)mremap(m->addr, m->len, new_len,
				fz_one_in(t, 2) ? MREMAP_MAYMOVE : 0));
		if (ret < 0 && ret > -4096)
			break;
		fz_violation(t, "mremap grew a gpubuf mapping past its buffer");
		fz_sys(t, SC_MUNMAP, munmap((void *)ret, new_len));
		fz_map_drop(t, i);
		break;
	case 2:
		fz_mremap_move(t, m);
		break;
	case 3:	/* keep the old range mapped as well, if allowed */
		ret = fz_sys(t, SC_MREMAP, (long)mremap(m->addr, m->len, m->len,
				MREMAP_MAYMOVE | MREMAP_DONTUNMAP));
		if (ret < 0 && ret > -4096)
			break;
		if (t->nmaps < FZ_MAX_MAPS) {
			t->maps[t->nmaps] = *m;
			t->maps[t->nmaps++].addr = (char *)ret;
		} else {
			fz_sys(t, SC_MUNMAP, munmap((void *)ret, m->len));
		}
		break;
	default:	/* nonsense: unknown flags (EINVAL before any use) */
		ret = fz_sys(t, SC_MREMAP, (long)mremap(m->addr, m->len, 0,
				MREMAP_MAYMOVE | (8 << fz_below(t, 20))));
		if (ret != -EINVAL)
			fz_violation(t, "mremap with unknown flags: %ld", ret);
		break;
	}
}

void fz_op_mprotect(struct fz_thread *t)
{
	static const int prots[] = {
		PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE,
		PROT_READ | PROT_EXEC,
	};
	struct fz_map *m;
	int prot;

	if (!t->nmaps)
		return;
	m = &t->maps[fz_below(t, t->nmaps)];
	prot = prots[fz_below(t, 5)];
	/* Whole mappings only, so each keeps one protection. */
	if (!fz_sys(t, SC_MPROTECT, mprotect(m->addr, m->len, prot)))
		m->prot = prot;
}

/*
 * DONTNEED drops the page table entries only: the next access must find
 * the buffer's own page again with what was written before.
 */
static void fz_dontneed_keeps_data(struct fz_thread *t, struct fz_map *m,
				   size_t start, size_t len)
{
	int check = m->exclusive && (m->prot & (PROT_READ | PROT_WRITE)) ==
				    (PROT_READ | PROT_WRITE);
	volatile unsigned char *p = (unsigned char *)m->addr + start;
	unsigned char v = 1 + fz_below(t, 255);

	if (check) {
		*p = v;
		t->touches++;
	}
	if (fz_sys(t, SC_MADVISE, madvise(m->addr + start, len, MADV_DONTNEED)))
		fz_violation(t, "MADV_DONTNEED on a gpubuf mapping failed");
	if (check && *p != v)
		fz_violation(t, "byte written before MADV_DONTNEED lost: %u, want %u",
			     *p, v);
}

/* Whether @adv may change vm_flags, and so split a vma it covers in part. */
static int fz_advice_splits(int adv)
{
	switch (adv) {
	case MADV_DONTNEED: case MADV_WILLNEED: case MADV_COLD:
	case MADV_PAGEOUT: case MADV_POPULATE_READ: case MADV_POPULATE_WRITE:
	case MADV_REMOVE: case MADV_FREE:
		return 0;
	default:
		return 1;
	}
}

void fz_op_madvise(struct fz_thread *t)
{
	/* Never DONTFORK (children touch what they inherit) or HWPOISON. */
	static const int advice[] = {
		MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED,
		MADV_FREE, MADV_REMOVE, MADV_DOFORK, MADV_MERGEABLE,
		MADV_UNMERGEABLE, MADV_HUGEPAGE, MADV_NOHUGEPAGE,
		MADV_DONTDUMP, MADV_DODUMP, MADV_WIPEONFORK, MADV_KEEPONFORK,
		MADV_COLD, MADV_PAGEOUT, MADV_POPULATE_READ,
		MADV_POPULATE_WRITE, 12345,
	};
	struct fz_map *m;
	size_t start, len;
	int adv;

	if (!t->nmaps)
		return;
	m = &t->maps[fz_below(t, t->nmaps)];
	fz_pick_range(t, m, &start, &len);
	if (fz_below(t, 3)) {
		fz_dontneed_keeps_data(t, m, start, len);
		return;
	}
	/*
	 * Advice that changes the vma's flags splits it when given for
	 * part of it: those cover the whole mapping, which stays one vma,
	 * so a move by mremap() never fails half-way (fz_mremap_move).
	 */
	adv = advice[fz_below(t, 20)];
	if (fz_advice_splits(adv)) {
		start = 0;
		len = m->len;
	}
	fz_sys(t, SC_MADVISE, madvise(m->addr + start, len, adv));
}

/* Loads and stores through a tracked mapping, as its protection allows. */
void fz_op_touch(struct fz_thread *t)
{
	struct fz_map *m;
	volatile char *p;
	int n;

	if (!t->nmaps)
		return;
	m = &t->maps[fz_below(t, t->nmaps)];
	for (n = 0; n < 4; n++) {
		p = m->addr + fz_below(t, m->len);
		if (m->prot & PROT_WRITE)
			*p = (char)fz_rand(t);
		else if (m->prot & PROT_READ)
			(void)*p;
		t->touches++;
	}
}
