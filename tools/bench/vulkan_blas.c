// SPDX-License-Identifier: MIT
/*
 * gpubuf-bench vulkan's anchor: OpenBLAS's sgemv and sgemm on the same gpubuf
 * memory and the same cores, so that the GEMV figures of a CPU device
 * (lavapipe) can be read against a tuned CPU library. Loaded with
 * dlopen() like every runtime the tools use: libopenblas.so.0 on the
 * library path, else where Debian puts it (libopenblas0-pthread,
 * -openmp or -serial, outside the default path), else a libblas.so.3
 * that is OpenBLAS (the alternative those packages install). Without
 * one the row says how to get it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#ifdef GPUBUF_TOOLS_HAVE_VULKAN

#include "vk_bench.h"

#if defined(__x86_64__)
#define VK_BLAS_TRIPLET "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define VK_BLAS_TRIPLET "aarch64-linux-gnu"
#else
#define VK_BLAS_TRIPLET ""
#endif

static const char *const vk_blas_paths[] = {
	"libopenblas.so.0",
	"/usr/lib/" VK_BLAS_TRIPLET "/openblas-pthread/libopenblas.so.0",
	"/usr/lib/" VK_BLAS_TRIPLET "/openblas-openmp/libopenblas.so.0",
	"/usr/lib/" VK_BLAS_TRIPLET "/openblas-serial/libopenblas.so.0",
	"libblas.so.3",
};

void vk_blas_open(struct vk_bench *vb)
{
	const char *(*config)(void);

	for (size_t i = 0; i < sizeof(vk_blas_paths) / sizeof(vk_blas_paths[0]);
	     i++) {
		void *h = dlopen(vk_blas_paths[i], RTLD_NOW | RTLD_LOCAL);

		if (!h)
			continue;
		/* Only OpenBLAS has it: the reference BLAS is no anchor. */
		*(void **)&config = dlsym(h, "openblas_get_config");
		*(void **)&vb->sgemv = dlsym(h, "cblas_sgemv");
		*(void **)&vb->sgemm = dlsym(h, "cblas_sgemm");
		if (config && vb->sgemv && vb->sgemm) {
			vb->blas = h;
			snprintf(vb->blas_name, sizeof(vb->blas_name), "%s",
				 config());
			return;
		}
		vb->sgemv = NULL;
		vb->sgemm = NULL;
		dlclose(h);
	}
	snprintf(vb->blas_why, sizeof(vb->blas_why),
		 "no OpenBLAS (libopenblas.so.0; Debian: apt install libopenblas0-pthread)");
}

void vk_blas_close(struct vk_bench *vb)
{
	if (vb->blas)
		dlclose(vb->blas);
	vb->blas = NULL;
	vb->sgemv = NULL;
	vb->sgemm = NULL;
}

#endif /* GPUBUF_TOOLS_HAVE_VULKAN */
