// SPDX-License-Identifier: MIT
/*
 * Description: every failure of what libgpubuf asks of the C library,
 * injected one at a time. For each public call that allocates (open,
 * alloc, import, matrix and CSR views, DLPack export, the pool, Vulkan
 * open, import, GEMV and GEMM on lavapipe; on the module backend in the
 * QEMU guest also the import of a module dma-buf and the DRM import on
 * vgem), the test fails the call's 1st,
 * 2nd, ... allocation, mapping, descriptor, ioctl or dlopen
 * (tests/libfault: link-time --wrap) until the call completes without
 * reaching the fault. After each failure the call returned a negative
 * errno (or coped and succeeded), no descriptor and no buffer mapping is
 * left, and the same call on the same state succeeds: nothing was left
 * half done. Node-placed allocations (mbind, move_pages, mlock) and the
 * topology calls on a made-up sysfs tree are among the calls.
 * LeakSanitizer checks at exit that nothing leaked (on the host, where
 * the program is built with the sanitizers; the guest's build is plain).
 */
#include <dirent.h>
#include <dlpack/dlpack.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include "tap.h"
#include "drm_test.h"
#include "fake_sysfs.h"
#include "../libfault/fail_nth.h"

struct state {
	struct gpubuf_ctx *ctx;
	struct gpubuf *buf, *out;
	struct gpubuf_matrix m, v;
	struct gpubuf_csr csr;
	struct gpubuf_pool *pool;
	struct DLManagedTensor *dl;
	struct DLManagedTensorVersioned *dlv;
	struct gpubuf_vk *vk;
	struct gpubuf_matrix ma, mx, my;
	struct gpubuf_vk_matrix va, vx, vy;
	struct gpubuf_vk_memory mem;
	int fd;				/* a dma-buf to import, or -1 */
	int card;			/* a vgem DRM file, or -1 */
	uint32_t handle;
	struct gpubuf_alloc_opts opts;
	int node;
	char sysfs[256];		/* a made-up sysfs tree, or "" */
};

enum need { ANY, VULKAN, MODULE, VGEM, NR_NEEDS };

struct scenario {
	const char *name;
	int (*setup)(struct state *s);		/* 0 or -errno, not injected */
	int (*call)(struct state *s);		/* the call under test */
	void (*undo)(struct state *s);		/* after a successful call */
	enum need need;
};

static int set_ctx(struct state *s)
{
	return gpubuf_open(&s->ctx, GPUBUF_OPEN_ALLOW_MEMFD);
}

static int set_buf(struct state *s)
{
	int err = set_ctx(s);

	return err ? err : gpubuf_alloc(s->ctx, 1 << 20, NULL, &s->buf);
}

/* A buffer and a 1 MiB file (unnamed, in /tmp) to read into it. */
static int set_file(struct state *s)
{
	static char block[4096];
	int err = set_buf(s);

	if (err)
		return err;
	s->fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (s->fd < 0)
		return -errno;
	memset(block, 0x5a, sizeof(block));
	for (int i = 0; i < 256; i++)
		if (pwrite(s->fd, block, sizeof(block), i * 4096) != sizeof(block))
			return -EIO;
	return 0;
}

/* A dma-buf fd of gpubuf.ko (module backend) to import. */
static int set_fd(struct state *s)
{
	int err = set_buf(s);

	if (err)
		return err;
	s->fd = fcntl(gpubuf_fd(s->buf), F_DUPFD_CLOEXEC, 0);
	return s->fd < 0 ? -errno : 0;
}

/*
 * A vgem file, with libdrm loaded already: a runtime is loaded once per
 * process and a failure to load it is remembered (loader_dlopen_fails()
 * tests that failure on its own).
 */
static int set_vgem(struct state *s)
{
	int err = set_buf(s);

	if (err)
		return err;
	s->card = t_open_vgem();
	if (s->card < 0)
		return -ENODEV;
	err = gpubuf_drm_import(s->buf, s->card, &s->handle);
	return err ? err : gpubuf_drm_release(s->buf, s->card);
}

static int set_matrix(struct state *s)
{
	int err = set_ctx(s);

	return err ? err : gpubuf_matrix_alloc(s->ctx, GPUBUF_DTYPE_F32, 64,
					       48, GPUBUF_ROW_MAJOR, 0, &s->m);
}

static int set_pool(struct state *s)
{
	int err = set_ctx(s);

	return err ? err : gpubuf_pool_create(s->ctx, NULL, &s->pool);
}

