// SPDX-License-Identifier: MIT
/*
 * A stand-in for the NVIDIA driver's libcuda.so.1, for libgpubuf's tests
 * only. It runs no kernel and touches no GPU, so it proves nothing about
 * GPUs: it checks how the library drives the API (which calls, with which
 * arguments, in which context, balanced or not) and lets tests make any
 * call fail.
 *
 * The one exported driver symbol is cuGetProcAddress_v2, which hands out
 * this file's implementation of every name in GPUBUF_CU_ENTRIES. The
 * custub_* functions are for tests, found with dlsym.
 *
 * Configuration, read once when loaded (the library loads the driver once
 * per process, so one process is one configuration):
 *   CUSTUB_DEVICES=n        devices (default 1, at most 8)
 *   CUSTUB_ATTR=d:NAME=v,.. device attribute d (or *), NAME without the
 *                           CU_DEVICE_ATTRIBUTE_ prefix, or a number
 *   CUSTUB_INIT=R           what cuInit returns
 *   CUSTUB_MISSING=name     cuGetProcAddress_v2 does not know name
 *   CUSTUB_FAIL=fn:N:R,..   the Nth call (from 1; * for every call) of fn
 *                           returns R and does nothing else
 * R is a CUresult name (CUDA_ERROR_OUT_OF_MEMORY) or number.
 *
 * Misuse a real driver would punish (popping an empty context stack,
 * releasing an unretained context, destroying a context that still holds
 * a registration, unregistering after munmap, IOMEMORY, ...) counts as a
 * violation: custub_violations() lets a test insist on none.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cuda_driver.h"	/* GPUBUF_CU_ENTRIES, cuda.h, cudaTypedefs.h */

#define STUB_EXPORT __attribute__((visibility("default")))

#define STUB_MAX_DEVICES	8
#define STUB_MAX_REGS		256
#define STUB_MAX_MODULES	64
#define STUB_MAX_FUNCS		64
#define STUB_MAX_STREAMS	64
#define STUB_MAX_EVENTS		64
#define STUB_MAX_HOSTALLOCS	64
#define STUB_MAX_DEVALLOCS	256
#define STUB_MAX_FAULTS		16
#define STUB_MAX_ATTRS		32
#define STUB_MAX_PARAMS		16
#define STUB_STACK_DEPTH	16
#define STUB_RING		512

#define STUB_FATBIN_MAGIC	0xBA55ED50u

/* Function ids: GPUBUF_CU_ENTRIES in order, then cuGetProcAddress_v2. */
#define STUB_ID(name, version) STUB_ID_##name,
enum { GPUBUF_CU_ENTRIES(STUB_ID) STUB_ID_cuGetProcAddress_v2, STUB_NFN };
#undef STUB_ID

#define STUB_NAME(name, version) #name,
static const char *const stub_fn_names[STUB_NFN] = {
	GPUBUF_CU_ENTRIES(STUB_NAME) "cuGetProcAddress_v2"
};
#undef STUB_NAME

/* ---- handles: the opaque cuda.h types, completed here ------------------- */

struct CUctx_st {
	int device;
	int retains;
	unsigned int gen;	/* bumped each time the context is created */
};

struct CUmod_st {
	int live;
	int device;
	unsigned int gen;	/* of the context it was loaded into */
	const unsigned char *image;
	size_t size;		/* from the fatbin header */
};

struct CUfunc_st {
	struct CUmod_st *mod;
	char name[64];
};

struct CUstream_st {
	int live;
	int device;
	unsigned int gen;
};

struct CUevent_st {
	int live;
};

/* ---- state, all under stub_lock except the per-thread context stack ---- */

struct stub_rec {
	unsigned long seq;
	int fn;
	int device;		/* CUdevice argument, else the current context's */
	const void *ptr;
	size_t size;
	unsigned long long flags;
	int result;
	char name[64];		/* symbol, kernel */
	unsigned int grid[3], block[3], shmem;
	void *stream;
	int nparams;
	uint64_t param[STUB_MAX_PARAMS];	/* declared 8-byte parameters */
};

struct stub_fstat {
	unsigned long calls;		/* since custub_reset_log() */
	unsigned long calls_total;	/* since load, for fault injection */
	unsigned long long flags_seen;	/* every flags argument, ORed */
	int has_last;
	struct stub_rec last;
};

struct stub_reg {
	int live;
	int device;
	uintptr_t base;
	size_t size;
	unsigned int flags;
};

static pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
	/* configuration */
	int ndev;
	CUresult init_result;
	char missing[64];
	struct {
		int fn;
		unsigned long nth;	/* 0: every call */
		CUresult r;
	} fault[STUB_MAX_FAULTS];
	int nfault;
	struct {
		int device;		/* -1: every device */
		int attr;
		int value;
	} attr[STUB_MAX_ATTRS];
	int nattr;
	struct {
		char kernel[64];
		int n;
	} params[STUB_MAX_PARAMS];
	int nparams;

	/* driver state */
	int inited;
	struct CUctx_st ctx[STUB_MAX_DEVICES];
	struct stub_reg reg[STUB_MAX_REGS];
	struct CUmod_st mod[STUB_MAX_MODULES];
	unsigned long mod_loads[STUB_MAX_DEVICES];
	struct CUfunc_st func[STUB_MAX_FUNCS];
	struct CUstream_st stream[STUB_MAX_STREAMS];
	struct CUevent_st event[STUB_MAX_EVENTS];
	struct {
		void *p;
		size_t size;
	} hostalloc[STUB_MAX_HOSTALLOCS];
	struct {
		CUdeviceptr p;
		size_t size;
	} devalloc[STUB_MAX_DEVALLOCS];
	CUdeviceptr next_devalloc;

	/* what tests read */
	int proc_version[STUB_NFN];	/* first version asked for, 0: never */
	unsigned long long proc_flags;
	struct stub_fstat fstat[STUB_NFN];
	struct stub_rec ring[STUB_RING];
	unsigned long seq;
	unsigned long violations;
	char first_violation[256];
} S;

