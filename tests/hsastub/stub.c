// SPDX-License-Identifier: MIT
/*
 * The stand-in libhsa-runtime64.so.1's entry points and configuration
 * (stub.h says what the stand-in is).
 *
 * Configuration, read once when loaded (libgpubuf loads the runtime once
 * per process, so one process is one configuration):
 *   HSASTUB_GPUS=n           GPU agents (default 2, 0 to 8)
 *   HSASTUB_NO_FINE_POOL=1   CPU agents have no fine-grained pool
 *   HSASTUB_INIT=S           what hsa_init returns
 *   HSASTUB_FAIL=fn:N:S,..   the Nth call (from 1; * for every call) of fn
 *                            returns S and does nothing else
 *   HSASTUB_PCI=a,b,..       GPU agents' PCI addresses (dddd:bb:dd.f), as
 *                            HSA_AMD_AGENT_INFO_DOMAIN and _BDFID give them;
 *                            default 0000:2a:00.0, 0000:2b:00.0, ..
 * S is an hsa_status_t name (HSA_STATUS_ERROR_OUT_OF_RESOURCES) or number.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stub.h"

pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;
struct stub_state S;

#define STUB_NAME(name) #name,
const char *const stub_fn_names[STUB_NFN] = { GPUBUF_HSA_ENTRIES(STUB_NAME) };
#undef STUB_NAME

#define STUB_ST(s, text) { (hsa_status_t)(s), #s, #s ": " text },
static const struct {
	hsa_status_t s;
	const char *name, *text;
} stub_statuses[] = {
	STUB_ST(HSA_STATUS_SUCCESS, "success (stand-in)")
	STUB_ST(HSA_STATUS_INFO_BREAK, "iteration stopped (stand-in)")
	STUB_ST(HSA_STATUS_ERROR, "generic error (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_INVALID_ARGUMENT, "invalid argument (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_INVALID_AGENT, "invalid agent (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_OUT_OF_RESOURCES, "out of resources (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_NOT_INITIALIZED, "not initialized (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_REFCOUNT_OVERFLOW, "refcount overflow (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_RESOURCE_FREE, "resource free (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "invalid pool (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, "aperture (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_EXCEPTION, "exception (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_FATAL, "fatal (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, "invalid code object (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_INVALID_QUEUE_CREATION, "queue creation (stand-in)")
	STUB_ST(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME, "no such symbol (stand-in)")
};
#undef STUB_ST

const char *stub_status_name(hsa_status_t s)
{
	for (size_t i = 0; i < sizeof(stub_statuses) / sizeof(stub_statuses[0]); i++)
		if (stub_statuses[i].s == s)
			return stub_statuses[i].name;
	return NULL;
}

/* ---- configuration ------------------------------------------------------ */

