// SPDX-License-Identifier: MIT
//
// C = alpha A B + beta C, A m x k, B k x n, register-tiled: a workgroup of
// 16 x 16 invocations computes a 64 x 64 block of C, each invocation a
// 4 x 4 set of it (rows ty + 16 i, columns tx + 16 j, so neighbouring
// invocations touch neighbouring columns). A and B go through shared
// memory 16 steps of k at a time, 64 x 16 of A and 16 x 64 of B, loaded
// by all 256 invocations with neighbours reading neighbouring elements
// (coalesced for row-major operands); 16 KiB of shared memory in f64, the
// least Vulkan promises. Blocks are strided over the dispatch. Loads stay
// inside the operands (padding is never read), alpha == 0 reads neither A
// nor B, beta == 0 does not read C.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define TILE 16			// invocations per side
#define R 4			// outputs per invocation per side
#define BLOCK (TILE * R)	// C per workgroup per side
#define KSTEP 16

layout(local_size_x = TILE, local_size_y = TILE) in;

layout(push_constant, std430) uniform Args {
	uint64_t m, n, k;
	SCALAR(alpha);
	uint64_t a, ars, acs;
	uint64_t b, brs, bcs;
	SCALAR(beta);
	uint64_t c, crs, ccs;
} p;

shared T ta[KSTEP][BLOCK];	// A's block, k-major
shared T tb[KSTEP][BLOCK];

void main()
{
	const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
	const uint l = ty * TILE + tx;
	const uint64_t sx = uint64_t(gl_NumWorkGroups.x) * BLOCK;
	const uint64_t sy = uint64_t(gl_NumWorkGroups.y) * BLOCK;

	// Every bound below is the same for the whole workgroup, so every
	// invocation reaches every barrier.
	for (uint64_t r0 = uint64_t(gl_WorkGroupID.y) * BLOCK; r0 < p.m; r0 += sy)
	for (uint64_t c0 = uint64_t(gl_WorkGroupID.x) * BLOCK; c0 < p.n; c0 += sx) {
		T acc[R][R];

		for (uint i = 0; i < R; i++)
			for (uint j = 0; j < R; j++)
				acc[i][j] = T(0);
		if (p.alpha != T(0)) {
			for (uint64_t k0 = 0; k0 < p.k; k0 += KSTEP) {
				for (uint t = 0; t < BLOCK * KSTEP / (TILE * TILE); t++) {
					const uint e = l + t * TILE * TILE;
					// A: 64 rows of 16; B: 16 rows of 64.
					const uint ar = e / KSTEP, ak = e % KSTEP;
					const uint bk = e / BLOCK, bc = e % BLOCK;
					const uint64_t ai = r0 + ar, bj = c0 + bc;

					ta[ak][ar] = ai < p.m && k0 + ak < p.k ?
						AT(p.a, ai, k0 + ak, p.ars, p.acs) : T(0);
					tb[bk][bc] = k0 + bk < p.k && bj < p.n ?
						AT(p.b, k0 + bk, bj, p.brs, p.bcs) : T(0);
				}
				barrier();
				for (uint q = 0; q < KSTEP; q++) {
					T av[R], bv[R];

					for (uint i = 0; i < R; i++)
						av[i] = ta[q][ty + TILE * i];
					for (uint j = 0; j < R; j++)
						bv[j] = tb[q][tx + TILE * j];
					for (uint i = 0; i < R; i++)
						for (uint j = 0; j < R; j++)
							acc[i][j] += av[i] * bv[j];
				}
				barrier();
			}
		}
		for (uint i = 0; i < R; i++)
			for (uint j = 0; j < R; j++) {
				const uint64_t ci = r0 + ty + TILE * i;
				const uint64_t cj = c0 + tx + TILE * j;

				if (ci < p.m && cj < p.n) {
					T r = p.alpha * acc[i][j];

					if (p.beta != T(0))
						r += p.beta * AT(p.c, ci, cj, p.crs, p.ccs);
					AT(p.c, ci, cj, p.crs, p.ccs) = r;
				}
			}
	}
}