/* Like the real driver's: a stack of current contexts per thread. */
static __thread struct {
	struct CUctx_st *ctx[STUB_STACK_DEPTH];
	int depth;
} stub_tls;

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

static const char *stub_err_name(CUresult r)
{
	for (size_t i = 0; i < sizeof(stub_errors) / sizeof(stub_errors[0]); i++)
		if (stub_errors[i].r == r)
			return stub_errors[i].name;
	return NULL;
}

static int stub_fn_id(const char *name)
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
		S.ctx[d].device = d;
	/* Far from any host address, so a mix-up shows. */
	S.next_devalloc = 0x00a0000000000000ull;
}

/* ---- call log --------------------------------------------------------- */

__attribute__((format(printf, 1, 2)))
static void stub_violation(const char *fmt, ...)
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

static struct CUctx_st *stub_current(void)
{
	return stub_tls.depth ? stub_tls.ctx[stub_tls.depth - 1] : NULL;
}

/* Start a call: takes stub_lock, which stub_end() drops. */
static void stub_begin(struct stub_rec *c, int fn)
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

/* Whether this call is one CUSTUB_FAIL names; then *r is its result. */
static int stub_fault(const struct stub_rec *c, CUresult *r)
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

static CUresult stub_end(struct stub_rec *c, CUresult r)
{
	struct stub_fstat *f = &S.fstat[c->fn];

	c->result = r;
	c->seq = ++S.seq;
	f->calls++;
	f->flags_seen |= c->flags;
	f->last = *c;
	f->has_last = 1;
	S.ring[c->seq % STUB_RING] = *c;
	pthread_mutex_unlock(&stub_lock);
	return r;
}

/*
 * Prologue of every entry point: log, then injected faults, then "cuInit
 * first" (the real driver answers CUDA_ERROR_NOT_INITIALIZED).
 */
#define STUB_ENTER(c, name, need_init)					\
	do {								\
		CUresult stub_r_;					\
		if (stub_fault(c, &stub_r_))				\
			return stub_end(c, stub_r_);			\
		if ((need_init) && !S.inited) {				\
			stub_violation("%s before a successful cuInit", name); \
			return stub_end(c, CUDA_ERROR_NOT_INITIALIZED);	\
		}							\
	} while (0)

/* The current context, or a violation: most calls need one. */
static struct CUctx_st *stub_need_ctx(const char *name)
{
	struct CUctx_st *cur = stub_current();

	if (!cur)
		stub_violation("%s without a current context", name);
	return cur;
}

static int stub_valid_device(CUdevice d)
{
	return d >= 0 && d < S.ndev;
}

/* ---- devices and contexts ----------------------------------------------- */

static int stub_attr_value(int device, CUdevice_attribute attr)
{
	int v;

	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		v = 9;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		v = 132;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		v = 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		v = 2048;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		v = 48 * 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		v = 32;
		break;
	default:
		v = 0;
		break;
	}
	/* Later items win, so "*:X=0,1:X=1" reads naturally. */
	for (int i = 0; i < S.nattr; i++)
		if ((int)attr == S.attr[i].attr &&
		    (S.attr[i].device < 0 || S.attr[i].device == device))
			v = S.attr[i].value;
	return v;
}

static CUresult CUDAAPI stub_cuInit(unsigned int flags)
{
	struct stub_rec c;
	CUresult r;

	stub_begin(&c, STUB_ID_cuInit);
	c.flags = flags;
	STUB_ENTER(&c, "cuInit", 0);
	if (flags)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	r = S.init_result;
	if (r == CUDA_SUCCESS)
		S.inited = 1;
	return stub_end(&c, r);
}

static CUresult CUDAAPI stub_cuDriverGetVersion(int *version)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDriverGetVersion);
	STUB_ENTER(&c, "cuDriverGetVersion", 0);
	if (!version)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	*version = 13000;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuGetErrorName(CUresult error, const char **str)
{
	struct stub_rec c;
	const char *name;

	stub_begin(&c, STUB_ID_cuGetErrorName);
	c.flags = (unsigned long long)error;
	STUB_ENTER(&c, "cuGetErrorName", 0);
	if (!str)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	name = stub_err_name(error);
	*str = name;
	return stub_end(&c, name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

static CUresult CUDAAPI stub_cuDeviceGetCount(int *count)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGetCount);
	STUB_ENTER(&c, "cuDeviceGetCount", 1);
	if (!count)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	*count = S.ndev;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuDeviceGet(CUdevice *dev, int ordinal)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGet);
	c.device = ordinal;
	STUB_ENTER(&c, "cuDeviceGet", 1);
	if (!dev)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(ordinal))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	*dev = ordinal;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuDeviceGetAttribute(int *value,
						  CUdevice_attribute attr,
						  CUdevice dev)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGetAttribute);
	c.device = dev;
	c.flags = (unsigned long long)attr;
	STUB_ENTER(&c, "cuDeviceGetAttribute", 1);
	if (!value)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	*value = stub_attr_value(dev, attr);
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuDeviceGetName);
	c.device = dev;
	STUB_ENTER(&c, "cuDeviceGetName", 1);
	if (!name || len <= 0)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	snprintf(name, (size_t)len, "custub stand-in device %d", dev);
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuDevicePrimaryCtxRetain(CUcontext *pctx,
						      CUdevice dev)
{
	struct stub_rec c;
	struct CUctx_st *ctx;

	stub_begin(&c, STUB_ID_cuDevicePrimaryCtxRetain);
	c.device = dev;
	STUB_ENTER(&c, "cuDevicePrimaryCtxRetain", 1);
	if (!pctx)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	ctx = &S.ctx[dev];
	if (!ctx->retains++)
		ctx->gen++;
	*pctx = ctx;
	return stub_end(&c, CUDA_SUCCESS);
}

