// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stress worker: a random walk over what a gpubuf user can do with a
 * handful of buffers. Every buffer's contents are known at all times, so
 * every mapping, fork child and re-import can be checked against them.
 */
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "gpubuf_stress.h"

/*
 * Two words per page carry the pattern: the first and the last of the
 * page, so a page swapped for another, or one not zeroed, shows.
 */
static uint64_t pattern_word(uint64_t seed, size_t page, int last)
{
	uint64_t v = seed ^ (page * 0x9e3779b97f4a7c15ULL);

	return seed ? (last ? ~v : v) : 0;
}

static void pattern_write(void *map, uint64_t size, uint64_t seed)
{
	size_t page, words = SZ_4K / 8;
	uint64_t *w = map;

	for (page = 0; page < size / SZ_4K; page++) {
		w[page * words] = pattern_word(seed, page, 0);
		w[page * words + words - 1] = pattern_word(seed, page, 1);
	}
}

/* The first page whose words differ from @seed's pattern, or -1. */
static long pattern_check(const void *map, uint64_t size, uint64_t seed,
			  unsigned long *checked)
{
	size_t page, words = SZ_4K / 8;
	const uint64_t *w = map;

	for (page = 0; page < size / SZ_4K; page++) {
		if (w[page * words] != pattern_word(seed, page, 0) ||
		    w[page * words + words - 1] != pattern_word(seed, page, 1))
			return (long)page;
	}
	*checked += 2 * (size / SZ_4K);
	return -1;
}

static int slot_live(const struct stress_slot *s)
{
	return s->fd >= 0 || s->map || s->handle;
}

