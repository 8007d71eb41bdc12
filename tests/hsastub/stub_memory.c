// SPDX-License-Identifier: MIT
/*
 * The stand-in's signals and pool memory, shared by gpubuf-bench's
 * copies (stub_copy.c) and a dispatcher's queues (stub_queue.c); stub.h
 * says what they stand for. Misuse counts as a violation, as in stub.c:
 * a signal that does not exist or a doorbell destroyed by hand, freeing
 * or allowing access to what was not allocated, a wait no pending work
 * could ever end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "stub_dispatch.h"

/* ---- signals ------------------------------------------------------------ */

uint64_t stub_signal_handle(const struct stub_signal *sig)
{
	return STUB_SIGNAL_BASE + (uint64_t)(sig - S.signal);
}

struct stub_signal *stub_signal_of(uint64_t h, const char *what)
{
	uint64_t i = h - STUB_SIGNAL_BASE;

	if (h >= STUB_SIGNAL_BASE && i < STUB_MAX_SIGNALS && S.signal[i].live)
		return &S.signal[i];
	stub_violation("%s of signal 0x%llx, which does not exist", what,
		       (unsigned long long)h);
	return NULL;
}

struct stub_signal *stub_signal_new(int64_t value)
{
	for (int i = 0; i < STUB_MAX_SIGNALS; i++) {
		struct stub_signal *sig = &S.signal[i];

		if (sig->live)
			continue;
		sig->live = 1;
		sig->queue = NULL;
		sig->idle_ns = 0;
		atomic_store(&sig->value, value);
		return sig;
	}
	return NULL;
}

void stub_signal_free(struct stub_signal *sig)
{
	sig->live = 0;
	sig->queue = NULL;
}

STUB_EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial_value,
					   uint32_t num_consumers,
					   const hsa_agent_t *consumers,
					   hsa_signal_t *signal)
{
	struct stub_signal *sig;

	STUB_BEGIN(hsa_signal_create, 1);
	if (!signal || (num_consumers && !consumers))
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	for (uint32_t i = 0; i < num_consumers; i++)
		if (!stub_is_agent(consumers[i].handle))
			return stub_end(HSA_STATUS_ERROR_INVALID_AGENT);
	sig = stub_signal_new(initial_value);
	if (!sig)
		return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
	signal->handle = stub_signal_handle(sig);
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t signal)
{
	struct stub_signal *sig;

	STUB_BEGIN(hsa_signal_destroy, 1);
	sig = stub_signal_of(signal.handle, "hsa_signal_destroy");
	if (sig && sig->queue) {
		stub_violation("hsa_signal_destroy of a queue's doorbell");
		sig = NULL;
	}
	if (!sig)
		return stub_end((hsa_status_t)HSA_STATUS_ERROR_INVALID_SIGNAL);
	stub_signal_free(sig);
	return stub_end(HSA_STATUS_SUCCESS);
}

/* Both stores: a doorbell's rings its queue (stub_queue.c). */
static void stub_signal_store(int fn, hsa_signal_t signal,
			      hsa_signal_value_t value)
{
	struct stub_signal *sig;

	stub_count(fn);
	sig = stub_signal_of(signal.handle, stub_fn_names[fn]);
	if (sig) {
		atomic_store(&sig->value, value);
		if (sig->queue)
			stub_doorbell(sig->queue, value);
	}
	pthread_mutex_unlock(&stub_lock);
}

STUB_EXPORT void hsa_signal_store_relaxed(hsa_signal_t signal,
					  hsa_signal_value_t value)
{
	stub_signal_store(STUB_ID_hsa_signal_store_relaxed, signal, value);
}

STUB_EXPORT void hsa_signal_store_screlease(hsa_signal_t signal,
					    hsa_signal_value_t value)
{
	stub_signal_store(STUB_ID_hsa_signal_store_screlease, signal, value);
}

/* 1 if met, 0 if not, -1 for no condition of hsa.h's. */
static int stub_condition(hsa_signal_value_t v,
			  hsa_signal_condition_t condition,
			  hsa_signal_value_t cmp)
{
	switch (condition) {
	case HSA_SIGNAL_CONDITION_EQ: return v == cmp;
	case HSA_SIGNAL_CONDITION_NE: return v != cmp;
	case HSA_SIGNAL_CONDITION_LT: return v < cmp;
	case HSA_SIGNAL_CONDITION_GTE: return v >= cmp;
	}
	return -1;
}

static uint64_t stub_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How long a wait with nothing pending polls for a store by another thread. */
#define STUB_IDLE_WAIT_NS	1000000000u

/*
 * Polls until the condition is met or timeout_hint has passed, in ticks
 * of HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY (1 GHz here, stub_copy.c). A
 * wait may also end on a queue's progress, as ROCr's may end early: the
 * caller checks the value. While nothing is pending that could change
 * the value, the time waited adds up per signal, across calls (so a
 * caller that loops over short waits is caught too); past
 * STUB_IDLE_WAIT_NS a real runtime would never return, so the stand-in
 * reports a violation and aborts (stub.h). A suspended queue's packets
 * stay pending (stub_queue.c): a wait for them polls for ever, as with
 * ROCr.
 */