/* The last release destroys the context and what lives in it. */
static void stub_destroy_ctx(struct CUctx_st *ctx)
{
	for (int i = 0; i < stub_tls.depth; i++)
		if (stub_tls.ctx[i] == ctx)
			stub_violation("primary context of device %d destroyed while current",
				       ctx->device);
	for (int i = 0; i < STUB_MAX_REGS; i++) {
		struct stub_reg *g = &S.reg[i];

		if (!g->live || g->device != ctx->device)
			continue;
		stub_violation("registration of %#lx (%zu bytes) lost: primary context of device %d destroyed",
			       (unsigned long)g->base, g->size, ctx->device);
		g->live = 0;
	}
	/* Modules and streams die with it; their handles go stale (gen). */
}

static CUresult CUDAAPI stub_cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct stub_rec c;
	struct CUctx_st *ctx;

	stub_begin(&c, STUB_ID_cuDevicePrimaryCtxRelease);
	c.device = dev;
	STUB_ENTER(&c, "cuDevicePrimaryCtxRelease", 1);
	if (!stub_valid_device(dev))
		return stub_end(&c, CUDA_ERROR_INVALID_DEVICE);
	ctx = &S.ctx[dev];
	if (!ctx->retains) {
		stub_violation("cuDevicePrimaryCtxRelease(%d) without a retain",
			       dev);
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	if (!--ctx->retains)
		stub_destroy_ctx(ctx);
	return stub_end(&c, CUDA_SUCCESS);
}

static int stub_is_ctx(const struct CUctx_st *ctx)
{
	for (int d = 0; d < S.ndev; d++)
		if (ctx == &S.ctx[d])
			return 1;
	return 0;
}

