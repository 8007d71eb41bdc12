// SPDX-License-Identifier: MIT
/*
 * The stand-in libdrm.so.2 (amdgpu_stub.h says what the stand-ins are):
 * every function forwards to the real libdrm, loaded by its path
 * (GPUBUF_STUB_REAL_LIBDRM, fixed at build time), but
 *  - drmGetVersion() names vgem "amdgpu", version 3.49 (linux 6.1,
 *    amdgpu_drv.c: KMS_DRIVER_MAJOR/MINOR), so libgpubuf's driver check
 *    and libdrm_amdgpu's "DRM version 3.x" check pass on vgem;
 *  - the amdgpu GEM_VA ioctl, through drmIoctl() or drmCommandWriteRead(),
 *    is answered here on a GPU VM per DRM file description, as the
 *    kernel's amdgpu driver keeps one per open file (linux 6.1,
 *    amdgpu_kms.c: amdgpu_driver_open_kms -> amdgpu_vm_init).
 * Any other ioctl reaches vgem unchanged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include <xf86drm.h>
#include <amdgpu_drm.h>

#include "amdgpu_stub.h"

#define STUB_EXPORT __attribute__((visibility("default")))

/*
 * The stand-in GPU's VM, as linux 6.1 sets it up for a GPU without the
 * GMC hole: nothing below AMDGPU_VA_RESERVED_SIZE (2 MiB, amdgpu_vm.h),
 * 4 KiB GPU pages, 47 bits of address.
 */
#define STUB_VA_RESERVED	(2ull << 20)
#define STUB_GPU_PAGE		4096ull
#define STUB_VA_END		(1ull << 47)

static struct {
	pthread_once_t once;
	__typeof__(drmGetVersion) *GetVersion;
	__typeof__(drmFreeVersion) *FreeVersion;
	__typeof__(drmIoctl) *Ioctl;
	__typeof__(drmCommandWriteRead) *CommandWriteRead;
	__typeof__(drmPrimeFDToHandle) *PrimeFDToHandle;
	__typeof__(drmPrimeHandleToFD) *PrimeHandleToFD;
	__typeof__(drmCloseBufferHandle) *CloseBufferHandle;
	__typeof__(drmGetPrimaryDeviceNameFromFd) *GetPrimaryDeviceNameFromFd;
} real = { .once = PTHREAD_ONCE_INIT };

static void stub_load_real(void)
{
	void *lib = dlopen(GPUBUF_STUB_REAL_LIBDRM, RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return;		/* every call then fails with ENOSYS */
#define STUB_REAL(field) real.field = (__typeof__(real.field))dlsym(lib, "drm" #field)
	STUB_REAL(GetVersion);
	STUB_REAL(FreeVersion);
	STUB_REAL(Ioctl);
	STUB_REAL(CommandWriteRead);
	STUB_REAL(PrimeFDToHandle);
	STUB_REAL(PrimeHandleToFD);
	STUB_REAL(CloseBufferHandle);
	STUB_REAL(GetPrimaryDeviceNameFromFd);
#undef STUB_REAL
}

/* The real function, or NULL with errno ENOSYS. */
#define REAL(field)							\
	(pthread_once(&real.once, stub_load_real),			\
	 real.field ? real.field : (errno = ENOSYS, real.field))

/* One GPU mapping: [va, va + size) of the object behind a GEM handle. */
struct stub_map {
	struct stub_map *next;
	uint64_t va, size, flags;
	uint32_t handle;
	ino_t ino;		/* the object's dma-buf, to spot a reused handle */
};

/* The GPU VM of one DRM file; fd is our dup, which identifies the file. */
struct stub_vm {
	struct stub_vm *next;
	int fd;
	struct stub_map *maps;
};

static pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stub_vm *stub_vms;

/* The dma-buf inode of the object behind handle in fd's file, or 0. */
static ino_t stub_handle_ino(int fd, uint32_t handle, uint64_t *size)
{
	struct drm_prime_handle p = { .handle = handle, .flags = DRM_CLOEXEC };
	struct stat st;
	ino_t ino = 0;

	if (ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p))
		return 0;
	if (!fstat(p.fd, &st))
		ino = st.st_ino;
	if (size) {
		off_t end = lseek(p.fd, 0, SEEK_END);

		*size = end < 0 ? 0 : (uint64_t)end;
	}
	close(p.fd);
	return ino;
}

