// SPDX-License-Identifier: MIT
/*
 * The stand-in's system information, signals, pool allocations and
 * copies: what gpubuf-bench's hsa mode calls (stub.h says what they
 * stand for). Misuse counts as a violation, as in stub.c: a copy from a
 * host pointer the GPU cannot reach (an unlocked one, the host side of a
 * lock instead of its agent pointer, a CPU pool block the GPU was not
 * allowed to access), freeing what was not allocated, waiting on a
 * condition that nothing pending could ever satisfy.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "stub.h"

STUB_EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t attribute,
					     void *value)
{
	struct timespec ts;

	STUB_BEGIN(hsa_system_get_info, 1);
	switch (attribute) {
	case HSA_SYSTEM_INFO_VERSION_MAJOR:
	case HSA_SYSTEM_INFO_VERSION_MINOR:
		*(uint16_t *)value = 1;
		return stub_end(HSA_STATUS_SUCCESS);
	case HSA_SYSTEM_INFO_TIMESTAMP:
		clock_gettime(CLOCK_MONOTONIC, &ts);
		*(uint64_t *)value = (uint64_t)ts.tv_sec * 1000000000u +
				     (uint64_t)ts.tv_nsec;
		return stub_end(HSA_STATUS_SUCCESS);
	default:
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
}

/* ---- signals ------------------------------------------------------------ */

/* The live signal of a handle, or NULL (a violation). Under stub_lock. */
static struct stub_signal *stub_signal_of(hsa_signal_t sig, const char *fn)
{
	uint64_t i = sig.handle - STUB_SIGNAL_BASE;

	if (sig.handle >= STUB_SIGNAL_BASE && i < STUB_MAX_SIGNALS &&
	    S.signal[i].live)
		return &S.signal[i];
	stub_violation("%s of signal 0x%llx, which does not exist", fn,
		       (unsigned long long)sig.handle);
	return NULL;
}

STUB_EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial_value,
					   uint32_t num_consumers,
					   const hsa_agent_t *consumers,
					   hsa_signal_t *signal)
{
	STUB_BEGIN(hsa_signal_create, 1);
	if (!signal || (num_consumers && !consumers))
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	for (uint32_t i = 0; i < num_consumers; i++)
		if (!stub_is_agent(consumers[i].handle))
			return stub_end(HSA_STATUS_ERROR_INVALID_AGENT);
	for (int i = 0; i < STUB_MAX_SIGNALS; i++) {
		if (S.signal[i].live)
			continue;
		S.signal[i].live = 1;
		S.signal[i].value = initial_value;
		signal->handle = STUB_SIGNAL_BASE + (uint64_t)i;
		return stub_end(HSA_STATUS_SUCCESS);
	}
	return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
}

STUB_EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t signal)
{
	struct stub_signal *s;

	STUB_BEGIN(hsa_signal_destroy, 1);
	s = stub_signal_of(signal, "hsa_signal_destroy");
	if (!s)
		return stub_end((hsa_status_t)HSA_STATUS_ERROR_INVALID_SIGNAL);
	s->live = 0;
	return stub_end(HSA_STATUS_SUCCESS);
}

/* The two calls without a status: counted, never failed on purpose. */
static void stub_count(int fn)
{
	pthread_mutex_lock(&stub_lock);
	S.calls[fn]++;
	S.calls_total[fn]++;
	if (!S.inited)
		stub_violation("%s before a successful hsa_init",
			       stub_fn_names[fn]);
}

STUB_EXPORT void hsa_signal_store_relaxed(hsa_signal_t signal,
					  hsa_signal_value_t value)
{
	struct stub_signal *s;

	stub_count(STUB_ID_hsa_signal_store_relaxed);
	s = stub_signal_of(signal, "hsa_signal_store_relaxed");
	if (s)
		s->value = value;
	pthread_mutex_unlock(&stub_lock);
}

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

/* Every copy is done when it returns: an unmet condition stays unmet. */
STUB_EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(
	hsa_signal_t signal, hsa_signal_condition_t condition,
	hsa_signal_value_t compare_value, uint64_t timeout_hint,
	hsa_wait_state_t wait_state_hint)
{
	hsa_signal_value_t v = 0;
	struct stub_signal *s;
	int met;

	stub_count(STUB_ID_hsa_signal_wait_scacquire);
	s = stub_signal_of(signal, "hsa_signal_wait_scacquire");
	if (s) {
		v = s->value;
		met = stub_condition(v, condition, compare_value);
		if (met < 0 || (wait_state_hint != HSA_WAIT_STATE_BLOCKED &&
				wait_state_hint != HSA_WAIT_STATE_ACTIVE))
			stub_violation("hsa_signal_wait_scacquire with condition %d, wait state %d",
				       (int)condition, (int)wait_state_hint);
		else if (!met && timeout_hint == UINT64_MAX)
			stub_violation("hsa_signal_wait_scacquire would wait for ever: value %lld, condition %d, %lld",
				       (long long)v, (int)condition,
				       (long long)compare_value);
	}
	pthread_mutex_unlock(&stub_lock);
	return v;
}

