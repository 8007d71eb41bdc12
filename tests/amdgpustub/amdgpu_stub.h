/* SPDX-License-Identifier: MIT */
/*
 * Stand-ins for libdrm.so.2 and libdrm_amdgpu.so.1, so that libgpubuf's
 * amdgpu path runs in the QEMU guest without an AMD GPU, on vgem:
 *
 * stub_drm.c, libdrm.so.2: forwards every call libgpubuf and the
 *   libdrm_amdgpu stand-in make to the real libdrm (loaded by its path),
 *   except that drmGetVersion() names vgem "amdgpu" 3.x, and that the
 *   amdgpu GEM_VA ioctl, which vgem lacks, is answered here: each DRM file
 *   gets a GPU VM of its own, as the amdgpu kernel driver keeps one per
 *   file, whose mappings a test can look up.
 * stub_amdgpu.c, libdrm_amdgpu.so.1: devices deduplicated per GPU and
 *   process (the first descriptor wins), buffer objects imported through
 *   the device's own descriptor (a real PRIME import on vgem), a VA
 *   manager per device, GEM_VA through the libdrm stand-in; built twice,
 *   with and without amdgpu_device_initialize2 (libdrm 2.4.121).
 *
 * Only the test programs see them, through LD_LIBRARY_PATH; nothing in
 * libgpubuf knows about them. Written for gpubuf from libdrm's and the
 * kernel's behaviour (cited where emulated), not from their code.
 */
#ifndef GPUBUF_AMDGPU_STUB_H
#define GPUBUF_AMDGPU_STUB_H

#include <stdint.h>

/*
 * Exported by the libdrm stand-in for tests (dlsym): whether GPU address
 * va lies in a live mapping of the GPU VM of the DRM file behind fd: 1
 * (*flags: the mapping's AMDGPU_VM_PAGE_* flags, if flags is not NULL),
 * 0 if not, -errno if fd cannot be looked at. A mapping whose GEM handle
 * was closed is gone, as in the kernel.
 */
#define GPUBUF_AMDGPU_STUB_VA_QUERY "gpubuf_amdgpu_stub_va_query"
typedef int gpubuf_amdgpu_stub_va_query_fn(int fd, uint64_t va,
					   uint64_t *flags);

/* The number of live mappings in the GPU VM of the file behind fd. */
#define GPUBUF_AMDGPU_STUB_VA_COUNT "gpubuf_amdgpu_stub_va_count"
typedef int gpubuf_amdgpu_stub_va_count_fn(int fd);

/* Exported by the libdrm_amdgpu stand-in: devices not yet deinitialized. */
#define GPUBUF_AMDGPU_STUB_DEVICES "gpubuf_amdgpu_stub_devices"
typedef int gpubuf_amdgpu_stub_devices_fn(void);

/*
 * "function:errno" (e.g. "amdgpu_device_initialize:13"), read at every
 * call: that libdrm_amdgpu function of the stand-in fails as the real one
 * does when a libdrm call inside it fails, returning -1 with errno set.
 */
#define GPUBUF_AMDGPU_STUB_FAIL "GPUBUF_AMDGPU_STUB_FAIL"

#endif /* GPUBUF_AMDGPU_STUB_H */
