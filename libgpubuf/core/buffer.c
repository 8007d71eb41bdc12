// SPDX-License-Identifier: MIT
/*
 * Buffers: allocation on either backend, import of foreign dma-bufs,
 * reference counting and CPU-access synchronisation.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/magic.h>
#include <linux/mempolicy.h>

#include "core/internal.h"

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC 0x444d4142	/* "DMAB", stable since dma-buf got its own fs */
#endif
/* ftruncate() and lseek() sizes; the Makefile sets _FILE_OFFSET_BITS=64. */
_Static_assert(sizeof(off_t) >= 8, "32-bit off_t cannot size 2 GiB buffers");

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U		/* Linux 6.3, <linux/memfd.h> */
#endif

/*
 * Extensible option structures follow the uapi rule: a caller's shorter
 * structure is fine down to min bytes, a longer one only with a zero tail.
 * Unlike copy_struct_from_user(), which may read up to a page because a
 * bad user pointer faults into -EFAULT, we read the caller's memory
 * directly: every byte of a wrong size is an overread of the caller's
 * stack or heap. So a size beyond GPUBUF_EXT_SIZE_MAX (an uninitialised
 * or garbage size field, not a newer struct) is refused unread.
 */
int gpubuf_ext_copy(void *dst, size_t dst_size, const void *src,
		    size_t src_size, size_t min_size)
{
	const unsigned char *tail = (const unsigned char *)src + dst_size;

	if (src_size < min_size)
		return -EINVAL;
	if (src_size > GPUBUF_EXT_SIZE_MAX)
		return -E2BIG;
	if (src_size > dst_size) {
		for (size_t i = 0; i < src_size - dst_size; i++)
			if (tail[i])
				return -E2BIG;
		src_size = dst_size;
	}
	memcpy(dst, src, src_size);
	return 0;
}

/* Defaults for NULL, then every rule GPUBUF_IOC_ALLOC would apply. */
int gpubuf_alloc_opts_get(const struct gpubuf_alloc_opts *in,
			  struct gpubuf_alloc_opts *o)
{
	if (!in) {
		const struct gpubuf_alloc_opts def = GPUBUF_ALLOC_OPTS_INIT;

		*o = def;
		return 0;
	}
	return gpubuf_alloc_opts_parse(in, in->size, o);
}

/*
 * The caller's in_size bytes at in, which the caller has checked may be
 * read (gpubuf_alloc_opts_get() trusts in->size as the public API must;
 * the GPUBUF_0.1 pool compat bounds it by its embedded copy first).
 */
int gpubuf_alloc_opts_parse(const void *in, size_t in_size,
			    struct gpubuf_alloc_opts *o)
{
	const struct gpubuf_alloc_opts def = GPUBUF_ALLOC_OPTS_INIT;
	int err;

	*o = def;
	err = gpubuf_ext_copy(o, sizeof(*o), in, in_size,
			      offsetof(struct gpubuf_alloc_opts, reserved0));
	if (err)
		return err;
	if (o->reserved0 || o->reserved[0] || o->reserved[1] ||
	    o->reserved[2] || o->reserved[3])
		return -EINVAL;
	if (o->flags & ~(uint64_t)GPUBUF_ALLOC_VALID_FLAGS)
		return -EINVAL;
	if (o->numa_node < GPUBUF_NUMA_ANY)
		return -EINVAL;
	if ((o->flags & GPUBUF_ALLOC_NUMA_STRICT) &&
	    o->numa_node == GPUBUF_NUMA_ANY)
		return -EINVAL;
	/* Our copy is our size, whatever size the caller's had. */
	o->size = sizeof(*o);
	return 0;
}

static struct gpubuf *gpubuf_new(enum gpubuf_backend backend, int fd,
				 void *ptr, size_t size, unsigned int flags)
{
	struct gpubuf *buf = calloc(1, sizeof(*buf));

	if (!buf)
		return NULL;
	atomic_init(&buf->refs, 1);
	atomic_init(&buf->pinnable, 0);
	buf->backend = backend;
	buf->fd = fd;
	buf->ptr = ptr;
	buf->size = size;
	buf->flags = flags;
	pthread_mutex_init(&buf->lock, NULL);
	return buf;
}

