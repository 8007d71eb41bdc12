// SPDX-License-Identifier: MIT
/*
 * The stand-in libcuda.so.1 (stub.h): the custub_* functions tests find
 * with dlsym, to read the call log and the driver's state, declare kernel
 * parameters, and reset or dump the log.
 */
#include <stdio.h>
#include <string.h>

#include "stub.h"

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

/* How many times device's primary context was created (first retains). */
STUB_EXPORT int custub_ctx_creations(int device)
{
	int n = -1;

	pthread_mutex_lock(&stub_lock);
	if (device >= 0 && device < STUB_MAX_DEVICES)
		n = (int)S.ctx[device].gen;
	pthread_mutex_unlock(&stub_lock);
	return n;
}

/* Modules loaded in device's context and not unloaded, while it lives. */
STUB_EXPORT int custub_modules_live(int device)
{
	int n = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_MODULES; i++)
		n += S.mod[i].live && S.mod[i].device == device &&
		     S.mod[i].gen == S.ctx[device].gen &&
		     S.ctx[device].retains;
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