static CUresult CUDAAPI stub_cuCtxPushCurrent(CUcontext ctx)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuCtxPushCurrent);
	c.ptr = ctx;
	STUB_ENTER(&c, "cuCtxPushCurrent", 1);
	if (!ctx || !stub_is_ctx(ctx)) {
		stub_violation("cuCtxPushCurrent(%p): not a context", (void *)ctx);
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	c.device = ctx->device;
	if (!ctx->retains) {
		stub_violation("cuCtxPushCurrent of device %d's released primary context",
			       ctx->device);
		return stub_end(&c, CUDA_ERROR_CONTEXT_IS_DESTROYED);
	}
	if (stub_tls.depth == STUB_STACK_DEPTH) {
		stub_violation("context stack deeper than %d", STUB_STACK_DEPTH);
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	}
	stub_tls.ctx[stub_tls.depth++] = ctx;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuCtxPopCurrent(CUcontext *pctx)
{
	struct stub_rec c;
	struct CUctx_st *ctx;

	stub_begin(&c, STUB_ID_cuCtxPopCurrent);
	STUB_ENTER(&c, "cuCtxPopCurrent", 1);
	if (!stub_tls.depth) {
		stub_violation("cuCtxPopCurrent with no current context");
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	ctx = stub_tls.ctx[--stub_tls.depth];
	if (pctx)
		*pctx = ctx;
	return stub_end(&c, CUDA_SUCCESS);
}

/* ---- host memory registration ----------------------------------------- */

enum { STUB_MAPPED, STUB_READABLE, STUB_WRITABLE };

/* Whether /proc/self/maps covers [base, base + size) with at least need. */
static int stub_range_ok(uintptr_t base, size_t size, int need)
{
	uintptr_t at = base, end = base + size;
	unsigned long lo, hi;
	char *line = NULL, perms[8];
	size_t cap = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return 0;
	/* Entries are sorted; walk them while they cover [at, end). */
	while (at < end && getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if (hi <= at)
			continue;
		if (lo > at)
			break;
		if ((need >= STUB_READABLE && perms[0] != 'r') ||
		    (need >= STUB_WRITABLE && perms[1] != 'w'))
			break;
		at = hi;
	}
	free(line);
	fclose(f);
	return at >= end;
}

static struct stub_reg *stub_find_reg(uintptr_t p, size_t size)
{
	for (int i = 0; i < STUB_MAX_REGS; i++) {
		struct stub_reg *g = &S.reg[i];

		if (g->live && p < g->base + g->size && g->base < p + size)
			return g;
	}
	return NULL;
}

static CUresult CUDAAPI stub_cuMemHostRegister(void *p, size_t size,
					       unsigned int flags)
{
	const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE |
				   CU_MEMHOSTREGISTER_DEVICEMAP |
				   CU_MEMHOSTREGISTER_IOMEMORY |
				   CU_MEMHOSTREGISTER_READ_ONLY;
	uintptr_t base = (uintptr_t)p;
	struct CUctx_st *cur;
	struct stub_reg *g = NULL;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemHostRegister);
	c.ptr = p;
	c.size = size;
	c.flags = flags;
	STUB_ENTER(&c, "cuMemHostRegister", 1);
	cur = stub_need_ctx("cuMemHostRegister");
	if (!cur)
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!p || !size || base + size < base || (flags & ~known))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	/* Device memory behind a BAR; never right for gpubuf's pages. */
	if (flags & CU_MEMHOSTREGISTER_IOMEMORY) {
		stub_violation("cuMemHostRegister(%p) with IOMEMORY", p);
		return stub_end(&c, CUDA_ERROR_NOT_SUPPORTED);
	}
	if (!stub_attr_value(cur->device,
			     CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED) ||
	    ((flags & CU_MEMHOSTREGISTER_READ_ONLY) &&
	     !stub_attr_value(cur->device,
			      CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED)))
		return stub_end(&c, CUDA_ERROR_NOT_SUPPORTED);
	if (stub_find_reg(base, size))
		return stub_end(&c, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	/* Pinning for writing fails on a PROT_READ page, as in the kernel. */
	if (!stub_range_ok(base, size, (flags & CU_MEMHOSTREGISTER_READ_ONLY) ?
			   STUB_READABLE : STUB_WRITABLE))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_REGS && !g; i++)
		if (!S.reg[i].live)
			g = &S.reg[i];
	if (!g)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	g->live = 1;
	g->device = cur->device;
	g->base = base;
	g->size = size;
	g->flags = flags;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuMemHostUnregister(void *p)
{
	uintptr_t base = (uintptr_t)p;
	struct stub_reg *g;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemHostUnregister);
	c.ptr = p;
	STUB_ENTER(&c, "cuMemHostUnregister", 1);
	if (!stub_need_ctx("cuMemHostUnregister"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	g = stub_find_reg(base, 1);
	if (!g || g->base != base) {
		stub_violation("cuMemHostUnregister(%p): not a registration's start",
			       p);
		return stub_end(&c, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	}
	c.size = g->size;
	c.flags = g->flags;
	/* The pages were pinned through that mapping: it must still exist. */
	if (!stub_range_ok(g->base, g->size, STUB_MAPPED))
		stub_violation("cuMemHostUnregister(%p) after the range was unmapped",
			       p);
	g->live = 0;
	return stub_end(&c, CUDA_SUCCESS);
}

/* Distinct per device and invertible: host addresses are below 2^48. */
static CUdeviceptr stub_devptr(int device, uintptr_t host)
{
	return (CUdeviceptr)host | ((CUdeviceptr)(device + 1) << 48);
}

static CUresult CUDAAPI stub_cuMemHostGetDevicePointer(CUdeviceptr *pdptr,
						       void *p,
						       unsigned int flags)
{
	uintptr_t host = (uintptr_t)p;
	struct CUctx_st *cur;
	struct stub_reg *g;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemHostGetDevicePointer);
	c.ptr = p;
	c.flags = flags;
	STUB_ENTER(&c, "cuMemHostGetDevicePointer", 1);
	cur = stub_need_ctx("cuMemHostGetDevicePointer");
	if (!cur)
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pdptr || flags)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	g = stub_find_reg(host, 1);
	if (!g || !(g->flags & CU_MEMHOSTREGISTER_DEVICEMAP))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	/* Only PORTABLE registrations are visible from other contexts. */
	if (!(g->flags & CU_MEMHOSTREGISTER_PORTABLE) &&
	    g->device != cur->device)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_attr_value(cur->device, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY))
		return stub_end(&c, CUDA_ERROR_NOT_SUPPORTED);
	*pdptr = stub_devptr(cur->device, host);
	c.size = (size_t)*pdptr;
	return stub_end(&c, CUDA_SUCCESS);
}

/* ---- modules and launches --------------------------------------------- */

/*
 * Whether the module's image has a kernel called name. Only an image with
 * an uncompressed cubin (its ".nv.info." sections show) can say no; a
 * compressed one is taken on trust.
 */
static int stub_image_has(const struct CUmod_st *mod, const char *name)
{
	const unsigned char *img = mod->image, *at = img;
	size_t len = strlen(name) + 1, left = mod->size;

	if (!memmem(img, mod->size, ".nv.info.", 9))
		return 1;
	/* The name as a whole string: after a NUL, '.' or ' ', NUL-ended. */
	while ((at = memmem(at, left, name, len))) {
		if (at > img && (at[-1] == '\0' || at[-1] == '.' ||
				 at[-1] == ' '))
			return 1;
		at++;
		left = mod->size - (size_t)(at - img);
	}
	return 0;
}

static int stub_mod_ok(const struct CUmod_st *mod)
{
	return mod >= S.mod && mod < S.mod + STUB_MAX_MODULES && mod->live &&
	       mod->gen == S.ctx[mod->device].gen &&
	       S.ctx[mod->device].retains;
}

