// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: gpubuf's tracepoints (kmod/gpubuf_trace.h), read back
 * through tracefs as perf or bpftrace would get them. Each test enables
 * the events of one path, drives that path, and checks every event's
 * fields against what it did: alloc (size, chunks, node, result; refusals
 * past the limit, without an fd and with an unwritable request too) and
 * release, ENOSPC past the total limit, ENFILE from a full file table
 * (its buffer made, then released); CPU faults (2 MiB or 4 KiB
 * entries, from user mode or the kernel's own copy); attach, map,
 * sync begin and end, unmap and detach by the test importer; a release
 * while a pin holds the pages (held), then the unpin (unheld); the
 * reserve's fill, take and shrink.
 */
#include <limits.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "../testmod/gpubuf_importer.h"
#include "gpubuf_helpers.h"
#include "gpubuf_reserve.h"
#include "kselftest_harness.h"

#define TRACEFS		"/sys/kernel/tracing"
#define MAX_EVENTS	64

/* One event's line, from the event name on. */
struct ev {
	char line[512];
};

/* Mount tracefs where the busybox guest has none; 0 or -errno. */
static int tracefs_ready(void)
{
	if (!access(TRACEFS "/events/gpubuf", F_OK))
		return 0;
	if (access(TRACEFS "/trace", F_OK) &&
	    mount("nodev", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY)
		return -errno;
	return access(TRACEFS "/events/gpubuf", F_OK) ? -ENOENT : 0;
}

static int set_events(const char *const *names, const char *val)
{
	char path[256];
	int i;

	for (i = 0; names[i]; i++) {
		snprintf(path, sizeof(path), TRACEFS "/events/gpubuf/%s/enable",
			 names[i]);
		if (gb_write_str(path, val))
			return -1;
	}
	return 0;
}

/* Enable names (NULL-terminated), empty the buffer, trace on. */
static int trace_start(const char *const *names)
{
	int fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -1;
	close(fd);
	if (set_events(names, "1"))
		return -1;
	return gb_write_str(TRACEFS "/tracing_on", "1");
}

/* The recorded events called name, in order; their count. */
static int trace_read(const char *name, struct ev *out, int max)
{
	char pat[64], buf[1024];
	FILE *f = fopen(TRACEFS "/trace", "re");
	int n = 0;

	if (!f)
		return -1;
	snprintf(pat, sizeof(pat), " %s: ", name);
	while (fgets(buf, sizeof(buf), f) && n < max) {
		char *p = strstr(buf, pat);

		if (p) {
			snprintf(out[n].line, sizeof(out[n].line), "%s", p + 1);
			n++;
		}
	}
	fclose(f);
	return n;
}

/* The number after "key=" in e; LLONG_MIN when absent. */
static long long field(const struct ev *e, const char *key)
{
	char pat[48];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(e->line, pat);
	if (!p)
		return LLONG_MIN;
	return strtoll(p + strlen(pat), NULL, 0);
}

static const char *sfield(const struct ev *e, const char *key, char *out,
			  size_t len)
{
	char pat[48];
	const char *p;
	size_t i = 0;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(e->line, pat);
	out[0] = '\0';
	if (!p)
		return out;
	for (p += strlen(pat); *p && *p != ' ' && *p != '\n' && i + 1 < len; p++)
		out[i++] = *p;
	out[i] = '\0';
	return out;
}

/* Booted with swiotlb=force (the check's DMA run): every mapping bounces. */
static int swiotlb_forced(void)
{
	char line[1024] = "";
	FILE *f = fopen("/proc/cmdline", "re");

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
	}
	return strstr(line, "swiotlb=force") != NULL;
}

static const char *const all_events[] = {
	"gpubuf_alloc", "gpubuf_release", "gpubuf_held", "gpubuf_unheld",
	"gpubuf_attach", "gpubuf_detach", "gpubuf_map", "gpubuf_unmap",
	"gpubuf_fault", "gpubuf_sync_begin", "gpubuf_sync_end",
	"gpubuf_reserve_fill", "gpubuf_reserve_take",
	"gpubuf_reserve_shrink", NULL,
};

FIXTURE(trace) {
	int dev;
	struct ev ev[MAX_EVENTS];
};

FIXTURE_SETUP(trace)
{
	ASSERT_EQ(0, tracefs_ready()) TH_LOG("tracefs with events/gpubuf at " TRACEFS);
	self->dev = gb_open();
	ASSERT_LE(0, self->dev);
}

FIXTURE_TEARDOWN(trace)
{
	set_events(all_events, "0");
	if (self->dev >= 0)
		close(self->dev);
}

/* Every event the header declares is there, with its format. */
TEST_F(trace, every_event_is_in_tracefs)
{
	char path[256];
	int i;

	for (i = 0; all_events[i]; i++) {
		snprintf(path, sizeof(path), TRACEFS "/events/gpubuf/%s/format",
			 all_events[i]);
		EXPECT_EQ(0, access(path, R_OK)) TH_LOG("%s", path);
	}
}

TEST_F(trace, alloc_and_release_say_what_happened)
{
	static const char *const ev[] = { "gpubuf_alloc", "gpubuf_release", NULL };
	unsigned long long max = gb_param("max_buffer_bytes");
	struct gpubuf_alloc req;
	int fd;

	ASSERT_EQ(0, trace_start(ev));
	fd = gb_alloc(self->dev, 4 * SZ_1M);
	ASSERT_LE(0, fd);
	close(fd);
	/* Past max_buffer_bytes: refused after validation, counted. */
	gb_alloc_req(&req, (max + SZ_2M) & ~(SZ_2M - 1));
	EXPECT_EQ(-EFBIG, gb_ioctl(self->dev, GPUBUF_IOC_ALLOC, &req));
	ASSERT_EQ(2, trace_read("gpubuf_alloc", self->ev, MAX_EVENTS));
	EXPECT_EQ(4 * SZ_1M, field(&self->ev[0], "size"));
	EXPECT_EQ(-1, field(&self->ev[0], "node"));
	EXPECT_EQ(1024, field(&self->ev[0], "huge_chunks") * 512 +
			field(&self->ev[0], "small_pages"));
	EXPECT_EQ(0, field(&self->ev[0], "reserve_chunks"));
	EXPECT_EQ(0, field(&self->ev[0], "result"));
	EXPECT_EQ(-EFBIG, field(&self->ev[1], "result"));
	/* A refusal has no pages, 2 MiB or small (issue 49, item 6). */
	EXPECT_EQ(0, field(&self->ev[1], "huge_chunks"));
	EXPECT_EQ(0, field(&self->ev[1], "small_pages"));
	ASSERT_EQ(1, trace_read("gpubuf_release", self->ev, MAX_EVENTS));
	EXPECT_EQ(4 * SZ_1M, field(&self->ev[0], "size"));
	EXPECT_EQ(0, field(&self->ev[0], "held"));
}

/*
 * Issue 49, item 6: an ALLOC refused for want of an fd (EMFILE) fired no
 * event, and one whose request could not be written back (EFAULT) said
 * result=0 before its release. Each is one event with its errno now; the
 * EFAULT one made its buffer, so its release follows.
 */
TEST_F(trace, refused_allocs_say_their_errno)
{
	static const char *const ev[] = { "gpubuf_alloc", "gpubuf_release", NULL };
	struct gpubuf_alloc *ro;
	struct rlimit old, low;
	int ret;

	ASSERT_EQ(0, trace_start(ev));
	/* No fd left: the limit is what is open now. */
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	low = old;
	low.rlim_cur = (rlim_t)(fcntl(0, F_DUPFD, 0));
	ASSERT_LT(0, (long)low.rlim_cur);
	close((int)low.rlim_cur);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
	ret = gb_alloc(self->dev, SZ_1M);
	setrlimit(RLIMIT_NOFILE, &old);
	ASSERT_EQ(-EMFILE, ret);
	/* A request the kernel can read but not write back. */
	ro = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	gb_alloc_req(ro, SZ_1M);
	ASSERT_EQ(0, mprotect(ro, SZ_4K, PROT_READ));
	EXPECT_EQ(-EFAULT, gb_ioctl(self->dev, GPUBUF_IOC_ALLOC, ro));
	munmap(ro, SZ_4K);
	ASSERT_EQ(2, trace_read("gpubuf_alloc", self->ev, MAX_EVENTS));
	EXPECT_EQ(-EMFILE, field(&self->ev[0], "result"));
	EXPECT_EQ(SZ_1M, field(&self->ev[0], "size"));
	EXPECT_EQ(0, field(&self->ev[0], "small_pages"));
	EXPECT_EQ(-EFAULT, field(&self->ev[1], "result"));
	EXPECT_EQ(0, field(&self->ev[1], "small_pages"));
	ASSERT_EQ(1, trace_read("gpubuf_release", self->ev, MAX_EVENTS));
	EXPECT_EQ(SZ_1M, field(&self->ev[0], "size"));
}

/*
 * result=-23: the system file table full (fs.file-max 0 for a child
 * without CAP_SYS_ADMIN), found after the buffer was made, which is then
 * released: the refused ALLOC's event, then its buffer's release.
 */
TEST_F(trace, full_file_table_says_enfile_then_releases)
{
	static const char *const ev[] = { "gpubuf_alloc", "gpubuf_release", NULL };
	int ready[2], go[2], result[2], ret = -1, status, restored = -1;
	char file_max[32] = "";
	FILE *f;
	pid_t pid;

	f = fopen("/proc/sys/fs/file-max", "re");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(file_max, sizeof(file_max), f));
	fclose(f);
	ASSERT_EQ(0, pipe2(ready, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(result, O_CLOEXEC));
	ASSERT_EQ(0, trace_start(ev));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int err = gb_drop_cap(CAP_SYS_ADMIN);
		char c;

		/* From here on this process opens no file. */
		if (write(ready[1], &err, sizeof(err)) != sizeof(err) || err ||
		    read(go[0], &c, 1) != 1)
			_exit(1);
		err = gb_alloc(self->dev, 4 * SZ_1M);
		if (write(result[1], &err, sizeof(err)) != sizeof(err))
			_exit(1);
		_exit(0);
	}
	if (read(ready[0], &ret, sizeof(ret)) != sizeof(ret))
		ret = -EPIPE;
	/* No ASSERT until file-max is restored. */
	if (!ret && !gb_write_str("/proc/sys/fs/file-max", "0")) {
		if (write(go[1], "g", 1) != 1 ||
		    read(result[0], &ret, sizeof(ret)) != sizeof(ret))
			ret = -EPIPE;
		restored = gb_write_str("/proc/sys/fs/file-max", file_max);
	}
	waitpid(pid, &status, 0);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	close(result[0]);
	close(result[1]);
	ASSERT_EQ(0, restored) TH_LOG("file-max not restored to %s", file_max);
	ASSERT_EQ(-ENFILE, ret);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_EQ(1, trace_read("gpubuf_alloc", self->ev, MAX_EVENTS));
	EXPECT_EQ(-ENFILE, field(&self->ev[0], "result"));
	EXPECT_EQ(4 * SZ_1M, field(&self->ev[0], "size"));
	ASSERT_EQ(1, trace_read("gpubuf_release", self->ev, MAX_EVENTS));
	EXPECT_EQ(4 * SZ_1M, field(&self->ev[0], "size"));
}