/* ---- pool allocations ---------------------------------------------------- */

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

static struct stub_alloc *stub_alloc_at(const void *ptr)
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
	unsigned int bits = 0;

	STUB_BEGIN(hsa_amd_agents_allow_access, 1);
	if (!num_agents || !agents || flags)
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	for (uint32_t i = 0; i < num_agents; i++) {
		if (!stub_is_agent(agents[i].handle))
			return stub_end(HSA_STATUS_ERROR_INVALID_AGENT);
		for (int g = 0; g < S.n_gpus; g++)
			if (agents[i].handle == STUB_GPU(g))
				bits |= 1u << g;
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

/* ---- copies -------------------------------------------------------------- */

/*
 * The host address behind [p, p + size) as GPU agent index g (device
 * side) or a CPU agent (host side) addresses it, or NULL with a
 * violation naming why that agent cannot reach it. Under stub_lock.
 */
static void *stub_reach(const void *p, size_t size, int g, int device)
{
	uintptr_t a = (uintptr_t)p, end = a + size;

	for (int i = 0; i < STUB_MAX_ALLOCS; i++) {
		const struct stub_alloc *m = &S.alloc[i];
		uintptr_t lo = (uintptr_t)m->ptr;
		int gpu_pool = stub_is_gpu(m->pool & ~(uint64_t)0xff);

		if (!m->live || a < lo || end > lo + m->size)
			continue;
		if (device && m->pool != STUB_GPU(g) + 1)
			break;
		if (!device && gpu_pool)
			break;
		if (!device && !(m->allowed & 1u << g)) {
			stub_violation("copy for GPU agent %d from %p: a CPU pool block it was not allowed to access",
				       g, p);
			return NULL;
		}
		return (void *)p;
	}
	for (int i = 0; !device && i < STUB_MAX_LOCKS; i++) {
		const struct stub_lock *l = &S.lock[i];
		uintptr_t ap = (uintptr_t)l->agent_ptr, hp = (uintptr_t)l->ptr;
		int named = 0;

		if (!l->live)
			continue;
		if (a >= hp && end <= hp + l->size) {
			stub_violation("copy from the host address %p of a locked range; the agents use its agent pointer",
				       p);
			return NULL;
		}
		if (a < ap || end > ap + l->size)
			continue;
		for (int k = 0; k < l->n; k++)
			named |= l->agents[k] == STUB_GPU(g);
		if (!named) {
			stub_violation("copy for GPU agent %d from a range locked for other agents",
				       g);
			return NULL;
		}
		return (void *)(hp + (a - ap));
	}
	stub_violation("copy for GPU agent %d: %p+%zu is not %s memory it can reach",
		       g, p, size, device ? "device" : "host");
	return NULL;
}

STUB_EXPORT hsa_status_t hsa_amd_memory_async_copy(
	void *dst, hsa_agent_t dst_agent, const void *src,
	hsa_agent_t src_agent, size_t size, uint32_t num_dep_signals,
	const hsa_signal_t *dep_signals, hsa_signal_t completion_signal)
{
	int d_gpu = stub_is_gpu(dst_agent.handle);
	int s_gpu = stub_is_gpu(src_agent.handle);
	struct stub_signal *done;
	void *to, *from;
	int g = -1;

	STUB_BEGIN(hsa_amd_memory_async_copy, 1);
	if (!stub_is_agent(dst_agent.handle) || !stub_is_agent(src_agent.handle))
		return stub_end(HSA_STATUS_ERROR_INVALID_AGENT);
	if (!dst || !src || !size || (num_dep_signals && !dep_signals))
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	if (d_gpu == s_gpu) {
		stub_violation("copy between two %s agents; the stand-in does host<->GPU only",
			       d_gpu ? "GPU" : "CPU");
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	for (int i = 0; i < S.n_gpus; i++)
		if (STUB_GPU(i) == (d_gpu ? dst_agent : src_agent).handle)
			g = i;
	for (uint32_t i = 0; i < num_dep_signals; i++)
		if (!stub_signal_of(dep_signals[i], "hsa_amd_memory_async_copy"))
			return stub_end((hsa_status_t)HSA_STATUS_ERROR_INVALID_SIGNAL);
	done = stub_signal_of(completion_signal, "hsa_amd_memory_async_copy");
	to = stub_reach(dst, size, g, d_gpu);
	from = stub_reach(src, size, g, s_gpu);
	if (!done || !to || !from)
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	memcpy(to, from, size);
	S.copy_gpus |= 1u << g;
	done->value--;
	return stub_end(HSA_STATUS_SUCCESS);
}