static CUresult CUDAAPI stub_cuModuleLoadData(CUmodule *pmod, const void *image)
{
	struct CUmod_st *mod = NULL;
	struct CUctx_st *cur;
	struct stub_rec c;
	uint64_t fat_size;
	uint16_t hdr_size;
	uint32_t magic;

	stub_begin(&c, STUB_ID_cuModuleLoadData);
	c.ptr = image;
	STUB_ENTER(&c, "cuModuleLoadData", 1);
	cur = stub_need_ctx("cuModuleLoadData");
	if (!cur)
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pmod || !image)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	/*
	 * A fatbin starts with its magic, little-endian, then a version, the
	 * header's size and the size of what follows it.
	 */
	memcpy(&magic, image, sizeof(magic));
	memcpy(&hdr_size, (const char *)image + 6, sizeof(hdr_size));
	memcpy(&fat_size, (const char *)image + 8, sizeof(fat_size));
	if (magic != STUB_FATBIN_MAGIC || hdr_size < 16 ||
	    fat_size > (1ull << 30))
		return stub_end(&c, CUDA_ERROR_INVALID_IMAGE);
	c.size = hdr_size + (size_t)fat_size;
	for (int i = 0; i < STUB_MAX_MODULES && !mod; i++)
		if (!S.mod[i].live)
			mod = &S.mod[i];
	if (!mod)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	mod->live = 1;
	mod->device = cur->device;
	mod->gen = cur->gen;
	mod->image = image;
	mod->size = c.size;
	S.mod_loads[cur->device]++;
	*pmod = mod;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuModuleGetFunction(CUfunction *pfn, CUmodule mod,
						 const char *name)
{
	struct CUfunc_st *fn = NULL;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuModuleGetFunction);
	c.ptr = mod;
	if (name)
		snprintf(c.name, sizeof(c.name), "%s", name);
	STUB_ENTER(&c, "cuModuleGetFunction", 1);
	if (!pfn || !name || !*name)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_mod_ok(mod)) {
		stub_violation("cuModuleGetFunction(%s) on a stale or unknown module",
			       name);
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	if (!stub_image_has(mod, name))
		return stub_end(&c, CUDA_ERROR_NOT_FOUND);
	for (int i = 0; i < STUB_MAX_FUNCS && !fn; i++)
		if (S.func[i].mod == mod && !strcmp(S.func[i].name, name))
			fn = &S.func[i];
	for (int i = 0; i < STUB_MAX_FUNCS && !fn; i++)
		if (!S.func[i].mod)
			fn = &S.func[i];
	if (!fn)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	fn->mod = mod;
	snprintf(fn->name, sizeof(fn->name), "%s", name);
	*pfn = fn;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuModuleUnload(CUmodule mod)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuModuleUnload);
	c.ptr = mod;
	STUB_ENTER(&c, "cuModuleUnload", 1);
	if (!stub_mod_ok(mod)) {
		stub_violation("cuModuleUnload of a stale or unknown module");
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	mod->live = 0;
	for (int i = 0; i < STUB_MAX_FUNCS; i++)
		if (S.func[i].mod == mod)
			S.func[i].mod = NULL;
	return stub_end(&c, CUDA_SUCCESS);
}

/* A stream argument: NULL or one of the legacy/per-thread handles, or ours. */
static int stub_stream_ok(CUstream s, const struct CUctx_st *cur)
{
	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return 1;
	return s >= S.stream && s < S.stream + STUB_MAX_STREAMS && s->live &&
	       s->device == cur->device && s->gen == cur->gen;
}

/*
 * Non-NULL entries of params, and copies of their values: only for a
 * kernel whose test declared how many 8-byte parameters it takes, as the
 * array's length and the sizes are unknowable here.
 */
static int stub_kernel_params(const char *kernel, void **params,
			      uint64_t *val)
{
	int n = -1, found = 0;

	if (!params)
		return 0;
	for (int i = 0; i < S.nparams; i++)
		if (!strcmp(S.params[i].kernel, kernel))
			n = S.params[i].n;
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (!params[i])
			continue;
		found++;
		memcpy(&val[i], params[i], sizeof(val[i]));
	}
	return found;
}

