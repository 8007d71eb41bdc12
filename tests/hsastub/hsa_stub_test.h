/* SPDX-License-Identifier: MIT */
/*
 * What the test programs of libgpubuf's HSA bookkeeping share
 * (hsa_stub_*.c, run against the stand-in runtime of stub.c, which they
 * find through LD_LIBRARY_PATH or their RUNPATH): the stand-in's queries,
 * the checks every test ends with, and the runner. Nothing here touches
 * a GPU.
 *
 * The library loads the runtime once per process and the stand-in reads
 * its configuration when loaded, so every test runs in a fresh process:
 * the program re-executes itself with the test's environment and
 * "--child name", and reports the child's verdict. A program lists its
 * tests, their environments and where they run (tap.h's enum t_env) in
 * T_CASES(X) and ends with T_STUB_MAIN(T_CASES).
 */
#ifndef GPUBUF_HSA_STUB_TEST_H
#define GPUBUF_HSA_STUB_TEST_H

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stub_load.h"
#include "tap.h"

extern char **environ;

/* The stand-in's agent pointer for host pointer p (stub.h). */
#define T_AGENT_PTR(p) ((void *)((uintptr_t)(p) | (uintptr_t)0xa5 << 48))

static struct {
	int (*calls)(const char *fn);
	void (*reset_log)(void);
	const char *(*last_lock)(const void **ptr, size_t *size,
				 uint64_t *agents, int *n, uint64_t *pool);
	const void *(*last_unlock)(void);
	int (*locks)(void);
	int (*is_locked)(const void *p);
	uint64_t (*gpu)(int i);
	uint64_t (*cpu)(void);
	uint64_t (*fine_pool)(void);
	int (*violations)(char *msg, size_t len);
	void (*dump)(void);
} stub;

/*
 * Resolve the stand-in in this process, loading the runtime through the
 * library first (its answer does not matter here).
 */
static int t_stub_load(void)
{
#define T_HSA(f) T_STUB_SYM(stub, f, "hsastub_" #f)
	const struct t_stub_sym syms[] = {
		T_HSA(calls), T_HSA(reset_log), T_HSA(last_lock),
		T_HSA(last_unlock), T_HSA(locks), T_HSA(is_locked), T_HSA(gpu),
		T_HSA(cpu), T_HSA(fine_pool), T_HSA(violations), T_HSA(dump),
	};
#undef T_HSA
	int n;

	gpubuf_hsa_agents(NULL, 0, &n);
	return T_STUB_RESOLVE("libhsa-runtime64.so.1", syms);
}

#define T_STUB() T_CHECK(t_stub_load() == 0)

/* What every test ends with: no misuse seen, nothing left locked. */
static int t_clean(void)
{
	char msg[256];
	int v = stub.violations(msg, sizeof(msg));

	if (v) {
		printf("# %d runtime misuse(s), the first: %s\n", v, msg);
		return T_FAIL;
	}
	T_EQ(stub.locks(), 0);
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
static struct gpubuf *t_buf(struct gpubuf_ctx *ctx, size_t pages)
{
	struct gpubuf *buf = NULL;
	int err = gpubuf_alloc(ctx, pages * (size_t)sysconf(_SC_PAGESIZE),
			       NULL, &buf);

	if (err) {
		printf("Bail out! gpubuf_alloc: %s\n", gpubuf_strerror(err));
		exit(1);
	}
	return buf;
}

/* ---- running each test in its own process ------------------------------- */

struct t_case {
	const char *name;
	int (*fn)(void);
	const char *env;	/* "K=V K=V" */
};

static const char *t_self;

/* Run test name in a fresh process with env (and no other HSASTUB_*). */
static int t_spawn(const char *name, const char *env)
{
	char envbuf[512], *envp[1024];
	char *argv[] = { (char *)t_self, "--child", (char *)name, NULL };
	size_t n = 0;
	int status;
	pid_t pid;

	T_CHECK(strlen(env) < sizeof(envbuf));
	strcpy(envbuf, env);
	for (char **e = environ; *e && n < 1000; e++)
		if (strncmp(*e, "HSASTUB_", 8))
			envp[n++] = *e;
	for (char *save = NULL, *kv = strtok_r(envbuf, " ", &save); kv;
	     kv = strtok_r(NULL, " ", &save))
		envp[n++] = kv;
	envp[n] = NULL;
	fflush(stdout);
	pid = fork();
	T_CHECK(pid >= 0);
	if (pid == 0) {
		execve("/proc/self/exe", argv, envp);
		printf("# exec /proc/self/exe: %s\n", strerror(errno));
		_exit(127);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return T_PASS;
	if (WIFSIGNALED(status))
		printf("# %s killed by signal %d\n", name, WTERMSIG(status));
	else
		printf("# %s exited with %d\n", name, WEXITSTATUS(status));
	if (*env)
		printf("# (environment: %s)\n", env);
	return T_FAIL;
}

/* In the child: run test name of cases, its verdict as exit status. */
static int t_child(const struct t_case *cases, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		int r;

		if (strcmp(cases[i].name, name))
			continue;
		/* A deadlock fails the test instead of hanging the suite. */
		alarm(120);
		r = cases[i].fn();
		fflush(stdout);
		if (r != T_PASS && stub.dump)
			stub.dump();
		return r == T_PASS ? 0 : 1;
	}
	printf("# no test %s\n", name);
	return 2;
}

/* X(name, env, where): where is the tap.h environment the test needs. */
#define T_STUB_CASE(name, env, where) { #name, name, env },
#define T_STUB_WRAP(name, env, where)					\
	static int run_##name(void)					\
	{								\
		return t_spawn(#name, env);				\
	}
#define T_STUB_ENTRY(name, env, where) { #name, run_##name, where },

#define T_STUB_MAIN(CASES)						\
	static const struct t_case t_cases[] = { CASES(T_STUB_CASE) };	\
	CASES(T_STUB_WRAP)						\
	static const struct t_test tests[] = { CASES(T_STUB_ENTRY) };	\
									\
	int main(int argc, char **argv)					\
	{								\
		t_self = argv[0];					\
		if (argc == 3 && !strcmp(argv[1], "--child"))		\
			return t_child(t_cases, sizeof(t_cases) /	\
				       sizeof(t_cases[0]), argv[2]);	\
		return T_RUN(tests);					\
	}

#endif /* GPUBUF_HSA_STUB_TEST_H */
