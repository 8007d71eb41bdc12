// SPDX-License-Identifier: MIT
/*
 * CUDA and HSA probes via dlopen. The few types and constants used are
 * declared here instead of including cuda.h or hsa.h, so the tools build
 * without either SDK; the values below are part of those stable ABIs.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpuprobe.h"

/* CUDA driver API (cuda.h): CUresult 0 is CUDA_SUCCESS. */
typedef int cu_result;
typedef cu_result (*cu_get_proc_v2_fn)(const char *, void **, int, uint64_t,
				       int *);
typedef cu_result (*cu_get_proc_v1_fn)(const char *, void **, int, uint64_t);
typedef cu_result (*cu_init_fn)(unsigned int);
typedef cu_result (*cu_int_fn)(int *);
typedef cu_result (*cu_dev_get_fn)(int *, int);
typedef cu_result (*cu_dev_name_fn)(char *, int, int);
typedef cu_result (*cu_err_str_fn)(cu_result, const char **);

/* The ABI version we ask cuGetProcAddress for: CUDA 11.3 and later. */
#define PROBE_CUDA_API	11030

struct cuda_syms {
	cu_get_proc_v2_fn get_v2;
	cu_get_proc_v1_fn get_v1;
};

/*
 * dlsym() of a driver entry point may return a legacy ABI; the driver's
 * own cuGetProcAddress picks the one matching the version we ask for.
 */
static void *cuda_sym(struct cuda_syms *s, const char *name)
{
	void *fn = NULL;
	int status = 0;

	if (s->get_v2 && s->get_v2(name, &fn, PROBE_CUDA_API, 0, &status) == 0)
		return fn;
	if (s->get_v1 && s->get_v1(name, &fn, PROBE_CUDA_API, 0) == 0)
		return fn;
	return NULL;
}

static const char *cuda_err(struct cuda_syms *s, cu_result r)
{
	cu_err_str_fn str = (cu_err_str_fn)cuda_sym(s, "cuGetErrorName");
	const char *msg = NULL;

	if (str && str(r, &msg) == 0 && msg)
		return msg;
	return "unknown error";
}

static void cuda_devices(struct gpu_probe *p, struct cuda_syms *s)
{
	cu_init_fn init = (cu_init_fn)cuda_sym(s, "cuInit");
	cu_int_fn count = (cu_int_fn)cuda_sym(s, "cuDeviceGetCount");
	cu_dev_get_fn get = (cu_dev_get_fn)cuda_sym(s, "cuDeviceGet");
	cu_dev_name_fn name = (cu_dev_name_fn)cuda_sym(s, "cuDeviceGetName");
	cu_result r;
	int dev;

	if (!init || !count) {
		snprintf(p->reason, sizeof(p->reason),
			 "cuInit/cuDeviceGetCount not resolved");
		return;
	}
	r = init(0);
	if (r) {
		snprintf(p->reason, sizeof(p->reason), "cuInit failed: %s (%d)",
			 cuda_err(s, r), r);
		return;
	}
	r = count(&p->device_count);
	if (r) {
		snprintf(p->reason, sizeof(p->reason),
			 "cuDeviceGetCount failed: %s (%d)", cuda_err(s, r), r);
		p->device_count = -1;
		return;
	}
	if (!p->device_count) {
		snprintf(p->reason, sizeof(p->reason), "no CUDA device");
		return;
	}
	if (get && name && !get(&dev, 0))
		name(p->device0, sizeof(p->device0), dev);
	p->usable = 1;
}

void gpu_probe_cuda(struct gpu_probe *p)
{
	struct cuda_syms s = { 0 };
	cu_int_fn drv_version;
	void *h;

	memset(p, 0, sizeof(*p));
	p->name = "cuda";
	p->lib = "libcuda.so.1";
	p->device_count = -1;
	h = dlopen(p->lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(p->reason, sizeof(p->reason),
			 "libcuda.so.1 not found (no NVIDIA driver)");
		return;
	}
	p->found = 1;
	s.get_v2 = (cu_get_proc_v2_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!s.get_v2)
		s.get_v1 = (cu_get_proc_v1_fn)dlsym(h, "cuGetProcAddress");
	if (!s.get_v2 && !s.get_v1) {
		snprintf(p->reason, sizeof(p->reason),
			 "libcuda.so.1 has no cuGetProcAddress (driver older than CUDA 11.3)");
		return;	/* handle kept: unloading a driver library is unsafe */
	}
	drv_version = (cu_int_fn)cuda_sym(&s, "cuDriverGetVersion");
	if (drv_version && !drv_version(&p->driver_version))
		snprintf(p->version, sizeof(p->version), "%d.%d",
			 p->driver_version / 1000,
			 p->driver_version % 1000 / 10);
	cuda_devices(p, &s);
}

