// SPDX-License-Identifier: MIT
//
// y = alpha A x + beta y, A m x k, walked along its rows with subgroup
// arithmetic (and ballot, to count a subgroup's invocations): one
// subgroup per row of y, rows strided over the dispatch.
// The invocations of a subgroup read neighbouring elements of the row
// (coalesced for a row-major A) and subgroupAdd() sums them: no shared
// memory and no barrier. For devices without subgroup arithmetic in
// compute shaders, gemv_rows.comp does the same with a workgroup and a
// tree in shared memory. alpha == 0 reads neither A nor x, beta == 0 does
// not read y.
#version 460
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_ballot : require
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
	/*
	 * A subgroup need not be full (no REQUIRE_FULL_SUBGROUPS: ANV may
	 * run a shader reporting 32 at SIMD8; a subgroupSize above 64 leaves
	 * the 64-invocation workgroup one partial subgroup): number and
	 * count the invocations that exist, not gl_SubgroupSize.
	 */
	const uvec4 live = subgroupBallot(true);
	const uint lane = subgroupBallotExclusiveBitCount(live);
	const uint64_t width = subgroupBallotBitCount(live);
	const uint64_t stride = uint64_t(gl_NumWorkGroups.x) * gl_NumSubgroups;

	// The row loop is the same for the whole subgroup: subgroupAdd() is
	// reached by all of its invocations.
	for (uint64_t i = uint64_t(gl_WorkGroupID.x) * gl_NumSubgroups +
			  gl_SubgroupID; i < p.m; i += stride) {
		T acc = T(0);

		if (p.alpha != T(0))
			for (uint64_t j = lane; j < p.k; j += width)
				acc += AT(p.a, i, j, p.ars, p.acs) *
				       AT(p.x, j, 0, p.incx, 0);
		acc = subgroupAdd(acc);
		if (subgroupElect()) {
			T r = p.alpha * acc;

			if (p.beta != T(0))
				r += p.beta * AT(p.y, i, 0, p.incy, 0);
			AT(p.y, i, 0, p.incy, 0) = r;
		}
	}
}