static CUresult CUDAAPI stub_cuLaunchKernel(CUfunction f, unsigned int gx,
					    unsigned int gy, unsigned int gz,
					    unsigned int bx, unsigned int by,
					    unsigned int bz, unsigned int shmem,
					    CUstream stream, void **params,
					    void **extra)
{
	struct CUctx_st *cur;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuLaunchKernel);
	c.ptr = f;
	c.grid[0] = gx, c.grid[1] = gy, c.grid[2] = gz;
	c.block[0] = bx, c.block[1] = by, c.block[2] = bz;
	c.shmem = shmem;
	c.stream = stream;
	if (f >= S.func && f < S.func + STUB_MAX_FUNCS && f->mod)
		snprintf(c.name, sizeof(c.name), "%s", f->name);
	STUB_ENTER(&c, "cuLaunchKernel", 1);
	cur = stub_need_ctx("cuLaunchKernel");
	if (!cur)
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!c.name[0] || !stub_mod_ok(f->mod)) {
		stub_violation("cuLaunchKernel of a stale or unknown function");
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	if (f->mod->device != cur->device) {
		stub_violation("cuLaunchKernel(%s) of device %d's module in device %d's context",
			       f->name, f->mod->device, cur->device);
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	if (!stub_stream_ok(stream, cur)) {
		stub_violation("cuLaunchKernel(%s) on a foreign or stale stream",
			       f->name);
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 ||
	    gz > 65535 || bx > 1024 || by > 1024 || bz > 64 ||
	    (unsigned long long)bx * by * bz > 1024 ||
	    shmem > 48 * 1024 || (params && extra))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	c.nparams = stub_kernel_params(f->name, params, c.param);
	return stub_end(&c, CUDA_SUCCESS);
}

/* ---- streams, events, memory: trivial, but handles are checked -------- */

static CUresult CUDAAPI stub_cuStreamCreate(CUstream *ps, unsigned int flags)
{
	struct CUstream_st *s = NULL;
	struct CUctx_st *cur;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuStreamCreate);
	c.flags = flags;
	STUB_ENTER(&c, "cuStreamCreate", 1);
	cur = stub_need_ctx("cuStreamCreate");
	if (!cur)
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!ps || (flags & ~CU_STREAM_NON_BLOCKING))
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_STREAMS && !s; i++)
		if (!S.stream[i].live)
			s = &S.stream[i];
	if (!s)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	s->live = 1;
	s->device = cur->device;
	s->gen = cur->gen;
	*ps = s;
	c.stream = s;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuStreamDestroy(CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuStreamDestroy);
	c.stream = s;
	STUB_ENTER(&c, "cuStreamDestroy", 1);
	if (!(s >= S.stream && s < S.stream + STUB_MAX_STREAMS && s->live)) {
		stub_violation("cuStreamDestroy of an unknown stream");
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	s->live = 0;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuStreamSynchronize(CUstream s)
{
	struct CUctx_st *cur;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuStreamSynchronize);
	c.stream = s;
	STUB_ENTER(&c, "cuStreamSynchronize", 1);
	cur = stub_current();
	/* The NULL stream is the current context's. */
	if (!s && !stub_need_ctx("cuStreamSynchronize(NULL)"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (s && !(cur ? stub_stream_ok(s, cur) :
		   (s >= S.stream && s < S.stream + STUB_MAX_STREAMS && s->live))) {
		stub_violation("cuStreamSynchronize of an unknown stream");
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuEventCreate(CUevent *pe, unsigned int flags)
{
	struct CUevent_st *e = NULL;
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventCreate);
	c.flags = flags;
	STUB_ENTER(&c, "cuEventCreate", 1);
	if (!stub_need_ctx("cuEventCreate"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pe)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_EVENTS && !e; i++)
		if (!S.event[i].live)
			e = &S.event[i];
	if (!e)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	e->live = 1;
	*pe = e;
	c.ptr = e;
	return stub_end(&c, CUDA_SUCCESS);
}

static int stub_event_ok(const struct CUevent_st *e)
{
	return e >= S.event && e < S.event + STUB_MAX_EVENTS && e->live;
}

static CUresult CUDAAPI stub_cuEventDestroy(CUevent e)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventDestroy);
	c.ptr = e;
	STUB_ENTER(&c, "cuEventDestroy", 1);
	if (!stub_event_ok(e)) {
		stub_violation("cuEventDestroy of an unknown event");
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	e->live = 0;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuEventRecord(CUevent e, CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventRecord);
	c.ptr = e;
	c.stream = s;
	STUB_ENTER(&c, "cuEventRecord", 1);
	if (!stub_event_ok(e))
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuEventSynchronize(CUevent e)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventSynchronize);
	c.ptr = e;
	STUB_ENTER(&c, "cuEventSynchronize", 1);
	if (!stub_event_ok(e))
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuEventElapsedTime(float *ms, CUevent start,
						CUevent end)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuEventElapsedTime);
	STUB_ENTER(&c, "cuEventElapsedTime", 1);
	if (!ms)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	if (!stub_event_ok(start) || !stub_event_ok(end))
		return stub_end(&c, CUDA_ERROR_INVALID_HANDLE);
	*ms = 1.0f;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuMemAlloc(CUdeviceptr *pd, size_t size)
{
	struct stub_rec c;
	int slot = -1;

	stub_begin(&c, STUB_ID_cuMemAlloc);
	c.size = size;
	STUB_ENTER(&c, "cuMemAlloc", 1);
	if (!stub_need_ctx("cuMemAlloc"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pd || !size)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_DEVALLOCS && slot < 0; i++)
		if (!S.devalloc[i].p)
			slot = i;
	if (slot < 0)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	/* Address space only: nothing reads or writes device memory here. */
	S.devalloc[slot].p = S.next_devalloc;
	S.devalloc[slot].size = size;
	S.next_devalloc += (size + 0xfffff) & ~(CUdeviceptr)0xfffff;
	*pd = S.devalloc[slot].p;
	c.ptr = (const void *)(uintptr_t)*pd;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuMemFree(CUdeviceptr p)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemFree);
	c.ptr = (const void *)(uintptr_t)p;
	STUB_ENTER(&c, "cuMemFree", 1);
	for (int i = 0; i < STUB_MAX_DEVALLOCS; i++) {
		if (p && S.devalloc[i].p == p) {
			S.devalloc[i].p = 0;
			c.size = S.devalloc[i].size;
			return stub_end(&c, CUDA_SUCCESS);
		}
	}
	stub_violation("cuMemFree(%#llx) of unknown device memory",
		       (unsigned long long)p);
	return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
}

static CUresult CUDAAPI stub_cuMemHostAlloc(void **pp, size_t size,
					    unsigned int flags)
{
	struct stub_rec c;
	int slot = -1;
	void *p;

	stub_begin(&c, STUB_ID_cuMemHostAlloc);
	c.size = size;
	c.flags = flags;
	STUB_ENTER(&c, "cuMemHostAlloc", 1);
	if (!stub_need_ctx("cuMemHostAlloc"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	if (!pp || !size)
		return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < STUB_MAX_HOSTALLOCS && slot < 0; i++)
		if (!S.hostalloc[i].p)
			slot = i;
	if (slot < 0)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	/* Real memory: the caller writes it. */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return stub_end(&c, CUDA_ERROR_OUT_OF_MEMORY);
	S.hostalloc[slot].p = p;
	S.hostalloc[slot].size = size;
	*pp = p;
	c.ptr = p;
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuMemFreeHost(void *p)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemFreeHost);
	c.ptr = p;
	STUB_ENTER(&c, "cuMemFreeHost", 1);
	for (int i = 0; i < STUB_MAX_HOSTALLOCS; i++) {
		if (p && S.hostalloc[i].p == p) {
			munmap(p, S.hostalloc[i].size);
			c.size = S.hostalloc[i].size;
			S.hostalloc[i].p = NULL;
			return stub_end(&c, CUDA_SUCCESS);
		}
	}
	stub_violation("cuMemFreeHost(%p) of memory cuMemHostAlloc did not give",
		       p);
	return stub_end(&c, CUDA_ERROR_INVALID_VALUE);
}

