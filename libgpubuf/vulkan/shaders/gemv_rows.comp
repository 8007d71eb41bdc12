// SPDX-License-Identifier: MIT
//
// y = alpha A x + beta y, A m x k, walked along its rows: one workgroup of
// 64 invocations per row of y, rows strided over the dispatch. The
// invocations of a workgroup read neighbouring elements of the row, so a
// row-major A is read in contiguous runs (coalesced); each sums every 64th
// product and a tree in shared memory adds the 64 sums. For an A whose
// columns are contiguous gemv.comp reads along the columns instead
// (kernels/kernel_args.h decides, as for the CUDA and HIP kernels).
// alpha == 0 reads neither A nor x, beta == 0 does not read y.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define GROUP 64
layout(local_size_x = GROUP) in;

layout(push_constant, std430) uniform Args {
	uint64_t m, k;
	SCALAR(alpha);
	uint64_t a, ars, acs;
	uint64_t x, incx;
	SCALAR(beta);
	uint64_t y, incy;
} p;

shared T part[GROUP];

void main()
{
	const uint lane = gl_LocalInvocationID.x;

	// The row loop is the same for every invocation of the workgroup, so
	// the barriers inside it are reached by all of them.
	for (uint64_t i = gl_WorkGroupID.x; i < p.m; i += gl_NumWorkGroups.x) {
		T acc = T(0);

		if (p.alpha != T(0))
			for (uint64_t j = lane; j < p.k; j += GROUP)
				acc += AT(p.a, i, j, p.ars, p.acs) *
				       AT(p.x, j, 0, p.incx, 0);
		part[lane] = acc;
		barrier();
		for (uint s = GROUP / 2; s > 0; s >>= 1) {
			if (lane < s)
				part[lane] += part[lane + s];
			barrier();
		}
		if (lane == 0) {
			T r = p.alpha * part[0];

			if (p.beta != T(0))
				r += p.beta * AT(p.y, i, 0, p.incy, 0);
			AT(p.y, i, 0, p.incy, 0) = r;
		}
		// part[0] is read before the next row writes it.
		barrier();
	}
}
