// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf fuzzer: the fd side. dma-buf ioctls (SYNC, SET_NAME, sync-file
 * export and import), file operations a dma-buf refuses, fds of other
 * kinds where a dma-buf is expected, close and dup, fd passing over unix
 * sockets between threads, and fork.
 *
 * Fds that belong to other threads may turn up as a random number; they
 * are only ever read from, mapped (and unmapped at once) or asked about,
 * never closed, so no thread's pool changes under it.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <drm.h>
#include <linux/dma-buf.h>

#include "fuzz.h"

static const int sync_errnos[] = { EINVAL, EFAULT, EINTR, ENOTTY, EBADF, 0 };

int fz_buf_add(struct fz_thread *t, int fd, uint64_t size, int writable,
	       int shared)
{
	struct fz_buf *b;

	if (t->nbufs == FZ_MAX_BUFS)
		return -1;
	b = &t->bufs[t->nbufs++];
	b->fd = fd;
	b->size = size;
	b->writable = writable;
	b->shared = shared;
	b->id = ++t->next_id;
	return 0;
}

void fz_buf_drop(struct fz_thread *t, int i)
{
	t->bufs[i] = t->bufs[--t->nbufs];
}

void fz_other_add(struct fz_thread *t, int fd)
{
	if (t->nother < FZ_MAX_OTHER)
		t->other[t->nother++] = fd;
	else
		fz_sys(t, SC_CLOSE, close(fd));
}

/* Any fd number: own ones, other kinds, closed, invalid, someone else's. */
int fz_any_fd(struct fz_thread *t)
{
	switch (fz_below(t, 8)) {
	case 0: case 1:
		return t->nbufs ? t->bufs[fz_below(t, t->nbufs)].fd : t->dev;
	case 2: case 3:
		return t->nother ? t->other[fz_below(t, t->nother)] : t->dev;
	case 4: return t->closed_fd;
	case 5: return fz_one_in(t, 2) ? -1 : INT_MAX;
	case 6: return t->dev;
	default: return 3 + fz_below(t, 200);	/* never stdio */
	}
}

/*
 * Another thread or process may write buffer @id from now on (it was sent,
 * or re-exported through vgem): no more data checks on it.
 */
void fz_buf_mark_shared(struct fz_thread *t, unsigned int id)
{
	int i;

	for (i = 0; i < t->nbufs; i++)
		if (t->bufs[i].id == id)
			t->bufs[i].shared = 1;
	for (i = 0; i < t->nmaps; i++)
		if (t->maps[i].buf_id == id)
			t->maps[i].exclusive = 0;
}

void fz_op_sync(struct fz_thread *t)
{
	static const uint64_t valid[] = {
		DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ,
		DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE,
		DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW,
		DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ,
		DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE,
		DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW,
	};
	struct dma_buf_sync sync;
	int own = t->nbufs && fz_below(t, 4);
	int fd = own ? t->bufs[fz_below(t, t->nbufs)].fd : fz_any_fd(t);
	int bad_flags = fz_one_in(t, 5), null = fz_one_in(t, 20);
	long ret, want;

	sync.flags = valid[fz_below(t, 6)];
	if (bad_flags)
		sync.flags |= fz_one_in(t, 2) ? 1ULL << (3 + fz_below(t, 61)) :
						fz_rand(t) & ~7ULL;
	if (bad_flags && !(sync.flags & ~DMA_BUF_SYNC_VALID_FLAGS_MASK))
		sync.flags |= 8;
	/* A direction of 0 (neither READ nor WRITE) is refused as well. */
	if (!bad_flags && fz_one_in(t, 20)) {
		sync.flags &= DMA_BUF_SYNC_END;
		bad_flags = 1;
	}
	ret = fz_sys(t, SC_SYNC, ioctl(fd, DMA_BUF_IOCTL_SYNC,
				       null ? NULL : &sync));
	fz_check_errno(t, "DMA_BUF_IOCTL_SYNC", ret, sync_errnos);
	if (!own)
		return;
	want = null ? -EFAULT : bad_flags ? -EINVAL : 0;
	if (ret != want && ret != -EINTR)
		fz_violation(t, "DMA_BUF_IOCTL_SYNC flags %#llx: got %ld, want %ld",
			     (unsigned long long)sync.flags, ret, want);
}