static void slot_free(struct stress_worker *w, struct stress_slot *s)
{
	if (s->handle && vgem_close_handle(w->vgem, s->handle))
		stress_fail(&w->fails, "worker %d: GEM_CLOSE of an import: %s",
			    w->id, strerror(errno));
	if (s->map)
		munmap(s->map, s->size);
	if (s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

/*
 * A size for a new buffer: mostly small and odd, now and then large, and
 * sometimes one page past max_buffer_bytes (which must be EFBIG).
 */
static uint64_t pick_size(struct stress_worker *w, uint64_t max_buffer)
{
	uint64_t r = stress_rand(&w->rng);

	switch (r % 20) {
	case 0:
		return max_buffer + 1 + (r >> 8) % (4 * SZ_1M);
	case 1: case 2:
		return 8 * SZ_1M + (r >> 8) % (max_buffer - 8 * SZ_1M + 1);
	case 3: case 4: case 5:
		return 2 * SZ_1M + (r >> 8) % (6 * SZ_1M);
	case 6: case 7: case 8: case 9: case 10: case 11:
		return 64 * 1024 + (r >> 8) % (2 * SZ_1M);
	default:
		return 1 + (r >> 8) % (16 * SZ_4K);
	}
}

/*
 * What the reserve lent a fresh buffer of 2 MiB or more, by INFO: whole
 * 2 MiB pages, no more than the buffer has of them.
 */
static void note_reserve(struct stress_worker *w, struct stress_slot *s)
{
	struct gpubuf_info info;
	int ret = gb_info(w->dev, s->fd, &info);

	if (ret || info.reserve_bytes % SZ_2M ||
	    info.reserve_bytes > info.huge_bytes || info.huge_bytes > s->size) {
		stress_fail(&w->fails, "worker %d: INFO of a fresh buffer: %s, %llu bytes from the reserve, %llu in 2 MiB pages of %llu",
			    w->id, ret ? strerror(-ret) : "ok",
			    (unsigned long long)info.reserve_bytes,
			    (unsigned long long)info.huge_bytes,
			    (unsigned long long)s->size);
		return;
	}
	if (info.reserve_bytes) {
		w->n[SC_RSV_BUFS]++;
		w->n[SC_RSV_CHUNKS] += info.reserve_bytes / SZ_2M;
	}
}

static void op_alloc(struct stress_worker *w, struct stress_slot *s,
		     const struct stress_config *cfg)
{
	uint64_t size = pick_size(w, cfg->max_buffer);
	uint64_t want = (size + SZ_4K - 1) & ~(SZ_4K - 1);
	struct gpubuf_alloc req;
	int ret, rdonly = stress_rand(&w->rng) % 8 == 0;

	gb_alloc_req(&req, size);
	if (rdonly)
		req.fd_flags = O_RDONLY | O_CLOEXEC;
	ret = gb_ioctl(w->dev, GPUBUF_IOC_ALLOC, &req);
	if (want > cfg->max_buffer) {
		w->n[SC_EFBIG] += ret == -EFBIG;
		if (ret != -EFBIG)
			stress_fail(&w->fails, "worker %d: %llu bytes over max_buffer_bytes: %s, not EFBIG",
				    w->id, (unsigned long long)size,
				    ret ? strerror(-ret) : "allocated");
		if (!ret)
			close(req.fd);
		return;
	}
	if (ret == -ENOSPC || ret == -ENOMEM) {
		w->n[ret == -ENOSPC ? SC_ENOSPC : SC_ENOMEM]++;
		return;
	}
	if (ret) {
		stress_fail(&w->fails, "worker %d: ALLOC of %llu bytes: %s",
			    w->id, (unsigned long long)size, strerror(-ret));
		return;
	}
	if (req.size != want)
		stress_fail(&w->fails, "worker %d: ALLOC of %llu bytes gave %llu",
			    w->id, (unsigned long long)size,
			    (unsigned long long)req.size);
	s->fd = req.fd;
	s->size = want;
	s->rdonly = rdonly;
	s->seed = 0;
	w->n[SC_ALLOC]++;
	w->n[SC_ALLOC_RDONLY] += rdonly;
	if (want >= SZ_2M)
		note_reserve(w, s);
}

/* Allocate the largest buffers until max_total_bytes refuses; free them. */
static void op_burst(struct stress_worker *w, const struct stress_config *cfg)
{
	int fds[64], n = 0, ret = 0;

	while (n < 64 && !stress_stopping()) {
		ret = gb_alloc(w->dev, cfg->max_buffer);
		if (ret < 0)
			break;
		fds[n++] = ret;
	}
	if (ret == -ENOSPC || ret == -ENOMEM)
		w->n[ret == -ENOSPC ? SC_ENOSPC : SC_ENOMEM]++;
	else if (ret < 0)
		stress_fail(&w->fails, "worker %d: burst ALLOC: %s", w->id,
			    strerror(-ret));
	w->n[SC_BURST]++;
	while (n)
		close(fds[--n]);
}

static void op_map(struct stress_worker *w, struct stress_slot *s)
{
	int prot = PROT_READ | (s->rdonly ? 0 : PROT_WRITE);
	unsigned long words = 0;
	void *p;
	long bad;

	p = mmap(NULL, s->size, prot, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED) {
		if (errno == ENOMEM) {
			w->n[SC_MAP_ENOMEM]++;
			return;
		}
		stress_fail(&w->fails, "worker %d: mmap of %llu bytes: %s",
			    w->id, (unsigned long long)s->size, strerror(errno));
		return;
	}
	s->map = p;
	w->n[SC_MAP]++;
	bad = pattern_check(p, s->size, s->seed, &words);
	w->n[SC_VERIFY]++;
	w->n[SC_WORDS] += words;
	if (bad >= 0)
		stress_fail(&w->fails, "worker %d: new mapping, page %ld of %llu bytes is not %s",
			    w->id, bad, (unsigned long long)s->size,
			    s->seed ? "what was written" : "zero");
}

static void op_verify(struct stress_worker *w, struct stress_slot *s)
{
	unsigned long words = 0;
	long bad = pattern_check(s->map, s->size, s->seed, &words);

	w->n[SC_VERIFY]++;
	w->n[SC_WORDS] += words;
	if (bad >= 0)
		stress_fail(&w->fails, "worker %d: page %ld of %llu bytes lost its pattern",
			    w->id, bad, (unsigned long long)s->size);
}

static int sync_flags(struct stress_worker *w)
{
	static const int dir[] = { DMA_BUF_SYNC_READ, DMA_BUF_SYNC_WRITE,
				   DMA_BUF_SYNC_RW };

	return dir[stress_rand(&w->rng) % 3];
}

static void do_sync(struct stress_worker *w, struct stress_slot *s,
		    uint64_t flags)
{
	int ret = gb_sync(s->fd, flags);

	w->n[SC_SYNC]++;
	if (ret)
		stress_fail(&w->fails, "worker %d: DMA_BUF_IOCTL_SYNC %#llx: %s",
			    w->id, (unsigned long long)flags, strerror(-ret));
}

/* A new pattern, between sync brackets when the fd is still open. */
static void op_write(struct stress_worker *w, struct stress_slot *s)
{
	int dir = DMA_BUF_SYNC_WRITE;

	if (s->fd >= 0)
		do_sync(w, s, DMA_BUF_SYNC_START | dir);
	s->seed = stress_rand(&w->rng) | 1;
	pattern_write(s->map, s->size, s->seed);
	if (s->fd >= 0)
		do_sync(w, s, DMA_BUF_SYNC_END | dir);
	w->n[SC_WRITE]++;
}

static void op_sync(struct stress_worker *w, struct stress_slot *s)
{
	int dir = sync_flags(w);

	do_sync(w, s, DMA_BUF_SYNC_START | dir);
	do_sync(w, s, DMA_BUF_SYNC_END | dir);
}

/*
 * Import into this worker's vgem file; the same dma-buf imported again
 * must give the same handle. The import holds the buffer after its fd
 * and mapping are gone.
 */
static void op_import(struct stress_worker *w, struct stress_slot *s)
{
	uint32_t handle, again;
	int ret = vgem_import(w->vgem, s->fd, &handle);

	if (ret == -ENOMEM) {
		w->n[SC_IMPORT_ENOMEM]++;
		return;
	}
	if (ret) {
		stress_fail(&w->fails, "worker %d: PRIME import: %s", w->id,
			    strerror(-ret));
		return;
	}
	s->handle = handle;
	w->n[SC_IMPORT]++;
	ret = vgem_import(w->vgem, s->fd, &again);
	if (ret || again != handle)
		stress_fail(&w->fails, "worker %d: second import of one dma-buf: %s, handle %u then %u",
			    w->id, ret ? strerror(-ret) : "ok", handle,
			    ret ? 0 : again);
}

static void op_unimport(struct stress_worker *w, struct stress_slot *s)
{
	if (vgem_close_handle(w->vgem, s->handle))
		stress_fail(&w->fails, "worker %d: GEM_CLOSE: %s", w->id,
			    strerror(errno));
	s->handle = 0;
	w->n[SC_UNIMPORT]++;
}

static void op_info(struct stress_worker *w, struct stress_slot *s)
{
	struct gpubuf_info info;
	int ret = gb_info(w->dev, s->fd, &info);

	w->n[SC_INFO]++;
	if (ret || info.size != s->size || info.flags ||
	    info.numa_node != GPUBUF_NUMA_ANY || !info.nr_chunks)
		stress_fail(&w->fails, "worker %d: INFO: %s, size %llu of %llu, numa %d, %u chunks",
			    w->id, ret ? strerror(-ret) : "ok",
			    (unsigned long long)info.size,
			    (unsigned long long)s->size, info.numa_node,
			    info.nr_chunks);
}

/* INFO on a dma-buf vgem exported must be ENODEV. */
static void op_info_foreign(struct stress_worker *w)
{
	struct gpubuf_info info;
	int handle, fd, ret;

	handle = vgem_dumb(w->vgem, 16, 16, NULL);
	if (handle < 0) {
		stress_fail(&w->fails, "worker %d: vgem dumb buffer: %s",
			    w->id, strerror(-handle));
		return;
	}
	fd = vgem_export(w->vgem, handle);
	if (fd >= 0) {
		ret = gb_info(w->dev, fd, &info);
		if (ret != -ENODEV)
			stress_fail(&w->fails, "worker %d: INFO on vgem's dma-buf: %s, not ENODEV",
				    w->id, ret ? strerror(-ret) : "ok");
		close(fd);
	} else {
		stress_fail(&w->fails, "worker %d: vgem export: %s", w->id,
			    strerror(-fd));
	}
	vgem_close_handle(w->vgem, handle);
	w->n[SC_INFO_FOREIGN]++;
}

/* Send the fd through a socket (SCM_RIGHTS) and keep the one received. */
static void op_pass(struct stress_worker *w, struct stress_slot *s)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte = 'b';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int sv[2], fd = -1;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
		stress_fail(&w->fails, "worker %d: socketpair: %s", w->id,
			    strerror(errno));
		return;
	}
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &s->fd, sizeof(int));
	if (sendmsg(sv[0], &msg, 0) == 1) {
		/* The fd is in flight only: the socket holds the buffer. */
		close(s->fd);
		s->fd = -1;
		msg.msg_controllen = sizeof(cbuf);
		cm = NULL;
		if (recvmsg(sv[1], &msg, MSG_CMSG_CLOEXEC) == 1)
			cm = CMSG_FIRSTHDR(&msg);
		if (cm && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	}
	close(sv[0]);
	close(sv[1]);
	if (fd < 0) {
		stress_fail(&w->fails, "worker %d: passing a dma-buf fd failed",
			    w->id);
		return;
	}
	s->fd = fd;
	w->n[SC_PASS]++;
	op_info(w, s);
}

