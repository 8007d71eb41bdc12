/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The gpubuf stress test: worker threads, the rmmod prober, the process
 * in a memory-limited cgroup and the reserve's keeper share these
 * declarations.
 */
#ifndef GPUBUF_STRESS_H
#define GPUBUF_STRESS_H

#include <pthread.h>
#include <stdint.h>

#include "../selftests/gpubuf_helpers.h"

/* Buffers one worker holds at most. */
#define STRESS_SLOTS	6

/* What the workers did, summed over all of them at the end. */
enum stress_count {
	SC_ALLOC,
	SC_ALLOC_RDONLY,
	SC_EFBIG,
	SC_ENOSPC,
	SC_ENOMEM,
	SC_BURST,
	SC_MAP,
	SC_MAP_ENOMEM,
	SC_WRITE,
	SC_VERIFY,
	SC_WORDS,
	SC_SYNC,
	SC_IMPORT,
	SC_IMPORT_ENOMEM,
	SC_UNIMPORT,
	SC_INFO,
	SC_INFO_FOREIGN,
	SC_PASS,
	SC_FORK,
	SC_CLOSE_FD,
	SC_UNMAP,
	SC_FREE,
	SC_REOPEN,
	SC_RSV_BUFS,	/* fresh buffers the reserve lent 2 MiB pages to */
	SC_RSV_CHUNKS,	/* the 2 MiB pages it lent them */
	SC_NR
};

extern const char *const stress_count_names[SC_NR];

struct stress_config {
	int threads;
	int seconds;
	uint64_t seed;
	unsigned long long max_buffer;	/* max_buffer_bytes during the run */
	unsigned long long max_total;	/* max_total_bytes during the run */
	unsigned long long cg_max;	/* memory.max of the pressure cgroup */
	int oom_rounds;			/* deliberate OOM kills to cause */
};

/*
 * One buffer as a worker sees it. It is alive while any of @fd, @map or
 * @handle holds it; @seed is the pattern its pages carry (0: still zero).
 */
struct stress_slot {
	int fd;
	int rdonly;
	void *map;
	uint32_t handle;
	uint64_t size;
	uint64_t seed;
};

struct stress_worker {
	pthread_t thread;
	const struct stress_config *cfg;
	int id;
	uint64_t rng;
	int dev;
	int vgem;
	struct stress_slot slot[STRESS_SLOTS];
	unsigned long n[SC_NR];
	unsigned long fails;
};

/* The pressure process's tally, read by the main thread at the end. */
struct stress_pressure {
	pthread_t thread;
	const struct stress_config *cfg;
	char cg[128];
	int ready;		/* the cgroup exists and limits memory */
	unsigned long rounds;
	unsigned long enomem_rounds;	/* ended on the cgroup's ENOMEM */
	unsigned long enospc_rounds;	/* ended on max_total_bytes first */
	unsigned long map_enomem;
	unsigned long oom_rounds;
	unsigned long oom_killed;	/* SIGKILLed and counted as oom_kill */
	unsigned long fails;
};

/* Buffers the reserve's keeper holds pinned past their release at most. */
#define STRESS_HOLDS	4

/* A released buffer that gpubuf_pinprobe still pins: its chunks are held. */
struct stress_hold {
	int probe;
	uint64_t addr;
	uint64_t size;
	uint64_t sum;		/* what PINPROBE_OP_HELD_SUM must read */
};

/*
 * The reserve's keeper: resizes reserve_bytes while the workers allocate,
 * holds pinned chunks, and runs the machine short of memory now and then
 * until the reserve's shrinker gives pages back.
 */
struct stress_reserve {
	pthread_t thread;
	const struct stress_config *cfg;
	uint64_t rng;
	int ready;			/* reserve_bytes and the pin probe exist */
	unsigned long long old_reserve;	/* restored at the end */
	unsigned long long half_ram;	/* the most reserve_bytes takes */
	unsigned long long held_before;	/* held_bytes of others, at the start */
	unsigned long resizes;
	unsigned long resize_zero;	/* of them to 0 */
	unsigned long resize_refused;	/* non-numbers, refused as they must */
	unsigned long over;		/* above half of RAM, before a squeeze */
	unsigned long held_releases;	/* buffers released while pinned */
	unsigned long held_seen;	/* counted in held_bytes right after */
	unsigned long unpins;		/* pins dropped, their data checked */
	unsigned long squeezes;		/* rounds of memory pressure */
	unsigned long squeezes_shrunk;	/* of them, the shrinker gave back */
	unsigned long squeezes_skipped;	/* nothing free in the reserve */
	unsigned long long shrunk_bytes;	/* given back during squeezes */
	unsigned long long squeezed_huge;	/* taken into the hugetlb pool */
	unsigned long long squeezed_anon;	/* anonymous memory, at most */
	int nholds;
	struct stress_hold holds[STRESS_HOLDS];
	unsigned long fails;
};

int stress_stopping(void);
void stress_pause_workers(void);
void stress_resume_workers(void);
void stress_pause_point(void);
void stress_worker_running(int delta);
uint64_t stress_rand(uint64_t *state);
void stress_fail(unsigned long *fails, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void *stress_worker_main(void *arg);
void stress_worker_release(struct stress_worker *w);

int stress_pressure_setup(struct stress_pressure *p);
void *stress_pressure_main(void *arg);
void stress_pressure_teardown(struct stress_pressure *p);

int stress_reserve_setup(struct stress_reserve *r);
void *stress_reserve_main(void *arg);
int stress_reserve_settles(struct stress_reserve *r, char *why, size_t len);

#endif /* GPUBUF_STRESS_H */