/* A 2 MiB chunk at a 2 MiB-aligned address is one PMD fault. */
TEST_F(trace, faults_say_pte_or_pmd)
{
	static const char *const ev[] = { "gpubuf_alloc", "gpubuf_fault", NULL };
	struct ev alloc;
	int fd, n, i, pmd = 0;
	char *p;

	ASSERT_EQ(0, trace_start(ev));
	fd = gb_alloc(self->dev, 4 * SZ_1M);
	ASSERT_LE(0, fd);
	p = gb_map_at(fd, 4 * SZ_1M, PROT_READ | PROT_WRITE, 0, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	p[2 * SZ_1M] = 1;
	p[2 * SZ_1M + 3 * SZ_4K] = 1;	/* inside the second: no new fault */
	ASSERT_EQ(1, trace_read("gpubuf_alloc", &alloc, 1));
	n = trace_read("gpubuf_fault", self->ev, MAX_EVENTS);
	ASSERT_LE(1, n);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(1, field(&self->ev[i], "user"));
		if (field(&self->ev[i], "pmd") == 1) {
			EXPECT_EQ(0, field(&self->ev[i], "pgoff") % 512);
			EXPECT_EQ(0, field(&self->ev[i], "address") % SZ_2M);
			pmd++;
		}
	}
	/* As many PMD faults as the buffer has 2 MiB chunks we touched. */
	EXPECT_EQ(field(&alloc, "huge_chunks"), pmd)
		TH_LOG("%d faults, %d of them PMD", n, pmd);
	munmap(p, 4 * SZ_1M);
	close(fd);
}