STUB_EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(
	hsa_signal_t signal, hsa_signal_condition_t condition,
	hsa_signal_value_t compare_value, uint64_t timeout_hint,
	hsa_wait_state_t wait_state_hint)
{
	hsa_signal_value_t v = 0;
	struct stub_signal *sig;
	uint64_t start = stub_now_ns(), last = start;
	int met;

	stub_count(STUB_ID_hsa_signal_wait_scacquire);
	sig = stub_signal_of(signal.handle, "hsa_signal_wait_scacquire");
	while (sig) {
		uint64_t now = stub_now_ns();

		v = atomic_load(&sig->value);
		met = stub_condition(v, condition, compare_value);
		if (met < 0 || (wait_state_hint != HSA_WAIT_STATE_BLOCKED &&
				wait_state_hint != HSA_WAIT_STATE_ACTIVE)) {
			stub_violation("hsa_signal_wait_scacquire with condition %d, wait state %d",
				       (int)condition, (int)wait_state_hint);
			break;
		}
		if (met) {
			sig->idle_ns = 0;
			break;
		}
		if (stub_queues_pending())
			sig->idle_ns = 0;
		else
			sig->idle_ns += now - last;
		last = now;
		if (sig->idle_ns > STUB_IDLE_WAIT_NS) {
			stub_violation("hsa_signal_wait_scacquire would wait for ever: value %lld, condition %d, %lld, nothing pending",
				       (long long)v, (int)condition,
				       (long long)compare_value);
			fprintf(stderr, "hsastub: %s; aborting\n",
				S.first_violation);
			pthread_mutex_unlock(&stub_lock);
			stub_report();
			abort();
		}
		if (now - start >= timeout_hint)
			break;
		pthread_mutex_unlock(&stub_lock);
		nanosleep(&(struct timespec){ 0, 200000 }, NULL);
		pthread_mutex_lock(&stub_lock);
	}
	pthread_mutex_unlock(&stub_lock);
	return v;
}

/* ---- pool memory --------------------------------------------------------- */

STUB_EXPORT hsa_status_t hsa_amd_memory_pool_allocate(
	hsa_amd_memory_pool_t memory_pool, size_t size, uint32_t flags,
	void **ptr)
{
	uint64_t agent = memory_pool.handle & ~(uint64_t)0xff;
	unsigned int kind = memory_pool.handle & 0xff;
	void *p;

	STUB_BEGIN(hsa_amd_memory_pool_allocate, 1);
	if (!stub_is_agent(agent) || kind < 1 || kind > 3 ||
	    (kind == 2 && (stub_is_gpu(agent) || S.no_fine_pool)))
		return stub_end((hsa_status_t)HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
	/* The group segment is not allocatable by the runtime. */
	if (kind == 3 || !size || flags || !ptr)
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	for (int i = 0; i < STUB_MAX_ALLOCS; i++) {
		struct stub_alloc *a = &S.alloc[i];

		if (a->live)
			continue;
		/* Page-aligned, as the runtime's blocks are. */
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			break;
		*a = (struct stub_alloc){ .live = 1, .ptr = p, .size = size,
					  .pool = memory_pool.handle };
		*ptr = p;
		return stub_end(HSA_STATUS_SUCCESS);
	}
	return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
}

struct stub_alloc *stub_alloc_at(const void *ptr)
{
	for (int i = 0; i < STUB_MAX_ALLOCS; i++)
		if (S.alloc[i].live && S.alloc[i].ptr == ptr)
			return &S.alloc[i];
	return NULL;
}

STUB_EXPORT hsa_status_t hsa_amd_memory_pool_free(void *ptr)
{
	struct stub_alloc *a;

	STUB_BEGIN(hsa_amd_memory_pool_free, 1);
	a = stub_alloc_at(ptr);
	if (!a) {
		stub_violation("hsa_amd_memory_pool_free of %p, which was not allocated",
			       ptr);
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	munmap(a->ptr, a->size);
	a->live = 0;
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_amd_agents_allow_access(uint32_t num_agents,
						     const hsa_agent_t *agents,
						     const uint32_t *flags,
						     const void *ptr)
{
	struct stub_alloc *a;
	uint64_t bits = 0;

	STUB_BEGIN(hsa_amd_agents_allow_access, 1);
	if (!num_agents || !agents || flags)
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	for (uint32_t i = 0; i < num_agents; i++) {
		if (!stub_is_agent(agents[i].handle))
			return stub_end(HSA_STATUS_ERROR_INVALID_AGENT);
		bits |= stub_agent_bit(agents[i].handle);
	}
	a = stub_alloc_at(ptr);
	if (!a) {
		stub_violation("hsa_amd_agents_allow_access on %p, not the start of a pool block",
			       ptr);
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	a->allowed |= bits;
	return stub_end(HSA_STATUS_SUCCESS);
}

/* ---- queries for tests (hsastub_*) --------------------------------------- */

/* A signal's value, for tests holding their own; INT64_MIN if not live. */
STUB_EXPORT int64_t hsastub_signal_value(uint64_t h)
{
	struct stub_signal *sig;
	int64_t v = INT64_MIN;

	pthread_mutex_lock(&stub_lock);
	sig = stub_signal_of(h, "hsastub_signal_value");
	if (sig)
		v = atomic_load(&sig->value);
	pthread_mutex_unlock(&stub_lock);
	return v;
}

/* Whether p lies in a live kernarg-pool block the agent may access. */
STUB_EXPORT int hsastub_is_kernarg(const void *p, uint64_t agent)
{
	uint64_t bit = stub_agent_bit(agent);
	int r = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_ALLOCS; i++) {
		const struct stub_alloc *a = &S.alloc[i];

		if (a->live && (const char *)p >= (char *)a->ptr &&
		    (const char *)p < (char *)a->ptr + a->size &&
		    (a->pool & 0xff) == 2 && (a->allowed & bit))
			r = 1;
	}
	pthread_mutex_unlock(&stub_lock);
	return r;
}
