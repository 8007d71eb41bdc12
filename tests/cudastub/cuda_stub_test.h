/* SPDX-License-Identifier: MIT */
/*
 * What the test programs of libgpubuf's CUDA bookkeeping share
 * (cuda_stub_*.c, run against the stand-in driver of stub_*.c, which
 * they find through LD_LIBRARY_PATH): the stand-in's query functions,
 * the checks every test ends with, and the runner. Nothing here touches
 * a GPU.
 *
 * The library loads the driver once per process and the stand-in reads
 * its configuration when loaded, so every test runs in a fresh process:
 * the program re-executes itself with the test's environment and
 * "--child name fd", and reports the child's verdict (a skip reason comes
 * back through fd). A program lists its tests and their environments in
 * T_CASES(X) and ends with T_STUB_MAIN(T_CASES).
 */
#ifndef GPUBUF_CUDA_STUB_TEST_H
#define GPUBUF_CUDA_STUB_TEST_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda/cuda_driver.h"	/* GPUBUF_CU_ENTRIES, cuda.h */
#include "stub_load.h"
#include "tap.h"

extern char **environ;

/* The stand-in's device pointer for host address p on device d. */
#define T_DEVPTR(d, p) ((uint64_t)(uintptr_t)(p) | ((uint64_t)(d) + 1) << 48)
#define T_PD (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP)
#define T_RO CU_MEMHOSTREGISTER_READ_ONLY
#define T_MAX_DEVICES 8

/* ---- the stand-in's query functions ------------------------------------- */

static struct {
	int (*log_count)(const char *fn);
	int (*last)(const char *fn, int *device, const void **ptr,
		    size_t *size, unsigned long long *flags, int *result);
	int (*last_launch)(char *kernel, size_t len, unsigned int grid[3],
			   unsigned int block[3], unsigned int *shmem,
			   void **stream, int *nparams, int *device,
			   int *result);
	int (*last_stream)(const char *fn, void **stream);
	int (*last_param)(int i, unsigned long long *value);
	int (*kernel_params)(const char *kernel, int n);
	unsigned long long (*flags_seen)(const char *fn);
	int (*proc_version)(const char *fn);
	unsigned long long (*proc_flags)(void);
	int (*retains)(int device);
	int (*registrations)(void);
	size_t (*registered_bytes)(void);
	int (*registration)(const void *p, unsigned int *flags, size_t *size,
			    int *device);
	int (*module_loads)(int device);
	int (*modules_live)(int device);
	int (*ctx_creations)(int device);
	int (*ctx_depth)(void);
	int (*violations)(char *msg, size_t len);
	void (*reset_log)(void);
	void (*dump)(void);
	PFN_cuGetProcAddress_v12000 get_proc;
} stub;

/*
 * Resolve the stand-in in this process, loading the driver through the
 * library first (its answer does not matter here).
 */
static int t_stub_load(void)
{
#define T_CU(f) T_STUB_SYM(stub, f, "custub_" #f)
	const struct t_stub_sym syms[] = {
		T_CU(log_count), T_CU(last), T_CU(last_launch),
		T_CU(last_stream), T_CU(last_param), T_CU(kernel_params),
		T_CU(flags_seen), T_CU(proc_version), T_CU(proc_flags),
		T_CU(retains), T_CU(registrations), T_CU(registered_bytes),
		T_CU(registration), T_CU(module_loads), T_CU(modules_live),
		T_CU(ctx_creations), T_CU(ctx_depth),
		T_CU(violations), T_CU(reset_log), T_CU(dump),
		T_STUB_SYM(stub, get_proc, "cuGetProcAddress_v2"),
	};
#undef T_CU
	int n;

	gpubuf_cuda_device_count(&n);
	return T_STUB_RESOLVE("libcuda.so.1", syms);
}

#define T_STUB() T_CHECK(t_stub_load() == 0)

struct t_call {
	int device;
	const void *ptr;
	size_t size;
	unsigned long long flags;
	int result;
};

__attribute__((unused))
static int t_last(const char *fn, struct t_call *c)
{
	memset(c, 0, sizeof(*c));
	return stub.last(fn, &c->device, &c->ptr, &c->size, &c->flags,
			 &c->result);
}

/*
 * What every test ends with: no misuse seen by the stand-in, no context
 * left current, nothing registered, IOMEMORY never asked for, and at most
 * the library's lifetime retain on each device; gpubuf_cuda_device_release()
 * then gives that back and unloads the kernels, leaving no primary context
 * retained and no module loaded. -ENODEV: no driver, or no such device.
 */
static int t_clean(void)
{
	char msg[256];
	int v = stub.violations(msg, sizeof(msg));

	if (v) {
		printf("# %d driver misuse(s), the first: %s\n", v, msg);
		return T_FAIL;
	}
	T_EQ(stub.ctx_depth(), 0);
	T_EQ(stub.registrations(), 0);
	for (int d = 0; d < T_MAX_DEVICES; d++) {
		int r;

		T_CHECK(stub.retains(d) <= 1);
		r = gpubuf_cuda_device_release(d);
		T_CHECK(r == 0 || r == -ENODEV);
		T_EQ(stub.retains(d), 0);
		T_EQ(stub.modules_live(d), 0);
	}
	T_EQ(stub.violations(msg, sizeof(msg)), 0);
	T_EQ(stub.flags_seen("cuMemHostRegister") & CU_MEMHOSTREGISTER_IOMEMORY,
	     0);
	return T_PASS;
}

