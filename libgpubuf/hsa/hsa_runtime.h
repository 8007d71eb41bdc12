/* SPDX-License-Identifier: MIT */
/*
 * hsa/, libgpubuf's ROCm consumer: the HSA runtime loaded with dlopen
 * (hsa_runtime.c), buffers locked for GPU agents and held by their lock
 * (hsa.c), and the GEMV/GEMM code objects built from kernels/, loaded and
 * dispatched (hsa_kload.c, hsa_kernels.c, hsaco.S, hsa_code.h). Types come
 * from libhsa-runtime-dev's headers at build time; nothing links against
 * libhsa-runtime64.
 */
#ifndef GPUBUF_HSA_RUNTIME_H
#define GPUBUF_HSA_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#ifdef GPUBUF_HAVE_HSA

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

/*
 * X(name): every entry point, resolved with dlsym and called through a
 * pointer of exactly the header's type. All are required; every one
 * exists in ROCm 2.4 and later (the dispatch entries in HSA 1.1's
 * hsa.h, ROCm 1.7 and later). hsa_system_get_info,
 * hsa_signal_store_relaxed and hsa_amd_memory_async_copy are used by
 * gpubuf-bench and gpubuf-info (version, copies), not the library.
 */
#define GPUBUF_HSA_ENTRIES(X)						\
	X(hsa_init)							\
	X(hsa_status_string)						\
	X(hsa_iterate_agents)						\
	X(hsa_agent_get_info)						\
	X(hsa_amd_agent_iterate_memory_pools)				\
	X(hsa_amd_memory_pool_get_info)					\
	X(hsa_amd_memory_lock)						\
	X(hsa_amd_memory_lock_to_pool)					\
	X(hsa_amd_memory_unlock)					\
	X(hsa_system_get_info)						\
	X(hsa_signal_store_relaxed)					\
	X(hsa_amd_memory_async_copy)					\
	GPUBUF_HSA_DISPATCH_ENTRIES(X)

/*
 * What hsa_kernels.c needs to load code objects and dispatch them;
 * gpubuf-bench's copies use the signal and pool entries too.
 */
#define GPUBUF_HSA_DISPATCH_ENTRIES(X)					\
	X(hsa_agent_iterate_isas)					\
	X(hsa_isa_get_info_alt)						\
	X(hsa_code_object_reader_create_from_memory)			\
	X(hsa_code_object_reader_destroy)				\
	X(hsa_executable_create_alt)					\
	X(hsa_executable_load_agent_code_object)			\
	X(hsa_executable_freeze)					\
	X(hsa_executable_get_symbol_by_name)				\
	X(hsa_executable_symbol_get_info)				\
	X(hsa_executable_destroy)					\
	X(hsa_queue_create)						\
	X(hsa_queue_destroy)						\
	X(hsa_queue_add_write_index_scacq_screl)			\
	X(hsa_queue_load_read_index_scacquire)				\
	X(hsa_signal_create)						\
	X(hsa_signal_destroy)						\
	X(hsa_signal_store_screlease)					\
	X(hsa_signal_wait_scacquire)					\
	X(hsa_amd_memory_pool_allocate)					\
	X(hsa_amd_memory_pool_free)					\
	X(hsa_amd_agents_allow_access)

#define GPUBUF_HSA_MEMBER(name) __typeof__(name) *name;
struct gpubuf_hsa {
	GPUBUF_HSA_ENTRIES(GPUBUF_HSA_MEMBER)
	int n_gpus;
	hsa_agent_t *gpus;		/* GPU agents, enumeration order */
	hsa_agent_t cpu;		/* the first CPU agent */
	bool have_pool;
	hsa_amd_memory_pool_t pool;	/* its fine-grained global pool */
};
#undef GPUBUF_HSA_MEMBER

/*
 * The runtime, loaded and initialised once per process. 0, or -ENODEV (no
 * libhsa-runtime64.so.1, hsa_init failed, no GPU agent, a child after
 * fork()) with gpubuf_last_error() saying which.
 */
int gpubuf_hsa_get(const struct gpubuf_hsa **hsa);

/*
 * A failed runtime call: the errno for it, with "what: <status string>"
 * stored as the thread's last error.
 */
int gpubuf_hsa_fail(const struct gpubuf_hsa *hsa, hsa_status_t s,
		    const char *what);

/* Index of a GPU agent handle in hsa->gpus, or -1. */
int gpubuf_hsa_gpu_index(const struct gpubuf_hsa *hsa, uint64_t handle);

#endif /* GPUBUF_HAVE_HSA */

struct gpubuf;

/*
 * One more lock count on a buffer already locked for GPU agent index gpu
 * (enumeration order), for DLPack kDLROCM exports: 0 with the agent
 * pointer, -ENXIO if it is not locked for that agent.
 * gpubuf_hsa_unlock() gives it back.
 */
int gpubuf_hsa_hold(struct gpubuf *buf, int gpu, uint64_t *agent_ptr);

#endif /* GPUBUF_HSA_RUNTIME_H */