/* HSA runtime (hsa.h): status 0 success, 1 HSA_STATUS_INFO_BREAK. */
typedef int hsa_status;
typedef struct { uint64_t handle; } hsa_agent;
typedef hsa_status (*hsa_void_fn)(void);
typedef hsa_status (*hsa_sysinfo_fn)(int, void *);
typedef hsa_status (*hsa_agent_cb)(hsa_agent, void *);
typedef hsa_status (*hsa_iterate_fn)(hsa_agent_cb, void *);
typedef hsa_status (*hsa_agent_info_fn)(hsa_agent, int, void *);
typedef hsa_status (*hsa_status_str_fn)(hsa_status, const char **);

#define PROBE_HSA_SYSTEM_INFO_VERSION_MAJOR	0
#define PROBE_HSA_SYSTEM_INFO_VERSION_MINOR	1
#define PROBE_HSA_AGENT_INFO_NAME		0
#define PROBE_HSA_AGENT_INFO_DEVICE		17
#define PROBE_HSA_DEVICE_TYPE_GPU		1

struct hsa_count {
	hsa_agent_info_fn info;
	int gpus;
	char first[64];
};

static hsa_status hsa_count_gpu(hsa_agent agent, void *data)
{
	struct hsa_count *c = data;
	int type = -1;

	if (c->info(agent, PROBE_HSA_AGENT_INFO_DEVICE, &type) == 0 &&
	    type == PROBE_HSA_DEVICE_TYPE_GPU) {
		if (!c->gpus++)	/* HSA agent names are 64 bytes */
			c->info(agent, PROBE_HSA_AGENT_INFO_NAME, c->first);
	}
	return 0;
}

static void hsa_devices(struct gpu_probe *p, void *h)
{
	hsa_iterate_fn iterate = (hsa_iterate_fn)dlsym(h, "hsa_iterate_agents");
	struct hsa_count c = { 0 };

	c.info = (hsa_agent_info_fn)dlsym(h, "hsa_agent_get_info");
	if (!iterate || !c.info || iterate(hsa_count_gpu, &c)) {
		snprintf(p->reason, sizeof(p->reason),
			 "hsa_iterate_agents failed");
		return;
	}
	p->device_count = c.gpus;
	c.first[sizeof(c.first) - 1] = '\0';
	snprintf(p->device0, sizeof(p->device0), "%s", c.first);
	if (!c.gpus)
		snprintf(p->reason, sizeof(p->reason), "no HSA GPU agent");
	else
		p->usable = 1;
}

void gpu_probe_hsa(struct gpu_probe *p)
{
	hsa_void_fn init, shut_down;
	hsa_sysinfo_fn sysinfo;
	hsa_status_str_fn str;
	uint16_t major = 0, minor = 0;
	const char *msg = NULL;
	hsa_status r;
	void *h;

	memset(p, 0, sizeof(*p));
	p->name = "hsa";
	p->lib = "libhsa-runtime64.so.1";
	p->device_count = -1;
	h = dlopen(p->lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(p->reason, sizeof(p->reason),
			 "libhsa-runtime64.so.1 not found (no ROCm runtime)");
		return;
	}
	p->found = 1;
	init = (hsa_void_fn)dlsym(h, "hsa_init");
	shut_down = (hsa_void_fn)dlsym(h, "hsa_shut_down");
	sysinfo = (hsa_sysinfo_fn)dlsym(h, "hsa_system_get_info");
	str = (hsa_status_str_fn)dlsym(h, "hsa_status_string");
	if (!init || !shut_down || !sysinfo) {
		snprintf(p->reason, sizeof(p->reason),
			 "libhsa-runtime64.so.1 lacks hsa_init/hsa_system_get_info");
		return;
	}
	r = init();
	if (r) {
		if (!str || str(r, &msg) || !msg)
			msg = "unknown error";
		snprintf(p->reason, sizeof(p->reason),
			 "hsa_init failed: %s (0x%x; no /dev/kfd?)", msg, r);
		return;
	}
	if (!sysinfo(PROBE_HSA_SYSTEM_INFO_VERSION_MAJOR, &major) &&
	    !sysinfo(PROBE_HSA_SYSTEM_INFO_VERSION_MINOR, &minor))
		snprintf(p->version, sizeof(p->version), "%u.%u", major, minor);
	hsa_devices(p, h);
	shut_down();
}