/* Allocation options naming node 0, preferred or required. */
static int set_ctx_node(struct state *s)
{
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;

	o.numa_node = 0;
	s->opts = o;
	return set_ctx(s);
}

static int set_ctx_strict(struct state *s)
{
	int err = set_ctx_node(s);

	s->opts.flags = GPUBUF_ALLOC_NUMA_STRICT;
	return err;
}

static int set_pool_node(struct state *s)
{
	int err = set_pool(s);

	s->node = 0;
	return err;
}

/* tests/lib/fake_sysfs.h's tree, which the topology calls then read. */
static int set_sysfs(struct state *s)
{
	struct gpubuf_alloc_opts o = GPUBUF_ALLOC_OPTS_INIT;

	s->opts = o;
	if (t_fake_sysfs(s->sysfs, sizeof(s->sysfs)))
		return -EIO;
	return setenv("GPUBUF_SYSFS_ROOT", s->sysfs, 1) ? -errno : 0;
}

static int set_vk(struct state *s)
{
	int err = set_ctx(s);

	return err ? err : gpubuf_vk_open(0, 0, &s->vk);
}

static int set_vk_buf(struct state *s)
{
	int err = set_vk(s);

	return err ? err : gpubuf_alloc(s->ctx, 1 << 20, NULL, &s->buf);
}

/* A, x and y of a 64 x 48 GEMV, imported and viewed. */
static int set_vk_operands(struct state *s)
{
	int err = set_vk(s);

	if (!err)
		err = gpubuf_matrix_alloc(s->ctx, GPUBUF_DTYPE_F32, 64, 48,
					  GPUBUF_ROW_MAJOR, 0, &s->ma);
	if (!err)
		err = gpubuf_matrix_alloc(s->ctx, GPUBUF_DTYPE_F32, 48, 1,
					  GPUBUF_COL_MAJOR, 0, &s->mx);
	if (!err)
		err = gpubuf_matrix_alloc(s->ctx, GPUBUF_DTYPE_F32, 64, 1,
					  GPUBUF_COL_MAJOR, 0, &s->my);
	if (!err)
		err = gpubuf_vk_import(s->ma.buf, s->vk, &s->mem);
	if (!err)
		err = gpubuf_vk_import(s->mx.buf, s->vk, &s->mem);
	if (!err)
		err = gpubuf_vk_import(s->my.buf, s->vk, &s->mem);
	if (!err)
		err = gpubuf_vk_matrix_view(&s->ma, s->vk, &s->va);
	if (!err)
		err = gpubuf_vk_matrix_view(&s->mx, s->vk, &s->vx);
	if (!err)
		err = gpubuf_vk_matrix_view(&s->my, s->vk, &s->vy);
	return err;
}

/* Everything, whatever was set up; the imports go with their buffers. */
static void teardown(struct state *s)
{
	gpubuf_matrix_release(&s->ma);
	gpubuf_matrix_release(&s->mx);
	gpubuf_matrix_release(&s->my);
	gpubuf_vk_close(s->vk);
	gpubuf_pool_destroy(s->pool);
	gpubuf_matrix_release(&s->v);
	gpubuf_matrix_release(&s->m);
	gpubuf_csr_release(&s->csr);
	gpubuf_unref(s->out);
	gpubuf_unref(s->buf);
	gpubuf_close(s->ctx);
	if (s->fd >= 0)
		close(s->fd);
	if (s->card >= 0)
		close(s->card);
	if (s->sysfs[0]) {
		unsetenv("GPUBUF_SYSFS_ROOT");
		t_fake_sysfs_remove(s->sysfs);
	}
	memset(s, 0, sizeof(*s));
	s->fd = s->card = -1;
}

static int do_open(struct state *s)
{
	return gpubuf_open(&s->ctx, GPUBUF_OPEN_ALLOW_MEMFD);
}

static void undo_open(struct state *s)
{
	gpubuf_close(s->ctx);
	s->ctx = NULL;
}

static int do_alloc(struct state *s)
{
	return gpubuf_alloc(s->ctx, 1 << 20, NULL, &s->out);
}

static void undo_out(struct state *s)
{
	gpubuf_unref(s->out);
	s->out = NULL;
}

static int do_alloc_node(struct state *s)
{
	return gpubuf_alloc(s->ctx, 1 << 20, &s->opts, &s->out);
}

static int do_alloc_strict(struct state *s)
{
	return gpubuf_alloc(s->ctx, 1 << 20, &s->opts, &s->out);
}