__attribute__((noreturn, format(printf, 1, 2)))
static void stub_config_error(const char *fmt, ...)
{
	va_list ap;

	fputs("hsastub: bad configuration: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static long stub_number(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end)
		stub_config_error("%s: '%s' is not a number", what, s);
	return v;
}

static hsa_status_t stub_parse_status(const char *s)
{
	for (size_t i = 0; i < sizeof(stub_statuses) / sizeof(stub_statuses[0]); i++)
		if (!strcmp(stub_statuses[i].name, s))
			return stub_statuses[i].s;
	return (hsa_status_t)stub_number(s, "hsa_status_t");
}

/* fn:N:S */
static void stub_parse_fault(char *item)
{
	char *n = strchr(item, ':'), *r = n ? strchr(n + 1, ':') : NULL;
	int fn = -1;

	if (!r)
		stub_config_error("HSASTUB_FAIL item '%s': expected fn:N:S", item);
	*n++ = '\0';
	*r++ = '\0';
	for (int i = 0; i < STUB_NFN; i++)
		if (!strcmp(stub_fn_names[i], item))
			fn = i;
	if (fn < 0)
		stub_config_error("HSASTUB_FAIL: unknown function %s", item);
	if (S.nfault == STUB_MAX_FAULTS)
		stub_config_error("HSASTUB_FAIL: more than %d items",
				  STUB_MAX_FAULTS);
	S.fault[S.nfault].fn = fn;
	S.fault[S.nfault].nth = strcmp(n, "*") ?
		(unsigned long)stub_number(n, "HSASTUB_FAIL call number") : 0;
	if (strcmp(n, "*") && S.fault[S.nfault].nth == 0)
		stub_config_error("HSASTUB_FAIL: calls count from 1");
	S.fault[S.nfault].s = stub_parse_status(r);
	S.nfault++;
}

__attribute__((constructor))
static void stub_configure(void)
{
	const char *v;
	char buf[1024], *save = NULL;

	S.n_gpus = 2;
	v = getenv("HSASTUB_GPUS");
	if (v)
		S.n_gpus = (int)stub_number(v, "HSASTUB_GPUS");
	if (S.n_gpus < 0 || S.n_gpus > STUB_MAX_GPUS)
		stub_config_error("HSASTUB_GPUS: 0 to %d", STUB_MAX_GPUS);
	for (int i = 0; i < STUB_MAX_GPUS; i++)
		S.pci_bdf[i] = (uint32_t)(0x2a + i) << 8;
	v = getenv("HSASTUB_PCI");
	for (int i = 0; v && *v; i++) {
		unsigned int dom, bus, dev, fn;
		int n = 0;

		if (i == STUB_MAX_GPUS ||
		    sscanf(v, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) != 4 ||
		    (v[n] && v[n] != ','))
			stub_config_error("HSASTUB_PCI: '%s'", v);
		S.pci_domain[i] = dom;
		S.pci_bdf[i] = bus << 8 | dev << 3 | fn;
		v += n + (v[n] == ',');
	}
	v = getenv("HSASTUB_NO_FINE_POOL");
	S.no_fine_pool = v && !strcmp(v, "1");
	v = getenv("HSASTUB_INIT");
	S.init_result = v ? stub_parse_status(v) : HSA_STATUS_SUCCESS;
	v = getenv("HSASTUB_FAIL");
	if (v) {
		if (strlen(v) >= sizeof(buf))
			stub_config_error("HSASTUB_FAIL is too long");
		strcpy(buf, v);
		for (char *it = strtok_r(buf, ",", &save); it;
		     it = strtok_r(NULL, ",", &save))
			stub_parse_fault(it);
	}
}

/* ---- calls -------------------------------------------------------------- */

void stub_violation(const char *fmt, ...)
{
	va_list ap;

	if (!S.violations++) {
		va_start(ap, fmt);
		vsnprintf(S.first_violation, sizeof(S.first_violation), fmt,
			  ap);
		va_end(ap);
	}
}

/* stub.h says what it does. */
hsa_status_t stub_begin(int fn, int need_init)
{
	unsigned long nth;

	pthread_mutex_lock(&stub_lock);
	S.calls[fn]++;
	nth = ++S.calls_total[fn];
	for (int i = 0; i < S.nfault; i++)
		if (S.fault[i].fn == fn &&
		    (!S.fault[i].nth || S.fault[i].nth == nth)) {
			pthread_mutex_unlock(&stub_lock);
			return S.fault[i].s;
		}
	if (need_init && !S.inited) {
		stub_violation("%s before a successful hsa_init",
			       stub_fn_names[fn]);
		pthread_mutex_unlock(&stub_lock);
		return HSA_STATUS_ERROR_NOT_INITIALIZED;
	}
	return HSA_STATUS_SUCCESS;
}

hsa_status_t stub_end(hsa_status_t s)
{
	pthread_mutex_unlock(&stub_lock);
	return s;
}

void stub_count(int fn)
{
	pthread_mutex_lock(&stub_lock);
	S.calls[fn]++;
	S.calls_total[fn]++;
	if (!S.inited)
		stub_violation("%s before a successful hsa_init",
			       stub_fn_names[fn]);
}

int stub_is_gpu(uint64_t h)
{
	for (int i = 0; i < S.n_gpus; i++)
		if (h == STUB_GPU(i))
			return 1;
	return 0;
}

int stub_is_agent(uint64_t h)
{
	return h == STUB_CPU0 || h == STUB_CPU1 || stub_is_gpu(h);
}

uint64_t stub_agent_bit(uint64_t h)
{
	for (int i = 0; i < S.n_gpus; i++)
		if (h == STUB_GPU(i))
			return (uint64_t)1 << i;
	if (h == STUB_CPU0)
		return (uint64_t)1 << STUB_MAX_GPUS;
	if (h == STUB_CPU1)
		return (uint64_t)1 << (STUB_MAX_GPUS + 1);
	return 0;
}

/* Whether every page of [p, p + size) is mapped. */
static int stub_mapped(const void *p, size_t size)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(ps - 1);
	size_t len = (uintptr_t)p + size - a;
	unsigned char vec[64];

	for (size_t off = 0; off < len; off += 64 * ps) {
		size_t n = len - off < 64 * ps ? len - off : 64 * ps;

		if (mincore((void *)(a + off), n, vec) && errno == ENOMEM)
			return 0;
	}
	return 1;
}

