/* SPDX-License-Identifier: MIT */
/*
 * The CUDA kernels' fatbin, built by nvcc from gpubuf_kernels.cu, as read-only
 * data for cuModuleLoadData. The driver wants it 8-byte aligned; 64 is
 * generous and costs nothing.
 */
	.section .rodata.gpubuf_fatbin, "a"
	.balign 64
	.globl gpubuf_cuda_fatbin
	.hidden gpubuf_cuda_fatbin
	.type gpubuf_cuda_fatbin, @object
gpubuf_cuda_fatbin:
	.incbin GPUBUF_FATBIN
	.size gpubuf_cuda_fatbin, . - gpubuf_cuda_fatbin
	.globl gpubuf_cuda_fatbin_end
	.hidden gpubuf_cuda_fatbin_end
gpubuf_cuda_fatbin_end:
	.byte 0

	.section .note.GNU-stack, "", @progbits