static int do_matrix_alloc_opts(struct state *s)
{
	return gpubuf_matrix_alloc_opts(s->ctx, GPUBUF_DTYPE_F32, 100, 30,
					GPUBUF_ROW_MAJOR, 0, &s->opts, &s->v);
}

static int do_pool_get_node(struct state *s)
{
	return gpubuf_pool_get_node(s->pool, 100000, s->node, 0, &s->out);
}

/* 0000:1a:00.0 is on node 1, which has no memory: the nearest is 2. */
/* Offsets that line up: a buffered head and tail, O_DIRECT between. */
static int do_read_file(struct state *s)
{
	struct gpubuf_io_result res;
	int err = gpubuf_read_file(s->buf, 100, s->fd, 100, (1 << 20) - 200,
				   NULL, &res);

	if (err)
		return err;
	return res.bytes == (1 << 20) - 200 &&
	       ((unsigned char *)gpubuf_ptr(s->buf))[(1 << 20) - 101] == 0x5a ?
	       0 : -EPROTO;
}

static int do_device_node(struct state *s)
{
	int err = gpubuf_device_node("pci:0000:1a:00.0", &s->node);

	return err ? err : s->node == 2 ? 0 : -EPROTO;
}

static int do_alloc_opts_near(struct state *s)
{
	int err = gpubuf_alloc_opts_near(&s->opts, "rdma:soft0");

	return err ? err : s->opts.numa_node == 2 ? 0 : -EPROTO;
}

static int do_import(struct state *s)
{
	return gpubuf_import(s->ctx, s->fd, &s->out);
}

static int do_matrix_alloc(struct state *s)
{
	return gpubuf_matrix_alloc(s->ctx, GPUBUF_DTYPE_F64, 100, 30,
				   GPUBUF_COL_MAJOR, 256, &s->v);
}

static void undo_v(struct state *s)
{
	gpubuf_matrix_release(&s->v);
	memset(&s->v, 0, sizeof(s->v));
}

/* Views borrow their buffer: nothing to release. */
static void undo_view(struct state *s)
{
	memset(&s->v, 0, sizeof(s->v));
}

static int do_matrix_view(struct state *s)
{
	return gpubuf_matrix_view(s->buf, 4096, GPUBUF_DTYPE_F32, 16, 16, 32,
				  GPUBUF_ROW_MAJOR, &s->v);
}

static int do_matrix_sub(struct state *s)
{
	return gpubuf_matrix_sub(&s->m, 8, 4, 16, 16, &s->v);
}

static int do_csr_alloc(struct state *s)
{
	return gpubuf_csr_alloc(s->ctx, 100, 80, 500, GPUBUF_DTYPE_F32,
				GPUBUF_DTYPE_I32, &s->csr);
}

static void undo_csr(struct state *s)
{
	gpubuf_csr_release(&s->csr);
	memset(&s->csr, 0, sizeof(s->csr));
}

static int do_dlpack(struct state *s)
{
	return gpubuf_matrix_to_dlpack(&s->m, 1, 0, &s->dl);
}

static void undo_dlpack(struct state *s)
{
	s->dl->deleter(s->dl);
	s->dl = NULL;
}

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
static int do_dlpack_versioned(struct state *s)
{
	return gpubuf_matrix_to_dlpack_versioned(&s->m, 1, 0, &s->dlv);
}

static void undo_dlpack_versioned(struct state *s)
{
	s->dlv->deleter(s->dlv);
	s->dlv = NULL;
}
#endif

static int do_pool_create(struct state *s)
{
	return gpubuf_pool_create(s->ctx, NULL, &s->pool);
}

static void undo_pool(struct state *s)
{
	gpubuf_pool_destroy(s->pool);
	s->pool = NULL;
}

static int do_pool_get(struct state *s)
{
	return gpubuf_pool_get(s->pool, 100000, &s->out);
}

static void undo_pool_get(struct state *s)
{
	gpubuf_pool_put(s->pool, s->out);
	s->out = NULL;
}

static int do_vk_open(struct state *s)
{
	return gpubuf_vk_open(0, 0, &s->vk);
}

static void undo_vk(struct state *s)
{
	gpubuf_vk_close(s->vk);
	s->vk = NULL;
}

static int do_vk_import(struct state *s)
{
	return gpubuf_vk_import(s->buf, s->vk, &s->mem);
}

static void undo_vk_import(struct state *s)
{
	gpubuf_vk_release(s->buf, s->vk);
}

static int do_vk_gemv(struct state *s)
{
	return gpubuf_vk_gemv(1, &s->va, &s->vx, 0, &s->vy);
}

