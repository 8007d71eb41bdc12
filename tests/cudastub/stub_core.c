// SPDX-License-Identifier: MIT
/*
 * The stand-in libcuda.so.1's core (stub.h says what the stand-in is):
 * its configuration, the call log every entry point writes, injected
 * faults, misuse, and cuGetProcAddress_v2, the one exported driver symbol.
 *
 * Configuration, read once when loaded (the library loads the driver once
 * per process, so one process is one configuration):
 *   CUSTUB_DEVICES=n        devices (default 1, at most 8)
 *   CUSTUB_ATTR=d:NAME=v,.. device attribute d (or *), NAME without the
 *                           CU_DEVICE_ATTRIBUTE_ prefix, or a number
 *   CUSTUB_INIT=R           what cuInit returns
 *   CUSTUB_DRIVER=v         what cuDriverGetVersion answers (default 13000)
 *   CUSTUB_MISSING=name     cuGetProcAddress_v2 does not know name
 *   CUSTUB_FAIL=fn:N:R,..   the Nth call (from 1; * for every call) of fn
 *                           returns R and does nothing else
 *   CUSTUB_PCI=a,b,..       cuDeviceGetPCIBusId of devices 0, 1, ..: as
 *                           given (the driver's form is "0000:3B:00.0");
 *                           default 0000:1A:00.0, 0000:1B:00.0, ..
 * R is a CUresult name (CUDA_ERROR_OUT_OF_MEMORY) or number.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub.h"

/* ---- state, all under stub_lock except the per-thread context stack ---- */

pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;

struct stub_state S;

#define STUB_NAME(name, version) #name,
const char *const stub_fn_names[STUB_NFN] = {
	GPUBUF_CU_ENTRIES(STUB_NAME) "cuGetProcAddress_v2"
};
#undef STUB_NAME

/* ---- names ------------------------------------------------------------ */

#define STUB_ERR(e) { e, #e },
static const struct {
	CUresult r;
	const char *name;
} stub_errors[] = {
	STUB_ERR(CUDA_SUCCESS)
	STUB_ERR(CUDA_ERROR_INVALID_VALUE)
	STUB_ERR(CUDA_ERROR_OUT_OF_MEMORY)
	STUB_ERR(CUDA_ERROR_NOT_INITIALIZED)
	STUB_ERR(CUDA_ERROR_DEINITIALIZED)
	STUB_ERR(CUDA_ERROR_STUB_LIBRARY)
	STUB_ERR(CUDA_ERROR_DEVICE_UNAVAILABLE)
	STUB_ERR(CUDA_ERROR_NO_DEVICE)
	STUB_ERR(CUDA_ERROR_INVALID_DEVICE)
	STUB_ERR(CUDA_ERROR_DEVICE_NOT_LICENSED)
	STUB_ERR(CUDA_ERROR_INVALID_IMAGE)
	STUB_ERR(CUDA_ERROR_INVALID_CONTEXT)
	STUB_ERR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT)
	STUB_ERR(CUDA_ERROR_MAP_FAILED)
	STUB_ERR(CUDA_ERROR_UNMAP_FAILED)
	STUB_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU)
	STUB_ERR(CUDA_ERROR_ECC_UNCORRECTABLE)
	STUB_ERR(CUDA_ERROR_UNSUPPORTED_LIMIT)
	STUB_ERR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE)
	STUB_ERR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
	STUB_ERR(CUDA_ERROR_INVALID_PTX)
	STUB_ERR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
	STUB_ERR(CUDA_ERROR_INVALID_SOURCE)
	STUB_ERR(CUDA_ERROR_FILE_NOT_FOUND)
	STUB_ERR(CUDA_ERROR_OPERATING_SYSTEM)
	STUB_ERR(CUDA_ERROR_INVALID_HANDLE)
	STUB_ERR(CUDA_ERROR_ILLEGAL_STATE)
	STUB_ERR(CUDA_ERROR_NOT_FOUND)
	STUB_ERR(CUDA_ERROR_NOT_READY)
	STUB_ERR(CUDA_ERROR_ILLEGAL_ADDRESS)
	STUB_ERR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
	STUB_ERR(CUDA_ERROR_LAUNCH_TIMEOUT)
	STUB_ERR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
	STUB_ERR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
	STUB_ERR(CUDA_ERROR_CONTEXT_IS_DESTROYED)
	STUB_ERR(CUDA_ERROR_LAUNCH_FAILED)
	STUB_ERR(CUDA_ERROR_NOT_PERMITTED)
	STUB_ERR(CUDA_ERROR_NOT_SUPPORTED)
	STUB_ERR(CUDA_ERROR_SYSTEM_NOT_READY)
	STUB_ERR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
	STUB_ERR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
	STUB_ERR(CUDA_ERROR_UNKNOWN)
};
#undef STUB_ERR