/*
 * user=0: a page first reached by the kernel's own copy (a read() from a
 * pipe into the mapping, as copy_to_user() faults in kernel mode), not by
 * the CPU in user mode.
 */
TEST_F(trace, kernel_copy_faults_say_user_0)
{
	static const char *const ev[] = { "gpubuf_fault", NULL };
	char data[SZ_4K];
	int fd, pipefd[2], n, i;
	char *p;

	memset(data, 0x5a, sizeof(data));
	fd = gb_alloc(self->dev, SZ_2M);
	ASSERT_LE(0, fd);
	p = gb_map_at(fd, SZ_2M, PROT_READ | PROT_WRITE, 0, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(sizeof(data), write(pipefd[1], data, sizeof(data)));
	ASSERT_EQ(0, trace_start(ev));
	ASSERT_EQ(sizeof(data), read(pipefd[0], p, sizeof(data)));
	n = trace_read("gpubuf_fault", self->ev, MAX_EVENTS);
	ASSERT_LE(1, n);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, field(&self->ev[i], "user")) TH_LOG("%s", self->ev[i].line);
	EXPECT_EQ(0, memcmp(p, data, sizeof(data)));
	close(pipefd[0]);
	close(pipefd[1]);
	munmap(p, SZ_2M);
	close(fd);
}

