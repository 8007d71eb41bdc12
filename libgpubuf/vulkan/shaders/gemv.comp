// SPDX-License-Identifier: MIT
//
// y = alpha A x + beta y, A m x k: one invocation per row of y, rows
// strided over the dispatch. alpha == 0 reads neither A nor x, beta == 0
// does not read y (NaN there stays out), as in gpubuf_kernels.cu.
//
// Each invocation walks its row with pointers stepped by the strides, not
// an index multiplied out per element: 64-bit multiplies are several
// instructions on a CPU device's SIMD lanes. Where A's rows and x are
// contiguous and 16-byte aligned, and k is long enough to pay for it, the
// row is read four elements a load (uniform test, so a device skips the
// path it does not take); a row's tail, and every other case, one at a
// time. Measured on lavapipe in docs/benchmarks.md.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifdef F64
#define T4 dvec4
#else
#define T4 vec4
#endif

layout(buffer_reference, std430, buffer_reference_align = 16) buffer Elem4 {
	T4 v;
};

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
	const bool by4 = p.k >= 8 && p.acs == 1 && p.incx == 1 &&
			 ((p.a | p.x | (p.ars * T_BYTES)) & 15) == 0;
	const uint64_t da = p.acs * T_BYTES, dx = p.incx * T_BYTES;

	for (uint64_t i = gl_GlobalInvocationID.x; i < p.m; i += stride) {
		uint64_t pa = p.a + i * p.ars * T_BYTES, px = p.x, j = 0;
		T acc = T(0);

		if (p.alpha != T(0)) {
			if (by4) {
				T4 acc4 = T4(0);

				for (; j + 4 <= p.k; j += 4) {
					acc4 += Elem4(pa).v * Elem4(px).v;
					pa += 4 * T_BYTES;
					px += 4 * T_BYTES;
				}
				acc = (acc4.x + acc4.y) + (acc4.z + acc4.w);
			}
			for (; j < p.k; j++) {
				acc += Elem(pa).v * Elem(px).v;
				pa += da;
				px += dx;
			}
		}
		T r = p.alpha * acc;
		if (p.beta != T(0))
			r += p.beta * AT(p.y, i, 0, p.incy, 0);
		AT(p.y, i, 0, p.incy, 0) = r;
	}
}
