// SPDX-License-Identifier: MIT
/*
 * The few places where gpubuf_kernels.cu differs between nvcc (CUDA) and
 * hipcc (HIP, AMD code objects). Everything else in the kernels is the
 * common subset of both dialects.
 *
 * GPUBUF_WARP is the number of lanes that execute together and take part
 * in a shuffle: 32 on NVIDIA, the wavefront size on AMD (64 on gfx9 CDNA,
 * 32 on gfx10+ RDNA, which clang sets per target). The GEMV kernels size
 * their lane groups by it, so a gfx9 wavefront covers 64 adjacent
 * elements instead of two half-used 32-lane groups.
 */
#ifndef GPUBUF_PORT_CUH
#define GPUBUF_PORT_CUH

#if defined(__HIP__)

#include <hip/hip_runtime.h>

#ifndef __AMDGCN_WAVEFRONT_SIZE
#error "hipcc did not define __AMDGCN_WAVEFRONT_SIZE for this target"
#endif
#define GPUBUF_WARP	__AMDGCN_WAVEFRONT_SIZE

/* HIP 5.2 has no *_sync shuffles; a wavefront executes in lockstep. */
template <typename T>
__device__ __forceinline__ T gpubuf_shfl_down(T v, unsigned int off)
{
	return __shfl_down(v, off, GPUBUF_WARP);
}

#else /* CUDA */

#define GPUBUF_WARP	32

template <typename T>
__device__ __forceinline__ T gpubuf_shfl_down(T v, unsigned int off)
{
	return __shfl_down_sync(0xffffffffu, v, off);
}

#endif

#endif /* GPUBUF_PORT_CUH */
