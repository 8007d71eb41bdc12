// SPDX-License-Identifier: MIT
/*
 * ROCm HSA runtime: lazy loading through dlopen, hsa_init once, the GPU
 * agents and the CPU's fine-grained system pool, hsa_status_t to errno.
 *
 * The only process-wide state is the loaded runtime table, written once
 * under pthread_once and read-only afterwards. hsa_shut_down is never
 * called: like the CUDA driver, the runtime keeps threads and state for
 * the life of the process, and other users of it in the same process
 * share its reference count. Compiled only when libhsa-runtime-dev's
 * headers were found (GPUBUF_HAVE_HSA).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hsa/hsa_runtime.h"
#include "core/internal.h"

#define GPUBUF_HSA_SONAME "libhsa-runtime64.so.1"

static struct {
	pthread_once_t once;
	pid_t pid;		/* the process that initialised the runtime */
	int err;
	char msg[200];
	struct gpubuf_hsa hsa;
} gpubuf_hsa_loaded = { .once = PTHREAD_ONCE_INIT };

static int gpubuf_hsa_errno(hsa_status_t s)
{
	switch ((int)s) {
	case HSA_STATUS_SUCCESS:
		return 0;
	case HSA_STATUS_ERROR_INVALID_ARGUMENT:
	case HSA_STATUS_ERROR_INVALID_AGENT:
	case HSA_STATUS_ERROR_INVALID_ALLOCATION:
	case HSA_STATUS_ERROR_INVALID_REGION:
	case HSA_STATUS_ERROR_INVALID_INDEX:
	case HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS:
	case HSA_STATUS_ERROR_INVALID_MEMORY_POOL:
		return -EINVAL;
	case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
		return -ENOMEM;
	case HSA_STATUS_ERROR_NOT_INITIALIZED:
	case HSA_STATUS_ERROR_INVALID_RUNTIME_STATE:
		return -ENODEV;
	case HSA_STATUS_ERROR_REFCOUNT_OVERFLOW:
		return -EOVERFLOW;
	case HSA_STATUS_ERROR_RESOURCE_FREE:
		return -EBUSY;
	case HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION:
	case HSA_STATUS_ERROR_MEMORY_FAULT:
		return -EFAULT;
	/* A code object the agent cannot run, as CUDA's invalid image. */
	case HSA_STATUS_ERROR_INVALID_ISA:
	case HSA_STATUS_ERROR_INVALID_CODE_OBJECT:
		return -ENOEXEC;
	default:
		return -EIO;
	}
}

static const char *gpubuf_hsa_text(const struct gpubuf_hsa *hsa,
				   hsa_status_t s)
{
	const char *text = NULL;

	if (hsa && hsa->hsa_status_string &&
	    hsa->hsa_status_string(s, &text) == HSA_STATUS_SUCCESS && text)
		return text;
	return "unknown HSA status";
}

GPUBUF_EXPORT int gpubuf_hsa_fail(const struct gpubuf_hsa *hsa, hsa_status_t s,
				  const char *what)
{
	gpubuf_error_set("%s (0x%x): %s", what, (unsigned int)s,
			 gpubuf_hsa_text(hsa, s));
	return gpubuf_hsa_errno(s);
}

/* Loader failures are remembered once and replayed to every caller. */
__attribute__((format(printf, 2, 3)))
static void gpubuf_hsa_load_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gpubuf_hsa_loaded.msg, sizeof(gpubuf_hsa_loaded.msg), fmt,
		  ap);
	va_end(ap);
	gpubuf_hsa_loaded.err = err;
}

struct gpubuf_hsa_scan {
	struct gpubuf_hsa *hsa;
	int n_agents;
	bool have_cpu;
	bool nomem;
};

static hsa_status_t gpubuf_hsa_agent_cb(hsa_agent_t agent, void *data)
{
	struct gpubuf_hsa_scan *scan = data;
	struct gpubuf_hsa *hsa = scan->hsa;
	hsa_device_type_t type;
	hsa_agent_t *gpus;
	hsa_status_t s;

	s = hsa->hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
	if (s != HSA_STATUS_SUCCESS)
		return s;
	scan->n_agents++;
	if (type == HSA_DEVICE_TYPE_CPU && !scan->have_cpu) {
		hsa->cpu = agent;
		scan->have_cpu = true;
	} else if (type == HSA_DEVICE_TYPE_GPU) {
		gpus = realloc(hsa->gpus, (size_t)(hsa->n_gpus + 1) *
			       sizeof(*gpus));
		if (!gpus) {
			scan->nomem = true;
			return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
		}
		gpus[hsa->n_gpus++] = agent;
		hsa->gpus = gpus;
	}
	return HSA_STATUS_SUCCESS;
}

/* The first global, fine-grained pool: what hsa_amd_memory_lock uses too. */
static hsa_status_t gpubuf_hsa_pool_cb(hsa_amd_memory_pool_t pool,
				       void *data)
{
	struct gpubuf_hsa *hsa = data;
	hsa_amd_segment_t segment;
	uint32_t flags = 0;
	hsa_status_t s;

	s = hsa->hsa_amd_memory_pool_get_info(pool,
					      HSA_AMD_MEMORY_POOL_INFO_SEGMENT,
					      &segment);
	if (s != HSA_STATUS_SUCCESS)
		return s;
	if (segment != HSA_AMD_SEGMENT_GLOBAL)
		return HSA_STATUS_SUCCESS;
	s = hsa->hsa_amd_memory_pool_get_info(pool,
					      HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
					      &flags);
	if (s != HSA_STATUS_SUCCESS)
		return s;
	if (!(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED))
		return HSA_STATUS_SUCCESS;
	hsa->pool = pool;
	hsa->have_pool = true;
	return HSA_STATUS_INFO_BREAK;
}

