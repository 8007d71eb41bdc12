// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: gpubuf memory is charged to the caller's memory cgroup; a
 * cgroup limit is an ENOMEM for the caller, never an OOM kill, and a
 * killed or refused allocation leaves no pages or counters behind.
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "gpubuf_helpers.h"
#include "kselftest_harness.h"

#define CGROOT "/sys/fs/cgroup"

static unsigned long long cg_read_key(const char *cg, const char *file,
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

static unsigned long long cg_current(const char *cg)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/memory.current", cg);
	return gb_read_u64(path);
}

static int cg_write(const char *cg, const char *file, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return gb_write_str(path, text);
}

FIXTURE(memcg) {
	char path[128];
};

FIXTURE_SETUP(memcg)
{
	snprintf(self->path, sizeof(self->path), CGROOT "/gpubuf-test-%d",
		 getpid());
	ASSERT_EQ(0, gb_write_str(CGROOT "/cgroup.subtree_control", "+memory"))
		TH_LOG("cgroup2 with the memory controller is mounted by the test bed");
	ASSERT_EQ(0, mkdir(self->path, 0755));
	ASSERT_EQ(0, cg_write(self->path, "memory.max", "32M"));
}

FIXTURE_TEARDOWN(memcg)
{
	rmdir(self->path);
}

/*
 * Exit codes of the child that runs inside the cgroup: 0 all good,
 * 10 + n for the n-th failed expectation.
 */
static int child_in_cgroup(const char *cg)
{
	unsigned long long before, charged, after;
	int dev, fd, ret;

	if (cg_write(cg, "cgroup.procs", "0"))
		return 10;
	dev = gb_open();
	if (dev < 0)
		return 11;
	/* Four times the limit: the caller gets ENOMEM and survives. */
	ret = gb_alloc(dev, 128 * SZ_1M);
	if (ret != -ENOMEM)
		return 12;
	/* Within the limit it works and is charged to this cgroup. */
	before = cg_current(cg);
	fd = gb_alloc(dev, 8 * SZ_1M);
	if (fd < 0)
		return 13;
	charged = cg_current(cg);
	if (charged < before + 8 * SZ_1M)
		return 14;
	close(fd);
	after = cg_current(cg);
	if (after > before + SZ_1M / 2)
		return 15;
	close(dev);
	return 0;
}

TEST_F(memcg, limit_is_enomem_not_oom_kill)
{
	unsigned long long bytes = gb_stat("live_bytes");
	unsigned long long failed, peak;
	int status, dev, fd;
	pid_t pid;

	/* A peak above what the child will hold: only refusals could raise it. */
	dev = gb_open();
	ASSERT_LE(0, dev);
	fd = gb_alloc(dev, 16 * SZ_1M);
	ASSERT_LE(0, fd);
	close(fd);
	close(dev);
	peak = gb_stat("peak_bytes");
	failed = gb_stat("failed_allocs");

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(child_in_cgroup(self->path));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status)) {
		TH_LOG("child killed by signal %d", WTERMSIG(status));
	}
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, cg_read_key(self->path, "memory.events", "oom_kill"));
	EXPECT_EQ(bytes, gb_stat("live_bytes"));
	EXPECT_EQ(failed + 1, gb_stat("failed_allocs"));
	/* The refused 128 MiB never existed, so it is not a peak. */
	EXPECT_EQ(peak, gb_stat("peak_bytes"));
	/* Everything charged by the refused and the freed buffer is gone. */
	EXPECT_GT(4 * SZ_1M, cg_current(self->path));
}

TEST(killed_allocation_leaves_nothing)
{
	unsigned long long buffers = gb_stat("live_buffers");
	unsigned long long bytes = gb_stat("live_bytes");
	int status, i;
	pid_t pid;

	/* Kill a child in the middle of a large allocation, several times. */
	for (i = 0; i < 3; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			int dev = gb_open();

			for (;;)
				close(gb_alloc(dev, 512 * SZ_1M));
		}
		usleep(200000 + i * 150000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
	}
	EXPECT_EQ(buffers, gb_stat("live_buffers"));
	EXPECT_EQ(bytes, gb_stat("live_bytes"));
}

TEST_HARNESS_MAIN