STUB_EXPORT hsa_status_t hsa_init(void)
{
	STUB_BEGIN(hsa_init, 0);
	if (S.init_result != HSA_STATUS_SUCCESS)
		return stub_end(S.init_result);
	if (S.inited)
		stub_violation("hsa_init called again");
	S.inited = 1;
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_status_string(hsa_status_t status,
					   const char **status_string)
{
	STUB_BEGIN(hsa_status_string, 0);
	for (size_t i = 0; i < sizeof(stub_statuses) / sizeof(stub_statuses[0]); i++)
		if (stub_statuses[i].s == status) {
			*status_string = stub_statuses[i].text;
			return stub_end(HSA_STATUS_SUCCESS);
		}
	return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
}

STUB_EXPORT hsa_status_t hsa_iterate_agents(
	hsa_status_t (*callback)(hsa_agent_t agent, void *data), void *data)
{
	uint64_t list[STUB_MAX_GPUS + 2];
	int n = 0;

	STUB_BEGIN(hsa_iterate_agents, 1);
	list[n++] = STUB_CPU0;
	for (int i = 0; i < S.n_gpus; i++)
		list[n++] = STUB_GPU(i);
	list[n++] = STUB_CPU1;
	stub_end(HSA_STATUS_SUCCESS);
	/* Unlocked: the callback calls back in. */
	for (int i = 0; i < n; i++) {
		hsa_status_t s = callback((hsa_agent_t){ list[i] }, data);

		if (s != HSA_STATUS_SUCCESS)
			return s;
	}
	return HSA_STATUS_SUCCESS;
}

STUB_EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t agent,
					    hsa_agent_info_t attribute,
					    void *value)
{
	STUB_BEGIN(hsa_agent_get_info, 1);
	if (!stub_is_agent(agent.handle))
		return stub_end(HSA_STATUS_ERROR_INVALID_AGENT);
	/* The AMD extension's attributes are outside hsa_agent_info_t. */
	if ((int)attribute == HSA_AMD_AGENT_INFO_BDFID ||
	    (int)attribute == HSA_AMD_AGENT_INFO_DOMAIN) {
		for (int i = 0; i < S.n_gpus; i++)
			if (agent.handle == STUB_GPU(i)) {
				*(uint32_t *)value = (int)attribute ==
					HSA_AMD_AGENT_INFO_BDFID ?
					S.pci_bdf[i] : S.pci_domain[i];
				return stub_end(HSA_STATUS_SUCCESS);
			}
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	switch (attribute) {
	case HSA_AGENT_INFO_DEVICE:
		*(hsa_device_type_t *)value = stub_is_gpu(agent.handle) ?
			HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU;
		return stub_end(HSA_STATUS_SUCCESS);
	case HSA_AGENT_INFO_NAME:
		memset(value, 0, 64);
		strcpy(value, stub_is_gpu(agent.handle) ? "gfx90a" : "stub-cpu");
		return stub_end(HSA_STATUS_SUCCESS);
	default:
		/* What a dispatcher asks (stub_dispatch.c). */
		return stub_end(stub_agent_info_dispatch(agent.handle,
							 stub_is_gpu(agent.handle),
							 attribute, value));
	}
}

STUB_EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(
	hsa_agent_t agent,
	hsa_status_t (*callback)(hsa_amd_memory_pool_t memory_pool, void *data),
	void *data)
{
	uint64_t list[3];
	int n = 0;

	STUB_BEGIN(hsa_amd_agent_iterate_memory_pools, 1);
	if (!stub_is_agent(agent.handle))
		return stub_end(HSA_STATUS_ERROR_INVALID_AGENT);
	list[n++] = agent.handle + 1;
	if (!stub_is_gpu(agent.handle)) {
		if (!S.no_fine_pool)
			list[n++] = agent.handle + 2;
		list[n++] = agent.handle + 3;
	}
	stub_end(HSA_STATUS_SUCCESS);
	for (int i = 0; i < n; i++) {
		hsa_status_t s = callback((hsa_amd_memory_pool_t){ list[i] },
					  data);

		if (s != HSA_STATUS_SUCCESS)
			return s;
	}
	return HSA_STATUS_SUCCESS;
}

STUB_EXPORT hsa_status_t hsa_amd_memory_pool_get_info(
	hsa_amd_memory_pool_t memory_pool,
	hsa_amd_memory_pool_info_t attribute, void *value)
{
	uint64_t agent = memory_pool.handle & ~(uint64_t)0xff;
	unsigned int kind = memory_pool.handle & 0xff;

	STUB_BEGIN(hsa_amd_memory_pool_get_info, 1);
	if (!stub_is_agent(agent) || kind < 1 || kind > 3)
		return stub_end((hsa_status_t)HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
	switch (attribute) {
	case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
		*(hsa_amd_segment_t *)value = kind == 3 ? HSA_AMD_SEGMENT_GROUP :
					      HSA_AMD_SEGMENT_GLOBAL;
		return stub_end(HSA_STATUS_SUCCESS);
	case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
		*(bool *)value = kind != 3;
		return stub_end(HSA_STATUS_SUCCESS);
	case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
		/* Only defined for global pools: garbage otherwise. */
		*(uint32_t *)value = kind == 1 ?
			HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED :
			kind == 2 ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED |
				    HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT :
			0xffffffffu;
		return stub_end(HSA_STATUS_SUCCESS);
	default:
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
}

/* Both lock calls; pool 0 for hsa_amd_memory_lock. Under stub_lock. */
static hsa_status_t stub_do_lock(int fn, void *host_ptr, size_t size,
				 hsa_agent_t *agents, int num_agent,
				 uint64_t pool, uint32_t flags,
				 void **agent_ptr)
{
	struct stub_lock *free_slot = NULL, rec = { .live = 1 };

	rec.ptr = host_ptr;
	rec.size = size;
	rec.fn = fn;
	rec.pool = pool;
	rec.n = num_agent;
	for (int i = 0; i < num_agent && i < STUB_MAX_GPUS + 2 && agents; i++)
		rec.agents[i] = agents[i].handle;
	S.last_lock = rec;
	if (!size || !host_ptr || !agent_ptr || flags ||
	    (agents && !num_agent) || (!agents && num_agent) || num_agent < 0)
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < num_agent; i++)
		if (!stub_is_agent(agents[i].handle))
			return HSA_STATUS_ERROR_INVALID_AGENT;
	if (fn == STUB_ID_hsa_amd_memory_lock_to_pool &&
	    ((pool & 0xff) != 2 || S.no_fine_pool ||
	     ((pool & ~(uint64_t)0xff) != STUB_CPU0 &&
	      (pool & ~(uint64_t)0xff) != STUB_CPU1))) {
		stub_violation("lock to pool 0x%llx, not a CPU's fine-grained global pool",
			       (unsigned long long)pool);
		return (hsa_status_t)HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
	}
	if (!stub_mapped(host_ptr, size)) {
		stub_violation("lock of %p+%zu, which is not mapped", host_ptr,
			       size);
		return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
	}
	for (int i = 0; i < STUB_MAX_LOCKS; i++) {
		struct stub_lock *l = &S.lock[i];

		if (!l->live) {
			if (!free_slot)
				free_slot = l;
			continue;
		}
		if ((uintptr_t)host_ptr < (uintptr_t)l->ptr + l->size &&
		    (uintptr_t)l->ptr < (uintptr_t)host_ptr + size)
			stub_violation("lock of %p+%zu overlaps the lock of %p+%zu",
				       host_ptr, size, l->ptr, l->size);
	}
	if (!free_slot)
		return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
	rec.agent_ptr = (void *)STUB_AGENT_PTR(host_ptr);
	*free_slot = rec;
	*agent_ptr = rec.agent_ptr;
	return HSA_STATUS_SUCCESS;
}

STUB_EXPORT hsa_status_t hsa_amd_memory_lock(void *host_ptr, size_t size,
					     hsa_agent_t *agents,
					     int num_agent, void **agent_ptr)
{
	STUB_BEGIN(hsa_amd_memory_lock, 1);
	return stub_end(stub_do_lock(STUB_ID_hsa_amd_memory_lock, host_ptr,
				     size, agents, num_agent, 0, 0, agent_ptr));
}

STUB_EXPORT hsa_status_t hsa_amd_memory_lock_to_pool(
	void *host_ptr, size_t size, hsa_agent_t *agents, int num_agent,
	hsa_amd_memory_pool_t pool, uint32_t flags, void **agent_ptr)
{
	STUB_BEGIN(hsa_amd_memory_lock_to_pool, 1);
	return stub_end(stub_do_lock(STUB_ID_hsa_amd_memory_lock_to_pool,
				     host_ptr, size, agents, num_agent,
				     pool.handle, flags, agent_ptr));
}

STUB_EXPORT hsa_status_t hsa_amd_memory_unlock(void *host_ptr)
{
	STUB_BEGIN(hsa_amd_memory_unlock, 1);
	S.last_unlock = host_ptr;
	for (int i = 0; i < STUB_MAX_LOCKS; i++) {
		struct stub_lock *l = &S.lock[i];

		if (!l->live || l->ptr != host_ptr)
			continue;
		if (!stub_mapped(l->ptr, l->size))
			stub_violation("unlock of %p after it was unmapped",
				       host_ptr);
		l->live = 0;
		return stub_end(HSA_STATUS_SUCCESS);
	}
	/* The documented behaviour is undefined; ROCr answers this. */
	stub_violation("unlock of %p, which is not locked", host_ptr);
	return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
}
