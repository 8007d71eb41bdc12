// SPDX-License-Identifier: MIT
/*
 * The stand-in's system information and copies: what gpubuf-bench's hsa
 * mode calls besides signals and pool memory (stub_memory.c); stub.h
 * says what they stand for. Misuse counts as a violation, as in stub.c:
 * a copy from a host pointer the GPU cannot reach (an unlocked one, the
 * host side of a lock instead of its agent pointer, a CPU pool block the
 * GPU was not allowed to access), a signal that does not exist.
 */
#include <stdint.h>
#include <string.h>
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
	/* Timestamps and wait timeouts count nanoseconds. */
	case HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY:
		*(uint64_t *)value = 1000000000u;
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
		if (!device && !(m->allowed & stub_agent_bit(STUB_GPU(g)))) {
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
		if (!stub_signal_of(dep_signals[i].handle,
				    "hsa_amd_memory_async_copy"))
			return stub_end((hsa_status_t)HSA_STATUS_ERROR_INVALID_SIGNAL);
	done = stub_signal_of(completion_signal.handle,
			      "hsa_amd_memory_async_copy");
	to = stub_reach(dst, size, g, d_gpu);
	from = stub_reach(src, size, g, s_gpu);
	if (!done || !to || !from)
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	memcpy(to, from, size);
	S.copy_gpus |= 1u << g;
	/* Done at once: the completion signal drops by one, as ROCr's. */
	atomic_fetch_sub(&done->value, 1);
	return stub_end(HSA_STATUS_SUCCESS);
}