static CUresult CUDAAPI stub_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
					       size_t size, CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemcpyHtoDAsync);
	c.ptr = src;
	c.size = size;
	c.flags = dst;
	c.stream = s;
	STUB_ENTER(&c, "cuMemcpyHtoDAsync", 1);
	if (!stub_need_ctx("cuMemcpyHtoDAsync"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src,
					       size_t size, CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemcpyDtoHAsync);
	c.ptr = dst;
	c.size = size;
	c.flags = src;
	c.stream = s;
	STUB_ENTER(&c, "cuMemcpyDtoHAsync", 1);
	if (!stub_need_ctx("cuMemcpyDtoHAsync"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	return stub_end(&c, CUDA_SUCCESS);
}

static CUresult CUDAAPI stub_cuMemsetD8Async(CUdeviceptr dst, unsigned char v,
					     size_t n, CUstream s)
{
	struct stub_rec c;

	stub_begin(&c, STUB_ID_cuMemsetD8Async);
	c.ptr = (const void *)(uintptr_t)dst;
	c.size = n;
	c.flags = v;
	c.stream = s;
	STUB_ENTER(&c, "cuMemsetD8Async", 1);
	if (!stub_need_ctx("cuMemsetD8Async"))
		return stub_end(&c, CUDA_ERROR_INVALID_CONTEXT);
	return stub_end(&c, CUDA_SUCCESS);
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

/* ---- queries for tests -------------------------------------------------- */

/* Calls of fn since custub_reset_log(); fn "*" counts every function. */
STUB_EXPORT int custub_log_count(const char *fn)
{
	unsigned long n = 0;
	int id = strcmp(fn, "*") ? stub_fn_id(fn) : -1;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_NFN; i++)
		if (id < 0 || i == id)
			n += S.fstat[i].calls;
	pthread_mutex_unlock(&stub_lock);
	if (id < 0 && strcmp(fn, "*"))
		return -1;
	return (int)n;
}

/*
 * The last call of fn since custub_reset_log(): 0 and its fields (device:
 * the CUdevice argument, else the current context's device, -1 for none;
 * for cuMemHostGetDevicePointer size is the pointer returned), or -1.
 */
STUB_EXPORT int custub_last(const char *fn, int *device, const void **ptr,
			    size_t *size, unsigned long long *flags,
			    int *result)
{
	int id = stub_fn_id(fn), ret = -1;

	pthread_mutex_lock(&stub_lock);
	if (id >= 0 && S.fstat[id].has_last) {
		const struct stub_rec *c = &S.fstat[id].last;

		if (device)
			*device = c->device;
		if (ptr)
			*ptr = c->ptr;
		if (size)
			*size = c->size;
		if (flags)
			*flags = c->flags;
		if (result)
			*result = c->result;
		ret = 0;
	}
	pthread_mutex_unlock(&stub_lock);
	return ret;
}

/* The last cuLaunchKernel: 0 and its fields, or -1. */
STUB_EXPORT int custub_last_launch(char *kernel, size_t len,
				   unsigned int grid[3], unsigned int block[3],
				   unsigned int *shmem, void **stream,
				   int *nparams, int *device, int *result)
{
	const struct stub_fstat *f = &S.fstat[STUB_ID_cuLaunchKernel];
	int ret = -1;

	pthread_mutex_lock(&stub_lock);
	if (f->has_last) {
		if (kernel && len)
			snprintf(kernel, len, "%s", f->last.name);
		if (grid)
			memcpy(grid, f->last.grid, sizeof(f->last.grid));
		if (block)
			memcpy(block, f->last.block, sizeof(f->last.block));
		if (shmem)
			*shmem = f->last.shmem;
		if (stream)
			*stream = f->last.stream;
		if (nparams)
			*nparams = f->last.nparams;
		if (device)
			*device = f->last.device;
		if (result)
			*result = f->last.result;
		ret = 0;
	}
	pthread_mutex_unlock(&stub_lock);
	return ret;
}

/* Parameter i of the last launch, if its kernel's were declared. */
STUB_EXPORT int custub_last_param(int i, unsigned long long *value)
{
	const struct stub_fstat *f = &S.fstat[STUB_ID_cuLaunchKernel];
	int ret = -1;

	pthread_mutex_lock(&stub_lock);
	if (f->has_last && i >= 0 && i < STUB_MAX_PARAMS &&
	    i < f->last.nparams) {
		*value = f->last.param[i];
		ret = 0;
	}
	pthread_mutex_unlock(&stub_lock);
	return ret;
}

/* The last stream argument of fn (cuStreamSynchronize, ...); -1 if none. */
STUB_EXPORT int custub_last_stream(const char *fn, void **stream)
{
	int id = stub_fn_id(fn), ret = -1;

	pthread_mutex_lock(&stub_lock);
	if (id >= 0 && S.fstat[id].has_last) {
		*stream = S.fstat[id].last.stream;
		ret = 0;
	}
	pthread_mutex_unlock(&stub_lock);
	return ret;
}

/*
 * kernel takes n parameters of 8 bytes each: launches of it count its
 * kernelParams entries and keep their values (custub_last_param()).
 */
STUB_EXPORT int custub_kernel_params(const char *kernel, int n)
{
	int ret = -1;

	pthread_mutex_lock(&stub_lock);
	if (S.nparams < STUB_MAX_PARAMS && strlen(kernel) < 64 && n >= 0 &&
	    n <= STUB_MAX_PARAMS) {
		snprintf(S.params[S.nparams].kernel,
			 sizeof(S.params[0].kernel), "%s", kernel);
		S.params[S.nparams++].n = n;
		ret = 0;
	}
	pthread_mutex_unlock(&stub_lock);
	return ret;
}

/* OR of every flags argument fn was ever given, log resets or not. */
STUB_EXPORT unsigned long long custub_flags_seen(const char *fn)
{
	int id = stub_fn_id(fn);
	unsigned long long v = 0;

	pthread_mutex_lock(&stub_lock);
	if (id >= 0)
		v = S.fstat[id].flags_seen;
	pthread_mutex_unlock(&stub_lock);
	return v;
}

/* The version fn was first asked for through cuGetProcAddress_v2, or 0. */
STUB_EXPORT int custub_proc_version(const char *fn)
{
	int id = stub_fn_id(fn), v = 0;

	pthread_mutex_lock(&stub_lock);
	if (id >= 0 && id < STUB_ID_cuGetProcAddress_v2)
		v = S.proc_version[id];
	pthread_mutex_unlock(&stub_lock);
	return v;
}

STUB_EXPORT unsigned long long custub_proc_flags(void)
{
	unsigned long long v;

	pthread_mutex_lock(&stub_lock);
	v = S.proc_flags;
	pthread_mutex_unlock(&stub_lock);
	return v;
}

/* Primary-context retain count of device. */
STUB_EXPORT int custub_retains(int device)
{
	int n = -1;

	pthread_mutex_lock(&stub_lock);
	if (device >= 0 && device < STUB_MAX_DEVICES)
		n = S.ctx[device].retains;
	pthread_mutex_unlock(&stub_lock);
	return n;
}

/* Live registrations, and the bytes they cover. */
STUB_EXPORT int custub_registrations(void)
{
	int n = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_REGS; i++)
		n += S.reg[i].live;
	pthread_mutex_unlock(&stub_lock);
	return n;
}

STUB_EXPORT size_t custub_registered_bytes(void)
{
	size_t n = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_REGS; i++)
		if (S.reg[i].live)
			n += S.reg[i].size;
	pthread_mutex_unlock(&stub_lock);
	return n;
}