static void fz_set_name(struct fz_thread *t, int fd, int own)
{
	static const unsigned long cmds[] = {
		DMA_BUF_SET_NAME, DMA_BUF_SET_NAME_A, DMA_BUF_SET_NAME_B,
	};
	char *name = (char *)t->arg;
	size_t len = fz_one_in(t, 3) ? fz_below(t, 200) : fz_below(t, 40);
	int null = fz_one_in(t, 15);
	long ret;

	memset(name, 'a' + t->idx, len);
	name[len] = 0;
	ret = fz_sys(t, SC_DMABUF, ioctl(fd, cmds[fz_below(t, 3)],
					 null ? NULL : name));
	/*
	 * strndup_user(name, DMA_BUF_NAME_LEN): the NUL must fit. The dma-buf
	 * core of older kernels (5.10) refuses a valid name with EBUSY while
	 * an importer (vgem) is attached.
	 */
	if (own && !null && len < DMA_BUF_NAME_LEN && ret == -EBUSY)
		return;
	if (own && ret != (null ? -EFAULT : len < DMA_BUF_NAME_LEN ? 0 : -EINVAL))
		fz_violation(t, "DMA_BUF_SET_NAME of %zu bytes: %ld", len, ret);
}

#ifdef DMA_BUF_IOCTL_EXPORT_SYNC_FILE
/* A sync file of the buffer's fences, imported back now and then. */
static void fz_sync_file(struct fz_thread *t, int fd)
{
	struct dma_buf_export_sync_file ex = {
		.flags = fz_one_in(t, 6) ? (uint32_t)fz_rand(t) :
			 1 + fz_below(t, 3),
	};
	struct dma_buf_import_sync_file im;

	if (fz_sys(t, SC_DMABUF, ioctl(fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE,
				       &ex)))
		return;
	im.flags = fz_one_in(t, 6) ? (uint32_t)fz_rand(t) : 1 + fz_below(t, 3);
	im.fd = fz_one_in(t, 4) ? fz_any_fd(t) : ex.fd;
	fz_sys(t, SC_DMABUF, ioctl(fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &im));
	fz_other_add(t, ex.fd);
}
#else
static void fz_sync_file(struct fz_thread *t, int fd) { }
#endif

void fz_op_dmabuf_misc(struct fz_thread *t)
{
	int own = t->nbufs && fz_below(t, 4);
	int fd = own ? t->bufs[fz_below(t, t->nbufs)].fd : fz_any_fd(t);

	/*
	 * Sync-file export only on own buffers: the fd it returns is then
	 * real. On a DRM fd the same number is a core ioctl that succeeds.
	 */
	if (fz_one_in(t, 2) || !own)
		fz_set_name(t, fd, own);
	else
		fz_sync_file(t, fd);
}

/* lseek, read, write, poll and fcntl, which a dma-buf mostly refuses. */
void fz_op_fileop(struct fz_thread *t)
{
	struct fz_buf *b = t->nbufs && fz_below(t, 3) ?
			   &t->bufs[fz_below(t, t->nbufs)] : NULL;
	int fd = b ? b->fd : fz_any_fd(t);
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };
	int whence = fz_below(t, 5);
	off_t off = fz_one_in(t, 2) ? 0 : (off_t)fz_nasty_u64(t);
	long ret, want;

	switch (fz_below(t, 5)) {
	case 0:
		ret = fz_sys(t, SC_FILEOP, lseek(fd, off, whence));
		/* A dma-buf seeks to 0 or to its end, by offset 0 only. */
		want = off || (whence != SEEK_SET && whence != SEEK_END) ?
		       -EINVAL : whence == SEEK_END ? (long)(b ? b->size : 0) : 0;
		if (b && ret != want)
			fz_violation(t, "lseek(%lld, %d) of a %llu-byte buffer: %ld",
				     (long long)off, whence,
				     (unsigned long long)b->size, ret);
		break;
	case 1:
		ret = fz_sys(t, SC_FILEOP, read(fd, t->arg, fz_below(t, 64)));
		if (b && ret != -EINVAL)
			fz_violation(t, "read of a dma-buf: %ld", ret);
		break;
	case 2:
		ret = fz_sys(t, SC_FILEOP, write(fd, t->arg, fz_below(t, 64)));
		/* No write op: EINVAL, or EBADF first on a read-only fd. */
		if (b && ret != (b->writable ? -EINVAL : -EBADF))
			fz_violation(t, "write to a dma-buf: %ld", ret);
		break;
	case 3:
		fz_sys(t, SC_FILEOP, poll(&pfd, 1, 0));
		break;
	default:
		fz_sys(t, SC_FILEOP, fcntl(fd, F_GETFL));
		break;
	}
}

