/* SPDX-License-Identifier: MIT */
/*
 * Private to gpubuf's own tools (gpubuf-bench, gpubuf-info) of the same
 * release; every other program uses <gpubuf.h> only.
 *
 * A bandwidth benchmark needs raw driver entry points (streams, events,
 * device memory, async copies) beside the public API, and measures best
 * with the driver exactly as libgpubuf loaded and initialised it. So the
 * library lends its tools its CUDA driver and HSA runtime tables and its
 * streaming kernels. None of this is ABI: the functions are exported in
 * the version node GPUBUF_PRIVATE_<release> only, so a tool built against
 * another release of libgpubuf does not even load, and the structures may
 * change in any release.
 *
 * Define GPUBUF_HAVE_CUDA (with the CUDA toolkit's cuda.h and
 * cudaTypedefs.h on the include path) for the CUDA part, GPUBUF_HAVE_HSA
 * (with ROCm's hsa/hsa.h) for the HSA part; a library built without that
 * support does not have those functions.
 */
#ifndef GPUBUF_TOOLS_H
#define GPUBUF_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpubuf_vk;

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The sysfs directory of a device as gpubuf_device_node(3) names it
 * ("cuda:0", "rdma:mlx5_0", ...), resolved, under GPUBUF_SYSFS_ROOT if
 * set: gpubuf-info reads its link and CPUs there. -ENOENT with "" for a
 * device that has none (lavapipe), else gpubuf_device_node()'s errors.
 */
int gpubuf_device_sysfs(const char *device, char *path, size_t len);

/*
 * Read every 16-byte word of [address, address + bytes) on vk's device,
 * for bandwidth measurements (the device's own read ceiling), as
 * gpubuf_cu_stream_read() does: the words' xor is stored at sink (a
 * device address, may be 0) only when it equals a magic constant. address
 * lies in memory imported into vk; address and bytes are multiples of 16,
 * sink of 4 (-EINVAL). -EOPNOTSUPP in a build without Vulkan kernels.
 */
int gpubuf_vk_stream_read(struct gpubuf_vk *vk, uint64_t address,
			  size_t bytes, uint64_t sink);

/*
 * gpubuf_read_file(3) into memory of the caller's own, [mem, mem + len)
 * from file_offset: gpubuf-bench storage's row for page-aligned malloc()
 * memory, read the same way as a buffer.
 */
struct gpubuf_io_opts;
struct gpubuf_io_result;
int gpubuf_read_mem(void *mem, size_t len, int fd, uint64_t file_offset,
		    const struct gpubuf_io_opts *opts,
		    struct gpubuf_io_result *res);

#ifdef GPUBUF_HAVE_CUDA

#include <cuda.h>
#include <cudaTypedefs.h>

/*
 * X(name, version): every entry point, resolved with cuGetProcAddress_v2
 * for the oldest CUDA version with that ABI, which is the version in the
 * name of its cudaTypedefs.h type. All are required: a driver lacking one
 * is too old, and every one exists in CUDA 12.0.
 */