/* Linux's MAX_NUMNODES on x86-64 (NODES_SHIFT 10). */
#define GPUBUF_MAX_NODES	1024
/* Pages asked about per move_pages(2) call. */
#define GPUBUF_NODE_QUERY	512

/*
 * A node that the kernel does not have is a bad argument whatever the
 * flags, as on the module backend. Without /sys/devices/system/node (no
 * NUMA, or no sysfs in a container) only node 0 is known to exist, and
 * mbind() decides for the others.
 */
static int gpubuf_memfd_node_exists(int node)
{
	char path[64];

	if (access("/sys/devices/system/node", F_OK))
		return 1;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", node);
	return !access(path, F_OK);
}

/*
 * The policy of a memfd mapping, before any page is touched: mbind() on a
 * shared shmem mapping sets the file's own policy, which every fault then
 * follows. It is MPOL_PREFERRED for strict requests too: MPOL_BIND on a
 * full node runs the mempolicy-constrained OOM killer, which may kill an
 * unrelated process, where a strict request must fail with ENOMEM;
 * gpubuf_memfd_check_node() checks a strict buffer's pages afterwards.
 * A preference that cannot be applied (mbind refused by a container's
 * seccomp profile, a node outside cpuset.mems or without memory) is not
 * an error: the buffer is allocated all the same and gpubuf_last_error()
 * says so.
 */
static int gpubuf_memfd_bind(void *ptr, size_t size,
			     const struct gpubuf_alloc_opts *o)
{
	unsigned long mask[GPUBUF_MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };
	const size_t bits = 8 * sizeof(unsigned long);
	bool strict = o->flags & GPUBUF_ALLOC_NUMA_STRICT;
	int err;

	if (o->numa_node == GPUBUF_NUMA_ANY)
		return 0;
	mask[o->numa_node / bits] = 1UL << (o->numa_node % bits);
	/* maxnode counts one more than the bits the kernel reads. */
	if (syscall(SYS_mbind, ptr, size, MPOL_PREFERRED, mask,
		    GPUBUF_MAX_NODES + 1, 0UL) == 0)
		return 0;
	err = errno;
	if (err == ENOSYS && o->numa_node == 0)
		return 0;		/* no NUMA: node 0 is all there is */
	if (strict) {
		gpubuf_error_set("numa_node %d, strict: mbind: %s",
				 o->numa_node, strerror(err));
		return err == ENOSYS ? -EINVAL : -err;
	}
	gpubuf_error_set("numa_node %d is a preference the memfd backend could not apply (mbind: %s); the pages are where this thread's memory policy put them",
			 o->numa_node, strerror(err));
	return 0;
}

/*
 * A strict buffer's pages, faulted in under MPOL_PREFERRED: all on the
 * node, or -ENOMEM (the node was short and the kernel took others).
 * move_pages(2) with no target nodes only reports where pages are.
 */
static int gpubuf_memfd_check_node(void *ptr, size_t size, size_t page_size,
				   int node)
{
	void *pages[GPUBUF_NODE_QUERY];
	int status[GPUBUF_NODE_QUERY];
	size_t total = size / page_size, off = 0, done = 0;

	while (done < total) {
		size_t n = total - done < GPUBUF_NODE_QUERY ?
			   total - done : GPUBUF_NODE_QUERY;

		for (size_t i = 0; i < n; i++)
			pages[i] = (char *)ptr + (done + i) * page_size;
		if (syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL,
			    status, 0)) {
			int err = errno;

			gpubuf_error_set("numa_node %d, strict: move_pages: %s",
					 node, strerror(err));
			return err == ENOSYS ? -EINVAL : -err;
		}
		for (size_t i = 0; i < n; i++)
			off += status[i] != node;
		done += n;
	}
	if (!off)
		return 0;
	gpubuf_error_set("numa_node %d, strict: %zu of %zu pages came from other nodes (node %d is short of free memory)",
			 node, off, total, node);
	return -ENOMEM;
}

