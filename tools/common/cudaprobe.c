// SPDX-License-Identifier: MIT
/*
 * The CUDA line of gpubuf-info and of gpubuf-bench's header, from libgpubuf:
 * the driver the library loads, its version and devices, or the library's
 * reason for not loading one. There is no second loader here, so the tools
 * say what programs using libgpubuf will see.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <gpubuf.h>
#include <gpubuf/tools.h>	/* the driver as libgpubuf loaded it */
#include "gpuprobe.h"

/*
 * libgpubuf never unloads the driver it opened, so RTLD_NOLOAD tells "not
 * installed" from "installed but unusable" without loading anything.
 */
static int gpu_probe_cuda_loaded(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!h)
		return 0;
	dlclose(h);	/* drops only this lookup's reference */
	return 1;
}

#ifdef GPUBUF_HAVE_CUDA
static void gpu_probe_cuda_details(struct gpu_probe *p)
{
	const struct gpubuf_cu *cu;
	CUdevice dev;

	if (gpubuf_cu_get(&cu))
		return;
	p->driver_version = cu->driver_version;
	snprintf(p->version, sizeof(p->version), "%d.%d",
		 cu->driver_version / 1000, cu->driver_version % 1000 / 10);
	if (cu->cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
	    cu->cuDeviceGetName(p->device0, sizeof(p->device0), dev) !=
	    CUDA_SUCCESS)
		p->device0[0] = '\0';
}
#endif

void gpu_probe_cuda(struct gpu_probe *p)
{
	const char *msg;
	int n = 0, err;

	memset(p, 0, sizeof(*p));
	p->name = "cuda";
	p->lib = "libcuda.so.1";
	p->device_count = -1;
	err = gpubuf_cuda_device_count(&n);
	if (err) {
		msg = gpubuf_last_error();
		snprintf(p->reason, sizeof(p->reason), "%s",
			 msg[0] ? msg : gpubuf_strerror(err));
		p->found = gpu_probe_cuda_loaded();
		return;
	}
	p->found = 1;
	p->usable = 1;
	p->device_count = n;
#ifdef GPUBUF_HAVE_CUDA
	gpu_probe_cuda_details(p);
#endif
}
