// SPDX-License-Identifier: MIT
/*
 * Description: the SPIR-V modules libgpubuf embeds for its Vulkan kernels
 * (compiled from libgpubuf/vulkan/shaders by glslangValidator and checked
 * by spirv-val at build time), parsed as they sit in the library: the
 * header, every instruction's length, one GLCompute entry point "main",
 * the workgroup size the dispatch code assumes (GEMV 64 in its three forms,
 * GEMM 16 x 16),
 * 64-bit device addresses (PhysicalStorageBuffer64), and Float64 in the
 * f64 modules only, so an f32 kernel runs on devices without
 * shaderFloat64. Needs no Vulkan device.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef GPUBUF_HAVE_VULKAN_KERNELS

#include "tap.h"

#define T_SPIRV(name)							\
	extern const uint32_t gpubuf_vk_spirv_##name[];			\
	extern const uint32_t gpubuf_vk_spirv_##name##_end[];
T_SPIRV(gemv_f32)
T_SPIRV(gemv_f64)
T_SPIRV(gemv_rows_f32)
T_SPIRV(gemv_rows_f64)
T_SPIRV(gemv_sg_f32)
T_SPIRV(gemv_sg_f64)
T_SPIRV(gemm_f32)
T_SPIRV(gemm_f64)
#undef T_SPIRV

/* SPIR-V 1.5 (Vulkan 1.2) numbers this test reads. */
enum {
	T_MAGIC = 0x07230203,
	T_OP_MEMORY_MODEL = 14,
	T_OP_ENTRY_POINT = 15,
	T_OP_EXECUTION_MODE = 16,
	T_OP_CAPABILITY = 17,
	T_MODEL_GLCOMPUTE = 5,
	T_MODE_LOCAL_SIZE = 17,
	T_CAP_FLOAT64 = 10,
	T_CAP_INT64 = 11,
	T_CAP_PSB_ADDRESSES = 5347,
	T_ADDRESSING_PSB64 = 5348,
};

struct t_module {
	const char *name;
	const uint32_t *code, *end;
	uint32_t local[3];
	int f64;
};

static int t_parse(const struct t_module *m)
{
	size_t n = (size_t)(m->end - m->code), i = 5;
	const uint32_t *w = m->code;
	int entries = 0, float64 = 0, int64 = 0, psb = 0, psb64 = 0;
	uint32_t local[3] = { 0, 0, 0 };

	printf("# %s: %zu words, version %u.%u, bound %u\n", m->name, n,
	       n > 1 ? w[1] >> 16 & 0xff : 0, n > 1 ? w[1] >> 8 & 0xff : 0,
	       n > 3 ? w[3] : 0);
	T_CHECK(n > 5 && w[0] == T_MAGIC);
	T_CHECK(w[1] >= 0x00010500);	/* SPIR-V 1.5 or later */
	T_EQ(w[4], 0);			/* schema */
	while (i < n) {
		uint32_t len = w[i] >> 16, op = w[i] & 0xffff;

		T_CHECK(len >= 1 && i + len <= n);
		if (op == T_OP_CAPABILITY && len == 2) {
			float64 |= w[i + 1] == T_CAP_FLOAT64;
			int64 |= w[i + 1] == T_CAP_INT64;
			psb |= w[i + 1] == T_CAP_PSB_ADDRESSES;
		} else if (op == T_OP_MEMORY_MODEL && len == 3) {
			psb64 = w[i + 1] == T_ADDRESSING_PSB64;
		} else if (op == T_OP_ENTRY_POINT) {
			T_CHECK(len >= 4);
			T_EQ(w[i + 1], T_MODEL_GLCOMPUTE);
			T_CHECK(!strcmp((const char *)&w[i + 3], "main"));
			entries++;
		} else if (op == T_OP_EXECUTION_MODE && len == 6 &&
			   w[i + 2] == T_MODE_LOCAL_SIZE) {
			memcpy(local, &w[i + 3], sizeof(local));
		}
		i += len;
	}
	T_EQ(i, n);
	T_EQ(entries, 1);
	T_CHECK(int64 && psb && psb64);
	T_EQ(float64, m->f64);
	T_EQ(local[0], m->local[0]);
	T_EQ(local[1], m->local[1]);
	T_EQ(local[2], m->local[2]);
	return T_PASS;
}

static int embedded_modules_parse(void)
{
	const struct t_module mods[] = {
		{ "gemv_f32", gpubuf_vk_spirv_gemv_f32,
		  gpubuf_vk_spirv_gemv_f32_end, { 64, 1, 1 }, 0 },
		{ "gemv_f64", gpubuf_vk_spirv_gemv_f64,
		  gpubuf_vk_spirv_gemv_f64_end, { 64, 1, 1 }, 1 },
		{ "gemv_rows_f32", gpubuf_vk_spirv_gemv_rows_f32,
		  gpubuf_vk_spirv_gemv_rows_f32_end, { 64, 1, 1 }, 0 },
		{ "gemv_rows_f64", gpubuf_vk_spirv_gemv_rows_f64,
		  gpubuf_vk_spirv_gemv_rows_f64_end, { 64, 1, 1 }, 1 },
		{ "gemv_sg_f32", gpubuf_vk_spirv_gemv_sg_f32,
		  gpubuf_vk_spirv_gemv_sg_f32_end, { 64, 1, 1 }, 0 },
		{ "gemv_sg_f64", gpubuf_vk_spirv_gemv_sg_f64,
		  gpubuf_vk_spirv_gemv_sg_f64_end, { 64, 1, 1 }, 1 },
		{ "gemm_f32", gpubuf_vk_spirv_gemm_f32,
		  gpubuf_vk_spirv_gemm_f32_end, { 16, 16, 1 }, 0 },
		{ "gemm_f64", gpubuf_vk_spirv_gemm_f64,
		  gpubuf_vk_spirv_gemm_f64_end, { 16, 16, 1 }, 1 },
	};

	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++)
		if (t_parse(&mods[i]) != T_PASS) {
			printf("# in %s\n", mods[i].name);
			return T_FAIL;
		}
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(embedded_modules_parse),
	};

	return t_run(tests, sizeof(tests) / sizeof(tests[0]));
}

#else

int main(void)
{
	printf("1..0 # SKIP libgpubuf was built without glslangValidator and spirv-val: no SPIR-V embedded\n");
	return 0;
}

#endif
