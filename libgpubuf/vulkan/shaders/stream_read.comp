// SPDX-License-Identifier: MIT
//
// Every 16-byte word of [p, p + 16 n) read once, for bandwidth measurements
// (gpubuf-bench vulkan's device read ceiling), as the CUDA kernels'
// gpubuf_stream_read: the words' xor is stored at sink only when it equals a
// fixed value, which the compiler cannot rule out, so no load is dead; sink
// may be 0. Grid-stride, neighbouring invocations reading neighbouring words.
#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x = 64) in;

layout(push_constant, std430) uniform Args {
	uint64_t n, p, sink;
} a;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Word {
	uvec4 v;
};

layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer Sink {
	uint v;
};

void main()
{
	const uint64_t stride = uint64_t(gl_NumWorkGroups.x) * gl_WorkGroupSize.x;
	uvec4 acc = uvec4(0);

	for (uint64_t i = gl_GlobalInvocationID.x; i < a.n; i += stride)
		acc ^= Word(a.p + i * 16).v;
	const uint f = acc.x ^ acc.y ^ acc.z ^ acc.w;

	if (f == 0x9e3779b9u && a.sink != 0)
		Sink(a.sink).v = f;
}