/*
 * Closing the last GEM handle of an object in a file drops that file's
 * mappings of it (linux 6.1, amdgpu_gem.c: amdgpu_gem_object_close ->
 * amdgpu_vm_bo_del): whoever closed it, so look before every use.
 */
static void stub_vm_prune(struct stub_vm *vm)
{
	struct stub_map **pp = &vm->maps, *m;

	while ((m = *pp)) {
		if (stub_handle_ino(vm->fd, m->handle, NULL) == m->ino) {
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		free(m);
	}
}

/* The VM of the file behind fd (create: make it), or NULL with errno. */
static struct stub_vm *stub_vm_of(int fd, bool create)
{
	pid_t pid = getpid();
	struct stub_vm *vm;

	for (vm = stub_vms; vm; vm = vm->next)
		if (syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, vm->fd) == 0)
			return vm;
	if (!create) {
		errno = ENOENT;
		return NULL;
	}
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return NULL;
	vm->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (vm->fd < 0) {
		free(vm);
		return NULL;
	}
	vm->next = stub_vms;
	stub_vms = vm;
	return vm;
}

/*
 * MAP: the checks of linux 6.1 amdgpu_gem.c: amdgpu_gem_va_ioctl (address
 * above the reserved area, known flags, an existing handle: -ENOENT) and
 * amdgpu_vm.c: amdgpu_vm_verify_parameters (page-aligned, non-empty, inside
 * the object and the VM) and amdgpu_vm_bo_map (no overlap with any mapping
 * of the file: -EINVAL).
 */
static int stub_va_map(struct stub_vm *vm, const struct drm_amdgpu_gem_va *a)
{
	uint64_t end = a->va_address + a->map_size, bo_size;
	struct stub_map *m;
	ino_t ino;

	if (a->va_address < STUB_VA_RESERVED || a->va_address % STUB_GPU_PAGE ||
	    a->offset_in_bo % STUB_GPU_PAGE || !a->map_size ||
	    a->map_size % STUB_GPU_PAGE || end < a->va_address ||
	    end > STUB_VA_END)
		return -EINVAL;
	ino = stub_handle_ino(vm->fd, a->handle, &bo_size);
	if (!ino)
		return -ENOENT;
	if (a->offset_in_bo + a->map_size > bo_size)
		return -EINVAL;
	for (m = vm->maps; m; m = m->next)
		if (a->va_address < m->va + m->size && m->va < end)
			return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	*m = (struct stub_map){ vm->maps, a->va_address, a->map_size, a->flags,
				a->handle, ino };
	vm->maps = m;
	return 0;
}

/* UNMAP: the object's mapping that starts there, else -ENOENT (amdgpu_vm_bo_unmap). */
static int stub_va_unmap(struct stub_vm *vm, const struct drm_amdgpu_gem_va *a)
{
	uint64_t size;
	ino_t ino = stub_handle_ino(vm->fd, a->handle, &size);

	if (!ino)
		return -ENOENT;
	for (struct stub_map **pp = &vm->maps, *m; (m = *pp); pp = &m->next) {
		if (m->va == a->va_address && m->ino == ino) {
			*pp = m->next;
			free(m);
			return 0;
		}
	}
	return -ENOENT;
}

/* The GEM_VA ioctl on fd's file: 0 or -errno, as the kernel answers. */
static int stub_gem_va(int fd, struct drm_amdgpu_gem_va *a)
{
	const uint64_t valid = AMDGPU_VM_DELAY_UPDATE | AMDGPU_VM_PAGE_READABLE |
			       AMDGPU_VM_PAGE_WRITEABLE | AMDGPU_VM_PAGE_EXECUTABLE;
	struct stub_vm *vm;
	int r;

	if (a->flags & ~valid)
		return -EINVAL;
	/* CLEAR and REPLACE exist in the kernel; nothing here uses them. */
	if (a->operation != AMDGPU_VA_OP_MAP && a->operation != AMDGPU_VA_OP_UNMAP)
		return -EINVAL;
	pthread_mutex_lock(&stub_lock);
	vm = stub_vm_of(fd, true);
	if (!vm) {
		r = -errno;
	} else {
		stub_vm_prune(vm);
		r = a->operation == AMDGPU_VA_OP_MAP ? stub_va_map(vm, a) :
						       stub_va_unmap(vm, a);
	}
	pthread_mutex_unlock(&stub_lock);
	return r;
}