#define GPUBUF_CU_ENTRIES(X)						\
	X(cuInit, 2000)							\
	X(cuDriverGetVersion, 2020)					\
	X(cuGetErrorName, 6000)						\
	X(cuDeviceGetCount, 2000)					\
	X(cuDeviceGet, 2000)						\
	X(cuDeviceGetAttribute, 2000)					\
	X(cuDeviceGetName, 2000)					\
	X(cuDeviceGetPCIBusId, 4010)					\
	X(cuDevicePrimaryCtxRetain, 7000)				\
	X(cuDevicePrimaryCtxRelease, 11000)				\
	X(cuCtxPushCurrent, 4000)					\
	X(cuCtxPopCurrent, 4000)					\
	X(cuMemHostRegister, 6050)					\
	X(cuMemHostUnregister, 4000)					\
	X(cuMemHostGetDevicePointer, 3020)				\
	X(cuModuleLoadData, 2000)					\
	X(cuModuleGetFunction, 2000)					\
	X(cuModuleUnload, 2000)						\
	X(cuLaunchKernel, 4000)						\
	X(cuStreamCreate, 2000)						\
	X(cuStreamDestroy, 4000)					\
	X(cuStreamSynchronize, 2000)					\
	X(cuEventCreate, 2000)						\
	X(cuEventDestroy, 4000)						\
	X(cuEventRecord, 2000)						\
	X(cuEventSynchronize, 2000)					\
	X(cuEventElapsedTime, 2000)					\
	X(cuMemAlloc, 3020)						\
	X(cuMemFree, 3020)						\
	X(cuMemHostAlloc, 2020)						\
	X(cuMemFreeHost, 2000)						\
	X(cuMemcpyHtoDAsync, 3020)					\
	X(cuMemcpyDtoHAsync, 3020)					\
	X(cuMemsetD8Async, 3020)

#define GPUBUF_CU_MEMBER(name, version) PFN_##name##_v##version name;
struct gpubuf_cu {
	GPUBUF_CU_ENTRIES(GPUBUF_CU_MEMBER)
	int driver_version;	/* cuDriverGetVersion, e.g. 13000 */
	int device_count;
};
#undef GPUBUF_CU_MEMBER

/*
 * The driver, loaded and initialised once per process (cuInit is
 * process-wide too). 0, -ENODEV (no libcuda.so.1, no device, driver older
 * than 12.0) with gpubuf_last_error() saying which.
 */
int gpubuf_cu_get(const struct gpubuf_cu **cu);

/*
 * A failed driver call: the errno for it, with "what: CUDA_ERROR_NAME"
 * stored as the thread's last error.
 */
int gpubuf_cu_fail(const struct gpubuf_cu *cu, CUresult r, const char *what);

/* Make device's primary context current (retained), and undo that. */
int gpubuf_cu_enter(const struct gpubuf_cu *cu, int device, CUcontext *ctx);
void gpubuf_cu_leave(const struct gpubuf_cu *cu, int device);

/*
 * Streaming kernels for bandwidth measurements: read (folded into one
 * 32-bit value, stored at sink only when it equals a magic constant, so
 * the loads stay; sink may be 0) or write every 16-byte word of [ptr, ptr + bytes), bytes a multiple of 16,
 * queued on stream. Context must be current.
 */
int gpubuf_cu_stream_read(const struct gpubuf_cu *cu, int device,
			  CUdeviceptr ptr, size_t bytes, CUdeviceptr sink,
			  CUstream stream);
int gpubuf_cu_stream_write(const struct gpubuf_cu *cu, int device,
			   CUdeviceptr ptr, size_t bytes, CUstream stream);

/*
 * Load the library's kernels into device's primary context now, so that
 * a timed run does not include cuModuleLoadData (and a PTX JIT). Once per
 * process; 0 if they were loaded already.
 */
int gpubuf_cu_kernels_load(const struct gpubuf_cu *cu, int device);
/*
 * Whether the library's kernels can run on device (its compute capability
 * in major and minor): 1, 0 with why (no code for it, or a driver older
 * than the toolkit that built them), or -errno.
 */
int gpubuf_cu_kernels_cover(const struct gpubuf_cu *cu, int device,
			    int *major, int *minor, char *why, size_t len);

#endif /* GPUBUF_HAVE_CUDA */

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

/*
 * Whether the library carries a code object for GPU agent gpu (isa: the
 * one it would use, or the agent's first ISA): 1, 0 with why, or -errno.
 */
int gpubuf_hsa_kernels_cover(const struct gpubuf_hsa *hsa, int gpu,
			     char *isa, size_t isa_len, char *why, size_t len);

#endif /* GPUBUF_HAVE_HSA */

#ifdef __cplusplus
}
#endif

#endif /* GPUBUF_TOOLS_H */
