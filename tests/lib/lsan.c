// SPDX-License-Identifier: MIT
/*
 * Description: LeakSanitizer in the test programs. A library that keeps a
 * block in a global and is then dlclose()d (lavapipe on AMD hosts) is not
 * reported, because tests/lsan/keep_loaded.c keeps every library mapped;
 * without that shim it is; and a leak of libgpubuf itself still fails a
 * test program. Each case runs this program again as a child and reads
 * what LeakSanitizer printed.
 */
#include <errno.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sys/wait.h>

#include "tap.h"

#define T_KEEPER "lsan-keeper.so"

/* ---- the children ------------------------------------------------------ */

/*
 * In a thread of its own, so that no stale copy of the block's address
 * stays in a live stack frame or register of the main thread, where
 * LeakSanitizer would find it and call the block reachable.
 */
static void *child_keeper_thread(void *arg)
{
	const char *path = arg;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int (*hold)(void);

	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(3);
	}
	hold = (int (*)(void))dlsym(h, "gpubuf_lsan_keeper_hold");
	if (!hold || hold()) {
		fprintf(stderr, "gpubuf_lsan_keeper_hold failed\n");
		exit(3);
	}
	if (dlclose(h)) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		exit(3);
	}
	return NULL;
}

static int child_keeper(const char *path)
{
	pthread_t t;

	if (pthread_create(&t, NULL, child_keeper_thread, (void *)path) ||
	    pthread_join(t, NULL))
		return 3;
	/* LeakSanitizer's report ends the process without flushing stdio. */
	printf("keeper loaded, held a block, unloaded\n");
	fflush(stdout);
	return 0;
}

/* A buffer and a context that are never released. */
static int child_leak(int release)
{
	struct gpubuf_ctx *ctx = NULL;
	struct gpubuf *buf = NULL;

	if (gpubuf_open(&ctx, GPUBUF_OPEN_ALLOW_MEMFD) ||
	    gpubuf_alloc(ctx, 4096, NULL, &buf))
		return 3;
	if (release) {
		gpubuf_unref(buf);
		gpubuf_close(ctx);
	}
	printf("buffer allocated%s\n", release ? " and released" : "");
	fflush(stdout);
	return 0;
}

/* ---- the parent -------------------------------------------------------- */

static char t_out[1 << 16];

/* Runs this program as "lsan MODE" (unload: GPUBUF_LSAN_UNLOAD=1). */
static int t_child(const char *mode, int unload, int *status)
{
	int fds[2];
	size_t len = 0;
	pid_t pid;

	if (pipe(fds))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		const char *old = getenv("ASAN_OPTIONS");
		char opts[1024];

		snprintf(opts, sizeof(opts), "%s%sdetect_leaks=1",
			 old ? old : "", old && *old ? ":" : "");
		setenv("ASAN_OPTIONS", opts, 1);
		setenv("GPUBUF_BACKEND", "memfd", 1);
		if (unload)
			setenv("GPUBUF_LSAN_UNLOAD", "1", 1);
		else
			unsetenv("GPUBUF_LSAN_UNLOAD");
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execl("/proc/self/exe", "lsan", mode, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], t_out + len, sizeof(t_out) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(t_out) - 1)
			break;
	}
	t_out[len] = 0;
	close(fds[0]);
	if (waitpid(pid, status, 0) != pid)
		return -errno;
	return 0;
}

static void t_show(void)
{
	char *line = t_out, *nl;
	int n = 0;

	while (*line && n++ < 12) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		printf("#   %s\n", line);
		if (!nl)
			break;
		line = nl + 1;
	}
}

#ifdef __SANITIZE_ADDRESS__
#define T_NEEDS_LSAN() do { } while (0)
#else
#define T_NEEDS_LSAN() \
	return t_skip("not built with -fsanitize=address (LeakSanitizer)")
#endif

static int t_exited(int status, int code)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

static int unloaded_library_global_is_not_a_leak(void)
{
	int status;

	T_NEEDS_LSAN();
	T_EQ(t_child("keeper", 0, &status), 0);
	if (!t_exited(status, 0) || strstr(t_out, "LeakSanitizer"))
		t_show();
	T_CHECK(strstr(t_out, "keeper loaded, held a block, unloaded"));
	T_CHECK(!strstr(t_out, "LeakSanitizer"));
	T_CHECK(t_exited(status, 0));
	return T_PASS;
}

/* What the AMD hosts saw: proof that the shim is what keeps it quiet. */
static int unloaded_library_global_is_reported_without_the_shim(void)
{
	int status;

	T_NEEDS_LSAN();
	T_EQ(t_child("keeper", 1, &status), 0);
	if (t_exited(status, 0))
		t_show();
	T_CHECK(strstr(t_out, "keeper loaded, held a block, unloaded"));
	T_CHECK(strstr(t_out, "LeakSanitizer"));
	T_CHECK(strstr(t_out, "Direct leak of 128 byte(s)"));
	T_CHECK(!t_exited(status, 0));
	return T_PASS;
}

static int libgpubuf_leak_still_fails(void)
{
	int status;

	T_NEEDS_LSAN();
	T_EQ(t_child("leak", 0, &status), 0);
	if (t_exited(status, 0))
		t_show();
	T_CHECK(strstr(t_out, "buffer allocated\n"));
	T_CHECK(strstr(t_out, "LeakSanitizer"));
	/* Named by its allocating libgpubuf function. */
	T_CHECK(strstr(t_out, "in gpubuf_alloc"));
	T_CHECK(!t_exited(status, 0));
	return T_PASS;
}

static int released_buffer_is_no_leak(void)
{
	int status;

	T_NEEDS_LSAN();
	T_EQ(t_child("clean", 0, &status), 0);
	if (!t_exited(status, 0))
		t_show();
	T_CHECK(strstr(t_out, "buffer allocated and released"));
	T_CHECK(!strstr(t_out, "LeakSanitizer"));
	T_CHECK(t_exited(status, 0));
	return T_PASS;
}

static const struct t_test tests[] = {
	T_TEST(unloaded_library_global_is_not_a_leak),
	T_TEST(unloaded_library_global_is_reported_without_the_shim),
	T_TEST(libgpubuf_leak_still_fails),
	T_TEST(released_buffer_is_no_leak),
};

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "keeper")) {
		char self[PATH_MAX], path[PATH_MAX + 32];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		char *slash;

		if (n <= 0)
			return 3;
		self[n] = 0;
		slash = strrchr(self, '/');
		if (!slash)
			return 3;
		*slash = 0;
		snprintf(path, sizeof(path), "%s/%s", self, T_KEEPER);
		return child_keeper(path);
	}
	if (argc == 2 && !strcmp(argv[1], "leak"))
		return child_leak(0);
	if (argc == 2 && !strcmp(argv[1], "clean"))
		return child_leak(1);
	return t_run(tests, sizeof(tests) / sizeof(tests[0]));
}
