/* SPDX-License-Identifier: MIT */
/*
 * A small CPU emulator of the CUDA/HIP execution model, enough to run
 * libgpubuf's GPU kernels (libgpubuf/kernels/gpubuf_kernels.cu) as C++ on
 * the host: every thread of a block is a fiber with its own stack,
 * __syncthreads() is a real barrier of the block, a shuffle a real
 * exchange between the lanes of a warp (32 or 64 of them), and blocks run
 * one after another over the whole grid. __shared__ variables are the
 * block's: blocks never run at the same time.
 *
 * What a GPU leaves undefined is an error here, reported by simt_launch()
 * instead of silently passing: a __syncthreads() that some thread of the
 * block does not reach (it exited, or waits at another barrier or at a
 * shuffle), a shuffle that some lane of the warp does not reach or
 * reaches with another offset, width or mask, and a shuffle mask that
 * does not name every lane.
 *
 * Nothing here is fast or a GPU. It proves the kernels' arithmetic,
 * indexing, barriers and shuffles, not their speed or their memory model.
 *
 * Include it before the kernels: directly for the CUDA dialect, through
 * tests/simt/hip/hip_runtime.h for the HIP one (with __HIP__ and
 * __AMDGCN_WAVEFRONT_SIZE defined, as hipcc does).
 */
#ifndef GPUBUF_SIMT_H
#define GPUBUF_SIMT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <string>

struct dim3 {
	unsigned int x, y, z;
};

struct uint4 {
	unsigned int x, y, z, w;
};

static inline uint4 make_uint4(unsigned int x, unsigned int y,
			       unsigned int z, unsigned int w)
{
	return uint4{ x, y, z, w };
}

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
/* The block's memory: blocks run one at a time, threads share statics. */
#define __shared__ static

namespace simt {

/* The running thread's coordinates, set before each switch to it. */
extern dim3 thread_idx, block_idx, block_dim, grid_dim;

void syncthreads(const char *file, int line);
/*
 * Exchange size bytes at v between the lanes of the calling warp: lane l
 * gets lane l + delta's value when (l % width) + delta < width, else its
 * own. full_mask: the mask must name every lane of the warp.
 */
void shfl_down(void *v, size_t size, unsigned long long mask, bool check_mask,
	       unsigned int delta, unsigned int width, const char *file,
	       int line);

/*
 * Run body once per thread of grid x block, warp lanes per warp. Returns
 * 0, or -1 with what went wrong in *err.
 */
int launch(dim3 grid, dim3 block, unsigned int warp,
	   const std::function<void()> &body, std::string *err);

} /* namespace simt */

#define threadIdx (simt::thread_idx)
#define blockIdx (simt::block_idx)
#define blockDim (simt::block_dim)
#define gridDim (simt::grid_dim)
#define __syncthreads() simt::syncthreads(__FILE__, __LINE__)

/* CUDA's: every lane in mask takes part; width defaults to warpSize. */
template <typename T>
static inline T simt_shfl_down_sync(const char *file, int line,
				    unsigned int mask, T v,
				    unsigned int delta, int width = 32)
{
	simt::shfl_down(&v, sizeof(v), mask, true, delta, (unsigned int)width,
			file, line);
	return v;
}
#define __shfl_down_sync(...) simt_shfl_down_sync(__FILE__, __LINE__, __VA_ARGS__)

#ifdef __HIP__
/* HIP's: the whole wavefront, which executes in lockstep. */
template <typename T>
static inline T simt_shfl_down(const char *file, int line, T v,
			       unsigned int delta,
			       int width = __AMDGCN_WAVEFRONT_SIZE)
{
	simt::shfl_down(&v, sizeof(v), 0, false, delta, (unsigned int)width,
			file, line);
	return v;
}
#define __shfl_down(...) simt_shfl_down(__FILE__, __LINE__, __VA_ARGS__)
#endif

#endif /* GPUBUF_SIMT_H */
