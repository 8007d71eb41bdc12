// SPDX-License-Identifier: MIT
/*
 * Error texts. Codes with a gpubuf-specific cause get a hint at the fix;
 * the rest use the C library's description. Everything returned is a
 * string constant, so the function is thread-safe (strerror() is not).
 */
#include <errno.h>
#include <string.h>

#include "core/internal.h"

GPUBUF_EXPORT const char *gpubuf_strerror(int err)
{
	const char *s = NULL;

	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	/*
	 * Only gpubuf_open() can fail for want of the device's group; its
	 * message (gpubuf_open_err) says so. Elsewhere EACCES comes from a
	 * security policy refusing mmap() or memfd_create(): the library
	 * picks protections the fd allows and refuses write-only fds.
	 */
	case EACCES:
		return "permission denied (opening /dev/gpubuf: not in the group that owns it; mmap or memfd_create: refused by a security policy)";
	case ENOENT:
		return "gpubuf module not loaded (modprobe gpubuf)";
	case EPROTO:
		return "driver/library ABI mismatch";
	case EBADFD:
		return "file descriptor is not a dma-buf";
	case ERANGE:
		return "out of range: view or index outside its buffer or matrix";
	case EOVERFLOW:
		return "size computation overflows";
	case EFBIG:
		return "buffer larger than the module's max_buffer_bytes";
	case ENOSPC:
		return "module's max_total_bytes limit reached";
	case ENOMEM:
		return "out of memory (or memory cgroup limit or RLIMIT_MEMLOCK reached)";
	case E2BIG:
		return "options structure: unknown non-zero fields from a newer caller, or a size field above 512 bytes";
	case EROFS:
		return "buffer is mapped read-only";
	case EOPNOTSUPP:
		return "not supported by this backend, build or device";
	case EXDEV:
		return "buffer does not belong to this pool";
	case ENODEV:
		return "no such driver or device: no gpubuf driver in use (memfd backend), or no usable GPU runtime or device: NVIDIA driver, ROCm runtime (gpubuf_last_error() says which)";
	case ENXIO:
		return "buffer is not registered (or HSA-locked) with that GPU device";
	case EBUSY:
		return "busy: buffer registered read-only with the GPU runtime, HSA-locked for other agents, or its pages registered by someone else";
	case ENOEXEC:
		return "GPU runtime cannot load the library's kernels for this device";
	}
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
	s = strerrordesc_np(err);
#elif defined(__GLIBC__)
	{
		/*
		 * glibc before 2.32: GNU strerror_r() returns the same static
		 * text for a known errno and writes the buffer only for an
		 * unknown one, which is answered below like everywhere else.
		 */
		char unknown[64];

		s = strerror_r(err, unknown, sizeof(unknown));
		if (s == unknown)
			s = NULL;
	}
#endif
	return s ? s : "unknown error";
}