/*
 * The child checks the shared mapping, writes a new pattern through it,
 * leaves a buffer of its own behind for exit to free, and _exits; the
 * parent must see the child's pattern. Exit codes: 0 fine, 1 the parent's
 * pattern was not there.
 */
static void op_fork(struct stress_worker *w, struct stress_slot *s)
{
	uint64_t next = stress_rand(&w->rng) | 1;
	unsigned long words = 0;
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		stress_fail(&w->fails, "worker %d: fork: %s", w->id,
			    strerror(errno));
		return;
	}
	if (pid == 0) {
		int fd = gb_alloc(w->dev, 64 * 1024);

		if (fd >= 0)
			mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE,
			     MAP_SHARED, fd, 0);
		if (pattern_check(s->map, s->size, s->seed, &words) >= 0)
			_exit(1);
		pattern_write(s->map, s->size, next);
		_exit(0);
	}
	w->n[SC_FORK]++;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		stress_fail(&w->fails, "worker %d: fork child status %#x", w->id,
			    status);
		return;
	}
	s->seed = next;
	op_verify(w, s);
}

static void op_reopen(struct stress_worker *w)
{
	close(w->dev);
	w->dev = gb_open();
	w->n[SC_REOPEN]++;
	if (w->dev < 0)
		stress_fail(&w->fails, "worker %d: reopening /dev/gpubuf: %s",
			    w->id, strerror(-w->dev));
}