/*
 * The live registration that starts at p: 0 with its flags, size and the
 * device whose context made it, or -1.
 */
STUB_EXPORT int custub_registration(const void *p, unsigned int *flags,
				    size_t *size, int *device)
{
	int ret = -1;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_REGS; i++) {
		const struct stub_reg *g = &S.reg[i];

		if (!g->live || g->base != (uintptr_t)p)
			continue;
		if (flags)
			*flags = g->flags;
		if (size)
			*size = g->size;
		if (device)
			*device = g->device;
		ret = 0;
	}
	pthread_mutex_unlock(&stub_lock);
	return ret;
}

/* cuModuleLoadData calls that made a module in device's context. */
STUB_EXPORT int custub_module_loads(int device)
{
	int n = -1;

	pthread_mutex_lock(&stub_lock);
	if (device >= 0 && device < STUB_MAX_DEVICES)
		n = (int)S.mod_loads[device];
	pthread_mutex_unlock(&stub_lock);
	return n;
}

/* Depth of the calling thread's context stack. */
STUB_EXPORT int custub_ctx_depth(void)
{
	return stub_tls.depth;
}

/* Misuses so far, and the first one's text into msg. */
STUB_EXPORT int custub_violations(char *msg, size_t len)
{
	int n;

	pthread_mutex_lock(&stub_lock);
	n = (int)S.violations;
	if (msg && len)
		snprintf(msg, len, "%s", S.first_violation);
	pthread_mutex_unlock(&stub_lock);
	return n;
}

/* Forget the calls so far (not the state, nor the fault counters). */
STUB_EXPORT void custub_reset_log(void)
{
	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_NFN; i++) {
		S.fstat[i].calls = 0;
		S.fstat[i].has_last = 0;
	}
	pthread_mutex_unlock(&stub_lock);
}

/* The latest calls, oldest first, as TAP comments on stdout. */
STUB_EXPORT void custub_dump(void)
{
	unsigned long from;

	pthread_mutex_lock(&stub_lock);
	from = S.seq > STUB_RING ? S.seq - STUB_RING + 1 : 1;
	for (unsigned long s = from; s <= S.seq; s++) {
		const struct stub_rec *c = &S.ring[s % STUB_RING];
		const char *rn = stub_err_name((CUresult)c->result);

		printf("# custub %lu: %s dev=%d ptr=%p size=%#zx flags=%#llx%s%s -> %s\n",
		       c->seq, stub_fn_names[c->fn], c->device, c->ptr,
		       c->size, c->flags, c->name[0] ? " name=" : "", c->name,
		       rn ? rn : "?");
	}
	pthread_mutex_unlock(&stub_lock);
	fflush(stdout);
}
