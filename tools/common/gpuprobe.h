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
	char reason[384];	/* why not usable, when !usable */
	/*
	 * The first device's architecture ("sm_90", "gfx90a"), and whether
	 * libgpubuf's kernels cover it (-1 unknown), with why not.
	 */
	char arch[96];
	int kernels;
	char kernels_why[192];
};

/*
 * "sm_90, kernels: yes" or "sm_70, kernels: no (why)" for device of a
 * runtime (p->name); "" when the runtime cannot tell.
 */
void gpu_kernels_text(const char *runtime, int device, char *buf,
		      unsigned long len);

void gpu_probe_cuda(struct gpu_probe *p);	/* cudaprobe.c */
void gpu_probe_hsa(struct gpu_probe *p);	/* hsaprobe.c */
/* Agent gpu's ISA and code-object coverage into p (hsaprobe.c). */
void gpu_probe_hsa_kernels(int gpu, struct gpu_probe *p);

#endif
