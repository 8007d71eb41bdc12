// SPDX-License-Identifier: MIT
/*
 * HSA probe via dlopen. The few types and constants used are declared here
 * instead of including hsa.h, so the tools build without the ROCm SDK; the
 * values below are part of its stable ABI. The CUDA probe is libgpubuf's
 * own driver loader (cudaprobe.c).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpuprobe.h"

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
