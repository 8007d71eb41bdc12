// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory pressure beside the workers: round after round, a child process
 * in a cgroup whose memory.max is small fills it with gpubuf buffers until
 * the cgroup refuses (ENOMEM, never an OOM kill: gpubuf's promise), maps
 * and checks what it got, and exits. A few rounds instead run the cgroup
 * out of anonymous memory while holding mapped and imported buffers: the
 * memory cgroup's OOM killer must kill that child, and only it.
 *
 * The kernel prints a call trace with every OOM kill. The test announces
 * each deliberate one on /dev/kmsg, with the cgroup's path, before the
 * child starts and after it is reaped; tests/vm/guest-tap.awk excuses the
 * call trace of an OOM report inside such a window only when the report
 * names that cgroup as the one out of memory.
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "gpubuf_stress.h"

#define CGROOT "/sys/fs/cgroup"

/* Exit codes of a pressure child. */
enum {
	PX_ENOMEM,		/* the cgroup refused with ENOMEM */
	PX_ENOSPC,		/* max_total_bytes refused first */
	PX_MAP_ENOMEM,		/* as PX_ENOMEM, and an mmap() too */
	PX_CGROUP = 10,		/* could not join the cgroup */
	PX_OPEN,		/* could not open /dev/gpubuf */
	PX_ERRNO,		/* an allocation failed otherwise */
	PX_NOT_ZERO,		/* a new buffer was not zeroed */
	PX_MAP_ERRNO,		/* mmap() failed otherwise than ENOMEM */
	PX_IMPORT,		/* a PRIME import failed otherwise than ENOMEM */
	PX_FULL,		/* 512 buffers and still no refusal */
	PX_SURVIVED = 40,	/* an OOM round was not killed */
};

int stress_pressure_setup(struct stress_pressure *p)
{
	char text[32];

	snprintf(p->cg, sizeof(p->cg), CGROOT "/gpubuf-stress-%d", getpid());
	if (gb_write_str(CGROOT "/cgroup.subtree_control", "+memory"))
		return -errno;
	if (mkdir(p->cg, 0755))
		return -errno;
	snprintf(text, sizeof(text), "%llu", p->cfg->cg_max);
	if (gb_cg_write(p->cg, "memory.max", text))
		return -errno;
	/* No swap in the guest; none for this cgroup wherever it runs. */
	gb_cg_write(p->cg, "memory.swap.max", "0");
	p->ready = 1;
	return 0;
}

void stress_pressure_teardown(struct stress_pressure *p)
{
	if (p->ready && rmdir(p->cg))
		stress_fail(&p->fails, "pressure: rmdir %s: %s", p->cg,
			    strerror(errno));
	p->ready = 0;
}

static void kmsg(const char *fmt, const char *arg)
{
	char line[256];

	snprintf(line, sizeof(line), fmt, arg);
	if (gb_write_str("/dev/kmsg", line))
		stress_fail(NULL, "pressure: writing to /dev/kmsg: %s",
			    strerror(errno));
}

/*
 * Fault in what the child will write after joining the cgroup (its stack,
 * errno's page), so that once the cgroup is full no page fault of the
 * child's own needs a charge: such a charge would be an OOM kill, which is
 * the kernel's answer to a fault, not gpubuf's.
 */
static __attribute__((noinline)) void prefault(void)
{
	volatile char stack[96 * 1024];
	size_t i;

	for (i = 0; i < sizeof(stack); i += 1024)
		stack[i] = 0;
	errno = 0;
}

/* Buffers of 1 to 16 MiB until the cgroup (or max_total_bytes) refuses. */
static int fill_round(int dev, int vgem, uint64_t rnd)
{
	uint64_t size[512];
	int fd[512], n = 0, ret = 0, code, i;
	uint32_t handle;

	while (n < 512) {
		size[n] = (1 + (rnd >> (n % 48)) % 16) * SZ_1M;
		ret = gb_alloc(dev, size[n]);
		if (ret < 0)
			break;
		fd[n++] = ret;
	}
	if (ret >= 0)
		return PX_FULL;
	if (ret != -ENOMEM && ret != -ENOSPC)
		return PX_ERRNO;
	code = ret == -ENOMEM ? PX_ENOMEM : PX_ENOSPC;
	/* Room for the page tables of what follows. */
	if (n)
		close(fd[--n]);
	for (i = 0; i < n; i++) {
		uint64_t *w = mmap(NULL, size[i], PROT_READ | PROT_WRITE,
				   MAP_SHARED, fd[i], 0);
		size_t j;

		if (w == MAP_FAILED) {
			if (errno != ENOMEM)
				return PX_MAP_ERRNO;
			if (code == PX_ENOMEM)
				code = PX_MAP_ENOMEM;
			break;
		}
		for (j = 0; j < size[i] / 8; j += SZ_4K / 8) {
			if (w[j])
				return PX_NOT_ZERO;
			w[j] = j;
		}
		munmap(w, size[i]);
	}
	if (n && vgem >= 0) {
		ret = vgem_import(vgem, fd[0], &handle);
		if (ret && ret != -ENOMEM)
			return PX_IMPORT;
		if (!ret)
			vgem_close_handle(vgem, handle);
	}
	while (n)
		close(fd[--n]);
	return code;
}

/*
 * Hold a mapped, imported buffer and touch anonymous memory past the
 * cgroup's limit: the memory cgroup's OOM killer ends the child.
 */
static int oom_round(int dev, int vgem, unsigned long long cg_max)
{
	size_t len = 4 * cg_max, i;
	uint32_t handle;
	char *anon;
	void *p;
	int fd;

	fd = gb_alloc(dev, 16 * SZ_1M);
	if (fd >= 0) {
		p = mmap(NULL, 16 * SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0);
		if (p != MAP_FAILED)
			memset(p, 0x5a, 16 * SZ_1M);
		if (vgem >= 0)
			vgem_import(vgem, fd, &handle);
	}
	anon = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (anon == MAP_FAILED)
		return PX_SURVIVED + 1;
	for (i = 0; i < len; i += SZ_4K)
		anon[i] = 1;
	return PX_SURVIVED;
}

static int pressure_child(const struct stress_pressure *p, int oom,
			  uint64_t rnd)
{
	int dev, vgem = vgem_open();

	prefault();
	if (gb_cg_write(p->cg, "cgroup.procs", "0"))
		return PX_CGROUP;
	dev = gb_open();
	if (dev < 0)
		return PX_OPEN;
	if (oom)
		return oom_round(dev, vgem, p->cfg->cg_max);
	return fill_round(dev, vgem, rnd);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pressure_round(struct stress_pressure *p, int oom, uint64_t rnd)
{
	unsigned long long kills = gb_cg_read_key(p->cg, "memory.events",
						 "oom_kill");
	unsigned long long after;
	int status, reaped;
	pid_t pid;

	if (oom)
		kmsg("gpubuf-stress: oom-kill expected in memcg %s\n",
		     p->cg + strlen(CGROOT));
	pid = fork();
	if (pid == 0)
		_exit(pressure_child(p, oom, rnd));
	reaped = pid > 0 && waitpid(pid, &status, 0) == pid;
	if (!reaped)
		stress_fail(&p->fails, "pressure: fork or wait: %s",
			    strerror(errno));
	after = gb_cg_read_key(p->cg, "memory.events", "oom_kill");
	/* Closed even on failure: later splats must not pass as this one. */
	if (oom)
		kmsg("gpubuf-stress: oom-kill window closed%s\n", "");
	if (!reaped)
		return;
	p->rounds++;
	if (oom) {
		p->oom_rounds++;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
		    after == kills + 1)
			p->oom_killed++;
		else
			stress_fail(&p->fails, "pressure: OOM round: status %#x, oom_kill %llu -> %llu",
				    status, kills, after);
		return;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) > PX_MAP_ENOMEM ||
	    after != kills) {
		stress_fail(&p->fails, "pressure: fill round: %s %d, oom_kill %llu -> %llu",
			    WIFEXITED(status) ? "exit" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) :
						WTERMSIG(status), kills, after);
		return;
	}
	p->enomem_rounds += WEXITSTATUS(status) != PX_ENOSPC;
	p->enospc_rounds += WEXITSTATUS(status) == PX_ENOSPC;
	p->map_enomem += WEXITSTATUS(status) == PX_MAP_ENOMEM;
}

/* Fill rounds back to back; the OOM rounds spread evenly over the run. */
void *stress_pressure_main(void *arg)
{
	struct stress_pressure *p = arg;
	const struct stress_config *cfg = p->cfg;
	double start = now_s();
	uint64_t rng = cfg->seed ^ 0x5bd1e995;
	int done = 0;

	while (!stress_stopping()) {
		double due = start + (done + 0.5) * cfg->seconds /
				     (cfg->oom_rounds ? cfg->oom_rounds : 1);
		int oom = done < cfg->oom_rounds && now_s() >= due;

		pressure_round(p, oom, stress_rand(&rng));
		done += oom;
		usleep(50000);
	}
	return NULL;
}