/* result=-28: past max_total_bytes, after validation, with no pages. */
TEST_F(trace, alloc_past_the_total_limit_says_enospc)
{
	static const char *const ev[] = { "gpubuf_alloc", NULL };
	unsigned long long old = gb_param("max_total_bytes");
	unsigned long long live = gb_stat("live_bytes") + gb_stat("held_bytes");
	int ret;

	ASSERT_EQ(0, trace_start(ev));
	ASSERT_EQ(0, gb_set_param("max_total_bytes", live + SZ_1M));
	ret = gb_alloc(self->dev, SZ_2M);
	gb_set_param("max_total_bytes", old);
	ASSERT_EQ(-ENOSPC, ret);
	ASSERT_EQ(old, gb_param("max_total_bytes"));
	ASSERT_EQ(1, trace_read("gpubuf_alloc", self->ev, MAX_EVENTS));
	EXPECT_EQ(-ENOSPC, field(&self->ev[0], "result"));
	EXPECT_EQ(SZ_2M, field(&self->ev[0], "size"));
	EXPECT_EQ(0, field(&self->ev[0], "huge_chunks"));
	EXPECT_EQ(0, field(&self->ev[0], "small_pages"));
}

TEST_F(trace, importer_attach_map_sync_unmap_detach)
{
	static const char *const ev[] = {
		"gpubuf_attach", "gpubuf_map", "gpubuf_sync_begin",
		"gpubuf_sync_end", "gpubuf_unmap", "gpubuf_detach", NULL,
	};
	struct importer_map m = { .dir = IMPORTER_DIR_TO_DEVICE };
	char dev[40], dev2[40];
	int fd, imp;

	imp = open(IMPORTER_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, imp) TH_LOG("gpubuf_importer.ko is loaded by the test bed");
	fd = gb_alloc(self->dev, SZ_2M);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, trace_start(ev));
	m.fd = fd;
	ASSERT_EQ(0, gb_ioctl(imp, IMPORTER_IOC_MAP, &m));
	ASSERT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
	ASSERT_EQ(0, gb_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
	close(imp);
	close(fd);
	ASSERT_EQ(1, trace_read("gpubuf_attach", self->ev, MAX_EVENTS));
	EXPECT_EQ(SZ_2M, field(&self->ev[0], "size"));
	EXPECT_EQ(0, field(&self->ev[0], "result"));
	sfield(&self->ev[0], "dev", dev, sizeof(dev));
	EXPECT_NE(0, strlen(dev));
	ASSERT_EQ(1, trace_read("gpubuf_map", self->ev, MAX_EVENTS));
	EXPECT_STREQ(dev, sfield(&self->ev[0], "dev", dev2, sizeof(dev2)));
	EXPECT_EQ(1, field(&self->ev[0], "dir"));	/* DMA_TO_DEVICE */
	EXPECT_EQ(m.nents, field(&self->ev[0], "nents"));
	EXPECT_EQ(0, field(&self->ev[0], "shared"));
	EXPECT_EQ(0, field(&self->ev[0], "result"));
	/* Only bounce buffers need syncs on an x86 guest's coherent DMA. */
	EXPECT_EQ(swiotlb_forced(), field(&self->ev[0], "sync"));
	ASSERT_EQ(1, trace_read("gpubuf_sync_begin", self->ev, MAX_EVENTS));
	EXPECT_EQ(1, field(&self->ev[0], "mappings"));
	EXPECT_EQ(2, field(&self->ev[0], "dir"));	/* DMA_FROM_DEVICE: a read */
	ASSERT_EQ(1, trace_read("gpubuf_sync_end", self->ev, MAX_EVENTS));
	EXPECT_EQ(1, field(&self->ev[0], "mappings"));
	ASSERT_EQ(1, trace_read("gpubuf_unmap", self->ev, MAX_EVENTS));
	EXPECT_EQ(m.nents, field(&self->ev[0], "nents"));
	ASSERT_EQ(1, trace_read("gpubuf_detach", self->ev, MAX_EVENTS));
	EXPECT_STREQ(dev, sfield(&self->ev[0], "dev", dev2, sizeof(dev2)));
}