#define T_CLEAN()							\
	do {								\
		if (t_clean() != T_PASS)				\
			return T_FAIL;					\
	} while (0)

/* gpubuf_last_error() contains s. */
#define T_ERR_HAS(s)							\
	do {								\
		const char *t_e_ = gpubuf_last_error();			\
		if (!strstr(t_e_, (s))) {				\
			printf("# %s:%d: gpubuf_last_error() \"%s\" lacks \"%s\"\n", \
			       __FILE__, __LINE__, t_e_, (s));		\
			return T_FAIL;					\
		}							\
	} while (0)

__attribute__((unused))
static size_t t_ps(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

__attribute__((unused))
static struct gpubuf *t_buf(struct gpubuf_ctx *ctx, size_t pages)
{
	struct gpubuf *buf = NULL;
	int err = gpubuf_alloc(ctx, pages * t_ps(), NULL, &buf);

	if (err) {
		printf("Bail out! gpubuf_alloc: %s\n", gpubuf_strerror(err));
		exit(1);
	}
	return buf;
}

/* ---- running each test in its own process ------------------------------- */

/* A test, and its environment ("K=V K=V"). */
struct t_case {
	const char *name;
	int (*fn)(void);
	const char *env;
};

static const char *t_self;

/* Run test name in a fresh process with env (and no other CUSTUB_*). */
static int t_spawn(const char *name, const char *env)
{
	char envbuf[512], *envp[1024], fdarg[16], reason[256];
	char *argv[] = { (char *)t_self, "--child", (char *)name, fdarg, NULL };
	size_t n = 0, got = 0;
	int fds[2], status;
	ssize_t r;
	pid_t pid;

	T_CHECK(strlen(env) < sizeof(envbuf));
	strcpy(envbuf, env);
	for (char **e = environ; *e && n < 1000; e++)
		if (strncmp(*e, "CUSTUB_", 7))
			envp[n++] = *e;
	for (char *save = NULL, *kv = strtok_r(envbuf, " ", &save); kv;
	     kv = strtok_r(NULL, " ", &save))
		envp[n++] = kv;
	envp[n] = NULL;
	T_EQ(pipe2(fds, O_CLOEXEC), 0);
	snprintf(fdarg, sizeof(fdarg), "%d", fds[1]);
	fflush(stdout);
	pid = fork();
	T_CHECK(pid >= 0);
	if (pid == 0) {
		/* Only the write end crosses exec. */
		fcntl(fds[1], F_SETFD, 0);
		execve("/proc/self/exe", argv, envp);
		printf("# exec /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	while (got < sizeof(reason) - 1 &&
	       (r = read(fds[0], reason + got, sizeof(reason) - 1 - got)) > 0)
		got += (size_t)r;
	reason[got] = '\0';
	close(fds[0]);
	T_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return T_PASS;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return t_skip("%s", reason);
	if (WIFSIGNALED(status))
		printf("# %s killed by signal %d\n", name, WTERMSIG(status));
	else
		printf("# %s exited with %d\n", name, WEXITSTATUS(status));
	if (*env)
		printf("# (environment: %s)\n", env);
	return T_FAIL;
}

/* In the child: run test name of cases, its verdict as exit status. */
static int t_child(const struct t_case *cases, size_t n, const char *name,
		   int fd)
{
	for (size_t i = 0; i < n; i++) {
		int r;

		if (strcmp(cases[i].name, name))
			continue;
		/* A deadlock fails the test instead of hanging the suite. */
		alarm(120);
		r = cases[i].fn();
		fflush(stdout);
		if (r == T_FAIL && stub.dump)
			stub.dump();
		if (r == T_SKIP && fd >= 0 &&
		    write(fd, t_skip_reason, strlen(t_skip_reason)) < 0)
			r = T_FAIL;
		return r == T_PASS ? 0 : r == T_SKIP ? 77 : 1;
	}
	printf("# no test %s\n", name);
	return 2;
}

/*
 * The program's t_cases, a tests table whose entries each run one case in
 * a child (run_<name>), and main(), from CASES(X): X(name, env) per test.
 */
#define T_STUB_CASE(name, env) { #name, name, env },
#define T_STUB_WRAP(name, env)						\
	static int run_##name(void)					\
	{								\
		return t_spawn(#name, env);				\
	}
#define T_STUB_ENTRY(name, env) { #name, run_##name, T_ANY },

#define T_STUB_MAIN(CASES)						\
	static const struct t_case t_cases[] = { CASES(T_STUB_CASE) };	\
	CASES(T_STUB_WRAP)						\
	static const struct t_test tests[] = { CASES(T_STUB_ENTRY) };	\
									\
	int main(int argc, char **argv)					\
	{								\
		t_self = argv[0];					\
		if (argc == 4 && !strcmp(argv[1], "--child"))		\
			return t_child(t_cases, sizeof(t_cases) /	\
				       sizeof(t_cases[0]), argv[2],	\
				       atoi(argv[3]));			\
		return T_RUN(tests);					\
	}

#endif /* GPUBUF_CUDA_STUB_TEST_H */