static int do_vk_gemm(struct state *s)
{
	return gpubuf_vk_gemm(1, &s->va, &s->vx, 0, &s->vy);
}

static int do_drm_import(struct state *s)
{
	return gpubuf_drm_import(s->buf, s->card, &s->handle);
}

static void undo_drm_import(struct state *s)
{
	gpubuf_drm_release(s->buf, s->card);
}

static void undo_nothing(struct state *s)
{
	(void)s;
}

#define SC(call, setup, undo) { #call, setup, do_##call, undo, ANY }
#define SC_ON(need, call, setup, undo) { #call, setup, do_##call, undo, need }
static const struct scenario scenarios[] = {
	SC(open, NULL, undo_open),
	SC(alloc, set_ctx, undo_out),
	SC(alloc_node, set_ctx_node, undo_out),
	SC(alloc_strict, set_ctx_strict, undo_out),
	SC_ON(MODULE, import, set_fd, undo_out),
	SC_ON(VGEM, drm_import, set_vgem, undo_drm_import),
	SC(matrix_alloc, set_ctx, undo_v),
	SC(matrix_alloc_opts, set_ctx_strict, undo_v),
	SC(matrix_view, set_buf, undo_view),
	SC(matrix_sub, set_matrix, undo_view),
	SC(csr_alloc, set_ctx, undo_csr),
	SC(dlpack, set_matrix, undo_dlpack),
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
	SC(dlpack_versioned, set_matrix, undo_dlpack_versioned),
#endif
	SC(pool_create, set_ctx, undo_pool),
	SC(pool_get, set_pool, undo_pool_get),
	SC(pool_get_node, set_pool_node, undo_pool_get),
	SC(read_file, set_file, undo_nothing),
	SC(device_node, set_sysfs, undo_nothing),
	SC(alloc_opts_near, set_sysfs, undo_nothing),
	SC_ON(VULKAN, vk_open, set_ctx, undo_vk),
	SC_ON(VULKAN, vk_import, set_vk_buf, undo_vk_import),
	SC_ON(VULKAN, vk_gemv, set_vk_operands, undo_nothing),
	SC_ON(VULKAN, vk_gemm, set_vk_operands, undo_nothing),
};

static const char *const need_names[NR_NEEDS] = {
	[VULKAN] = "a Vulkan device (Debian: mesa-vulkan-drivers)",
	[MODULE] = "a gpubuf.ko dma-buf: the module backend (the QEMU guest)",
	[VGEM] = "the vgem driver (the QEMU guest)",
};

/*
 * A runtime (libvulkan.so.1, libdrm.so.2) is loaded once per process, at
 * its first use, and a failure to load it is remembered. In a fresh child
 * per try, the call's 1st, 2nd, ... wrapped call fails until the failing
 * one is the loader's dlopen(): the call must give a negative errno and
 * say why, though dlerror() has nothing to say about a failure it did not
 * see (a NULL it used to print as "(null)").
 */
