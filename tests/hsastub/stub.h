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
 * Signals (stub_memory.c) hold atomic values. A wait polls while any
 * queue has packets outstanding that could still change the value, up
 * to its timeout hint (in ns); waiting for more than a second in all
 * with nothing outstanding and an unmet condition, a real runtime would
 * block for ever: the stand-in counts a violation, writes its report and
 * aborts, so the test fails at once instead of hanging. A queue error
 * (hsastub_fault_next(), stub_queue.c) suspends a queue as ROCr does,
 * and its packets stay outstanding: a wait for them never ends, as with
 * ROCr, and a test bounds it itself. Pool
 * allocations are host memory, a GPU pool's standing in for device
 * memory; hsa_amd_agents_allow_access records one bit per agent.
 *
 * For gpubuf-bench's hsa mode (stub_copy.c): hsa_amd_memory_async_copy
 * is a memcpy done at once, then a decrement of the completion signal,
 * after it checked that the GPU agent may reach both sides (its own
 * pool, a block of a CPU pool it was allowed to access, or the agent
 * pointer of a lock that names it). Only host<->GPU copies are stood in
 * for. For a dispatcher (stub_dispatch.c, stub_queue.c): ISAs, code
 * objects, executables and AQL queues whose doorbells complete packets.
 *
 * Misuse a real runtime would punish (calls before hsa_init, locking a
 * range twice or one that is not mapped, unlocking what is not locked or
 * is no longer mapped, a pool of a GPU agent) counts as a violation.
 */
#ifndef HSASTUB_STUB_H
#define HSASTUB_STUB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hsa/hsa_runtime.h"	/* GPUBUF_HSA_ENTRIES, hsa.h, hsa_ext_amd.h */

#define STUB_EXPORT __attribute__((visibility("default")))

#define STUB_MAX_GPUS		8
#define STUB_MAX_LOCKS		256
#define STUB_MAX_FAULTS		16
#define STUB_MAX_ALLOCS		64
/* A dispatcher keeps a signal per kernarg slot (128 per agent) alive. */
#define STUB_MAX_SIGNALS	1024
/* Signal handles: this base plus the slot number. */
#define STUB_SIGNAL_BASE	0x51000000u

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

/* A hsa_amd_memory_pool_allocate block (stub_memory.c). */
struct stub_alloc {
	int live;
	void *ptr;
	size_t size;
	uint64_t pool;
	uint64_t allowed;	/* agents, stub_agent_bit() each */
};

struct stub_queue;

struct stub_signal {
	_Atomic int64_t value;
	int live;
	struct stub_queue *queue;	/* a doorbell's queue (stub_queue.c) */
	uint64_t idle_ns;		/* waited with nothing pending */
};

struct stub_state {
	/* configuration */
	int n_gpus;
	int no_fine_pool;
	uint32_t pci_domain[STUB_MAX_GPUS];	/* HSA_AMD_AGENT_INFO_DOMAIN */
	uint32_t pci_bdf[STUB_MAX_GPUS];	/* HSA_AMD_AGENT_INFO_BDFID */
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
	struct stub_alloc alloc[STUB_MAX_ALLOCS];
	struct stub_signal signal[STUB_MAX_SIGNALS];
	unsigned int copy_gpus;			/* GPU indexes copies used */

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
 * then "hsa_init first". 0 to go on with the lock held, else the status
 * to return (unlocked). stub_end() unlocks and returns s.
 */
hsa_status_t stub_begin(int fn, int need_init);
hsa_status_t stub_end(hsa_status_t s);

#define STUB_BEGIN(name, need_init)					\
	do {								\
		hsa_status_t stub_s_ = stub_begin(STUB_ID_##name, need_init); \
		if (stub_s_ != HSA_STATUS_SUCCESS)			\
			return stub_s_;					\
	} while (0)

int stub_is_gpu(uint64_t h);
int stub_is_agent(uint64_t h);

/*
 * An agent's bit in stub_alloc.allowed: GPU agent i bit i, the CPU
 * agents the two after STUB_MAX_GPUS; 0 for what is no agent.
 */
uint64_t stub_agent_bit(uint64_t h);

/*
 * Count a call that has no status to fail with (no fault injection),
 * with stub_lock taken; the caller unlocks.
 */
void stub_count(int fn);

/* Signals and pool blocks (stub_memory.c); all under stub_lock. */
struct stub_signal *stub_signal_new(int64_t value);
void stub_signal_free(struct stub_signal *sig);
uint64_t stub_signal_handle(const struct stub_signal *sig);
/* The live signal of a handle, or NULL and a violation naming what. */
struct stub_signal *stub_signal_of(uint64_t h, const char *what);
struct stub_alloc *stub_alloc_at(const void *ptr);

/*
 * Queues (stub_queue.c), under stub_lock: ring a doorbell; whether any
 * queue has packets reserved or handed over but not yet completed.
 */
void stub_doorbell(struct stub_queue *q, hsa_signal_value_t value);
int stub_queues_pending(void);

/*
 * Live objects of a kind (stub_query.c): "lock", "alloc", "signal" (not
 * doorbells: they belong to their queues), "queue", "reader",
 * "executable"; -1 for another kind. Under stub_lock.
 */
int stub_live(const char *kind);

/* Write the HSASTUB_REPORT file, if asked for; stub_lock not held. */
void stub_report(void);

/* hsa_agent_get_info attributes for dispatching; under stub_lock. */
hsa_status_t stub_agent_info_dispatch(uint64_t agent, int gpu,
				      hsa_agent_info_t attribute, void *value);

#endif /* HSASTUB_STUB_H */