/* One random step on a random slot; steps that do not apply do nothing. */
static void step(struct stress_worker *w, const struct stress_config *cfg)
{
	uint64_t r = stress_rand(&w->rng);
	struct stress_slot *s = &w->slot[r % STRESS_SLOTS];
	int writable = s->map && !s->rdonly;

	switch ((r >> 8) % 32) {
	case 0: case 1: case 2: case 3: case 4:
		if (!slot_live(s))
			op_alloc(w, s, cfg);
		break;
	case 5:
		if (stress_rand(&w->rng) % 128 == 0)
			op_burst(w, cfg);
		break;
	case 6: case 7: case 8:
		if (s->fd >= 0 && !s->map)
			op_map(w, s);
		break;
	case 9: case 10: case 11:
		if (writable)
			op_write(w, s);
		break;
	case 12: case 13:
		if (s->map)
			op_verify(w, s);
		break;
	case 14: case 15:
		if (s->fd >= 0)
			op_sync(w, s);
		break;
	case 16: case 17:
		if (s->fd >= 0 && !s->handle && w->vgem >= 0)
			op_import(w, s);
		break;
	case 18:
		if (s->handle)
			op_unimport(w, s);
		break;
	case 19:
		if (s->fd >= 0)
			op_info(w, s);
		break;
	case 20:
		if (w->vgem >= 0)
			op_info_foreign(w);
		break;
	case 21:
		if (s->fd >= 0)
			op_pass(w, s);
		break;
	case 22:
		if (writable && stress_rand(&w->rng) % 4 == 0)
			op_fork(w, s);
		break;
	case 23:
		/* The buffer lives on through its mapping or import. */
		if (s->fd >= 0 && (s->map || s->handle)) {
			close(s->fd);
			s->fd = -1;
			w->n[SC_CLOSE_FD]++;
		}
		break;
	case 24:
		if (s->map && (s->fd >= 0 || s->handle)) {
			munmap(s->map, s->size);
			s->map = NULL;
			w->n[SC_UNMAP]++;
		}
		break;
	case 25: case 26: case 27: case 28:
		if (slot_live(s)) {
			slot_free(w, s);
			w->n[SC_FREE]++;
		}
		break;
	case 29:
		if (stress_rand(&w->rng) % 8 == 0)
			op_reopen(w);
		break;
	default:
		/* A buffer only an import holds can only be dropped. */
		if (s->handle && s->fd < 0 && !s->map)
			op_unimport(w, s);
		break;
	}
}

void stress_worker_release(struct stress_worker *w)
{
	int i;

	for (i = 0; i < STRESS_SLOTS; i++)
		if (slot_live(&w->slot[i]))
			slot_free(w, &w->slot[i]);
	if (w->vgem >= 0)
		close(w->vgem);
	if (w->dev >= 0)
		close(w->dev);
	w->vgem = w->dev = -1;
}

void *stress_worker_main(void *arg)
{
	struct stress_worker *w = arg;
	int i;

	for (i = 0; i < STRESS_SLOTS; i++)
		w->slot[i].fd = -1;
	w->dev = gb_open();
	w->vgem = vgem_open();
	if (w->dev < 0) {
		stress_fail(&w->fails, "worker %d: open /dev/gpubuf: %s", w->id,
			    strerror(-w->dev));
		return NULL;
	}
	stress_worker_running(1);
	while (!stress_stopping() && w->dev >= 0) {
		stress_pause_point();
		step(w, w->cfg);
	}
	stress_worker_running(-1);
	stress_worker_release(w);
	return NULL;
}