static int loader_dlopen_fails(int (*call)(struct state *s),
			       int (*setup)(struct state *s))
{
	for (unsigned int n = 1; n < 64; n++) {
		int status;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			return -errno;
		if (!pid) {
			struct state s = { .fd = -1, .card = -1 };
			const char *hit, *msg;
			int err;

			if (setup && setup(&s))
				_exit(3);
			fail_nth_arm(n);
			err = call(&s);
			hit = fail_nth_disarm();
			if (!hit)
				_exit(2);	/* no dlopen among them */
			if (strcmp(hit, "dlopen"))
				_exit(4);	/* another one: try n + 1 */
			msg = gpubuf_last_error();
			printf("# with the loader's dlopen failing: %d (%s)\n",
			       err, msg);
			fflush(stdout);
			_exit(err < 0 && err > -4096 && msg[0] &&
			      !strstr(msg, "(null)") ? 0 : 1);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			return -EIO;
		if (WEXITSTATUS(status) != 4)
			return WEXITSTATUS(status) ? -EIO : 0;
	}
	return -ELOOP;
}

/* The runtime's first use in a fresh process: no ctx, no state. */
static int first_vk_open(struct state *s)
{
	return gpubuf_vk_open(0, 0, &s->vk);
}

static int set_buf_vgem(struct state *s)
{
	int err = set_buf(s);

	if (err)
		return err;
	s->card = t_open_vgem();
	return s->card < 0 ? -ENODEV : 0;
}

/*
 * Fail the call's nth C library call for n = 1, 2, ... until the call no
 * longer reaches it. Prints one TAP line; returns whether it passed.
 */
static bool run_scenario(int num, const struct scenario *sc)
{
	char sites[512] = "";
	int fds0 = t_open_fds(), maps0 = t_buffer_maps(), errs = 0;
	unsigned int n;

	for (n = 1; n < 10000; n++) {
		struct state s = { .fd = -1, .card = -1 };
		const char *hit;
		int err, again;

		err = sc->setup ? sc->setup(&s) : 0;
		if (err) {
			printf("not ok %d - %s: setup failed: %s (%s)\n", num,
			       sc->name, strerror(-err), gpubuf_last_error());
			teardown(&s);
			return false;
		}
		fail_nth_arm(n);
		err = sc->call(&s);
		hit = fail_nth_disarm();
		if (!hit) {			/* the call made fewer than n */
			if (err)
				printf("# %s without a fault: %s\n", sc->name,
				       strerror(-err));
			else
				sc->undo(&s);
			teardown(&s);
			if (err || t_open_fds() != fds0 ||
			    t_buffer_maps() != maps0) {
				printf("not ok %d - %s: the call itself (err %d, %d fds, %d before, %d buffer mappings, %d before)\n",
				       num, sc->name, err, t_open_fds(), fds0,
				       t_buffer_maps(), maps0);
				return false;
			}
			break;
		}
		if (err > 0 || err < -4095) {
			printf("# fault %u (%s): returned %d, not 0 or -errno\n",
			       n, hit, err);
			errs++;
		}
		if (!err)
			sc->undo(&s);
		/* The same state takes the same call now. */
		again = sc->call(&s);
		if (again) {
			printf("# fault %u (%s): then the call failed again: %s (%s)\n",
			       n, hit, strerror(-again), gpubuf_last_error());
			errs++;
		} else {
			sc->undo(&s);
		}
		teardown(&s);
		if (t_open_fds() != fds0) {
			printf("# fault %u (%s): %d fds open, %d before\n", n,
			       hit, t_open_fds(), fds0);
			errs++;
		}
		if (t_buffer_maps() != maps0) {
			printf("# fault %u (%s): %d buffer mappings, %d before\n",
			       n, hit, t_buffer_maps(), maps0);
			errs++;
		}
		if (strlen(sites) + strlen(hit) + 16 < sizeof(sites))
			snprintf(sites + strlen(sites),
				 sizeof(sites) - strlen(sites), "%s%s%s",
				 sites[0] ? " " : "", hit,
				 err ? "" : "(coped)");
	}
	printf("%s %d - gpubuf_%s: %u fault sites, each a clean failure: %s\n",
	       errs ? "not ok" : "ok", num, sc->name, n - 1,
	       sites[0] ? sites : "none");
	return !errs;
}

int main(void)
{
	size_t nsc = sizeof(scenarios) / sizeof(scenarios[0]);
	int failed = 0, have[NR_NEEDS], err;

	(void)t_run;	/* this program numbers its own results */
	printf("TAP version 13\n1..%zu\n", nsc + 2);
	/* In children: this process loads no runtime before the scenarios. */
	have[ANY] = 1;
	have[MODULE] = t_is_module();
	have[VGEM] = have[MODULE] && access("/sys/module/vgem", F_OK) == 0;
	err = loader_dlopen_fails(first_vk_open, NULL);
	printf("%s 1 - gpubuf_vk_open: libvulkan.so.1's dlopen fails cleanly\n",
	       err ? "not ok" : "ok");
	failed += !!err;
	if (have[VGEM]) {
		err = loader_dlopen_fails(do_drm_import, set_buf_vgem);
		printf("%s 2 - gpubuf_drm_import: libdrm.so.2's dlopen fails cleanly\n",
		       err ? "not ok" : "ok");
		failed += !!err;
	} else {
		printf("ok 2 - gpubuf_drm_import: libdrm.so.2's dlopen # SKIP needs %s\n",
		       "the vgem driver (the QEMU guest)");
	}
	have[VULKAN] = t_has_vulkan();
	for (size_t i = 0; i < nsc; i++) {
		const struct scenario *sc = &scenarios[i];

		if (!have[sc->need]) {
			printf("ok %zu - gpubuf_%s # SKIP needs %s\n", i + 3,
			       sc->name, need_names[sc->need]);
			continue;
		}
		failed += !run_scenario((int)i + 3, sc);
		fflush(stdout);
	}
	return failed ? 1 : 0;
}
