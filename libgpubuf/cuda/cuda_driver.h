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

/* The driver table and what gpubuf's tools call: shared with them. */
#include <gpubuf/tools.h>

/* The driver, and device a valid ordinal on it (-ENODEV otherwise). */
int gpubuf_cu_get_device(const struct gpubuf_cu **cu, int device);

/*
 * Retain device's primary context, and give one retain back. The first
 * retain on a device also takes the library's lifetime retain of it.
 */
int gpubuf_cu_retain(const struct gpubuf_cu *cu, int device, CUcontext *ctx);
void gpubuf_cu_unretain(const struct gpubuf_cu *cu, int device);

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
 * Unload device's kernels, if loaded, before its kept retain goes
 * (gpubuf_cuda_device_release); the next launch loads them again.
 */
int gpubuf_cu_kernels_unload(const struct gpubuf_cu *cu, int device);

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