/*
 * shared: another attachment's mapping reused. An attachment mapped again
 * uses its own mapping (shared 0, as its first map); a second attachment
 * of the same device and direction reuses the first's (shared 1).
 */
TEST_F(trace, map_again_is_not_shared_another_attachment_is)
{
	static const char *const ev[] = { "gpubuf_map", NULL };
	struct importer_map m = { .dir = IMPORTER_DIR_TO_DEVICE };
	int fd, imp, imp2;

	imp = open(IMPORTER_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	imp2 = open(IMPORTER_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, imp) TH_LOG("gpubuf_importer.ko is loaded by the test bed");
	ASSERT_LE(0, imp2);
	fd = gb_alloc(self->dev, SZ_2M);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, trace_start(ev));
	m.fd = fd;
	ASSERT_EQ(0, gb_ioctl(imp, IMPORTER_IOC_MAP, &m));
	ASSERT_EQ(0, gb_ioctl(imp, IMPORTER_IOC_MAP_AGAIN, &m));
	m.fd = fd;
	ASSERT_EQ(0, gb_ioctl(imp2, IMPORTER_IOC_MAP, &m));
	close(imp2);
	close(imp);
	close(fd);
	ASSERT_EQ(3, trace_read("gpubuf_map", self->ev, MAX_EVENTS));
	EXPECT_EQ(0, field(&self->ev[0], "shared"));
	EXPECT_EQ(0, field(&self->ev[1], "shared"));
	EXPECT_EQ(1, field(&self->ev[2], "shared"));
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, field(&self->ev[i], "result"));
}

