// SPDX-License-Identifier: MIT
/*
 * The HSA line of gpubuf-info and of gpubuf-bench's header, from
 * libgpubuf: the runtime the library loads, its version and GPU agents,
 * or the library's reason for not using one. As for CUDA (cudaprobe.c),
 * there is no second loader here, so the tools say what programs using
 * libgpubuf will see.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <gpubuf.h>
#include <gpubuf/tools.h>	/* the runtime as libgpubuf loaded it */
#include "gpuprobe.h"

#define HSA_SONAME "libhsa-runtime64.so.1"

/*
 * libgpubuf never unloads the runtime it opened, so RTLD_NOLOAD tells "not
 * installed" from "installed but unusable" without loading anything.
 */
static int gpu_probe_hsa_loaded(void)
{
	void *h = dlopen(HSA_SONAME, RTLD_NOW | RTLD_NOLOAD);

	if (!h)
		return 0;
	dlclose(h);	/* drops only this lookup's reference */
	return 1;
}

#ifdef GPUBUF_HAVE_HSA
static void gpu_probe_hsa_details(struct gpu_probe *p)
{
	const struct gpubuf_hsa *hsa;
	uint16_t major = 0, minor = 0;
	char name[64];

	if (gpubuf_hsa_get(&hsa))
		return;
	if (hsa->hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MAJOR, &major) ==
	    HSA_STATUS_SUCCESS &&
	    hsa->hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MINOR, &minor) ==
	    HSA_STATUS_SUCCESS)
		snprintf(p->version, sizeof(p->version), "%u.%u", major, minor);
	/* Agent names are 64 bytes, not always terminated. */
	if (hsa->hsa_agent_get_info(hsa->gpus[0], HSA_AGENT_INFO_NAME, name) ==
	    HSA_STATUS_SUCCESS) {
		name[sizeof(name) - 1] = '\0';
		snprintf(p->device0, sizeof(p->device0), "%s", name);
	}
	gpu_probe_hsa_kernels(0, p);
}
#endif

void gpu_probe_hsa_kernels(int gpu, struct gpu_probe *p)
{
#ifdef GPUBUF_HAVE_HSA
	const struct gpubuf_hsa *hsa;
	int r;

	p->kernels = -1;
	if (gpubuf_hsa_get(&hsa))
		return;
	r = gpubuf_hsa_kernels_cover(hsa, gpu, p->arch, sizeof(p->arch),
				     p->kernels_why, sizeof(p->kernels_why));
	p->kernels = r < 0 ? -1 : r;
#else
	(void)gpu;
	p->kernels = -1;
#endif
}

void gpu_probe_hsa(struct gpu_probe *p)
{
	const char *msg;
	int n = 0, err;

	memset(p, 0, sizeof(*p));
	p->kernels = -1;
	p->name = "hsa";
	p->lib = HSA_SONAME;
	p->device_count = -1;
	err = gpubuf_hsa_agents(NULL, 0, &n);
	if (err) {
		msg = gpubuf_last_error();
		snprintf(p->reason, sizeof(p->reason), "%s",
			 msg[0] ? msg : gpubuf_strerror(err));
		p->found = gpu_probe_hsa_loaded();
		return;
	}
	p->found = 1;
	p->usable = 1;
	p->device_count = n;
#ifdef GPUBUF_HAVE_HSA
	gpu_probe_hsa_details(p);
#endif
}
