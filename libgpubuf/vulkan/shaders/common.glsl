// SPDX-License-Identifier: MIT
//
// What every gpubuf shader shares: the element type (F64 defined: double,
// else float), operands reached by 64-bit buffer device address as in
// kernels/gpubuf_kernels.cu, and strides in elements. The push constants
// are kernels/kernel_args.h's parameter lists, 8 bytes a field; a float
// scalar sits in the low half of its slot.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

#ifdef F64
#define T double
#define T_BYTES 8
#define SCALAR(name) double name
#else
#define T float
#define T_BYTES 4
#define SCALAR(name) float name; uint name##_pad
#endif

layout(buffer_reference, std430, buffer_reference_align = T_BYTES) buffer Elem {
	T v;
};

// The element at (i, j) of an operand with strides rs and cs.
#define AT(base, i, j, rs, cs) Elem((base) + ((i) * (rs) + (j) * (cs)) * T_BYTES).v
