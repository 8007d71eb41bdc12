/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the gpubuf kselftests. Each returns a value or a
 * negative errno and leaves the asserting to the test.
 */
#ifndef GPUBUF_TEST_HELPERS_H
#define GPUBUF_TEST_HELPERS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include <drm.h>
#include <drm_mode.h>
#include <linux/dma-buf.h>
#include <linux/gpubuf.h>

#include "../testmod/gpubuf_pinprobe.h"

#define SZ_4K	(4096ULL)
#define SZ_1M	(1ULL << 20)
#define GPUBUF_SYSFS	"/sys/class/misc/gpubuf/"
#define GPUBUF_PARAMS	"/sys/module/gpubuf/parameters/"

static inline int gb_open(void)
{
	int fd = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static inline int gb_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static inline void gb_alloc_req(struct gpubuf_alloc *req, uint64_t size)
{
	memset(req, 0, sizeof(*req));
	req->size = size;
	req->fd_flags = O_RDWR | O_CLOEXEC;
	req->numa_node = GPUBUF_NUMA_ANY;
}

/* Allocate with defaults; return the dma-buf fd or a negative errno. */
static inline int gb_alloc(int dev, uint64_t size)
{
	struct gpubuf_alloc req;
	int ret;

	gb_alloc_req(&req, size);
	ret = gb_ioctl(dev, GPUBUF_IOC_ALLOC, &req);
	return ret ? ret : req.fd;
}

static inline int gb_info(int dev, int fd, struct gpubuf_info *info)
{
	memset(info, 0, sizeof(*info));
	info->fd = fd;
	return gb_ioctl(dev, GPUBUF_IOC_INFO, info);
}

static inline int gb_sync(int fd, uint64_t flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	return gb_ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync);
}

/* Read one unsigned number from a sysfs file; ULLONG_MAX when unreadable. */
static inline unsigned long long gb_read_u64(const char *path)
{
	unsigned long long v = ~0ULL;
	FILE *f = fopen(path, "r");

	if (!f)
		return v;
	if (fscanf(f, "%llu", &v) != 1)
		v = ~0ULL;
	fclose(f);
	return v;
}

static inline unsigned long long gb_stat(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), GPUBUF_SYSFS "%s", name);
	return gb_read_u64(path);
}

static inline unsigned long long gb_param(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), GPUBUF_PARAMS "%s", name);
	return gb_read_u64(path);
}

/* The /proc/meminfo line @key ("MemFree", ...) in bytes; 0 when unknown. */
static inline unsigned long long gb_meminfo(const char *key)
{
	unsigned long long kb, found = 0;
	size_t klen = strlen(key);
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':' &&
		    sscanf(line + klen + 1, "%llu", &kb) == 1)
			found = kb * 1024;
	fclose(f);
	return found;
}

/*
 * Free memory: MemFree and the pages on the per-CPU free lists, which
 * MemFree leaves out. On recent kernels those lists also hold 2 MiB pages,
 * and their size follows the load: MemFree alone moves by tens of MiB.
 */
static inline unsigned long long gb_free_bytes(void)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	unsigned long long n = 0, v;
	char line[256];

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, " count: %llu", &v) == 1)
				n += v;
		fclose(f);
	}
	return gb_meminfo("MemFree") + n * 4096;
}

static inline unsigned long long gb_mem_total(void)
{
	return gb_meminfo("MemTotal");
}

/* Drop capability @cap from this thread's effective and permitted sets. */
static inline int gb_drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[cap / 32].effective &= ~(1U << (cap % 32));
	data[cap / 32].permitted &= ~(1U << (cap % 32));
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

static inline int gb_write_str(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

/* Write @text to @file of the cgroup directory @cg. */
static inline int gb_cg_write(const char *cg, const char *file, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return gb_write_str(path, text);
}

/*
 * The value of @key in the flat-keyed @file of directory @cg (memory.stat,
 * memory.events; or /proc's vmstat); ~0ULL when the key or file is absent.
 */
static inline unsigned long long gb_cg_read_key(const char *cg,
						const char *file,
						const char *key)
{
	char path[256], name[64];
	unsigned long long v, found = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	f = fopen(path, "r");
	if (!f)
		return found;
	while (fscanf(f, "%63s %llu", name, &v) == 2)
		if (!strcmp(name, key))
			found = v;
	fclose(f);
	return found;
}

static inline int gb_set_param(const char *name, unsigned long long v)
{
	char path[256], text[32];

	snprintf(path, sizeof(path), GPUBUF_PARAMS "%s", name);
	snprintf(text, sizeof(text), "%llu", v);
	return gb_write_str(path, text);
}

static inline int gb_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory stream's own fd */
}

