/* SPDX-License-Identifier: MIT */
/*
 * Minimal TAP 13 harness for libgpubuf's unit tests.
 *
 * Each test program has a table of named tests; the plan is computed from
 * that table. A test returns T_PASS, T_FAIL or T_SKIP (after t_skip() set a
 * reason). The program exits 0 when nothing failed, 1 otherwise.
 */
#ifndef GPUBUF_TEST_TAP_H
#define GPUBUF_TEST_TAP_H

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpubuf.h"

enum { T_PASS, T_FAIL, T_SKIP };

/*
 * Where a test can run. A test whose environment is absent is left out of
 * the plan with a "# not run here" line instead of being reported as a
 * skip: CI runs every program twice, on the host (memfd backend, no module)
 * and in the QEMU guest (module backend, vgem), so each test runs in one of
 * the two. A skip is kept for what neither environment provides.
 */
enum t_env {
	T_ANY,
	T_MEMFD,	/* the context uses the memfd backend */
	T_MODULE,	/* the context uses gpubuf.ko */
	T_NO_MODULE,	/* /dev/gpubuf does not exist */
	T_VGEM,		/* the vgem DRM driver is loaded */
	T_CUDA,		/* an NVIDIA driver with at least one CUDA device */
	T_NO_CUDA,	/* no usable NVIDIA driver (or built without CUDA) */
	T_HSA,		/* a ROCm runtime with at least one GPU agent */
	T_NO_HSA,	/* no usable ROCm runtime (or built without HSA) */
	T_VULKAN,	/* a Vulkan 1.2 device gpubuf_vk_open() takes */
	T_NR_ENVS
};

struct t_test {
	const char *name;
	int (*fn)(void);
	enum t_env env;
};

#define T_TEST(fn) { #fn, fn, T_ANY }
#define T_TEST_ON(env, fn) { #fn, fn, env }

static char t_skip_reason[256];

__attribute__((format(printf, 1, 2), unused))
static int t_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t_skip_reason, sizeof(t_skip_reason), fmt, ap);
	va_end(ap);
	return T_SKIP;
}

/* Diagnostics go to stdout as TAP comments, next to the result they explain. */
#define T_CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			printf("# %s:%d: check failed: %s\n",		\
			       __FILE__, __LINE__, #cond);		\
			return T_FAIL;					\
		}							\
	} while (0)

#define T_EQ(a, b)							\
	do {								\
		long long t_a_ = (long long)(a), t_b_ = (long long)(b);	\
		if (t_a_ != t_b_) {					\
			printf("# %s:%d: %s == %lld, expected %s == %lld\n", \
			       __FILE__, __LINE__, #a, t_a_, #b, t_b_);	\
			return T_FAIL;					\
		}							\
	} while (0)

/* Open file descriptors of this process. */
__attribute__((unused))
static int t_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* opendir's own */
}

/*
 * The library's buffer mappings in this process: memfd ones
 * ("/memfd:gpubuf") and dma-buf ones. A failure that leaves one behind
 * leaks the buffer's pages though no descriptor stays open. Only these:
 * the C library maps and unmaps for itself (a malloc arena) as it likes.
 */
__attribute__((unused))
static int t_buffer_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:gpubuf") || strstr(line, "dmabuf");
	fclose(f);
	return n;
}

/* Context for tests: the module when present, else the memfd backend. */
__attribute__((unused))
static struct gpubuf_ctx *t_open(void)
{
	struct gpubuf_ctx *ctx = NULL;
	char msg[256];
	int err = gpubuf_open_err(&ctx, GPUBUF_OPEN_ALLOW_MEMFD, msg,
				  sizeof(msg));

	if (err) {
		printf("Bail out! gpubuf_open: %s (%s)\n", gpubuf_strerror(err),
		       msg);
		exit(1);
	}
	return ctx;
}

__attribute__((unused))
static int t_is_module(void)
{
	struct gpubuf_ctx *ctx = t_open();
	int r = gpubuf_backend(ctx) == GPUBUF_BACKEND_MODULE;

	gpubuf_close(ctx);
	return r;
}

static const char *const t_env_names[] = {
	[T_ANY] = "any", [T_MEMFD] = "the memfd backend",
	[T_MODULE] = "the module backend", [T_NO_MODULE] = "no gpubuf module",
	[T_VGEM] = "the vgem driver",
	[T_CUDA] = "an NVIDIA driver and GPU",
	[T_NO_CUDA] = "a machine without an NVIDIA driver",
	[T_HSA] = "a ROCm runtime and an AMD GPU",
	[T_NO_HSA] = "a machine without a usable ROCm runtime",
	[T_VULKAN] = "a Vulkan 1.2 device (Debian: mesa-vulkan-drivers' lavapipe)",
};

__attribute__((unused))
static int t_has_cuda(void)
{
	int n = 0;

	return gpubuf_cuda_device_count(&n) == 0 && n > 0;
}

__attribute__((unused))
static int t_has_hsa(void)
{
	int n = 0;

	return gpubuf_hsa_agents(NULL, 0, &n) == 0 && n > 0;
}

__attribute__((unused))
static int t_has_vulkan(void)
{
	struct gpubuf_vk *vk;

	if (gpubuf_vk_open(0, 0, &vk))
		return 0;
	gpubuf_vk_close(vk);
	return 1;
}

static int t_env_present(enum t_env env)
{
	switch (env) {
	case T_MEMFD:
		return !t_is_module();
	case T_MODULE:
		return t_is_module();
	case T_NO_MODULE:
		return access(GPUBUF_DEVICE_PATH, F_OK) != 0;
	case T_VGEM:
		return access("/sys/module/vgem", F_OK) == 0;
	case T_CUDA:
		return t_has_cuda();
	case T_NO_CUDA:
		return !t_has_cuda();
	case T_HSA:
		return t_has_hsa();
	case T_NO_HSA:
		return !t_has_hsa();
	case T_VULKAN:
		return t_has_vulkan();
	default:
		return 1;
	}
}

static int t_run(const struct t_test *tests, size_t n)
{
	int failed = 0, env_ok[T_NR_ENVS];
	size_t planned = 0, done = 0;

	/* Only the environments in use: probing a GPU loads its runtime. */
	for (int e = T_ANY; e < T_NR_ENVS; e++)
		env_ok[e] = -1;
	for (size_t i = 0; i < n; i++)
		if (env_ok[tests[i].env] < 0)
			env_ok[tests[i].env] = t_env_present(tests[i].env);
	for (size_t i = 0; i < n; i++)
		planned += env_ok[tests[i].env];
	printf("TAP version 13\n1..%zu\n", planned);
	for (size_t i = 0; i < n; i++)
		if (!env_ok[tests[i].env])
			printf("# not run here: %s needs %s\n", tests[i].name,
			       t_env_names[tests[i].env]);
	fflush(stdout);
	for (size_t i = 0; i < n; i++) {
		int r;

		if (!env_ok[tests[i].env])
			continue;
		done++;
		t_skip_reason[0] = '\0';
		r = tests[i].fn();
		if (r == T_SKIP)
			printf("ok %zu - %s # SKIP %s\n", done, tests[i].name,
			       t_skip_reason);
		else if (r == T_PASS)
			printf("ok %zu - %s\n", done, tests[i].name);
		else {
			printf("not ok %zu - %s\n", done, tests[i].name);
			failed = 1;
		}
		fflush(stdout);
	}
	return failed;
}

#define T_RUN(tests) t_run(tests, sizeof(tests) / sizeof((tests)[0]))

#endif /* GPUBUF_TEST_TAP_H */
