/* SPDX-License-Identifier: MIT */
/*
 * The AMD code objects embedded in libgpubuf (hsa/hsaco.S) and what a
 * dispatcher needs to run them through an HSA AQL queue. Internal.
 *
 * hipcc builds kernels/gpubuf_kernels.cu, the source nvcc builds for CUDA,
 * once per architecture in HSA_ARCHS (libgpubuf/Makefile) into a bare
 * code object: ELF64, EM_AMDGPU, code object v4, no offload bundle. The
 * kernels, their names and their parameter lists are the CUDA ones.
 *
 * Loading: hsa_code_object_reader_create_from_memory(data, size), then
 * hsa_executable_load_agent_code_object() and hsa_executable_freeze().
 * A code object is built for a processor with no target features
 * ("xnack any", "sramecc any"), so "amdgcn-amd-amdhsa--gfx90a" serves an
 * agent whose ISA (HSA_ISA_INFO_NAME) is "amdgcn-amd-amdhsa--gfx90a" or
 * "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-": pick the entry whose isa
 * equals the agent's ISA name up to its first ':'. ROCr matches the
 * processor exactly: gfx940 objects do not run on gfx942 (MI300), and an
 * agent with no entry here gets -ENOEXEC (hsa_kernels.c), not a guess.
 *
 * Kernel descriptors are the symbols "<kernel name>.kd"
 * (hsa_executable_get_symbol_by_name). The kernarg layouts below are those
 * of the code objects' metadata notes (NT_AMDGPU_METADATA), checked by
 * tests/lib/hsa_code.c: every argument is 8 bytes (u64, double or a
 * device pointer), argument i at offset 8 * i, in the CUDA parameter
 * order, and nothing else. HIP reads gridDim and blockDim from the AQL
 * packet under code object v4, so hipcc emitted no hidden arguments:
 * kernarg_size is exactly 8 * nargs.
 *
 *   gpubuf_gemv_f32/f64   88 bytes: m k alpha a rs cs x incx beta y incy
 *   gpubuf_gemm_f32/f64  112 bytes: m n k alpha a ars acs b brs bcs beta
 *                                   c crs ccs
 *   gpubuf_stream_read    24 bytes: p n sink
 *   gpubuf_stream_write   16 bytes: p n
 *
 * (alpha and beta are doubles for both precisions; m, n, k, strides and
 * word counts are u64, strides in elements; see gpubuf_kernels.cu.)
 *
 * AQL packet (hsa_kernel_dispatch_packet_t), for every kernel:
 *   workgroup_size_x = GPUBUF_HSA_THREADS (256), y = z = 1
 *   grid_size_x = blocks_x * 256 work-items (HSA counts work-items, not
 *   blocks, as CUDA does); GEMM also grid_size_y = blocks_y (setup
 *   dimensions 2: row tiles on x, column tiles on y), else 1
 *   group_segment_size >= HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE
 *   (the static LDS below), private_segment_size 0 (none use scratch)
 *   kernarg: kernarg_size bytes from a kernarg pool, 16-byte aligned.
 * Every kernel walks its work with grid-stride loops, so clamping a grid
 * to HSA_AGENT_INFO_GRID_MAX_SIZE (work-items in all) is always correct.
 *
 * Grid sizes, mirroring cuda_kernels.c with W the code object's wavefront
 * size (64 on gfx9, 32 on gfx10+; the GEMV kernels group lanes by it):
 *   GEMV: ceil(m / rows) blocks, rows = W when the kernel takes the
 *   column scheme (rs < cs, or rs == cs and k < m), else 256 / W
 *   GEMM: ceil(m / 64) x ceil(n / 64) blocks
 *   stream: ceil(words / 256) blocks, at most what fills every CU
 */
#ifndef GPUBUF_HSA_CODE_H
#define GPUBUF_HSA_CODE_H

#include <stdint.h>
#include <string.h>