/* Load the module file named by environment variable @env with @params. */
static inline int gb_load_module(const char *env, const char *params)
{
	const char *path = getenv(env);
	int fd, ret;

	if (!path)
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(__NR_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

static inline int gb_unload_module(const char *name)
{
	return syscall(__NR_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

/* Open the first DRM card whose driver is vgem; -ENODEV when none. */
static inline int vgem_open(void)
{
	char path[64], name[16];
	int i, fd;

	for (i = 0; i < 16; i++) {
		struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (!ioctl(fd, DRM_IOCTL_VERSION, &v) && !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -ENODEV;
}

/* A vgem dumb buffer of width x height 32-bit pixels; returns its handle. */
static inline int vgem_dumb(int vgem, uint32_t width, uint32_t height,
			    uint64_t *size)
{
	struct drm_mode_create_dumb c = { .width = width, .height = height,
					  .bpp = 32 };
	int ret = gb_ioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &c);

	if (ret)
		return ret;
	if (size)
		*size = c.size;
	return c.handle;
}

static inline int vgem_export(int vgem, uint32_t handle)
{
	struct drm_prime_handle p = { .handle = handle,
				      .flags = DRM_CLOEXEC | DRM_RDWR };
	int ret = gb_ioctl(vgem, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);

	return ret ? ret : p.fd;
}

static inline int vgem_import(int vgem, int dmabuf, uint32_t *handle)
{
	struct drm_prime_handle p = { .fd = dmabuf };
	int ret = gb_ioctl(vgem, DRM_IOCTL_PRIME_FD_TO_HANDLE, &p);

	if (!ret)
		*handle = p.handle;
	return ret;
}

static inline int vgem_close_handle(int vgem, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	return gb_ioctl(vgem, DRM_IOCTL_GEM_CLOSE, &c);
}

/*
 * Whether @line of /proc/self/smaps starts a mapping ("start-end perms
 * ..."), with its range in *@start and *@end.
 */
static inline int gb_smaps_header(const char *line, unsigned long *start,
				  unsigned long *end)
{
	return sscanf(line, "%lx-%lx ", start, end) == 2 &&
	       strchr(line, '-') < strchr(line, ' ');
}

/* Whether /proc/self/smaps lists VmFlags @flag for the mapping at @addr. */
static inline int gb_vma_has_flag(const void *addr, const char *flag)
{
	char line[512], want[32];
	unsigned long start, end, a = (unsigned long)addr;
	FILE *f = fopen("/proc/self/smaps", "r");
	int in = 0, found = -ENOENT;

	if (!f)
		return -errno;
	/* smaps prints each flag as two letters and a space. */
	snprintf(want, sizeof(want), " %s ", flag);
	while (fgets(line, sizeof(line), f)) {
		if (gb_smaps_header(line, &start, &end)) {
			in = a >= start && a < end;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			found = strstr(line + 8, want) != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

#define SZ_2M	(2ULL << 20)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_READ	22	/* Linux 5.14 */
#define MADV_POPULATE_WRITE	23
#endif

/*
 * Map @len bytes of @fd from @off, MAP_SHARED, at a 2 MiB-aligned address
 * plus @misalign bytes: reserve address space, map over it with MAP_FIXED,
 * return the rest. MAP_FAILED with errno set on failure.
 */
static inline void *gb_map_at(int fd, size_t len, int prot, off_t off,
			      size_t misalign)
{
	size_t span = len + 2 * SZ_2M;
	char *res, *at, *p;

	res = mmap(NULL, span, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	at = (char *)(((uintptr_t)res + SZ_2M - 1) & ~(uintptr_t)(SZ_2M - 1)) +
	     misalign;
	p = fd < 0 ? mmap(at, len, prot, MAP_PRIVATE | MAP_ANONYMOUS |
			  MAP_FIXED, -1, 0) :
		     mmap(at, len, prot, MAP_SHARED | MAP_FIXED, fd, off);
	if (p == MAP_FAILED) {
		int err = errno;

		munmap(res, span);
		errno = err;
		return MAP_FAILED;
	}
	if (at > res)
		munmap(res, at - res);
	munmap(at + len, res + span - (at + len));
	return p;
}

/*
 * Fault [p, p + len) in as writes: MADV_POPULATE_WRITE (5.14+), else an
 * atomic add of 0 to every page, which keeps the data and faults as a
 * write at once (a read first would map the huge zero page of anonymous
 * memory, and the write after it only 4 KiB). 0 or -errno.
 */
static inline int gb_populate(void *p, size_t len)
{
	size_t off;

	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL)
		return -errno;
	for (off = 0; off < len; off += SZ_4K)
		__atomic_fetch_add((volatile char *)p + off, 0,
				   __ATOMIC_RELAXED);
	return 0;
}

/* Fault [p, p + len) in as reads (a read-only mapping). 0 or -errno. */
static inline int gb_populate_read(const void *p, size_t len)
{
	size_t off;

	if (!madvise((void *)p, len, MADV_POPULATE_READ))
		return 0;
	if (errno != EINVAL)
		return -errno;
	for (off = 0; off < len; off += SZ_4K)
		(void)((const volatile char *)p)[off];
	return 0;
}

/*
 * Sum, in bytes, of smaps field @key ("FilePmdMapped", "Rss", ...) over
 * the mappings that overlap [@addr, @addr + @len); -1 when no mapping there
 * lists it (a kernel without the field).
 */
static inline long long gb_smaps_bytes(const void *addr, size_t len,
				       const char *key)
{
	unsigned long start, end, a = (unsigned long)addr;
	size_t klen = strlen(key);
	long long sum = -1, kb;
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (gb_smaps_header(line, &start, &end)) {
			in = start < a + len && end > a;
			continue;
		}
		if (in && !strncmp(line, key, klen) && line[klen] == ':' &&
		    sscanf(line + klen + 1, "%lld", &kb) == 1)
			sum = (sum < 0 ? 0 : sum) + kb * 1024;
	}
	fclose(f);
	return sum;
}

/* The first word of /sys/kernel/mm/transparent_hugepage/enabled in brackets. */
static inline int gb_thp_mode(char *mode, size_t size)
{
	char line[128], *l, *r;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (!f)
		return -errno;
	l = fgets(line, sizeof(line), f);
	fclose(f);
	if (!l || !(l = strchr(line, '[')) || !(r = strchr(l, ']')))
		return -EINVAL;
	*r = 0;
	snprintf(mode, size, "%s", l + 1);
	return 0;
}

/*
 * Whether the THP policy lets a VM_HUGEPAGE vma have PMDs: 1, 0 for
 * "never", or -errno when the policy cannot be read.
 */
static inline int gb_thp_allowed(void)
{
	char mode[32];
	int err = gb_thp_mode(mode, sizeof(mode));

	return err ? err : strcmp(mode, "never") != 0;
}

static inline int gb_thp_set(const char *mode)
{
	return gb_write_str("/sys/kernel/mm/transparent_hugepage/enabled", mode);
}

/*
 * Run gpubuf_pinprobe.ko's @op on [@addr, @addr + @len): its checksum in
 * *@sum and the time the pin or fault call took in *@ns, when not NULL.
 * 0 or -errno.
 */
static inline int gb_probe_run(uint32_t op, const void *addr, size_t len,
			       uint64_t *sum, uint64_t *ns)
{
	struct pinprobe_req req = { .addr = (uintptr_t)addr, .len = len, .op = op };
	int fd = open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = gb_ioctl(fd, PINPROBE_IOC_RUN, &req);
	close(fd);
	if (!ret && sum)
		*sum = req.checksum;
	if (!ret && ns)
		*ns = req.elapsed_ns;
	return ret;
}

/*
 * Systematic fault injection (CONFIG_FAULT_INJECTION, the debug kernel of
 * make check-debug): gb_fail_nth_open() returns this thread's
 * /proc/thread-self/fail-nth, open, after letting failslab and
 * fail_page_alloc fail every allocation they see (by default they spare
 * GFP_KERNEL ones and single pages); -ENOENT where the kernel has none.
 * Write N with gb_fail_nth_arm() just before a call, and the Nth
 * allocation (or user copy) the thread makes fails; gb_fail_nth_disarm()
 * after the call says whether that fault was reached (1) or not (0: the
 * call made fewer than N, so the loop over N is complete), and disarms it.
 */
static inline int gb_fail_nth_open(void)
{
	static const char *const knobs[][2] = {
		{ "failslab/ignore-gfp-wait", "N" },
		{ "fail_page_alloc/ignore-gfp-wait", "N" },
		{ "fail_page_alloc/ignore-gfp-highmem", "N" },
		{ "fail_page_alloc/min-order", "0" },
		{ "failslab/verbose", "0" },
		{ "fail_page_alloc/verbose", "0" },
		{ "fail_usercopy/verbose", "0" },
	};
	char path[128];
	size_t i;
	int fd;

	if (access("/proc/thread-self/fail-nth", F_OK))
		return -ENOENT;
	if (access("/sys/kernel/debug/failslab", F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		snprintf(path, sizeof(path), "/sys/kernel/debug/%s", knobs[i][0]);
		if (gb_write_str(path, knobs[i][1]))
			return -EIO;
	}
	fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static inline int gb_fail_nth_arm(int fd, unsigned int nth)
{
	char text[16];
	int len = snprintf(text, sizeof(text), "%u", nth);

	return pwrite(fd, text, len, 0) == len ? 0 : -errno;
}

/*
 * The read of fail-nth is itself a fault site (its copy to user memory,
 * with FAULT_INJECTION_USERCOPY): when the call left a count of 1, the
 * read consumes it and fails with EFAULT, which means "not reached"; a
 * larger count is then cleared by writing 0 (whose own copy may take the
 * last one: the count is 0 either way).
 */
static inline int gb_fail_nth_disarm(int fd)
{
	char text[16] = "";
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);

	if (n < 0)
		return errno == EFAULT ? 0 : -errno;
	if (n == 0)
		return -EIO;
	if (atoi(text) == 0)
		return 1;
	if (pwrite(fd, "0", 1, 0) != 1 && errno != EFAULT)
		return -errno;
	return 0;
}

/* Stamp every page's first word; returns the checksum the probe should see. */
static inline uint64_t gb_stamp_pages(void *p, size_t len, uint64_t seed)
{
	uint64_t sum = 0;
	size_t off;

	for (off = 0; off < len; off += SZ_4K) {
		uint64_t v = seed * 1000003 + off;

		*(uint64_t *)((char *)p + off) = v;
		sum += v;
	}
	return sum;
}

/*
 * A VM_PFNMAP mapping of @len bytes (at most PINPROBE_PFNMAP_BYTES) from
 * gpubuf_pinprobe.ko: the control every long-term pin must refuse. The
 * mapping is checked to really be PFNMAP. MAP_FAILED with errno set on
 * failure.
 */
static inline void *gb_pfnmap_control(size_t len)
{
	int fd = open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	void *p;

	if (fd < 0)
		return MAP_FAILED;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED && gb_vma_has_flag(p, "pf") != 1) {
		munmap(p, len);
		errno = ENOTSUP;
		return MAP_FAILED;
	}
	return p;
}

/*
 * Pages pinned system-wide with FOLL_PIN: acquired minus released, after
 * folding the per-CPU counters so the value is exact; -1 when the kernel
 * has no such counters.
 */
static inline long long gb_pins_now(void)
{
	unsigned long long acq = 0, rel = 0, v;
	char name[64];
	FILE *f;

	gb_write_str("/proc/sys/vm/stat_refresh", "1");
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %llu", name, &v) == 2) {
		if (!strcmp(name, "nr_foll_pin_acquired"))
			acq = v;
		else if (!strcmp(name, "nr_foll_pin_released"))
			rel = v;
	}
	fclose(f);
	return acq ? (long long)(acq - rel) : -1;
}

#endif /* GPUBUF_TEST_HELPERS_H */
