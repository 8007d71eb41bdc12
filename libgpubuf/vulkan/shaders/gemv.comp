// SPDX-License-Identifier: MIT
//
// y = alpha A x + beta y, A m x k: one invocation per row of y, rows
// strided over the dispatch. alpha == 0 reads neither A nor x, beta == 0
// does not read y (NaN there stays out), as in gpubuf_kernels.cu.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

layout(push_constant, std430) uniform Args {
	uint64_t m, k;
	SCALAR(alpha);
	uint64_t a, ars, acs;
	uint64_t x, incx;
	SCALAR(beta);
	uint64_t y, incy;
} p;

void main()
{
	const uint64_t stride = uint64_t(gl_NumWorkGroups.x) * 64;

	for (uint64_t i = gl_GlobalInvocationID.x; i < p.m; i += stride) {
		T acc = T(0);

		if (p.alpha != T(0))
			for (uint64_t j = 0; j < p.k; j++)
				acc += AT(p.a, i, j, p.ars, p.acs) *
				       AT(p.x, j, 0, p.incx, 0);
		T r = p.alpha * acc;
		if (p.beta != T(0))
			r += p.beta * AT(p.y, i, 0, p.incy, 0);
		AT(p.y, i, 0, p.incy, 0) = r;
	}
}