/* What this process has locked already (VmLck), which the limit counts. */
static unsigned long long gpubuf_locked_bytes(void)
{
	unsigned long long kb = 0;
	char line[128];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

/*
 * mlock() of @size bytes failed with @err: say whether RLIMIT_MEMLOCK is
 * what stopped it, and what to do. Containers cap it (Docker's default is
 * 64 MiB, Kubernetes has no field for it); gpubuf.ko pins without it.
 */
static void gpubuf_memfd_mlock_error(size_t size, int err)
{
	struct rlimit rl;

	if (err == EPERM || getrlimit(RLIMIT_MEMLOCK, &rl) ||
	    rl.rlim_cur == RLIM_INFINITY ||
	    gpubuf_locked_bytes() + size <= rl.rlim_cur) {
		gpubuf_error_set("memfd backend: mlock of %zu bytes failed (%s)%s",
				 size, strerror(err),
				 err == EPERM ? ": locking memory is not allowed here (RLIMIT_MEMLOCK 0); use /dev/gpubuf (gpubuf.ko pins with no memlock limit)" :
				 ": out of memory, or the memory cgroup's limit");
		return;
	}
	gpubuf_error_set("memfd backend: mlock of %zu bytes refused: RLIMIT_MEMLOCK is %llu bytes (ulimit -l; containers: 64 MiB). Use /dev/gpubuf (gpubuf.ko pins with no memlock limit) or raise it (--ulimit memlock=-1, LimitMEMLOCK=)",
			 size, (unsigned long long)rl.rlim_cur);
}

/*
 * memfd pages are ordinary shmem pages: struct-page backed, so GPU drivers
 * can pin them like the module's. mlock keeps them resident; the memfd
 * itself is closed at once because the mapping holds the pages. They are
 * placed by gpubuf_memfd_bind() before mlock faults them in.
 */
static int gpubuf_alloc_memfd(size_t size, size_t page_size,
			      const struct gpubuf_alloc_opts *o, void **ptrp)
{
	void *ptr;
	int fd, err;

	/* gpubuf_last_error(3): what this allocation says, or nothing. */
	gpubuf_error_clear();
	if (o->numa_node != GPUBUF_NUMA_ANY) {
		if (o->numa_node >= GPUBUF_MAX_NODES ||
		    !gpubuf_memfd_node_exists(o->numa_node))
			return -EINVAL;
	}

	/*
	 * Buffer memory is never executed, so say so: from Linux 6.3 a memfd
	 * without MFD_NOEXEC_SEAL (or MFD_EXEC) makes the kernel warn, and
	 * with vm.memfd_noexec=2 some kernels (6.3 to 6.5) refuse it with
	 * EACCES; later ones refuse only MFD_EXEC. Older kernels reject
	 * the unknown flag with EINVAL; they have no such policy, so retry
	 * without it. The seal also allows sealing, which is harmless: the
	 * fd is closed below, before anyone else could add a seal.
	 */
	fd = memfd_create("gpubuf", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create("gpubuf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		err = -errno;
		close(fd);
		return err == -EFBIG || err == -EINVAL ? -ENOMEM : err;
	}
	/* mlock() below faults every page in; MAP_POPULATE would repeat it. */
	ptr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = ptr == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err)
		return err;
	err = gpubuf_memfd_bind(ptr, size, o);
	if (err) {
		munmap(ptr, size);
		return err;
	}
	/*
	 * The raw system call, because sanitizer runtimes intercept mlock()
	 * and make it a silent no-op, which would leave an ASan build's
	 * buffers unlocked while claiming success.
	 */
	if (syscall(SYS_mlock, ptr, size) < 0) {
		int e = errno;

		/* EPERM/EAGAIN mean RLIMIT_MEMLOCK: report it as memory. */
		gpubuf_memfd_mlock_error(size, e);
		munmap(ptr, size);
		return e == ENOMEM || e == EPERM || e == EAGAIN ? -ENOMEM : -e;
	}
	if (o->flags & GPUBUF_ALLOC_NUMA_STRICT) {
		err = gpubuf_memfd_check_node(ptr, size, page_size,
					      o->numa_node);
		if (err) {
			munmap(ptr, size);
			return err;
		}
	}
	*ptrp = ptr;
	return 0;
}

static int gpubuf_alloc_module(struct gpubuf_ctx *ctx, size_t size,
			       const struct gpubuf_alloc_opts *o,
			       void **ptrp, int *fdp, size_t *sizep)
{
	struct gpubuf_alloc a;
	void *ptr;
	int err;

	memset(&a, 0, sizeof(a));
	a.size = size;
	a.flags = o->flags;
	a.fd_flags = O_RDWR | O_CLOEXEC;
	a.numa_node = o->numa_node;
	if (ioctl(ctx->fd, GPUBUF_IOC_ALLOC, &a) < 0)
		return -errno;
	if (a.size > SIZE_MAX) {
		close(a.fd);
		return -EOVERFLOW;
	}
	/*
	 * The module maps nothing at mmap() time; faulting the pages in now,
	 * a PMD at a time where the placement allows, keeps the promise that
	 * an allocated buffer is resident and lets a memory cgroup at its
	 * limit fail the allocation with ENOMEM instead of OOM-killing the
	 * first toucher. Before Linux 5.14 pages come in on first access.
	 */
	ptr = gpubuf_map_placed((size_t)a.size, PROT_READ | PROT_WRITE,
				a.fd, ctx->page_size);
	if (ptr == MAP_FAILED) {
		err = -errno;
		close(a.fd);
		return err;
	}
	err = gpubuf_map_populate(ptr, (size_t)a.size, true);
	if (err) {
		munmap(ptr, (size_t)a.size);
		close(a.fd);
		return err;
	}
	*ptrp = ptr;
	*fdp = a.fd;
	*sizep = (size_t)a.size;
	return 0;
}

GPUBUF_EXPORT int gpubuf_alloc(struct gpubuf_ctx *ctx, size_t size,
			       const struct gpubuf_alloc_opts *opts,
			       struct gpubuf **bufp)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_alloc_opts o;
	struct gpubuf *buf;
	void *ptr = NULL;
	size_t rounded;
	int fd = -1, err;

	if (!ctx || !bufp || !size)
		return -EINVAL;
	err = gpubuf_alloc_opts_get(opts, &o);
	if (err)
		return err;
	if (!gpubuf_align_up(size, ctx->page_size, &rounded))
		return -EINVAL;

	if (ctx->backend == GPUBUF_BACKEND_MODULE)
		err = gpubuf_alloc_module(ctx, rounded, &o, &ptr, &fd,
					  &rounded);
	else
		err = gpubuf_alloc_memfd(rounded, ctx->page_size, &o, &ptr);
	if (err)
		return err;

	buf = gpubuf_new(ctx->backend, fd, ptr, rounded, 0);
	if (!buf) {
		munmap(ptr, rounded);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	*bufp = buf;
	return 0;
}

/* Size of a dma-buf without moving the caller's file offset for good. */
static int gpubuf_dmabuf_size(int fd, size_t *size)
{
	struct statfs sfs;
	off_t end;

	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (sfs.f_type != DMA_BUF_MAGIC)
		return -EBADFD;
	end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		return -errno;
	/* The dup shares the file description, so put the offset back. */
	lseek(fd, 0, SEEK_SET);
	if (end == 0)
		return -EINVAL;
	if ((uint64_t)end > SIZE_MAX)
		return -EOVERFLOW;
	*size = (size_t)end;
	return 0;
}

GPUBUF_EXPORT int gpubuf_import(struct gpubuf_ctx *ctx, int dmabuf_fd,
				struct gpubuf **bufp)
{
	GPUBUF_KEEP_ERRNO;
	unsigned int flags = GPUBUF_BUF_IMPORTED;
	struct gpubuf *buf;
	size_t size = 0;
	void *ptr = MAP_FAILED;
	int fd, fl, err;

	if (!ctx || !bufp)
		return -EINVAL;
	if (dmabuf_fd < 0)
		return -EBADF;
	/*
	 * The access mode decides the protection, so that mmap() never
	 * fails for a reason we could have known: a write-only fd cannot be
	 * mapped at all (every mapping reads), and its EACCES would be taken
	 * for a permission problem. The kernel module refuses to create
	 * write-only dma-bufs; other exporters (dma-heap) do not.
	 */
	fl = fcntl(dmabuf_fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if ((fl & O_ACCMODE) != O_RDONLY && (fl & O_ACCMODE) != O_RDWR)
		return -EINVAL;
	fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = gpubuf_dmabuf_size(fd, &size);
	if (err)
		goto err_close;

	if ((fl & O_ACCMODE) == O_RDWR)
		ptr = gpubuf_map_placed(size, PROT_READ | PROT_WRITE, fd,
					ctx->page_size);
	/* Read-only fd, or an exporter that refuses writable mappings. */
	if (ptr == MAP_FAILED && ((fl & O_ACCMODE) == O_RDONLY ||
				  errno == EACCES)) {
		ptr = gpubuf_map_placed(size, PROT_READ, fd, ctx->page_size);
		flags |= GPUBUF_BUF_READONLY;
	}
	if (ptr == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	/* Imported buffers keep a dma-buf fd whatever the backend. */
	buf = gpubuf_new(ctx->backend, fd, ptr, size, flags);
	if (!buf) {
		err = -ENOMEM;
		munmap(ptr, size);
		goto err_close;
	}
	*bufp = buf;
	return 0;

err_close:
	close(fd);
	return err;
}

GPUBUF_EXPORT struct gpubuf *gpubuf_ref(struct gpubuf *buf)
{
	if (buf)
		atomic_fetch_add_explicit(&buf->refs, 1, memory_order_relaxed);
	return buf;
}

GPUBUF_EXPORT void gpubuf_unref(struct gpubuf *buf)
{
	GPUBUF_KEEP_ERRNO;
	if (!buf)
		return;
	/* Release/acquire so every write by other holders precedes munmap. */
	if (atomic_fetch_sub_explicit(&buf->refs, 1,
				      memory_order_release) != 1)
		return;
	atomic_thread_fence(memory_order_acquire);
	/*
	 * Registrations and locks pin the pages through this mapping, imports
	 * hold the dma-buf: undo every hold first.
	 */
	gpubuf_hold_release_all(buf);
	pthread_mutex_destroy(&buf->lock);
	munmap(buf->ptr, buf->size);
	if (buf->fd >= 0)
		close(buf->fd);
	free(buf);
}

GPUBUF_EXPORT unsigned int gpubuf_refcount(const struct gpubuf *buf)
{
	return buf ? atomic_load_explicit(&((struct gpubuf *)buf)->refs,
					  memory_order_relaxed) : 0;
}

GPUBUF_EXPORT void *gpubuf_ptr(const struct gpubuf *buf)
{
	return buf ? buf->ptr : NULL;
}

GPUBUF_EXPORT size_t gpubuf_size(const struct gpubuf *buf)
{
	return buf ? buf->size : 0;
}

GPUBUF_EXPORT int gpubuf_fd(const struct gpubuf *buf)
{
	return buf ? buf->fd : -1;
}

GPUBUF_EXPORT int gpubuf_is_readonly(const struct gpubuf *buf)
{
	return buf && (buf->flags & GPUBUF_BUF_READONLY);
}

static int gpubuf_sync(struct gpubuf *buf, unsigned int access, __u64 phase)
{
	struct dma_buf_sync s;

	if (!buf || !access || (access & ~GPUBUF_ACCESS_RW))
		return -EINVAL;
	if ((access & GPUBUF_ACCESS_WRITE) &&
	    (buf->flags & GPUBUF_BUF_READONLY))
		return -EROFS;
	/* memfd pages are coherent normal memory: nothing to flush. */
	if (buf->fd < 0)
		return 0;
	s.flags = phase;
	if (access & GPUBUF_ACCESS_READ)
		s.flags |= DMA_BUF_SYNC_READ;
	if (access & GPUBUF_ACCESS_WRITE)
		s.flags |= DMA_BUF_SYNC_WRITE;
	while (ioctl(buf->fd, DMA_BUF_IOCTL_SYNC, &s) < 0) {
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
	return 0;
}

GPUBUF_EXPORT int gpubuf_sync_begin(struct gpubuf *buf, unsigned int access)
{
	GPUBUF_KEEP_ERRNO;
	return gpubuf_sync(buf, access, DMA_BUF_SYNC_START);
}

GPUBUF_EXPORT int gpubuf_sync_end(struct gpubuf *buf, unsigned int access)
{
	GPUBUF_KEEP_ERRNO;
	return gpubuf_sync(buf, access, DMA_BUF_SYNC_END);
}
