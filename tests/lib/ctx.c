// SPDX-License-Identifier: MIT
/*
 * Description: context open/close, backend selection by flags and by
 * GPUBUF_BACKEND, the ABI handshake, version queries, error texts (and
 * that EACCES blames the device's group only when opening it), and that
 * errno is left alone.
 */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static int t_have_module_node(void)
{
	return access(GPUBUF_DEVICE_PATH, F_OK) == 0;
}

/* Runs open with GPUBUF_BACKEND set to env (NULL: unset), then restores. */
static int t_open_env(const char *env, unsigned int flags,
		      struct gpubuf_ctx **ctx, char *msg, size_t len)
{
	const char *old = getenv("GPUBUF_BACKEND");
	char *saved = old ? strdup(old) : NULL;
	int err;

	if (env)
		setenv("GPUBUF_BACKEND", env, 1);
	else
		unsetenv("GPUBUF_BACKEND");
	err = gpubuf_open_err(ctx, flags, msg, len);
	if (saved)
		setenv("GPUBUF_BACKEND", saved, 1);
	else
		unsetenv("GPUBUF_BACKEND");
	free(saved);
	return err;
}

static int open_reports_consistent_backend(void)
{
	struct gpubuf_ctx *ctx = t_open();
	uint64_t v;

	T_CHECK(gpubuf_backend(ctx) == GPUBUF_BACKEND_MODULE ||
		gpubuf_backend(ctx) == GPUBUF_BACKEND_MEMFD);
	T_EQ(gpubuf_query(ctx, GPUBUF_ATTR_BACKEND, &v), 0);
	T_EQ(v, gpubuf_backend(ctx));
	T_EQ(gpubuf_query(ctx, GPUBUF_ATTR_DMABUF, &v), 0);
	T_EQ(v, gpubuf_backend(ctx) == GPUBUF_BACKEND_MODULE);
	T_EQ(gpubuf_query(ctx, GPUBUF_ATTR_PAGE_SIZE, &v), 0);
	T_EQ(v, sysconf(_SC_PAGESIZE));
	T_EQ(gpubuf_query(ctx, GPUBUF_ATTR_LIB_ABI, &v), 0);
	T_EQ(v, GPUBUF_ABI_VERSION);
	T_EQ(gpubuf_query(ctx, (enum gpubuf_attr)999, &v), -EINVAL);
	T_EQ(gpubuf_query(ctx, GPUBUF_ATTR_BACKEND, NULL), -EINVAL);
	gpubuf_close(ctx);
	return T_PASS;
}

static int env_memfd_selects_memfd(void)
{
	struct gpubuf_ctx *ctx = NULL;
	struct gpubuf_version ver;

	T_EQ(t_open_env("memfd", 0, &ctx, NULL, 0), 0);
	T_EQ(gpubuf_backend(ctx), GPUBUF_BACKEND_MEMFD);
	T_EQ(gpubuf_driver_version(ctx, &ver), -ENODEV);
	gpubuf_close(ctx);
	return T_PASS;
}

static int env_module_without_module_is_enoent(void)
{
	struct gpubuf_ctx *ctx = (struct gpubuf_ctx *)&ctx;	/* sentinel */
	char msg[256];

	if (t_have_module_node())
		return t_skip("%s exists", GPUBUF_DEVICE_PATH);
	T_EQ(t_open_env("module", GPUBUF_OPEN_ALLOW_MEMFD, &ctx, msg,
			sizeof(msg)), -ENOENT);
	T_CHECK(ctx == (struct gpubuf_ctx *)&ctx);	/* not written */
	T_CHECK(strstr(msg, GPUBUF_DEVICE_PATH) != NULL);
	return T_PASS;
}

static int env_auto_falls_back_to_memfd(void)
{
	struct gpubuf_ctx *ctx = NULL;
	char msg[64] = "x";

	if (t_have_module_node())
		return t_skip("%s exists", GPUBUF_DEVICE_PATH);
	T_EQ(t_open_env("auto", 0, &ctx, msg, sizeof(msg)), 0);
	T_EQ(gpubuf_backend(ctx), GPUBUF_BACKEND_MEMFD);
	T_EQ(msg[0], '\0');
	gpubuf_close(ctx);
	return T_PASS;
}

