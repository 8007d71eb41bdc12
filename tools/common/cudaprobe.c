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
/* The device's compute capability, and whether libgpubuf's kernels run there. */
static void gpu_probe_cuda_kernels(const struct gpubuf_cu *cu, int device,
				   struct gpu_probe *p)
{
	int major = 0, minor = 0,
	    r = gpubuf_cu_kernels_cover(cu, device, &major, &minor,
					p->kernels_why, sizeof(p->kernels_why));

	p->kernels = r < 0 ? -1 : r;
	if (r >= 0)
		snprintf(p->arch, sizeof(p->arch), "sm_%d%d", major, minor);
}

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
	gpu_probe_cuda_kernels(cu, 0, p);
}
#endif

void gpu_probe_cuda(struct gpu_probe *p)
{
	const char *msg;
	int n = 0, err;

	memset(p, 0, sizeof(*p));
	p->kernels = -1;
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

void gpu_kernels_text(const char *runtime, int device, char *buf,
		      unsigned long len)
{
	struct gpu_probe p;

	memset(&p, 0, sizeof(p));
	p.kernels = -1;
	buf[0] = '\0';
#ifdef GPUBUF_HAVE_CUDA
	if (!strcmp(runtime, "cuda")) {
		const struct gpubuf_cu *cu;

		if (gpubuf_cu_get(&cu))
			return;
		gpu_probe_cuda_kernels(cu, device, &p);
	}
#endif
#ifdef GPUBUF_HAVE_HSA
	if (!strcmp(runtime, "hsa"))
		gpu_probe_hsa_kernels(device, &p);
#endif
	(void)device;
	if (p.kernels < 0)
		return;
	if (p.kernels)
		snprintf(buf, len, "%s, kernels: yes", p.arch);
	else
		snprintf(buf, len, "%s, kernels: no (%s)",
			 p.arch[0] ? p.arch : "?", p.kernels_why);
}
