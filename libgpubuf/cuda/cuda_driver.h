/* SPDX-License-Identifier: MIT */
/*
 * cuda/, libgpubuf's CUDA consumer: the driver API loaded with dlopen
 * (cuda_driver.c), buffers registered for in-place GPU access and held by
 * their registration (cuda.c), and the GEMV/GEMM kernels built from
 * kernels/ (cuda_kernels.c, fatbin.S). Types come from the toolkit's cuda.h
 * and cudaTypedefs.h at build time; nothing links against libcuda.
 */
#ifndef GPUBUF_CUDA_DRIVER_H
#define GPUBUF_CUDA_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

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

/* The driver, and device a valid ordinal on it (-ENODEV otherwise). */
int gpubuf_cu_get_device(const struct gpubuf_cu **cu, int device);

/* Retain device's primary context, and give one retain back. */
int gpubuf_cu_retain(const struct gpubuf_cu *cu, int device, CUcontext *ctx);
void gpubuf_cu_unretain(const struct gpubuf_cu *cu, int device);

/* Make device's primary context current (retained), and undo that. */
int gpubuf_cu_enter(const struct gpubuf_cu *cu, int device, CUcontext *ctx);
void gpubuf_cu_leave(const struct gpubuf_cu *cu, int device);

/* Library kernels (kernels/gpubuf_kernels.cu), loaded once per device. */
enum gpubuf_cu_kernel {
	GPUBUF_CU_GEMV_F32,
	GPUBUF_CU_GEMV_F64,
	GPUBUF_CU_GEMM_F32,
	GPUBUF_CU_GEMM_F64,
	GPUBUF_CU_READ,		/* streaming read of n 16-byte words */
	GPUBUF_CU_WRITE,	/* streaming write of n 16-byte words */
	GPUBUF_CU_NR_KERNELS
};

/* Needs the device's primary context current (gpubuf_cu_enter). */
int gpubuf_cu_kernel(const struct gpubuf_cu *cu, int device,
		     enum gpubuf_cu_kernel k, CUfunction *fn);

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

#endif /* GPUBUF_HAVE_CUDA */

struct gpubuf;

/*
 * One more registration count on a buffer already registered on device,
 * for DLPack kDLCUDA exports: 0 with the buffer's device pointer and
 * whether the registration is read-only, -ENXIO if it is not registered
 * there. gpubuf_cuda_unregister() gives it back.
 */
int gpubuf_cuda_hold(struct gpubuf *buf, int device, uint64_t *devptr,
		     bool *read_only);

#endif /* GPUBUF_CUDA_DRIVER_H */