static int flags_select_backend_without_env(void)
{
	struct gpubuf_ctx *ctx = NULL;

	if (t_have_module_node())
		return t_skip("%s exists", GPUBUF_DEVICE_PATH);
	T_EQ(t_open_env(NULL, 0, &ctx, NULL, 0), -ENOENT);
	T_EQ(t_open_env(NULL, GPUBUF_OPEN_ALLOW_MEMFD, &ctx, NULL, 0), 0);
	T_EQ(gpubuf_backend(ctx), GPUBUF_BACKEND_MEMFD);
	gpubuf_close(ctx);
	T_EQ(t_open_env(NULL, GPUBUF_OPEN_FORCE_MEMFD, &ctx, NULL, 0), 0);
	T_EQ(gpubuf_backend(ctx), GPUBUF_BACKEND_MEMFD);
	gpubuf_close(ctx);
	/* IGNORE_ENV: even a bogus value does not matter. */
	T_EQ(t_open_env("bogus", GPUBUF_OPEN_IGNORE_ENV |
			GPUBUF_OPEN_FORCE_MEMFD, &ctx, NULL, 0), 0);
	gpubuf_close(ctx);
	return T_PASS;
}

static int env_bogus_value_is_einval(void)
{
	struct gpubuf_ctx *ctx = NULL;
	char msg[256];

	T_EQ(t_open_env("bogus", GPUBUF_OPEN_ALLOW_MEMFD, &ctx, msg,
			sizeof(msg)), -EINVAL);
	T_CHECK(strstr(msg, "bogus") != NULL);
	return T_PASS;
}

static int open_rejects_bad_arguments(void)
{
	struct gpubuf_ctx *ctx = NULL;

	T_EQ(gpubuf_open(&ctx, 1u << 31), -EINVAL);
	T_EQ(gpubuf_open(NULL, GPUBUF_OPEN_FORCE_MEMFD), -EINVAL);
	gpubuf_close(NULL);	/* must be harmless */
	return T_PASS;
}

static int versions_match_header(void)
{
	char s[32];

	T_EQ(gpubuf_version_major(), GPUBUF_VERSION_MAJOR);
	T_EQ(gpubuf_version_minor(), GPUBUF_VERSION_MINOR);
	T_EQ(gpubuf_version_patch(), GPUBUF_VERSION_PATCH);
	snprintf(s, sizeof(s), "%d.%d.%d", gpubuf_version_major(),
		 gpubuf_version_minor(), gpubuf_version_patch());
	T_CHECK(strcmp(s, GPUBUF_VERSION_STRING) == 0);
	T_EQ(gpubuf_version_at_least(GPUBUF_VERSION_MAJOR,
				     GPUBUF_VERSION_MINOR,
				     GPUBUF_VERSION_PATCH), 1);
	T_EQ(gpubuf_version_at_least(0, 0, 0), 1);
	T_EQ(gpubuf_version_at_least(GPUBUF_VERSION_MAJOR,
				     GPUBUF_VERSION_MINOR,
				     GPUBUF_VERSION_PATCH + 1), 0);
	T_EQ(gpubuf_version_at_least(GPUBUF_VERSION_MAJOR + 1, 0, 0), 0);
	T_CHECK(GPUBUF_VERSION_AT_LEAST(GPUBUF_VERSION_MAJOR,
					GPUBUF_VERSION_MINOR, 0));
	T_CHECK(!GPUBUF_VERSION_AT_LEAST(GPUBUF_VERSION_MAJOR,
					 GPUBUF_VERSION_MINOR + 1, 0));
	return T_PASS;
}

/*
 * Issue 7 item 4: EACCES read "add yourself to the group that owns
 * /dev/gpubuf" whatever failed, though only opening the device is about
 * its group; a refused mmap() or memfd_create() is not. The text now
 * names both cases, and gpubuf_open_err() gives the group hint itself.
 */
static int strerror_eacces_names_its_causes(void)
{
	const char *s = gpubuf_strerror(-EACCES);

	T_CHECK(strstr(s, "permission denied") == s);
	T_CHECK(strstr(s, "opening /dev/gpubuf: not in the group that owns it"));
	T_CHECK(strstr(s, "mmap or memfd_create: refused by a security policy"));
	T_CHECK(!strstr(s, "add yourself"));
	return T_PASS;
}

static int strerror_explains_gpubuf_errors(void)
{
	T_CHECK(strstr(gpubuf_strerror(-ENOENT),
		       "gpubuf module not loaded (modprobe gpubuf)"));
	T_CHECK(strstr(gpubuf_strerror(-EPROTO),
		       "driver/library ABI mismatch"));
	T_CHECK(strstr(gpubuf_strerror(-EBADFD), "not a dma-buf"));
	T_CHECK(strcmp(gpubuf_strerror(-EPROTO), gpubuf_strerror(EPROTO)) == 0);
	T_CHECK(strcmp(gpubuf_strerror(0), "success") == 0);
	/* Codes without a gpubuf meaning keep the C library's text. */
	T_CHECK(strcmp(gpubuf_strerror(-EAGAIN),
		       "Resource temporarily unavailable") == 0);
	T_CHECK(strstr(gpubuf_strerror(-EBUSY), "registered read-only"));
	T_CHECK(strstr(gpubuf_strerror(-ENXIO), "not registered"));
	T_CHECK(strcmp(gpubuf_strerror(-99999), "unknown error") == 0);
	return T_PASS;
}

