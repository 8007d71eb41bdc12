// SPDX-License-Identifier: MIT
//
// C = alpha A B + beta C, A m x k, B k x n: 16 x 16 tiles of C per
// workgroup, one element per invocation, A and B staged through shared
// memory 16 columns (rows) at a time; tiles strided over the dispatch.
// Loads stay inside the operands (padding is never read), alpha == 0
// reads neither A nor B, beta == 0 does not read C.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define TILE 16

layout(local_size_x = TILE, local_size_y = TILE) in;

layout(push_constant, std430) uniform Args {
	uint64_t m, n, k;
	SCALAR(alpha);
	uint64_t a, ars, acs;
	uint64_t b, brs, bcs;
	SCALAR(beta);
	uint64_t c, crs, ccs;
} p;

shared T ta[TILE][TILE + 1];
shared T tb[TILE][TILE + 1];

void main()
{
	const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
	const uint64_t sx = uint64_t(gl_NumWorkGroups.x) * TILE;
	const uint64_t sy = uint64_t(gl_NumWorkGroups.y) * TILE;

	// Every bound below is the same for the whole workgroup, so every
	// invocation reaches every barrier.
	for (uint64_t r0 = uint64_t(gl_WorkGroupID.y) * TILE; r0 < p.m; r0 += sy)
	for (uint64_t c0 = uint64_t(gl_WorkGroupID.x) * TILE; c0 < p.n; c0 += sx) {
		const uint64_t i = r0 + ty, j = c0 + tx;
		T acc = T(0);

		if (p.alpha != T(0)) {
			for (uint64_t k0 = 0; k0 < p.k; k0 += TILE) {
				ta[ty][tx] = i < p.m && k0 + tx < p.k ?
					AT(p.a, i, k0 + tx, p.ars, p.acs) : T(0);
				tb[ty][tx] = k0 + ty < p.k && j < p.n ?
					AT(p.b, k0 + ty, j, p.brs, p.bcs) : T(0);
				barrier();
				for (uint q = 0; q < TILE; q++)
					acc += ta[ty][q] * tb[q][tx];
				barrier();
			}
		}
		if (i < p.m && j < p.n) {
			T r = p.alpha * acc;
			if (p.beta != T(0))
				r += p.beta * AT(p.c, i, j, p.crs, p.ccs);
			AT(p.c, i, j, p.crs, p.ccs) = r;
		}
	}
}
