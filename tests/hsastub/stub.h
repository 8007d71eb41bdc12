/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for ROCm's libhsa-runtime64.so.1, for libgpubuf's tests
 * only. It touches no GPU and proves nothing about GPUs: it checks how
 * the library drives the runtime (which calls, with which arguments,
 * balanced or not) and lets tests make any call fail.
 *
 * It exports the HSA entry points libgpubuf resolves (GPUBUF_HSA_ENTRIES),
 * defined with the prototypes of Debian's hsa.h and hsa_ext_amd.h, and
 * hsastub_* queries for tests (stub_query.c), found with dlsym.
 *
 * The platform it pretends to be, in enumeration order: CPU agent 0,
 * HSASTUB_GPUS GPU agents, CPU agent 1 (a second NUMA node). CPU agents
 * have a coarse-grained global pool, then a fine-grained (and kernarg)
 * one, then a group-segment pool; each GPU a coarse-grained global pool.
 * A lock's agent pointer is the host pointer with bits 48-55 set to 0xa5,
 * distinct from the host pointer on purpose.
 *
 * Misuse a real runtime would punish (calls before hsa_init, locking a
 * range twice or one that is not mapped, unlocking what is not locked or
 * is no longer mapped, a pool of a GPU agent) counts as a violation.
 */
#ifndef HSASTUB_STUB_H
#define HSASTUB_STUB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hsa_runtime.h"	/* GPUBUF_HSA_ENTRIES, hsa.h, hsa_ext_amd.h */

#define STUB_EXPORT __attribute__((visibility("default")))

#define STUB_MAX_GPUS		8
#define STUB_MAX_LOCKS		256
#define STUB_MAX_FAULTS		16

#define STUB_CPU0		0xc000u
#define STUB_CPU1		0xc100u
#define STUB_GPU(i)		(0x9000u + 0x100u * (unsigned int)(i))
/* Pools: agent handle + 1 coarse, + 2 fine (CPU) , + 3 group segment. */
#define STUB_AGENT_PTR(p)	((uintptr_t)(p) | (uintptr_t)0xa5 << 48)

/* Function ids: GPUBUF_HSA_ENTRIES in order. */
#define STUB_ID(name) STUB_ID_##name,
enum { GPUBUF_HSA_ENTRIES(STUB_ID) STUB_NFN };
#undef STUB_ID

extern const char *const stub_fn_names[STUB_NFN];

struct stub_lock {
	int live;
	const void *ptr;
	size_t size;
	void *agent_ptr;
	int fn;			/* which lock call made it */
	uint64_t pool;		/* 0 for hsa_amd_memory_lock */
	int n;
	uint64_t agents[STUB_MAX_GPUS + 2];
};

struct stub_state {
	/* configuration */
	int n_gpus;
	int no_fine_pool;
	hsa_status_t init_result;
	struct {
		int fn;
		unsigned long nth;	/* 0: every call */
		hsa_status_t s;
	} fault[STUB_MAX_FAULTS];
	int nfault;

	/* runtime state */
	int inited;
	struct stub_lock lock[STUB_MAX_LOCKS];

	/* what tests read */
	unsigned long calls[STUB_NFN];		/* since hsastub_reset_log() */
	unsigned long calls_total[STUB_NFN];	/* since load */
	struct stub_lock last_lock;		/* arguments of the last lock */
	const void *last_unlock;
	unsigned long violations;
	char first_violation[256];
};

extern pthread_mutex_t stub_lock;
extern struct stub_state S;

/* The status's name, or NULL. */
const char *stub_status_name(hsa_status_t s);

__attribute__((format(printf, 1, 2)))
void stub_violation(const char *fmt, ...);

/*
 * Start a call with stub_lock held: count it, then an injected fault,
 * then "hsa_init first". 0 to go on (stub_lock held, released by
 * stub_end()), else the status to return (unlocked).
 */
hsa_status_t stub_begin(int fn, int need_init);
hsa_status_t stub_end(hsa_status_t s);
int stub_is_gpu(uint64_t h);

/* hsa_agent_get_info attributes for dispatching; under stub_lock. */
hsa_status_t stub_agent_info_dispatch(uint64_t agent, int gpu,
				      hsa_agent_info_t attribute, void *value);

#endif /* HSASTUB_STUB_H */
