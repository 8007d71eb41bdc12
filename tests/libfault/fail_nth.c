// SPDX-License-Identifier: MIT
/*
 * The wrapped C library functions of fail_nth.h. Each fails as the real
 * one does when out of a resource: allocators return NULL with ENOMEM, fd
 * makers -1 with EMFILE, mmap MAP_FAILED with ENOMEM, and so on. Counting
 * is per thread; nothing is counted while disarmed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "fail_nth.h"

static _Thread_local unsigned int fail_nth_left;
static _Thread_local const char *fail_nth_hit;

void fail_nth_arm(unsigned int nth)
{
	fail_nth_left = nth;
	fail_nth_hit = NULL;
}

const char *fail_nth_disarm(void)
{
	fail_nth_left = 0;
	return fail_nth_hit;
}

/* Whether this call is the one to fail. */
static int fail_now(const char *what)
{
	if (!fail_nth_left || --fail_nth_left)
		return 0;
	fail_nth_hit = what;
	return 1;
}

#define FAIL_NTH_REAL(ret, name, ...) ret __real_##name(__VA_ARGS__)

FAIL_NTH_REAL(void *, malloc, size_t);
FAIL_NTH_REAL(void *, calloc, size_t, size_t);
FAIL_NTH_REAL(void *, realloc, void *, size_t);
FAIL_NTH_REAL(int, posix_memalign, void **, size_t, size_t);
FAIL_NTH_REAL(char *, strdup, const char *);
FAIL_NTH_REAL(void *, mmap64, void *, size_t, int, int, int, off_t);
FAIL_NTH_REAL(int, madvise, void *, size_t, int);
FAIL_NTH_REAL(int, dup, int);
FAIL_NTH_REAL(int, fcntl64, int, int, ...);
FAIL_NTH_REAL(int, ioctl, int, unsigned long, ...);
FAIL_NTH_REAL(int, memfd_create, const char *, unsigned int);
FAIL_NTH_REAL(int, ftruncate64, int, off_t);
FAIL_NTH_REAL(int, open64, const char *, int, ...);
FAIL_NTH_REAL(FILE *, fopen64, const char *, const char *);
FAIL_NTH_REAL(void *, dlopen, const char *, int);
FAIL_NTH_REAL(ssize_t, read, int, void *, size_t);
FAIL_NTH_REAL(off_t, lseek64, int, off_t, int);
FAIL_NTH_REAL(long, syscall, long, ...);

#define FAIL_NTH_WRAP(ret, name, params, err, failed, ...)		\
	ret __wrap_##name params;					\
	ret __wrap_##name params					\
	{								\
		if (fail_now(#name)) {					\
			errno = err;					\
			return failed;					\
		}							\
		return __real_##name(__VA_ARGS__);			\
	}

FAIL_NTH_WRAP(void *, malloc, (size_t n), ENOMEM, NULL, n)
FAIL_NTH_WRAP(void *, calloc, (size_t n, size_t s), ENOMEM, NULL, n, s)
FAIL_NTH_WRAP(void *, realloc, (void *p, size_t n), ENOMEM, NULL, p, n)
FAIL_NTH_WRAP(char *, strdup, (const char *s), ENOMEM, NULL, s)
FAIL_NTH_WRAP(void *, mmap64, (void *a, size_t l, int p, int f, int fd,
			       off_t o), ENOMEM, MAP_FAILED, a, l, p, f, fd, o)
FAIL_NTH_WRAP(int, madvise, (void *a, size_t l, int advice), ENOMEM, -1,
	      a, l, advice)
FAIL_NTH_WRAP(int, dup, (int fd), EMFILE, -1, fd)
FAIL_NTH_WRAP(int, memfd_create, (const char *n, unsigned int f), EMFILE,
	      -1, n, f)
FAIL_NTH_WRAP(int, ftruncate64, (int fd, off_t len), ENOSPC, -1, fd, len)
FAIL_NTH_WRAP(FILE *, fopen64, (const char *p, const char *m), ENOMEM,
	      NULL, p, m)
/* dlerror() has nothing to say about this one: the caller must cope. */
FAIL_NTH_WRAP(void *, dlopen, (const char *f, int flags), ENOMEM, NULL,
	      f, flags)

FAIL_NTH_WRAP(ssize_t, read, (int fd, void *b, size_t n), EIO, -1, fd, b, n)
FAIL_NTH_WRAP(off_t, lseek64, (int fd, off_t o, int whence), EINVAL, -1,
	      fd, o, whence)

/*
 * libgpubuf makes some calls as raw system calls (sanitizers turn mlock()
 * into a no-op; glibc 2.36 has no mbind() or move_pages()): those fail as
 * the kernel fails them when out of memory or forbidden; any other number
 * goes through uncounted. Six argument words, as glibc's syscall() reads.
 */
long __wrap_syscall(long nr, ...);
long __wrap_syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if ((nr == SYS_mlock && fail_now("mlock")) ||
	    (nr == SYS_move_pages && fail_now("move_pages"))) {
		errno = ENOMEM;
		return -1;
	}
	if (nr == SYS_mbind && fail_now("mbind")) {
		errno = EPERM;		/* a container's seccomp profile */
		return -1;
	}
	return __real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	if (fail_now("posix_memalign"))
		return ENOMEM;
	return __real_posix_memalign(p, align, n);
}

/* The third argument, if any, is an int or a pointer: passed as one word. */
int __wrap_fcntl64(int fd, int cmd, ...);
int __wrap_fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fail_now("fcntl")) {
		errno = cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC ? EMFILE :
								     EINVAL;
		return -1;
	}
	return __real_fcntl64(fd, cmd, arg);
}

int __wrap_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fail_now("ioctl")) {
		errno = ENOMEM;
		return -1;
	}
	return __real_ioctl(fd, req, arg);
}

int __wrap_open64(const char *path, int flags, ...);
int __wrap_open64(const char *path, int flags, ...)
{
	va_list ap;
	unsigned int mode;

	va_start(ap, flags);
	mode = va_arg(ap, unsigned int);
	va_end(ap);
	if (fail_now("open")) {
		errno = EMFILE;
		return -1;
	}
	return __real_open64(path, flags, mode);
}
