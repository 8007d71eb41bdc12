// SPDX-License-Identifier: MIT
/*
 * With CUSTUB_EXEC=1 the stand-in runs the kernels it is asked to launch:
 * libgpubuf's own (libgpubuf/kernels/gpubuf_kernels.cu), compiled for the
 * CPU under tests/simt's emulator in the CUDA dialect (32-lane warps,
 * real barriers and shuffles), on the host memory behind the registered
 * device pointers (stub_module.c translates them). A launch runs to the
 * end before cuLaunchKernel returns, which is one order a stream may run
 * its work in. It lets the GPU test program (tests/lib/cuda.c) and
 * tests/gpu/run.sh run end to end here; it says nothing about a GPU.
 */
#include <stdio.h>

#include <string>

#include "simt.h"
#include "gpubuf_kernels.cu"

extern "C" {
#include "stub_exec.h"
}

namespace {

struct signature {
	const char *name;
	int nparams;
	uint32_t pointers, nullable;
};

/* The parameter lists of gpubuf_kernels.cu's extern "C" kernels. */
const signature signatures[] = {
	{ "gpubuf_gemv_f32", 11, 1u << 3 | 1u << 6 | 1u << 9, 0 },
	{ "gpubuf_gemv_f64", 11, 1u << 3 | 1u << 6 | 1u << 9, 0 },
	{ "gpubuf_gemm_f32", 14, 1u << 4 | 1u << 7 | 1u << 11, 0 },
	{ "gpubuf_gemm_f64", 14, 1u << 4 | 1u << 7 | 1u << 11, 0 },
	{ "gpubuf_stream_read", 3, 1u << 0 | 1u << 2, 1u << 2 },
	{ "gpubuf_stream_write", 2, 1u << 0, 0 },
};

template <typename T> T *ptr(uint64_t v)
{
	return reinterpret_cast<T *>(static_cast<uintptr_t>(v));
}

double dbl(uint64_t v)
{
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* The kernel's body for one thread, from the parameter values. */
std::function<void()> body(const std::string &name, const uint64_t *p)
{
	if (name == "gpubuf_gemv_f32")
		return [=] {
			gpubuf_gemv_f32(p[0], p[1], dbl(p[2]), ptr<float>(p[3]),
					p[4], p[5], ptr<float>(p[6]), p[7],
					dbl(p[8]), ptr<float>(p[9]), p[10]);
		};
	if (name == "gpubuf_gemv_f64")
		return [=] {
			gpubuf_gemv_f64(p[0], p[1], dbl(p[2]), ptr<double>(p[3]),
					p[4], p[5], ptr<double>(p[6]), p[7],
					dbl(p[8]), ptr<double>(p[9]), p[10]);
		};
	if (name == "gpubuf_gemm_f32")
		return [=] {
			gpubuf_gemm_f32(p[0], p[1], p[2], dbl(p[3]),
					ptr<float>(p[4]), p[5], p[6],
					ptr<float>(p[7]), p[8], p[9], dbl(p[10]),
					ptr<float>(p[11]), p[12], p[13]);
		};
	if (name == "gpubuf_gemm_f64")
		return [=] {
			gpubuf_gemm_f64(p[0], p[1], p[2], dbl(p[3]),
					ptr<double>(p[4]), p[5], p[6],
					ptr<double>(p[7]), p[8], p[9], dbl(p[10]),
					ptr<double>(p[11]), p[12], p[13]);
		};
	if (name == "gpubuf_stream_read")
		return [=] {
			gpubuf_stream_read(ptr<const uint4>(p[0]), p[1],
					   ptr<unsigned int>(p[2]));
		};
	if (name == "gpubuf_stream_write")
		return [=] { gpubuf_stream_write(ptr<uint4>(p[0]), p[1]); };
	return nullptr;
}

} // namespace

int stub_exec_signature(const char *name, int *nparams, uint32_t *pointers,
			uint32_t *nullable)
{
	for (const signature &s : signatures)
		if (!strcmp(s.name, name)) {
			*nparams = s.nparams;
			*pointers = s.pointers;
			*nullable = s.nullable;
			return 0;
		}
	return -1;
}

int stub_exec_run(const char *name, const unsigned int grid[3],
		  const unsigned int block[3], const uint64_t *val, char *why,
		  size_t len)
{
	std::function<void()> fn = body(name, val);
	std::string err;

	if (!fn) {
		snprintf(why, len, "no CPU build of kernel %s", name);
		return -1;
	}
	if (simt::launch(dim3{ grid[0], grid[1], grid[2] },
			 dim3{ block[0], block[1], block[2] }, GPUBUF_WARP, fn,
			 &err)) {
		snprintf(why, len, "%s: %s", name, err.c_str());
		return -1;
	}
	return 0;
}
