// SPDX-License-Identifier: MIT
/*
 * The stand-in libcuda.so.1 (stub.h): modules loaded from a fatbin, their
 * functions, and kernel launches, checked against the context, the
 * stream and the limits a real device has; nothing runs.
 */
#include <stdio.h>
#include <string.h>

#include "stub.h"
#include "stub_exec.h"

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

CUresult CUDAAPI stub_cuModuleLoadData(CUmodule *pmod, const void *image)
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

CUresult CUDAAPI stub_cuModuleGetFunction(CUfunction *pfn, CUmodule mod,
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

CUresult CUDAAPI stub_cuModuleUnload(CUmodule mod)
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

/*
 * CUSTUB_EXEC=1: run c's kernel now (stub_exec.cc), its device pointers
 * turned into the host addresses registered behind them. A pointer the
 * device cannot reach is what a GPU would fault on.
 */
static CUresult stub_exec(const struct stub_rec *c, int device, void **params)
{
	uint32_t pointers, nullable;
	uint64_t val[STUB_MAX_PARAMS];
	char why[256];
	int n;

	if (stub_exec_signature(c->name, &n, &pointers, &nullable) ||
	    n > STUB_MAX_PARAMS || !params) {
		stub_violation("CUSTUB_EXEC: cannot run kernel %s", c->name);
		return CUDA_ERROR_LAUNCH_FAILED;
	}
	for (int i = 0; i < n; i++) {
		uintptr_t host;

		memcpy(&val[i], params[i], sizeof(val[i]));
		if (!(pointers >> i & 1) || (!val[i] && nullable >> i & 1))
			continue;
		if (stub_devptr_host(device, val[i], &host)) {
			stub_violation("kernel %s: parameter %d, %#llx, is no device %d address of registered memory",
				       c->name, i, (unsigned long long)val[i],
				       device);
			return CUDA_ERROR_ILLEGAL_ADDRESS;
		}
		val[i] = host;
	}
	if (stub_exec_run(c->name, c->grid, c->block, val, why, sizeof(why))) {
		stub_violation("CUSTUB_EXEC: %s", why);
		return CUDA_ERROR_LAUNCH_FAILED;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI stub_cuLaunchKernel(CUfunction f, unsigned int gx,
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
	if (S.exec)
		return stub_end(&c, stub_exec(&c, cur->device, params));
	return stub_end(&c, CUDA_SUCCESS);
}
