/* SPDX-License-Identifier: MIT */
/*
 * Run-time probes for the GPU stacks, through libgpubuf's own loaders
 * (cudaprobe.c, hsaprobe.c): nothing is linked, the runtimes are loaded
 * with dlopen(), so the tools build and run on machines without either.
 */
#ifndef GPUBUF_TOOLS_GPUPROBE_H
#define GPUBUF_TOOLS_GPUPROBE_H

struct gpu_probe {
	const char *name;	/* "cuda" or "hsa" */
	const char *lib;	/* the soname loaded */
	int found;		/* the library loaded */
	int usable;		/* initialised and counted devices */
	int driver_version;	/* CUDA: cuDriverGetVersion(); HSA: 0 */
	char version[32];	/* human form: "13.0", HSA "1.1" */
	int device_count;	/* GPUs seen, -1 when unknown */
	char device0[128];	/* name of the first device, or "" */
	char reason[192];	/* why not usable, when !usable */
};

void gpu_probe_cuda(struct gpu_probe *p);	/* cudaprobe.c */
void gpu_probe_hsa(struct gpu_probe *p);	/* hsaprobe.c */

#endif