void fz_op_close(struct fz_thread *t)
{
	int i, fd;

	switch (fz_below(t, 4)) {
	case 0: case 1:
		if (!t->nbufs)
			return;
		i = fz_below(t, t->nbufs);
		fd = t->bufs[i].fd;
		fz_buf_drop(t, i);
		break;
	case 2:
		if (!t->nother)
			return;
		i = fz_below(t, t->nother);
		fd = t->other[i];
		t->other[i] = t->other[--t->nother];
		break;
	default:	/* nothing open there: EBADF */
		if (fz_sys(t, SC_CLOSE, close(fz_one_in(t, 2) ? -1 : INT_MAX)) !=
		    -EBADF)
			fz_violation(t, "close of an invalid fd did not fail");
		return;
	}
	if (fz_sys(t, SC_CLOSE, close(fd)))
		fz_violation(t, "close of fd %d failed", fd);
	t->closed_fd = fd;
}

void fz_op_dup(struct fz_thread *t)
{
	struct fz_buf *b;
	long fd;

	if (!t->nbufs || fz_one_in(t, 4)) {
		if (t->nother) {
			fd = fz_sys(t, SC_DUP, dup(t->other[fz_below(t, t->nother)]));
			if (fd >= 0)
				fz_other_add(t, fd);
		}
		return;
	}
	b = &t->bufs[fz_below(t, t->nbufs)];
	fd = fz_sys(t, SC_DUP, fcntl(b->fd, F_DUPFD_CLOEXEC, 3));
	if (fd < 0)
		return;
	/* The same buffer under a second fd: the same id. */
	if (fz_buf_add(t, fd, b->size, b->writable, b->shared))
		fz_sys(t, SC_CLOSE, close(fd));
	else
		t->bufs[t->nbufs - 1].id = b->id;
}

/* Fds of other kinds, for the places that want a dma-buf. */
void fz_op_other_fd(struct fz_thread *t)
{
	int fds[2];
	long fd = -1;

	switch (fz_below(t, 6)) {
	case 0:
		if (!fz_sys(t, SC_OTHER, pipe2(fds, O_NONBLOCK | O_CLOEXEC))) {
			fz_other_add(t, fds[0]);
			fz_other_add(t, fds[1]);
		}
		return;
	case 1:
		fd = fz_sys(t, SC_OTHER, open("/dev/null", O_RDWR | O_CLOEXEC));
		break;
	case 2:
		fd = fz_sys(t, SC_OTHER, memfd_create("fuzz", MFD_CLOEXEC));
		if (fd >= 0)
			fz_sys(t, SC_OTHER, ftruncate(fd, fz_cfg.page *
							  fz_below(t, 8)));
		break;
	case 3:
		fd = fz_sys(t, SC_OTHER, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
		break;
	case 4:
		fd = fz_sys(t, SC_OTHER, open("/dev/gpubuf", O_RDWR | O_CLOEXEC));
		break;
	default:	/* a number that was open a moment ago */
		fd = fz_sys(t, SC_OTHER, open("/dev/null", O_RDONLY | O_CLOEXEC));
		if (fd >= 0 && !fz_sys(t, SC_CLOSE, close(fd)))
			t->closed_fd = fd;
		return;
	}
	if (fd >= 0)
		fz_other_add(t, fd);
}

/* Send up to three fds, gpubuf or not, in one SCM_RIGHTS message. */
static long fz_send_fds(struct fz_thread *t, int sock, const int *fds, int n)
{
	char data = 'F';
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = CMSG_SPACE(n * sizeof(int)),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	memset(u.buf, 0, sizeof(u.buf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	return fz_sys(t, SC_SOCK, sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL));
}

void fz_op_send(struct fz_thread *t)
{
	int fds[3], n = 1 + fz_below(t, 3), i;

	for (i = 0; i < n; i++) {
		if (t->nbufs && fz_below(t, 3)) {
			struct fz_buf *b = &t->bufs[fz_below(t, t->nbufs)];

			fz_buf_mark_shared(t, b->id);
			fds[i] = b->fd;
		} else if (t->nother && fz_below(t, 4)) {
			fds[i] = t->other[fz_below(t, t->nother)];
		} else {
			fds[i] = fz_one_in(t, 2) ? t->closed_fd : t->dev;
		}
	}
	fz_send_fds(t, fz_cfg.socks[fz_below(t, fz_cfg.threads)], fds, n);
}

/* Take in what was sent: gpubufs join the buffers, the rest the others. */
static int fz_recv_fds(struct fz_thread *t, int sock, int flags)
{
	char data;
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c;
	int got = 0;

	if (fz_sys(t, SC_SOCK, recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC)) < 0)
		return -1;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		int n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int), i, fd;
		uint64_t size;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			got++;
			if (!fz_info_size(t, fd, &size)) {
				int acc = fz_sys(t, SC_FILEOP, fcntl(fd, F_GETFL));

				if (!fz_buf_add(t, fd, size,
						acc >= 0 && (acc & O_ACCMODE) == O_RDWR, 1))
					continue;
				fz_sys(t, SC_CLOSE, close(fd));
			} else {
				fz_other_add(t, fd);
			}
		}
	}
	return got;
}