#define STUB_ATTR(a) { CU_DEVICE_ATTRIBUTE_##a, #a },
static const struct {
	CUdevice_attribute attr;
	const char *name;
} stub_attr_names[] = {
	STUB_ATTR(CAN_MAP_HOST_MEMORY)
	STUB_ATTR(HOST_REGISTER_SUPPORTED)
	STUB_ATTR(READ_ONLY_HOST_REGISTER_SUPPORTED)
	STUB_ATTR(UNIFIED_ADDRESSING)
	STUB_ATTR(COMPUTE_CAPABILITY_MAJOR)
	STUB_ATTR(COMPUTE_CAPABILITY_MINOR)
	STUB_ATTR(MULTIPROCESSOR_COUNT)
	STUB_ATTR(MAX_THREADS_PER_BLOCK)
	STUB_ATTR(MAX_THREADS_PER_MULTIPROCESSOR)
	STUB_ATTR(MAX_SHARED_MEMORY_PER_BLOCK)
	STUB_ATTR(WARP_SIZE)
	STUB_ATTR(PAGEABLE_MEMORY_ACCESS)
};
#undef STUB_ATTR

const char *stub_err_name(CUresult r)
{
	for (size_t i = 0; i < sizeof(stub_errors) / sizeof(stub_errors[0]); i++)
		if (stub_errors[i].r == r)
			return stub_errors[i].name;
	return NULL;
}

int stub_fn_id(const char *name)
{
	for (int i = 0; i < STUB_NFN; i++)
		if (!strcmp(stub_fn_names[i], name))
			return i;
	return -1;
}

/* ---- configuration ------------------------------------------------------ */