/* Whether an ioctl request is amdgpu's GEM_VA, whatever its direction bits. */
static bool stub_is_gem_va(unsigned long request)
{
	return _IOC_TYPE(request) == DRM_IOCTL_BASE &&
	       _IOC_NR(request) == DRM_COMMAND_BASE + DRM_AMDGPU_GEM_VA &&
	       _IOC_SIZE(request) == sizeof(struct drm_amdgpu_gem_va);
}

/* libdrm 2.4.114 xf86drm.c: drmIoctl returns -1 with errno set. */
STUB_EXPORT int drmIoctl(int fd, unsigned long request, void *arg)
{
	__typeof__(drmIoctl) *fn;
	int r;

	if (!stub_is_gem_va(request))
		return (fn = REAL(Ioctl)) ? fn(fd, request, arg) : -1;
	r = stub_gem_va(fd, arg);
	if (!r)
		return 0;
	errno = -r;
	return -1;
}

/* libdrm 2.4.114 xf86drm.c: drmCommandWriteRead returns -errno. */
STUB_EXPORT int drmCommandWriteRead(int fd, unsigned long index, void *data,
				    unsigned long size)
{
	__typeof__(drmCommandWriteRead) *fn;

	if (index == DRM_AMDGPU_GEM_VA &&
	    size == sizeof(struct drm_amdgpu_gem_va))
		return stub_gem_va(fd, data);
	return (fn = REAL(CommandWriteRead)) ? fn(fd, index, data, size) : -errno;
}

/* vgem becomes amdgpu 3.49; the strings stay libdrm's to free. */
STUB_EXPORT drmVersionPtr drmGetVersion(int fd)
{
	__typeof__(drmGetVersion) *fn = REAL(GetVersion);
	drmVersionPtr v = fn ? fn(fd) : NULL;
	char *name;

	if (!v || !v->name || strcmp(v->name, "vgem"))
		return v;
	name = strdup("amdgpu");
	if (!name) {
		real.FreeVersion(v);
		errno = ENOMEM;
		return NULL;
	}
	free(v->name);
	v->name = name;
	v->name_len = (int)strlen(name);
	v->version_major = 3;
	v->version_minor = 49;
	v->version_patchlevel = 0;
	return v;
}

STUB_EXPORT void drmFreeVersion(drmVersionPtr v)
{
	__typeof__(drmFreeVersion) *fn = REAL(FreeVersion);

	if (fn)
		fn(v);
}

STUB_EXPORT int drmPrimeFDToHandle(int fd, int prime_fd, uint32_t *handle)
{
	__typeof__(drmPrimeFDToHandle) *fn = REAL(PrimeFDToHandle);

	return fn ? fn(fd, prime_fd, handle) : -1;
}

STUB_EXPORT int drmPrimeHandleToFD(int fd, uint32_t handle, uint32_t flags,
				   int *prime_fd)
{
	__typeof__(drmPrimeHandleToFD) *fn = REAL(PrimeHandleToFD);

	return fn ? fn(fd, handle, flags, prime_fd) : -1;
}

STUB_EXPORT int drmCloseBufferHandle(int fd, uint32_t handle)
{
	__typeof__(drmCloseBufferHandle) *fn = REAL(CloseBufferHandle);

	return fn ? fn(fd, handle) : -1;
}

STUB_EXPORT char *drmGetPrimaryDeviceNameFromFd(int fd)
{
	__typeof__(drmGetPrimaryDeviceNameFromFd) *fn =
		REAL(GetPrimaryDeviceNameFromFd);

	return fn ? fn(fd) : NULL;
}

STUB_EXPORT int gpubuf_amdgpu_stub_va_query(int fd, uint64_t va, uint64_t *flags)
{
	struct stub_vm *vm;
	int found = 0;

	pthread_mutex_lock(&stub_lock);
	vm = stub_vm_of(fd, false);
	if (vm) {
		stub_vm_prune(vm);
		for (struct stub_map *m = vm->maps; m && !found; m = m->next) {
			if (va >= m->va && va < m->va + m->size) {
				found = 1;
				if (flags)
					*flags = m->flags;
			}
		}
	}
	pthread_mutex_unlock(&stub_lock);
	return found;
}

STUB_EXPORT int gpubuf_amdgpu_stub_va_count(int fd)
{
	struct stub_vm *vm;
	int n = 0;

	pthread_mutex_lock(&stub_lock);
	vm = stub_vm_of(fd, false);
	if (vm) {
		stub_vm_prune(vm);
		for (struct stub_map *m = vm->maps; m; m = m->next)
			n++;
	}
	pthread_mutex_unlock(&stub_lock);
	return n;
}