/* Released while pinned: held; unpinned: no longer held, soon. */
TEST_F(trace, release_while_pinned_is_held_then_unheld)
{
	static const char *const ev[] = {
		"gpubuf_release", "gpubuf_held", "gpubuf_unheld", NULL,
	};
	struct pinprobe_req req = { .len = SZ_2M, .op = PINPROBE_OP_PIN_HOLD };
	int fd, probe, i, n = 0;
	char *p;

	fd = gb_alloc(self->dev, SZ_2M);
	ASSERT_LE(0, fd);
	p = mmap(NULL, SZ_2M, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	probe = open(PINPROBE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, probe);
	req.addr = (uintptr_t)p;
	ASSERT_EQ(0, gb_ioctl(probe, PINPROBE_IOC_RUN, &req));
	ASSERT_EQ(0, trace_start(ev));
	munmap(p, SZ_2M);
	close(fd);
	ASSERT_EQ(1, trace_read("gpubuf_release", self->ev, MAX_EVENTS));
	EXPECT_EQ(SZ_2M, field(&self->ev[0], "held"));
	ASSERT_EQ(1, trace_read("gpubuf_held", self->ev, MAX_EVENTS));
	EXPECT_EQ(SZ_2M, field(&self->ev[0], "bytes"));
	EXPECT_LE(SZ_2M, field(&self->ev[0], "held_bytes"));
	close(probe);
	/* The held list is scanned within a second of the release. */
	for (i = 0; i < 100 && !n; i++) {
		usleep(100 * 1000);
		n = trace_read("gpubuf_unheld", self->ev, MAX_EVENTS);
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(SZ_2M, field(&self->ev[0], "bytes"));
}

/* The reserve fills, lends a chunk, and gives chunks back when shrunk. */
TEST_F(trace, reserve_fill_take_shrink)
{
	static const char *const ev[] = {
		"gpubuf_reserve_fill", "gpubuf_reserve_take",
		"gpubuf_reserve_shrink", "gpubuf_alloc", NULL,
	};
	int fd, n, i;

	ASSERT_EQ(0, trace_start(ev));
	/* The write returns once the reserve is filled. */
	ASSERT_EQ(0, gb_set_param("reserve_bytes", 4 * SZ_1M));
	ASSERT_EQ(0, rsv_wait_zeroed());
	ASSERT_EQ(4 * SZ_1M, gb_stat("reserve_ready_bytes"));
	n = trace_read("gpubuf_reserve_fill", self->ev, MAX_EVENTS);
	EXPECT_EQ(2, n);
	for (i = 0; i < n; i++)
		EXPECT_LE(0, field(&self->ev[i], "node"));
	fd = gb_alloc(self->dev, SZ_2M);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, trace_read("gpubuf_reserve_take", self->ev, MAX_EVENTS));
	EXPECT_LE(0, field(&self->ev[0], "node"));
	EXPECT_EQ(0, field(&self->ev[0], "zeroed_now"));
	ASSERT_EQ(1, trace_read("gpubuf_alloc", self->ev, MAX_EVENTS));
	EXPECT_EQ(1, field(&self->ev[0], "reserve_chunks"));
	close(fd);
	/* The shrinker runs on drop_caches; the one idle chunk goes. */
	gb_write_str("/proc/sys/vm/drop_caches", "2");
	n = trace_read("gpubuf_reserve_shrink", self->ev, MAX_EVENTS);
	EXPECT_LE(1, n);
	for (i = 0; i < n; i++)
		EXPECT_LE(1, field(&self->ev[i], "chunks"));
	gb_set_param("reserve_bytes", 0);
}

TEST_HARNESS_MAIN
