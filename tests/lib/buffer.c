// SPDX-License-Identifier: MIT
/*
 * Description: buffer allocation on the active backend, option checking,
 * reference counting, CPU-access sync, and import of dma-bufs (our own and
 * a vgem dumb buffer) and of things that are not dma-bufs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/dma-heap.h>
#include <linux/filter.h>
#include <linux/mempolicy.h>
#include <linux/seccomp.h>

#if __has_include(<drm/drm.h>)
#include <drm/drm.h>
#include <drm/drm_mode.h>
#else
#include <libdrm/drm.h>
#include <libdrm/drm_mode.h>
#endif

#include "refuse_syscall.h"
#include "tap.h"

/* Field @key of the smaps entry that starts at addr, in kB; -1 if absent. */
static long t_smaps_kb(const void *addr, const char *key)
{
	size_t klen = strlen(key);
	unsigned long lo, hi;
	char line[256];
	FILE *f = fopen("/proc/self/smaps", "r");
	int in = 0;
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* Entry headers are "lo-hi perms ..."; fields are "Name: n". */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo == (unsigned long)addr;
		else if (in && !strncmp(line, key, klen) && line[klen] == ':' &&
			 sscanf(line + klen + 1, "%ld", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

static long t_locked_kb(const void *addr)
{
	return t_smaps_kb(addr, "Locked");
}

static int alloc_is_zeroed_and_writable(void)
{
	struct gpubuf_ctx *ctx = t_open();
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	struct gpubuf *buf;
	unsigned char *p;

	T_EQ(gpubuf_alloc(ctx, 3 * ps + 1, NULL, &buf), 0);
	T_EQ(gpubuf_size(buf), 4 * ps);		/* rounded to pages */
	p = gpubuf_ptr(buf);
	T_CHECK(p && ((uintptr_t)p % ps) == 0);
	for (size_t i = 0; i < gpubuf_size(buf); i++)
		T_EQ(p[i], 0);
	for (size_t i = 0; i < gpubuf_size(buf); i++)
		p[i] = (unsigned char)(i * 7);
	for (size_t i = 0; i < gpubuf_size(buf); i++)
		T_EQ(p[i], (unsigned char)(i * 7));
	if (gpubuf_backend(ctx) == GPUBUF_BACKEND_MEMFD)
		T_EQ(gpubuf_fd(buf), -1);
	else
		T_CHECK(gpubuf_fd(buf) >= 0);
	T_EQ(gpubuf_is_readonly(buf), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int memfd_buffer_is_mlocked(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	long kb;

	if (gpubuf_backend(ctx) != GPUBUF_BACKEND_MEMFD) {
		gpubuf_close(ctx);
		return t_skip("not the memfd backend");
	}
	T_EQ(gpubuf_alloc(ctx, 1 << 20, NULL, &buf), 0);
	kb = t_locked_kb(gpubuf_ptr(buf));
	if (kb < 0) {
		gpubuf_unref(buf);
		gpubuf_close(ctx);
		return t_skip("no Locked: field in /proc/self/smaps");
	}
	T_EQ(kb, 1024);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int alloc_rejects_bad_options(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct {
		struct gpubuf_alloc_opts o;
		uint64_t future;
	} big;
	struct gpubuf *buf = NULL, *sentinel = (struct gpubuf *)&buf;

	buf = sentinel;
	T_EQ(gpubuf_alloc(ctx, 0, NULL, &buf), -EINVAL);
	T_EQ(gpubuf_alloc(ctx, SIZE_MAX, NULL, &buf), -EINVAL);
	T_EQ(gpubuf_alloc(ctx, 4096, NULL, NULL), -EINVAL);
	T_EQ(gpubuf_alloc(NULL, 4096, NULL, &buf), -EINVAL);
	o.reserved0 = 1;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	o.reserved0 = 0;
	o.reserved[3] = 1;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	o.reserved[3] = 0;
	o.flags = 1ull << 40;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	o.flags = GPUBUF_ALLOC_NUMA_STRICT;	/* with GPUBUF_NUMA_ANY */
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	o.flags = 0;
	o.numa_node = -2;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	o.numa_node = GPUBUF_NUMA_ANY;
	o.size = 8;				/* shorter than numa_node */
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	T_CHECK(buf == sentinel);		/* never written on failure */

	/* A newer caller's larger struct: fine iff the tail is zero. */
	memset(&big, 0, sizeof(big));
	big.o.size = sizeof(big);
	big.o.numa_node = GPUBUF_NUMA_ANY;
	big.future = 1;
	T_EQ(gpubuf_alloc(ctx, 4096, &big.o, &buf), -E2BIG);
	big.future = 0;
	T_EQ(gpubuf_alloc(ctx, 4096, &big.o, &buf), 0);
	gpubuf_unref(buf);
	/* An older caller's shorter struct (no reserved fields) works. */
	o.size = offsetof(struct gpubuf_alloc_opts, reserved0);
	o.reserved0 = 7;			/* beyond its size: ignored */
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Issue 7 item 7: the size field was trusted without an upper bound, so
 * opts.size = 4096 read 4 KiB of the caller's stack looking for a non-zero
 * tail (ASan: stack-buffer-overflow). Absurd sizes are refused unread.
 */
static int alloc_refuses_absurd_opts_size(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct gpubuf *buf = NULL;
	struct {
		struct gpubuf_alloc_opts o;
		unsigned char future[512 - sizeof(struct gpubuf_alloc_opts)];
	} big;

	o.size = 4096;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -E2BIG);
	o.size = SIZE_MAX;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -E2BIG);
	T_CHECK(buf == NULL);
	/* The largest size still read: 512 bytes, zero tail or not. */
	memset(&big, 0, sizeof(big));
	big.o.numa_node = GPUBUF_NUMA_ANY;
	big.o.size = sizeof(big);
	T_EQ(gpubuf_alloc(ctx, 4096, &big.o, &buf), 0);
	gpubuf_unref(buf);
	big.future[sizeof(big.future) - 1] = 1;
	T_EQ(gpubuf_alloc(ctx, 4096, &big.o, &buf), -E2BIG);
	big.future[sizeof(big.future) - 1] = 0;
	big.o.size = sizeof(big) + 1;		/* one past: not read */
	T_EQ(gpubuf_alloc(ctx, 4096, &big.o, &buf), -E2BIG);
	gpubuf_close(ctx);
	return T_PASS;
}

/* The node of the page at p, by get_mempolicy(); -1 when unknown. */
static int t_page_node(const void *p)
{
	int node = -1;

	if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, p,
		    MPOL_F_NODE | MPOL_F_ADDR))
		return -1;
	return node;
}

/*
 * The memfd backend places pages as the module does: numa_node preferred,
 * GPUBUF_ALLOC_NUMA_STRICT required (mbind before mlock faults them in).
 * Node 0 exists everywhere; a node past the online ones is refused. The
 * two-node guest checks a second node (tests/vm/numa-memfd).
 */
static int memfd_numa_node_is_placed(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct gpubuf *buf;
	int last = 0;

	if (gpubuf_backend(ctx) != GPUBUF_BACKEND_MEMFD) {
		gpubuf_close(ctx);
		return t_skip("not the memfd backend");
	}
	o.numa_node = 0;
	T_EQ(gpubuf_alloc(ctx, 1 << 20, &o, &buf), 0);
	T_EQ(t_page_node(gpubuf_ptr(buf)), 0);
	gpubuf_unref(buf);
	o.flags = GPUBUF_ALLOC_NUMA_STRICT;
	T_EQ(gpubuf_alloc(ctx, 1 << 20, &o, &buf), 0);
	T_EQ(t_page_node((char *)gpubuf_ptr(buf) + (1 << 20) - 1), 0);
	gpubuf_unref(buf);
	for (;;) {
		char dir[64];

		snprintf(dir, sizeof(dir), "/sys/devices/system/node/node%d",
			 last + 1);
		if (access(dir, F_OK))
			break;
		last++;
	}
	o.numa_node = last + 1;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	o.flags = 0;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	o.numa_node = 4096;
	T_EQ(gpubuf_alloc(ctx, 4096, &o, &buf), -EINVAL);
	gpubuf_close(ctx);
	return T_PASS;
}

/* The child of memfd_numa_preference_survives_refused_mbind: 0 or a line. */
static int t_refused_mbind_child(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;
	struct gpubuf_matrix m;
	struct gpubuf *buf;
	unsigned char *p;
	int maps;

	if (t_refuse_syscall(SYS_mbind))
		return __LINE__;
	if (syscall(SYS_mbind, NULL, 0, MPOL_DEFAULT, NULL, 0, 0) != -1 ||
	    errno != EPERM)
		return __LINE__;
	maps = t_buffer_maps();
	o.numa_node = 0;
	/* A preference: allocated anyway, and the thread's error says why. */
	if (gpubuf_alloc(ctx, 1 << 20, &o, &buf))
		return __LINE__;
	p = gpubuf_ptr(buf);
	if (p[0] || p[(1 << 20) - 1])
		return __LINE__;
	p[0] = 1;
	if (!strstr(gpubuf_last_error(), "numa_node 0 is a preference") ||
	    !strstr(gpubuf_last_error(), strerror(EPERM)))
		return __LINE__;
	gpubuf_unref(buf);
	if (gpubuf_matrix_alloc_opts(ctx, GPUBUF_DTYPE_F32, 64, 64,
				     GPUBUF_ROW_MAJOR, 0, &o, &m))
		return __LINE__;
	gpubuf_matrix_release(&m);
	/* A requirement cannot be met: EPERM, nothing left mapped. */
	o.flags = GPUBUF_ALLOC_NUMA_STRICT;
	if (gpubuf_alloc(ctx, 1 << 20, &o, &buf) != -EPERM)
		return __LINE__;
	if (!strstr(gpubuf_last_error(), "strict: mbind"))
		return __LINE__;
	if (t_buffer_maps() != maps)
		return __LINE__;
	/* No node named: no mbind, nothing said. */
	o.flags = 0;
	o.numa_node = GPUBUF_NUMA_ANY;
	if (gpubuf_alloc(ctx, 4096, &o, &buf))
		return __LINE__;
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return 0;
}

/*
 * On the memfd backend, run @child (0 or the line of a failed check) in a
 * forked process, whose restrictions (@what) end with it.
 */
static int t_memfd_child(int (*child)(void), const char *what)
{
	struct gpubuf_ctx *ctx = t_open();
	int status, backend = gpubuf_backend(ctx);
	pid_t pid;

	gpubuf_close(ctx);
	if (backend != GPUBUF_BACKEND_MEMFD)
		return t_skip("not the memfd backend");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return T_FAIL;
	if (pid == 0) {
		int line = child();

		if (line)
			printf("# %s:%d: check failed %s (%s)\n", __FILE__,
			       line, what, gpubuf_last_error());
		fflush(stdout);
		_exit(line ? 1 : 0);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_CHECK(WIFEXITED(status));
	T_EQ(WEXITSTATUS(status), 0);
	return T_PASS;
}

/*
 * Issue 49, item 2: a node preference made every allocation fail where
 * mbind() is refused (containers' default seccomp profiles, cpusets, nodes
 * without memory), though only a strict request must.
 */
static int memfd_numa_preference_survives_refused_mbind(void)
{
	return t_memfd_child(t_refused_mbind_child, "under the filter");
}

/* Drop CAP_IPC_LOCK, which lets root lock past RLIMIT_MEMLOCK; 0 or -1. */
static int t_drop_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[0].effective &= ~(1u << CAP_IPC_LOCK);
	data[0].permitted &= ~(1u << CAP_IPC_LOCK);
	data[0].inheritable &= ~(1u << CAP_IPC_LOCK);
	return syscall(SYS_capset, &hdr, data) ? -1 : 0;
}

/* The child of memfd_mlock_limit_says_what_to_do: 0 or a line. */
static int t_mlock_limit_child(void)
{
	struct rlimit rl = { 1 << 20, 1 << 20 };
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;
	int maps;

	if (t_drop_ipc_lock() || setrlimit(RLIMIT_MEMLOCK, &rl))
		return __LINE__;
	maps = t_buffer_maps();
	/* Past the limit: ENOMEM, the limit named, and what to do. */
	if (gpubuf_alloc(ctx, 4 << 20, NULL, &buf) != -ENOMEM)
		return __LINE__;
	if (!strstr(gpubuf_last_error(), "RLIMIT_MEMLOCK is 1048576 bytes") ||
	    !strstr(gpubuf_last_error(), "/dev/gpubuf") ||
	    !strstr(gpubuf_last_error(), "--ulimit memlock=-1"))
		return __LINE__;
	if (t_buffer_maps() != maps)
		return __LINE__;
	/* Within it: allocated. */
	if (gpubuf_alloc(ctx, 256 << 10, NULL, &buf))
		return __LINE__;
	gpubuf_unref(buf);
	/* A limit of 0: EPERM from mlock, ENOMEM from us, and why. */
	rl.rlim_cur = rl.rlim_max = 0;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return __LINE__;
	if (gpubuf_alloc(ctx, 4096, NULL, &buf) != -ENOMEM)
		return __LINE__;
	if (!strstr(gpubuf_last_error(), "not allowed here"))
		return __LINE__;
	if (t_buffer_maps() != maps)
		return __LINE__;
	gpubuf_close(ctx);
	return 0;
}

/*
 * Issue 51, item 5: in a container (Docker's default RLIMIT_MEMLOCK is
 * 64 MiB) the memfd backend's mlock fails; the error must say that the
 * limit did it and what to do, not only "out of memory".
 */
static int memfd_mlock_limit_says_what_to_do(void)
{
	return t_memfd_child(t_mlock_limit_child, "with the limit set");
}

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

/*
 * Issue 7 item 11: the memfd backend called memfd_create() without
 * MFD_NOEXEC_SEAL, which Linux 6.3+ logs and, on kernels before the
 * vm.memfd_noexec=2 fix, refused with EACCES there. The memfd is closed
 * after mmap, so look at it through /proc/self/map_files: with the flag
 * it carries F_SEAL_EXEC and no exec mode bits.
 */
static int memfd_backend_seals_noexec(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	struct stat st;
	char path[64];
	int fd, seals;

	fd = memfd_create("t", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
	if (fd < 0)
		return t_skip("no MFD_NOEXEC_SEAL (Linux before 6.3)");
	close(fd);
	T_EQ(gpubuf_open(&ctx, GPUBUF_OPEN_FORCE_MEMFD |
			 GPUBUF_OPEN_IGNORE_ENV), 0);
	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx",
		 (unsigned long)gpubuf_ptr(buf),
		 (unsigned long)gpubuf_ptr(buf) + gpubuf_size(buf));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		gpubuf_unref(buf);
		gpubuf_close(ctx);
		return t_skip("cannot open %s (needs CAP_SYS_ADMIN)", path);
	}
	seals = fcntl(fd, F_GET_SEALS);
	T_EQ(fstat(fd, &st), 0);
	close(fd);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	T_CHECK(seals >= 0 && (seals & F_SEAL_EXEC));
	T_EQ(st.st_mode & 0111, 0);
	return T_PASS;
}

static int refcount_counts(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;

	T_EQ(gpubuf_alloc(ctx, 1, NULL, &buf), 0);
	T_EQ(gpubuf_refcount(buf), 1);
	T_CHECK(gpubuf_ref(buf) == buf);
	T_EQ(gpubuf_refcount(buf), 2);
	gpubuf_unref(buf);
	T_EQ(gpubuf_refcount(buf), 1);
	/* The context may go first: buffers do not need it. */
	gpubuf_close(ctx);
	((volatile char *)gpubuf_ptr(buf))[0] = 1;
	gpubuf_unref(buf);
	gpubuf_unref(NULL);
	T_CHECK(gpubuf_ref(NULL) == NULL);
	T_EQ(gpubuf_refcount(NULL), 0);
	return T_PASS;
}

static int sync_validates_access(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf;

	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	T_EQ(gpubuf_sync_begin(buf, 0), -EINVAL);
	T_EQ(gpubuf_sync_begin(buf, 1u << 2), -EINVAL);
	T_EQ(gpubuf_sync_end(buf, GPUBUF_ACCESS_RW | 8), -EINVAL);
	T_EQ(gpubuf_sync_begin(NULL, GPUBUF_ACCESS_READ), -EINVAL);
	T_EQ(gpubuf_sync_begin(buf, GPUBUF_ACCESS_READ), 0);
	T_EQ(gpubuf_sync_end(buf, GPUBUF_ACCESS_READ), 0);
	T_EQ(gpubuf_sync_begin(buf, GPUBUF_ACCESS_WRITE), 0);
	T_EQ(gpubuf_sync_end(buf, GPUBUF_ACCESS_WRITE), 0);
	T_EQ(gpubuf_sync_begin(buf, GPUBUF_ACCESS_RW), 0);
	T_EQ(gpubuf_sync_end(buf, GPUBUF_ACCESS_RW), 0);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int import_rejects_non_dmabuf(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = NULL;
	int pfd[2], mfd, nfd;

	T_EQ(gpubuf_import(ctx, -1, &buf), -EBADF);
	nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	T_CHECK(nfd >= 0);
	T_EQ(gpubuf_import(ctx, nfd, &buf), -EBADFD);
	close(nfd);
	T_EQ(gpubuf_import(ctx, nfd, &buf), -EBADF);	/* closed now */
	mfd = memfd_create("t", MFD_CLOEXEC);
	T_CHECK(mfd >= 0 && ftruncate(mfd, 4096) == 0);
	T_EQ(gpubuf_import(ctx, mfd, &buf), -EBADFD);
	close(mfd);
	T_CHECK(pipe(pfd) == 0);
	T_EQ(gpubuf_import(ctx, pfd[0], &buf), -EBADFD);
	close(pfd[0]);
	close(pfd[1]);
	T_CHECK(buf == NULL);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * Issue 7 item 4: import mapped a write-only fd, failed with EACCES, and
 * that read as "add yourself to the group that owns /dev/gpubuf". A
 * write-only fd can never be mapped (every mapping reads), so it is
 * refused first, with EINVAL, whatever it refers to, and stays open.
 */
static int import_refuses_write_only_fd(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf = NULL;
	int pfd[2], nfd;

	nfd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	T_CHECK(nfd >= 0);
	T_EQ(gpubuf_import(ctx, nfd, &buf), -EINVAL);
	T_EQ(fcntl(nfd, F_GETFL) & O_ACCMODE, O_WRONLY);	/* still open */
	close(nfd);
	T_CHECK(pipe(pfd) == 0);
	T_EQ(gpubuf_import(ctx, pfd[1], &buf), -EINVAL);
	T_EQ(gpubuf_import(ctx, pfd[0], &buf), -EBADFD);	/* readable */
	close(pfd[0]);
	close(pfd[1]);
	T_CHECK(buf == NULL);
	gpubuf_close(ctx);
	return T_PASS;
}

/*
 * A dma-buf with the access mode asked for, from the system dma-heap if
 * there is one (it allows every mode), else from gpubuf's own ioctl: the
 * fd, 0 when the exporter refuses that mode, -1 when there is none.
 */
static int t_dmabuf_with_mode(size_t len, int accmode)
{
	struct dma_heap_allocation_data h;
	struct gpubuf_alloc a;
	int dev = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	if (dev >= 0) {
		memset(&h, 0, sizeof(h));
		h.len = len;
		h.fd_flags = (uint32_t)(accmode | O_CLOEXEC);
		if (ioctl(dev, DMA_HEAP_IOCTL_ALLOC, &h) < 0)
			h.fd = 0;
		close(dev);
		return (int)h.fd;
	}
	dev = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.size = len;
	a.fd_flags = (uint32_t)(accmode | O_CLOEXEC);
	a.numa_node = GPUBUF_NUMA_ANY;
	if (ioctl(dev, GPUBUF_IOC_ALLOC, &a) < 0)
		a.fd = 0;		/* EINVAL: write-only refused */
	close(dev);
	return a.fd;
}

/* The fd's access mode, not a failed mmap(), decides the mapping. */
static int import_maps_by_access_mode(void)
{
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf = NULL;
	int ro, wo;

	ro = t_dmabuf_with_mode(4096, O_RDONLY);
	if (ro < 0)
		return t_skip("cannot open %s", GPUBUF_DEVICE_PATH);
	ctx = t_open();
	T_CHECK(ro > 0);
	T_EQ(gpubuf_import(ctx, ro, &buf), 0);
	T_EQ(gpubuf_is_readonly(buf), 1);
	T_EQ(((volatile unsigned char *)gpubuf_ptr(buf))[4095], 0);
	T_EQ(gpubuf_sync_begin(buf, GPUBUF_ACCESS_WRITE), -EROFS);
	gpubuf_unref(buf);
	close(ro);
	wo = t_dmabuf_with_mode(4096, O_WRONLY);
	if (wo > 0) {
		buf = NULL;
		T_EQ(gpubuf_import(ctx, wo, &buf), -EINVAL);
		T_CHECK(buf == NULL);
		close(wo);
	} else {
		printf("# the exporter refuses write-only dma-bufs\n");
	}
	gpubuf_close(ctx);
	return T_PASS;
}

static int module_alloc_is_gpubuf_dmabuf(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_info info;
	struct gpubuf *buf;
	struct statfs sfs;
	int dev;

	if (gpubuf_backend(ctx) != GPUBUF_BACKEND_MODULE) {
		gpubuf_close(ctx);
		return t_skip("not the module backend");
	}
	T_EQ(gpubuf_alloc(ctx, 10000, NULL, &buf), 0);
	T_CHECK(gpubuf_fd(buf) >= 0);
	T_EQ(fstatfs(gpubuf_fd(buf), &sfs), 0);
	T_EQ(sfs.f_type, 0x444d4142);	/* DMA_BUF_MAGIC */
	T_EQ(fcntl(gpubuf_fd(buf), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	dev = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	T_CHECK(dev >= 0);
	memset(&info, 0, sizeof(info));
	info.fd = gpubuf_fd(buf);
	T_EQ(ioctl(dev, GPUBUF_IOC_INFO, &info), 0);
	T_EQ(info.size, gpubuf_size(buf));
	T_EQ(info.numa_node, GPUBUF_NUMA_ANY);
	close(dev);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

static int module_import_shares_pages(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *a, *b;
	uint32_t *pa, *pb;
	size_t n;

	if (gpubuf_backend(ctx) != GPUBUF_BACKEND_MODULE) {
		gpubuf_close(ctx);
		return t_skip("not the module backend");
	}
	T_EQ(gpubuf_alloc(ctx, 65536, NULL, &a), 0);
	pa = gpubuf_ptr(a);
	n = gpubuf_size(a) / sizeof(*pa);
	T_EQ(gpubuf_sync_begin(a, GPUBUF_ACCESS_WRITE), 0);
	for (size_t i = 0; i < n; i++)
		pa[i] = (uint32_t)(i * 2654435761u);
	T_EQ(gpubuf_sync_end(a, GPUBUF_ACCESS_WRITE), 0);
	T_EQ(gpubuf_import(ctx, gpubuf_fd(a), &b), 0);
	T_EQ(gpubuf_size(b), gpubuf_size(a));
	T_CHECK(gpubuf_fd(b) != gpubuf_fd(a));
	pb = gpubuf_ptr(b);
	T_CHECK(pb != pa);
	T_EQ(gpubuf_sync_begin(b, GPUBUF_ACCESS_RW), 0);
	for (size_t i = 0; i < n; i++)
		T_EQ(pb[i], (uint32_t)(i * 2654435761u));
	pb[n - 1] = 0xdeadbeef;
	T_EQ(gpubuf_sync_end(b, GPUBUF_ACCESS_RW), 0);
	gpubuf_unref(a);	/* b keeps the dma-buf alive */
	T_EQ(pb[n - 1], 0xdeadbeef);
	T_EQ(pb[0], 0);
	gpubuf_unref(b);
	gpubuf_close(ctx);
	return T_PASS;
}

/* First /dev/dri/card* whose driver is vgem, or -1. */
static int t_open_vgem(void)
{
	for (int i = 0; i < 16; i++) {
		struct drm_version v;
		char path[32], name[64];
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		memset(name, 0, sizeof(name));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (ioctl(fd, DRM_IOCTL_VERSION, &v) == 0 &&
		    !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

static int vgem_dumb_buffer_imports(void)
{
	struct drm_mode_create_dumb create;
	struct drm_prime_handle prime;
	struct drm_gem_close gclose;
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf;
	uint32_t *p, *q;
	int card = t_open_vgem();

	if (card < 0)
		return t_skip("no vgem card in /dev/dri (modprobe vgem)");
	ctx = t_open();
	memset(&create, 0, sizeof(create));
	create.width = 1024;
	create.height = 4;
	create.bpp = 32;
	T_EQ(ioctl(card, DRM_IOCTL_MODE_CREATE_DUMB, &create), 0);
	memset(&prime, 0, sizeof(prime));
	prime.handle = create.handle;
	prime.flags = DRM_CLOEXEC | DRM_RDWR;
	T_EQ(ioctl(card, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime), 0);

	T_EQ(gpubuf_import(ctx, prime.fd, &buf), 0);
	T_CHECK(gpubuf_size(buf) >= create.size);
	T_EQ(gpubuf_is_readonly(buf), 0);
	p = gpubuf_ptr(buf);
	T_EQ(gpubuf_sync_begin(buf, GPUBUF_ACCESS_WRITE), 0);
	for (size_t i = 0; i < create.size / 4; i++)
		p[i] = (uint32_t)i ^ 0x5a5a5a5a;
	T_EQ(gpubuf_sync_end(buf, GPUBUF_ACCESS_WRITE), 0);
	/* A second, independent mapping of the same dma-buf sees the data. */
	q = mmap(NULL, create.size, PROT_READ, MAP_SHARED, prime.fd, 0);
	T_CHECK(q != MAP_FAILED);
	for (size_t i = 0; i < create.size / 4; i++)
		T_EQ(q[i], (uint32_t)i ^ 0x5a5a5a5a);
	munmap(q, create.size);
	gpubuf_unref(buf);
	close(prime.fd);
	memset(&gclose, 0, sizeof(gclose));
	gclose.handle = create.handle;
	ioctl(card, DRM_IOCTL_GEM_CLOSE, &gclose);
	close(card);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Whether THP is "never", when the kernel maps no PMDs for us. */
static int t_thp_never(void)
{
	char line[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
	}
	return strstr(line, "[never]") != NULL;
}

/* Whether this kernel has MADV_POPULATE_WRITE (5.14+). */
static int t_have_populate(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok = p != MAP_FAILED && !madvise(p, ps, 23 /* POPULATE_WRITE */);

	if (p != MAP_FAILED)
		munmap(p, ps);
	return ok;
}

/*
 * Module buffers of 2 MiB or more, and imports of them, are mapped at
 * 2 MiB-aligned addresses, populated (where the kernel can: 5.14+), and
 * held by 2 MiB (PMD) entries.
 */
static int module_buffers_map_with_pmds(void)
{
	const size_t pmd = 2u << 20, len = 3 * pmd;
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf *buf, *imp;
	char *p;

	T_EQ(gpubuf_alloc(ctx, len, NULL, &buf), 0);
	p = gpubuf_ptr(buf);
	T_EQ((uintptr_t)p % pmd, 0);
	if (!t_have_populate())
		memset(p, 0, len);
	T_EQ(t_smaps_kb(p, "Rss"), (long)(len >> 10));
	if (!t_thp_never())
		T_EQ(t_smaps_kb(p, "FilePmdMapped"), (long)(len >> 10));
	p[len - 1] = 42;
	T_EQ(gpubuf_import(ctx, gpubuf_fd(buf), &imp), 0);
	T_EQ((uintptr_t)gpubuf_ptr(imp) % pmd, 0);
	T_EQ(((char *)gpubuf_ptr(imp))[len - 1], 42);
	if (!t_thp_never())
		T_EQ(t_smaps_kb(gpubuf_ptr(imp), "FilePmdMapped"),
		     (long)(pmd >> 10));
	gpubuf_unref(imp);
	gpubuf_unref(buf);
	gpubuf_close(ctx);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(alloc_is_zeroed_and_writable),
		T_TEST_ON(T_MEMFD, memfd_buffer_is_mlocked),
		T_TEST(alloc_rejects_bad_options),
		T_TEST(alloc_refuses_absurd_opts_size),
		T_TEST_ON(T_MEMFD, memfd_numa_node_is_placed),
		T_TEST_ON(T_MEMFD, memfd_numa_preference_survives_refused_mbind),
		T_TEST_ON(T_MEMFD, memfd_mlock_limit_says_what_to_do),
		T_TEST(memfd_backend_seals_noexec),
		T_TEST(refcount_counts),
		T_TEST(sync_validates_access),
		T_TEST(import_rejects_non_dmabuf),
		T_TEST(import_refuses_write_only_fd),
		T_TEST_ON(T_MODULE, import_maps_by_access_mode),
		T_TEST_ON(T_MODULE, module_alloc_is_gpubuf_dmabuf),
		T_TEST_ON(T_MODULE, module_import_shares_pages),
		T_TEST_ON(T_MODULE, module_buffers_map_with_pmds),
		T_TEST_ON(T_VGEM, vgem_dumb_buffer_imports),
	};

	return T_RUN(tests);
}