/* Agents and pool, after a successful hsa_init. */
static void gpubuf_hsa_scan(struct gpubuf_hsa *hsa)
{
	struct gpubuf_hsa_scan scan = { .hsa = hsa };
	hsa_status_t s;

	s = hsa->hsa_iterate_agents(gpubuf_hsa_agent_cb, &scan);
	if (scan.nomem) {
		gpubuf_hsa_load_fail(-ENOMEM, "no memory for the HSA agent list");
		return;
	}
	if (s != HSA_STATUS_SUCCESS) {
		gpubuf_hsa_load_fail(gpubuf_hsa_errno(s),
				     "hsa_iterate_agents (0x%x): %s",
				     (unsigned int)s, gpubuf_hsa_text(hsa, s));
		return;
	}
	if (hsa->n_gpus == 0) {
		gpubuf_hsa_load_fail(-ENODEV,
				     "no HSA GPU agent (%d agents, none a GPU)",
				     scan.n_agents);
		return;
	}
	/* Without a fine-grained CPU pool, hsa_amd_memory_lock picks one. */
	if (scan.have_cpu) {
		s = hsa->hsa_amd_agent_iterate_memory_pools(hsa->cpu,
							    gpubuf_hsa_pool_cb,
							    hsa);
		if (s != HSA_STATUS_SUCCESS && s != HSA_STATUS_INFO_BREAK)
			gpubuf_hsa_load_fail(gpubuf_hsa_errno(s),
					     "hsa_amd_agent_iterate_memory_pools (0x%x): %s",
					     (unsigned int)s,
					     gpubuf_hsa_text(hsa, s));
	}
}

static void gpubuf_hsa_load(void)
{
	struct gpubuf_hsa *hsa = &gpubuf_hsa_loaded.hsa;
	const char *missing = NULL;
	hsa_status_t s;
	void *lib;

	/* Never closed: the runtime keeps threads and state for the process. */
	lib = dlopen(GPUBUF_HSA_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		gpubuf_hsa_load_fail(-ENODEV, "no ROCm runtime: %s", gpubuf_dlerror());
		return;
	}
#define GPUBUF_HSA_RESOLVE(name)					\
	*(void **)&hsa->name = dlsym(lib, #name);			\
	if (!hsa->name && !missing)					\
		missing = #name;
	GPUBUF_HSA_ENTRIES(GPUBUF_HSA_RESOLVE)
#undef GPUBUF_HSA_RESOLVE
	if (missing) {
		gpubuf_hsa_load_fail(-ENODEV,
				     GPUBUF_HSA_SONAME " lacks %s (older than ROCm 2.4?)",
				     missing);
		return;
	}
	s = hsa->hsa_init();
	if (s != HSA_STATUS_SUCCESS) {
		/* Its usual cause, which the status text does not name. */
		bool no_kfd = access("/dev/kfd", F_OK) != 0;

		gpubuf_hsa_load_fail(-ENODEV, "hsa_init (0x%x)%s: %s",
				     (unsigned int)s,
				     no_kfd ? ", no /dev/kfd (no amdgpu KFD)" : "",
				     gpubuf_hsa_text(hsa, s));
		return;
	}
	gpubuf_hsa_loaded.pid = getpid();
	gpubuf_hsa_scan(hsa);
}

/* A child of fork() inherits no usable KFD state: calls there may hang. */
static bool gpubuf_hsa_forked(void)
{
	return gpubuf_hsa_loaded.pid && gpubuf_hsa_loaded.pid != getpid();
}

GPUBUF_EXPORT int gpubuf_hsa_get(const struct gpubuf_hsa **hsa)
{
	pthread_once(&gpubuf_hsa_loaded.once, gpubuf_hsa_load);
	if (gpubuf_hsa_loaded.err) {
		gpubuf_error_set("%s", gpubuf_hsa_loaded.msg);
		return gpubuf_hsa_loaded.err;
	}
	if (gpubuf_hsa_forked()) {
		gpubuf_error_set("HSA was initialised by process %d; a child after fork() cannot use it",
				 (int)gpubuf_hsa_loaded.pid);
		return -ENODEV;
	}
	*hsa = &gpubuf_hsa_loaded.hsa;
	return 0;
}

int gpubuf_hsa_gpu_index(const struct gpubuf_hsa *hsa, uint64_t handle)
{
	for (int i = 0; i < hsa->n_gpus; i++)
		if (hsa->gpus[i].handle == handle)
			return i;
	return -1;
}

GPUBUF_EXPORT int gpubuf_hsa_agents(uint64_t *agents, int max, int *count)
{
	GPUBUF_KEEP_ERRNO;
	const struct gpubuf_hsa *hsa;
	int err;

	gpubuf_error_clear();
	if (!count || max < 0 || (max > 0 && !agents))
		return -EINVAL;
	err = gpubuf_hsa_get(&hsa);
	if (err)
		return err;
	for (int i = 0; i < max && i < hsa->n_gpus; i++)
		agents[i] = hsa->gpus[i].handle;
	*count = hsa->n_gpus;
	return 0;
}
