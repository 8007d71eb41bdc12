/* SPDX-License-Identifier: MIT */
/*
 * The Vulkan kernels' SPIR-V modules, compiled from the GLSL in shaders/ by
 * glslangValidator and checked by spirv-val at build time, as read-only
 * data: gpubuf_vk_spirv_<name> and its end, found on the assembler's -I
 * path (the build folder's vulkan/). SPIR-V is a stream of 32-bit
 * words, so each starts 4-byte aligned (16 here).
 */
#define GPUBUF_SPIRV(name, file)			\
	.section .rodata.gpubuf_spirv, "a";		\
	.balign 16;					\
	.globl gpubuf_vk_spirv_##name;			\
	.hidden gpubuf_vk_spirv_##name;			\
	.type gpubuf_vk_spirv_##name, @object;		\
gpubuf_vk_spirv_##name:					\
	.incbin file;					\
	.size gpubuf_vk_spirv_##name, . - gpubuf_vk_spirv_##name; \
	.globl gpubuf_vk_spirv_##name##_end;		\
	.hidden gpubuf_vk_spirv_##name##_end;		\
gpubuf_vk_spirv_##name##_end:				\
	.byte 0

GPUBUF_SPIRV(gemv_f32, "gemv_f32.spv")
GPUBUF_SPIRV(gemv_f64, "gemv_f64.spv")
GPUBUF_SPIRV(gemv_rows_f32, "gemv_rows_f32.spv")
GPUBUF_SPIRV(gemv_rows_f64, "gemv_rows_f64.spv")
GPUBUF_SPIRV(gemv_sg_f32, "gemv_sg_f32.spv")
GPUBUF_SPIRV(gemv_sg_f64, "gemv_sg_f64.spv")
GPUBUF_SPIRV(gemm_f32, "gemm_f32.spv")
GPUBUF_SPIRV(gemm_f64, "gemm_f64.spv")
GPUBUF_SPIRV(stream_read_f32, "stream_read_f32.spv")

	.section .note.GNU-stack, "", @progbits