__attribute__((noreturn, format(printf, 1, 2)))
static void stub_config_error(const char *fmt, ...)
{
	va_list ap;

	fputs("custub: bad configuration: ", stderr);
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

static CUresult stub_parse_result(const char *s)
{
	for (size_t i = 0; i < sizeof(stub_errors) / sizeof(stub_errors[0]); i++)
		if (!strcmp(stub_errors[i].name, s))
			return stub_errors[i].r;
	return (CUresult)stub_number(s, "CUresult");
}

/* Split a copy of s at commas; each piece goes to fn. */
static void stub_each_item(const char *s, void (*fn)(char *item))
{
	char buf[1024], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		stub_config_error("'%s' is too long", s);
	strcpy(buf, s);
	for (char *it = strtok_r(buf, ",", &save); it;
	     it = strtok_r(NULL, ",", &save))
		fn(it);
}

/* fn:N:R */
static void stub_parse_fault(char *item)
{
	char *n = strchr(item, ':'), *r = n ? strchr(n + 1, ':') : NULL;
	int fn;

	if (!r)
		stub_config_error("CUSTUB_FAIL item '%s': expected fn:N:R", item);
	*n++ = '\0';
	*r++ = '\0';
	fn = stub_fn_id(item);
	if (fn < 0)
		stub_config_error("CUSTUB_FAIL: unknown function %s", item);
	if (S.nfault == STUB_MAX_FAULTS)
		stub_config_error("CUSTUB_FAIL: more than %d items",
				  STUB_MAX_FAULTS);
	S.fault[S.nfault].fn = fn;
	S.fault[S.nfault].nth = strcmp(n, "*") ?
		(unsigned long)stub_number(n, "CUSTUB_FAIL call number") : 0;
	if (strcmp(n, "*") && S.fault[S.nfault].nth == 0)
		stub_config_error("CUSTUB_FAIL: calls count from 1");
	S.fault[S.nfault].r = stub_parse_result(r);
	S.nfault++;
}

/* The next device's PCI bus id, as the driver would give it. */
static void stub_parse_pci(char *item)
{
	static int d;

	if (d == STUB_MAX_DEVICES || strlen(item) >= sizeof(S.pci[0]))
		stub_config_error("CUSTUB_PCI: '%s' is one too many or too long",
				  item);
	strcpy(S.pci[d++], item);
}

/* d:NAME=v */
static void stub_parse_attr(char *item)
{
	char *name = strchr(item, ':'), *v = name ? strchr(name, '=') : NULL;
	int attr = -1;

	if (!v)
		stub_config_error("CUSTUB_ATTR item '%s': expected d:NAME=v",
				  item);
	*name++ = '\0';
	*v++ = '\0';
	if (S.nattr == STUB_MAX_ATTRS)
		stub_config_error("CUSTUB_ATTR: more than %d items",
				  STUB_MAX_ATTRS);
	for (size_t i = 0; i < sizeof(stub_attr_names) / sizeof(stub_attr_names[0]); i++)
		if (!strcmp(stub_attr_names[i].name, name))
			attr = stub_attr_names[i].attr;
	if (attr < 0)
		attr = (int)stub_number(name, "CUSTUB_ATTR attribute");
	S.attr[S.nattr].device = strcmp(item, "*") ?
		(int)stub_number(item, "CUSTUB_ATTR device") : -1;
	S.attr[S.nattr].attr = attr;
	S.attr[S.nattr].value = (int)stub_number(v, "CUSTUB_ATTR value");
	S.nattr++;
}

__attribute__((constructor))
static void stub_configure(void)
{
	const char *s;

	S.ndev = 1;
	s = getenv("CUSTUB_DEVICES");
	if (s && *s) {
		S.ndev = (int)stub_number(s, "CUSTUB_DEVICES");
		if (S.ndev < 0 || S.ndev > STUB_MAX_DEVICES)
			stub_config_error("CUSTUB_DEVICES: 0 to %d",
					  STUB_MAX_DEVICES);
	}
	s = getenv("CUSTUB_DRIVER");
	S.driver_version = s ? atoi(s) : 13000;
	s = getenv("CUSTUB_INIT");
	if (s && *s)
		S.init_result = stub_parse_result(s);
	s = getenv("CUSTUB_MISSING");
	if (s && *s)
		snprintf(S.missing, sizeof(S.missing), "%s", s);
	s = getenv("CUSTUB_FAIL");
	if (s && *s)
		stub_each_item(s, stub_parse_fault);
	s = getenv("CUSTUB_ATTR");
	if (s && *s)
		stub_each_item(s, stub_parse_attr);
	for (int d = 0; d < STUB_MAX_DEVICES; d++)
		snprintf(S.pci[d], sizeof(S.pci[d]), "0000:%02X:00.0", 0x1a + d);
	s = getenv("CUSTUB_PCI");
	if (s && *s)
		stub_each_item(s, stub_parse_pci);
	s = getenv("CUSTUB_EXEC");
	S.exec = s && !strcmp(s, "1");
	/* For a program tests cannot ask: one line per call, appended. */
	s = getenv("CUSTUB_TRACE");
	if (s && *s) {
		S.trace_fd = open(s, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
				  0644) + 1;
		if (!S.trace_fd)
			stub_config_error("CUSTUB_TRACE: cannot open %s", s);
	}
	for (int d = 0; d < STUB_MAX_DEVICES; d++)
		S.ctx[d].device = d;
	/* Far from any host address, so a mix-up shows. */
	S.next_devalloc = 0x00a0000000000000ull;
}

/* ---- call log --------------------------------------------------------- */

void stub_violation(const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!S.violations++)
		snprintf(S.first_violation, sizeof(S.first_violation), "%s",
			 msg);
	fprintf(stderr, "custub: violation: %s\n", msg);
}

