// SPDX-License-Identifier: MIT
/*
 * Context: backend selection, the ABI handshake with /dev/gpubuf, and
 * version queries.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

/* The module's device in sysfs, there while gpubuf.ko is loaded. */
#define GPUBUF_SYSFS_DEVICE	"/sys/class/misc/gpubuf"

enum gpubuf_mode { MODE_MODULE, MODE_MEMFD, MODE_AUTO };

static void set_msg(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!msg || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

/* The environment wins over flags so a user can steer any program. */
static int gpubuf_pick_mode(unsigned int flags, enum gpubuf_mode *mode,
			    char *msg, size_t len)
{
	const char *env = NULL;

	if (!(flags & GPUBUF_OPEN_IGNORE_ENV))
		env = secure_getenv("GPUBUF_BACKEND");
	if (env && *env) {
		if (!strcmp(env, "module"))
			*mode = MODE_MODULE;
		else if (!strcmp(env, "memfd"))
			*mode = MODE_MEMFD;
		else if (!strcmp(env, "auto"))
			*mode = MODE_AUTO;
		else {
			set_msg(msg, len,
				"GPUBUF_BACKEND=%s: expected module, memfd or auto",
				env);
			return -EINVAL;
		}
		return 0;
	}
	if (flags & GPUBUF_OPEN_FORCE_MEMFD)
		*mode = MODE_MEMFD;
	else if (flags & GPUBUF_OPEN_ALLOW_MEMFD)
		*mode = MODE_AUTO;
	else
		*mode = MODE_MODULE;
	return 0;
}

/*
 * Both directions: the driver may be too old for us (abi < ours) or may
 * have dropped the revision we speak (abi_min > ours).
 */
static int gpubuf_handshake(struct gpubuf_ctx *ctx, char *msg, size_t len)
{
	struct gpubuf_version *v = &ctx->drv;
	const unsigned int lib = GPUBUF_ABI_VERSION;

	if (ioctl(ctx->fd, GPUBUF_IOC_VERSION, v) < 0) {
		int err = errno;

		if (err == ENOTTY || err == EINVAL) {
			set_msg(msg, len, "%s does not answer GPUBUF_IOC_VERSION",
				GPUBUF_DEVICE_PATH);
			return -EPROTO;
		}
		set_msg(msg, len, "GPUBUF_IOC_VERSION: %s", gpubuf_strerror(-err));
		return -err;
	}
	if (v->abi_min > v->abi) {
		set_msg(msg, len, "driver reports invalid ABI range %u..%u",
			v->abi_min, v->abi);
		return -EPROTO;
	}
	if (lib < v->abi_min || lib > v->abi) {
		set_msg(msg, len,
			"%s: libgpubuf %d.%d.%d speaks ABI %u, driver %u.%u.%u serves ABI %u..%u",
			lib < v->abi_min ? "library too old" : "driver too old",
			GPUBUF_VERSION_MAJOR, GPUBUF_VERSION_MINOR,
			GPUBUF_VERSION_PATCH, lib, v->major, v->minor,
			v->patch, v->abi_min, v->abi);
		return -EPROTO;
	}
	return 0;
}

/*
 * The EACCES a user meets before joining the device's group: name that
 * group (gpubuf when installed with its udev rule), by number if it has no
 * name here.
 */
static void set_eacces_msg(char *msg, size_t len)
{
	struct group grp, *found = NULL;
	size_t size = 1024;
	char *names = NULL;
	struct stat st;
	int err = 0;

	if (!msg || !len)
		return;
	if (stat(GPUBUF_DEVICE_PATH, &st)) {
		set_msg(msg, len, "open %s: permission denied",
			GPUBUF_DEVICE_PATH);
		return;
	}
	/* A group with many members needs more room than the first guess. */
	do {
		char *more = realloc(names, size);

		if (!more)
			break;
		names = more;
		err = getgrgid_r(st.st_gid, &grp, names, size, &found);
		size *= 2;
	} while (err == ERANGE && size <= (1u << 20));
	if (!found)
		set_msg(msg, len,
			"open %s: permission denied: add yourself to the group that owns it, gid %u (it has no name here)",
			GPUBUF_DEVICE_PATH, (unsigned int)st.st_gid);
	else
		set_msg(msg, len,
			"open %s: permission denied: add yourself to the group that owns it, '%s' (usermod -aG %s USER, then log in again)",
			GPUBUF_DEVICE_PATH, found->gr_name, found->gr_name);
	free(names);
}

/*
 * Whether this process runs in a container, by the marks the runtimes
 * leave: podman's /run/.containerenv, Docker's /.dockerenv.
 */
static bool gpubuf_in_container(void)
{
	return !access("/run/.containerenv", F_OK) ||
	       !access("/.dockerenv", F_OK);
}

static int gpubuf_open_module(struct gpubuf_ctx *ctx, char *msg, size_t len)
{
	int err;

	ctx->fd = open(GPUBUF_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (ctx->fd < 0) {
		int no_node = errno == ENOENT;

		err = errno;
		/* A node without its driver behind it is "not loaded" too. */
		if (err == ENXIO || err == ENODEV)
			err = ENOENT;
		if (err == EACCES)	/* the one EACCES that is the group's */
			set_eacces_msg(msg, len);
		else if (no_node && !access(GPUBUF_SYSFS_DEVICE, F_OK) &&
			 gpubuf_in_container())
			/*
			 * Loaded, yet no node: a container that was not
			 * given the device. sysfs is the host's there.
			 */
			set_msg(msg, len,
				"open %s: no such device node, but gpubuf.ko is loaded: this container was not given the device (podman run --device " GPUBUF_CDI_DEVICE ")",
				GPUBUF_DEVICE_PATH);
		else if (no_node && !access(GPUBUF_SYSFS_DEVICE, F_OK))
			/* On a host: udev has not made it (yet), or it went. */
			set_msg(msg, len,
				"open %s: no such device node, but gpubuf.ko is loaded: udev has not created it (yet: udevadm settle; or a rule removed it), or it was deleted",
				GPUBUF_DEVICE_PATH);
		else
			set_msg(msg, len, "open %s: %s", GPUBUF_DEVICE_PATH,
				gpubuf_strerror(-err));
		return -err;
	}
	err = gpubuf_handshake(ctx, msg, len);
	if (err) {
		close(ctx->fd);
		ctx->fd = -1;
		return err;
	}
	ctx->backend = GPUBUF_BACKEND_MODULE;
	return 0;
}

GPUBUF_EXPORT int gpubuf_open_err(struct gpubuf_ctx **ctxp, unsigned int flags,
				  char *msg, size_t len)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_ctx *ctx;
	enum gpubuf_mode mode;
	long ps;
	int err;

	if (msg && len)
		msg[0] = '\0';
	if (!ctxp || (flags & ~GPUBUF_OPEN_VALID_FLAGS)) {
		set_msg(msg, len, "invalid argument");
		return -EINVAL;
	}
	err = gpubuf_pick_mode(flags, &mode, msg, len);
	if (err)
		return err;
	ps = sysconf(_SC_PAGESIZE);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->fd = -1;
	ctx->page_size = ps > 0 ? (size_t)ps : 4096;

	if (mode != MODE_MEMFD) {
		err = gpubuf_open_module(ctx, msg, len);
		if (err == -ENOENT && mode == MODE_AUTO) {
			err = 0;
			mode = MODE_MEMFD;
			if (msg && len)
				msg[0] = '\0';
		}
		if (err) {
			free(ctx);
			return err;
		}
	}
	if (mode == MODE_MEMFD)
		ctx->backend = GPUBUF_BACKEND_MEMFD;
	*ctxp = ctx;
	return 0;
}

GPUBUF_EXPORT int gpubuf_open(struct gpubuf_ctx **ctx, unsigned int flags)
{
	return gpubuf_open_err(ctx, flags, NULL, 0);
}

GPUBUF_EXPORT void gpubuf_close(struct gpubuf_ctx *ctx)
{
	GPUBUF_KEEP_ERRNO;
	if (!ctx)
		return;
	if (ctx->fd >= 0)
		close(ctx->fd);
	free(ctx);
}

GPUBUF_EXPORT enum gpubuf_backend gpubuf_backend(const struct gpubuf_ctx *ctx)
{
	return ctx->backend;
}

GPUBUF_EXPORT int gpubuf_driver_version(const struct gpubuf_ctx *ctx,
					struct gpubuf_version *out)
{
	if (!ctx || !out)
		return -EINVAL;
	if (ctx->backend != GPUBUF_BACKEND_MODULE)
		return -ENODEV;
	*out = ctx->drv;
	return 0;
}

GPUBUF_EXPORT int gpubuf_query(const struct gpubuf_ctx *ctx,
			       enum gpubuf_attr attr, uint64_t *value)
{
	if (!ctx || !value)
		return -EINVAL;
	switch (attr) {
	case GPUBUF_ATTR_BACKEND:
		*value = ctx->backend;
		return 0;
	case GPUBUF_ATTR_PAGE_SIZE:
		*value = ctx->page_size;
		return 0;
	case GPUBUF_ATTR_DMABUF:
		*value = ctx->backend == GPUBUF_BACKEND_MODULE;
		return 0;
	case GPUBUF_ATTR_DRIVER_ABI:
		*value = ctx->drv.abi;
		return 0;
	case GPUBUF_ATTR_LIB_ABI:
		*value = GPUBUF_ABI_VERSION;
		return 0;
	}
	return -EINVAL;
}

GPUBUF_EXPORT int gpubuf_version_major(void)
{
	return GPUBUF_VERSION_MAJOR;
}

GPUBUF_EXPORT int gpubuf_version_minor(void)
{
	return GPUBUF_VERSION_MINOR;
}

GPUBUF_EXPORT int gpubuf_version_patch(void)
{
	return GPUBUF_VERSION_PATCH;
}

GPUBUF_EXPORT int gpubuf_version_at_least(int major, int minor, int patch)
{
	return GPUBUF_VERSION_AT_LEAST(major, minor, patch);
}
