/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the NVIDIA driver's libcuda.so.1, for libgpubuf's tests
 * only. It runs no kernel and touches no GPU, so it proves nothing about
 * GPUs: it checks how the library drives the API (which calls, with which
 * arguments, in which context, balanced or not) and lets tests make any
 * call fail.
 *
 * The one exported driver symbol is cuGetProcAddress_v2, which hands out
 * this library's implementation of every name in GPUBUF_CU_ENTRIES. The
 * custub_* functions are for tests, found with dlsym.
 *
 * This header is private to the stand-in, whose files share its state:
 *   stub_core.c    configuration (CUSTUB_* variables), the call log and
 *                  fault injection, misuse, cuGetProcAddress_v2
 *   stub_ctx.c     cuInit, devices and their attributes, primary
 *                  contexts, the per-thread context stack
 *   stub_mem.c     host registration and device pointers, allocations,
 *                  copies, streams, events
 *   stub_module.c  modules, functions, kernel launches
 *   stub_query.c   the custub_* queries for tests
 *
 * Misuse a real driver would punish (popping an empty context stack,
 * releasing an unretained context, destroying a context that still holds
 * a registration, unregistering after munmap, IOMEMORY, ...) counts as a
 * violation: custub_violations() lets a test insist on none.
 */
#ifndef CUSTUB_STUB_H
#define CUSTUB_STUB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/cuda_driver.h"	/* GPUBUF_CU_ENTRIES, cuda.h, cudaTypedefs.h */

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

extern const char *const stub_fn_names[STUB_NFN];

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

extern pthread_mutex_t stub_lock;

struct stub_state {
	/* configuration */
	int ndev;
	CUresult init_result;
	int driver_version;	/* cuDriverGetVersion (CUSTUB_DRIVER) */
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
	char pci[STUB_MAX_DEVICES][16];	/* cuDeviceGetPCIBusId */
	struct {
		char kernel[64];
		int n;
	} params[STUB_MAX_PARAMS];
	int nparams;
	int trace_fd;		/* CUSTUB_TRACE's file + 1; 0: no trace */
	int exec;		/* CUSTUB_EXEC=1: launches run (stub_exec.cc) */

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
};

extern struct stub_state S;

/* Like the real driver's: a stack of current contexts per thread. */
struct stub_ctx_stack {
	struct CUctx_st *ctx[STUB_STACK_DEPTH];
	int depth;
};

extern __thread struct stub_ctx_stack stub_tls;

/* ---- stub_mem.c --------------------------------------------------------- */

/*
 * The host address behind device pointer dptr as device sees it: 0 if it
 * lies in a live DEVICEMAP registration visible there, else -1.
 */
int stub_devptr_host(int device, uint64_t dptr, uintptr_t *host);

/* ---- stub_core.c -------------------------------------------------------- */

/* The CUresult's name, or NULL. */
const char *stub_err_name(CUresult r);

/* The function id of name, or -1. */
int stub_fn_id(const char *name);

__attribute__((format(printf, 1, 2)))
void stub_violation(const char *fmt, ...);

/* Start a call: takes stub_lock, which stub_end() drops. */
void stub_begin(struct stub_rec *c, int fn);

/* Whether this call is one CUSTUB_FAIL names; then *r is its result. */
int stub_fault(const struct stub_rec *c, CUresult *r);

/* End a call with result r: logs it, drops stub_lock, returns r. */
CUresult stub_end(struct stub_rec *c, CUresult r);


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


/* ---- stub_ctx.c --------------------------------------------------------- */

/* The calling thread's current context, or NULL. */
struct CUctx_st *stub_current(void);

/* The current context, or a violation: most calls need one. */
struct CUctx_st *stub_need_ctx(const char *name);

int stub_valid_device(CUdevice d);

/* Device attribute attr of device, after CUSTUB_ATTR. */
int stub_attr_value(int device, CUdevice_attribute attr);

/* ---- stub_mem.c --------------------------------------------------------- */

/* A stream argument: NULL or one of the legacy/per-thread handles, or ours. */
int stub_stream_ok(CUstream s, const struct CUctx_st *cur);

/* ---- entry points ------------------------------------------------------- */

/*
 * stub_<name> for each name in GPUBUF_CU_ENTRIES, declared with exactly
 * the ABI of the version the library asks for: a definition that differs
 * from the cudaTypedefs.h type does not compile.
 */
#define STUB_DECLARE(name, version)					\
	__typeof__(*(PFN_##name##_v##version)0) stub_##name;
GPUBUF_CU_ENTRIES(STUB_DECLARE)
#undef STUB_DECLARE

#endif /* CUSTUB_STUB_H */