void stub_begin(struct stub_rec *c, int fn)
{
	struct CUctx_st *cur;

	pthread_mutex_lock(&stub_lock);
	memset(c, 0, sizeof(*c));
	c->fn = fn;
	cur = stub_current();
	c->device = cur ? cur->device : -1;
	c->nparams = -1;
	S.fstat[fn].calls_total++;
}

int stub_fault(const struct stub_rec *c, CUresult *r)
{
	unsigned long n = S.fstat[c->fn].calls_total;

	for (int i = 0; i < S.nfault; i++) {
		if (S.fault[i].fn != c->fn)
			continue;
		if (S.fault[i].nth == 0 || S.fault[i].nth == n) {
			*r = S.fault[i].r;
			return 1;
		}
	}
	return 0;
}

CUresult stub_end(struct stub_rec *c, CUresult r)
{
	struct stub_fstat *f = &S.fstat[c->fn];

	c->result = r;
	c->seq = ++S.seq;
	f->calls++;
	f->flags_seen |= c->flags;
	f->last = *c;
	f->has_last = 1;
	S.ring[c->seq % STUB_RING] = *c;
	if (S.trace_fd) {
		const char *rn = stub_err_name(r);

		dprintf(S.trace_fd - 1, "%s %s\n", stub_fn_names[c->fn],
			rn ? rn : "?");
	}
	pthread_mutex_unlock(&stub_lock);
	return r;
}

/* ---- cuGetProcAddress_v2 -------------------------------------------------- */

/*
 * Every implementation has exactly the ABI of the version the library asks
 * for: a mismatch with the cudaTypedefs.h type does not compile.
 */
#define STUB_TYPECHECK(name, version)					\
	static const PFN_##name##_v##version stub_check_##name		\
		__attribute__((unused)) = stub_##name;
GPUBUF_CU_ENTRIES(STUB_TYPECHECK)
#undef STUB_TYPECHECK

#define STUB_TABLE(name, version) { (void *)stub_##name, version },
static const struct {
	void *fn;
	int version;	/* the oldest this ABI answers to */
} stub_table[] = {
	GPUBUF_CU_ENTRIES(STUB_TABLE)
};
#undef STUB_TABLE

STUB_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn,
						 int version,
						 cuuint64_t flags,
						 CUdriverProcAddressQueryResult *status)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
	struct stub_rec c;
	int id;

	stub_begin(&c, STUB_ID_cuGetProcAddress_v2);
	c.size = (size_t)version;
	c.flags = flags;
	if (symbol)
		snprintf(c.name, sizeof(c.name), "%s", symbol);
	STUB_ENTER(&c, "cuGetProcAddress_v2", 0);
	if (!symbol || !pfn)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	*pfn = NULL;
	S.proc_flags |= flags;
	id = stub_fn_id(symbol);
	if (id >= 0 && id < STUB_ID_cuGetProcAddress_v2 &&
	    !S.proc_version[id])
		S.proc_version[id] = version;
	/* Unknown names succeed with a NULL pointer, as in the real driver. */
	if (id < 0 || id == STUB_ID_cuGetProcAddress_v2 ||
	    !strcmp(symbol, S.missing))
		st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	else if (version < stub_table[id].version)
		st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
	else
		*pfn = stub_table[id].fn;
	if (status)
		*status = st;
	return stub_end(&c, CUDA_SUCCESS);
}