int fz_op_recv(struct fz_thread *t)
{
	return fz_recv_fds(t, t->sock, MSG_DONTWAIT);
}

/*
 * The child of a fork: inherited mappings and fds, one more fd passed in,
 * raw syscalls only, then _exit with what it counted left in the shared
 * page. Exit 3: a violation (printed by the child itself).
 */
static void __attribute__((noreturn)) fz_child(struct fz_thread *t, int sock)
{
	long calls[SC_COUNT], violations = t->violations;
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	int i, n;

	memcpy(calls, t->calls, sizeof(calls));
	for (n = 0; n < 8; n++) {
		switch (fz_below(t, 5)) {
		case 0: fz_op_touch(t); break;
		case 1: fz_op_info(t); break;
		case 2: fz_op_munmap(t); break;
		case 3: fz_op_close(t); break;
		default: fz_op_mmap(t); break;
		}
	}
	/* Whatever the parent sent, if no thread stole it off the socket. */
	if (fz_sys(t, SC_SOCK, poll(&pfd, 1, 2000)) > 0 &&
	    fz_recv_fds(t, sock, MSG_DONTWAIT) > 0) {
		for (n = 0; n < 4; n++)
			fz_op_mmap(t);
		fz_op_touch(t);
		fz_op_sync(t);
	}
	for (i = 0; i < SC_COUNT; i++)
		t->child->calls[i] += t->calls[i] - calls[i];
	t->child->violations += t->violations - violations;
	_exit(t->violations > violations ? 3 : 0);
}

void fz_op_fork(struct fz_thread *t)
{
	int sv[2], status, i;
	long pid;

	if (fz_sys(t, SC_SOCK, socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC |
					  SOCK_NONBLOCK, 0, sv)))
		return;
	memset(t->child, 0, sizeof(*t->child));
	pid = fz_sys(t, SC_FORK, fork());
	if (pid == 0) {
		close(sv[0]);
		fz_child(t, sv[1]);
	}
	if (pid > 0 && t->nbufs)
		fz_send_fds(t, sv[0], &t->bufs[fz_below(t, t->nbufs)].fd, 1);
	fz_sys(t, SC_CLOSE, close(sv[0]));
	fz_sys(t, SC_CLOSE, close(sv[1]));
	if (pid < 0)
		return;
	while (fz_sys(t, SC_FORK, waitpid(pid, &status, 0)) == -EINTR)
		;
	for (i = 0; i < SC_COUNT; i++)
		t->calls[i] += t->child->calls[i];
	t->violations += t->child->violations;
	if (!WIFEXITED(status) || (WEXITSTATUS(status) &&
				   WEXITSTATUS(status) != 3))
		fz_violation(t, "forked child died: status %#x", status);
}

/* Everything this thread holds goes; the buffers' last references. */
void fz_thread_cleanup(struct fz_thread *t)
{
	struct drm_gem_close c = { 0 };

	fz_hold_release_all(t);
	while (t->nmaps) {
		fz_sys(t, SC_MUNMAP, munmap(t->maps[0].addr, t->maps[0].len));
		fz_map_drop(t, 0);
	}
	while (t->nbufs) {
		fz_sys(t, SC_CLOSE, close(t->bufs[0].fd));
		fz_buf_drop(t, 0);
	}
	while (t->nother)
		fz_sys(t, SC_CLOSE, close(t->other[--t->nother]));
	while (t->nhandles) {
		c.handle = t->handles[--t->nhandles].handle;
		fz_sys(t, SC_VGEM, ioctl(t->vgem, DRM_IOCTL_GEM_CLOSE, &c));
	}
	if (t->vgem >= 0)
		fz_sys(t, SC_CLOSE, close(t->vgem));
	t->vgem = -1;
}