/* The block size every kernel is written for, and GEMM's C tile. */
#define GPUBUF_HSA_THREADS	256
#define GPUBUF_HSA_GEMM_TILE	64
/* Every kernel argument is this many bytes. */
#define GPUBUF_HSA_ARG_SIZE	8

/* In the order of cuda_driver.h's enum gpubuf_cu_kernel. */
enum gpubuf_hsa_kernel {
	GPUBUF_HSA_GEMV_F32,
	GPUBUF_HSA_GEMV_F64,
	GPUBUF_HSA_GEMM_F32,
	GPUBUF_HSA_GEMM_F64,
	GPUBUF_HSA_READ,
	GPUBUF_HSA_WRITE,
	GPUBUF_HSA_NR_KERNELS
};

struct gpubuf_hsa_kernel_info {
	const char *symbol;		/* kernel descriptor, "<name>.kd" */
	uint32_t nargs;			/* arguments, 8 bytes each */
	uint32_t kernarg_size;		/* bytes: 8 * nargs, no hidden args */
	/* Most work-items per group the code allows (__launch_bounds__, or
	 * hipcc's default of 1024); the kernels are written for 256. */
	uint32_t max_workgroup_size;
	/*
	 * Static LDS in bytes, on every architecture: GEMV's per-warp
	 * partial sums (256 elements), GEMM's two padded 16 x 64 tiles.
	 */
	uint32_t group_segment_size;
};

static const struct gpubuf_hsa_kernel_info
gpubuf_hsa_kernels[GPUBUF_HSA_NR_KERNELS] = {
	[GPUBUF_HSA_GEMV_F32] = { "gpubuf_gemv_f32.kd", 11, 88, 256, 1024 },
	[GPUBUF_HSA_GEMV_F64] = { "gpubuf_gemv_f64.kd", 11, 88, 256, 2048 },
	[GPUBUF_HSA_GEMM_F32] = { "gpubuf_gemm_f32.kd", 14, 112, 256, 8448 },
	[GPUBUF_HSA_GEMM_F64] = { "gpubuf_gemm_f64.kd", 14, 112, 256, 16640 },
	[GPUBUF_HSA_READ] = { "gpubuf_stream_read.kd", 3, 24, 1024, 0 },
	[GPUBUF_HSA_WRITE] = { "gpubuf_stream_write.kd", 2, 16, 1024, 0 },
};

/*
 * Fill a kernel's kernarg segment (kernarg_size bytes) from the params[]
 * array cuLaunchKernel takes, one pointer per 8-byte argument, so CUDA
 * and HSA share the argument packing. Only the kernel's own arguments
 * are read: the stream write's third CUDA parameter is not copied into
 * its 16-byte segment.
 */
static inline void gpubuf_hsa_pack_args(enum gpubuf_hsa_kernel k,
					void *kernarg,
					void *const *params)
{
	for (uint32_t i = 0; i < gpubuf_hsa_kernels[k].nargs; i++)
		memcpy((char *)kernarg + i * GPUBUF_HSA_ARG_SIZE, params[i],
		       GPUBUF_HSA_ARG_SIZE);
}

#ifdef GPUBUF_HAVE_HSA_KERNELS

/* One embedded code object; the layout hsa/hsaco.S writes. */
struct gpubuf_hsa_code {
	const char *isa;		/* "amdgcn-amd-amdhsa--gfx90a" */
	const unsigned char *data;	/* the ELF, 64-byte aligned */
	uint64_t size;
	uint32_t wavefront_size;	/* 64 (gfx9) or 32 (gfx10+) */
	uint32_t reserved;
};

_Static_assert(sizeof(struct gpubuf_hsa_code) == 32,
	       "hsa/hsaco.S writes 32-byte entries");

/* One entry per HSA_ARCHS word, in that order. */
extern const struct gpubuf_hsa_code gpubuf_hsa_codes[];
extern const uint32_t gpubuf_hsa_ncodes;

#endif /* GPUBUF_HAVE_HSA_KERNELS */

#endif /* GPUBUF_HSA_CODE_H */