static int failures_leave_errno_alone(void)
{
	struct gpubuf_ctx *ctx = NULL;
	struct gpubuf *buf;

	errno = 4242;
	T_EQ(t_open_env("bogus", 0, &ctx, NULL, 0), -EINVAL);
	T_EQ(errno, 4242);
	ctx = t_open();
	errno = 4242;
	T_EQ(gpubuf_import(ctx, 1000000, &buf), -EBADF);
	T_EQ(errno, 4242);
	T_EQ(gpubuf_alloc(ctx, 4096, NULL, &buf), 0);
	gpubuf_unref(buf);
	T_EQ(errno, 4242);
	gpubuf_close(ctx);
	if (!t_have_module_node()) {
		errno = 4242;	/* access() just set it */
		T_EQ(t_open_env("module", 0, &ctx, NULL, 0), -ENOENT);
		T_EQ(errno, 4242);
	}
	return T_PASS;
}

static int module_handshake_accepts_driver(void)
{
	struct gpubuf_ctx *ctx = t_open();
	struct gpubuf_version v;
	uint64_t abi;

	if (gpubuf_backend(ctx) != GPUBUF_BACKEND_MODULE) {
		gpubuf_close(ctx);
		return t_skip("not the module backend");
	}
	T_EQ(gpubuf_driver_version(ctx, &v), 0);
	T_CHECK(v.abi_min <= GPUBUF_ABI_VERSION && GPUBUF_ABI_VERSION <= v.abi);
	T_EQ(v.reserved, 0);
	T_EQ(gpubuf_query(ctx, GPUBUF_ATTR_DRIVER_ABI, &abi), 0);
	T_EQ(abi, v.abi);
	printf("# driver %u.%u.%u, ABI %u..%u\n", v.major, v.minor, v.patch,
	       v.abi_min, v.abi);
	gpubuf_close(ctx);
	return T_PASS;
}

/* Opening the device without its group: the message names the group. */
static int module_open_eacces_names_group(void)
{
	struct gpubuf_ctx *ctx = NULL;
	char msg[256] = "", want[128];
	struct group *grp;
	struct stat st;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		return t_skip("needs root to become an unprivileged user");
	if (stat(GPUBUF_DEVICE_PATH, &st))
		return t_skip("no %s", GPUBUF_DEVICE_PATH);
	grp = getgrgid(st.st_gid);
	if (grp)
		snprintf(want, sizeof(want), "'%s' (usermod -aG %s USER",
			 grp->gr_name, grp->gr_name);
	else
		snprintf(want, sizeof(want), "gid %u (it has no name here)",
			 (unsigned int)st.st_gid);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int err;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(77);
		err = gpubuf_open_err(&ctx, GPUBUF_OPEN_IGNORE_ENV, msg,
				      sizeof(msg));
		if (err != -EACCES)
			_exit(err ? 78 : 77);	/* node open to everyone */
		printf("# %s\n", msg);
		fflush(stdout);
		_exit(strstr(msg, "add yourself to the group that owns it") &&
		      strstr(msg, want) ? 0 : 1);
	}
	T_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid &&
		WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		return t_skip("%s opens for uid 65534", GPUBUF_DEVICE_PATH);
	T_EQ(WEXITSTATUS(status), 0);
	return T_PASS;
}

int main(void)
{
	static const struct t_test tests[] = {
		T_TEST(open_reports_consistent_backend),
		T_TEST(env_memfd_selects_memfd),
		T_TEST_ON(T_NO_MODULE, env_module_without_module_is_enoent),
		T_TEST_ON(T_NO_MODULE, env_auto_falls_back_to_memfd),
		T_TEST_ON(T_NO_MODULE, flags_select_backend_without_env),
		T_TEST(env_bogus_value_is_einval),
		T_TEST(open_rejects_bad_arguments),
		T_TEST(versions_match_header),
		T_TEST(strerror_explains_gpubuf_errors),
		T_TEST(strerror_eacces_names_its_causes),
		T_TEST(failures_leave_errno_alone),
		T_TEST_ON(T_MODULE, module_handshake_accepts_driver),
		T_TEST_ON(T_MODULE, module_open_eacces_names_group),
	};

	return T_RUN(tests);
}
