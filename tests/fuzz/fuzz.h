/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gpubuf fuzzer: state shared by its parts. Every worker thread owns its
 * pools (buffer fds, mappings, other fds, vgem handles) and only touches
 * memory it mapped itself, so the fuzzer cannot fault on its own account
 * however the calls interleave. Nothing in a worker allocates from the
 * heap: a forked child may run while another thread held malloc's lock.
 */
#ifndef GPUBUF_FUZZ_H
#define GPUBUF_FUZZ_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Syscall kinds, each counted on its own; the per-op breakdown. */
enum fz_sc {
	SC_ALLOC,	/* GPUBUF_IOC_ALLOC, any size/direction in the number */
	SC_INFO,
	SC_VERSION,
	SC_BADCMD,	/* unknown or malformed ioctl numbers */
	SC_MMAP,
	SC_MUNMAP,
	SC_MREMAP,
	SC_MPROTECT,
	SC_MADVISE,
	SC_SYNC,	/* DMA_BUF_IOCTL_SYNC */
	SC_DMABUF,	/* DMA_BUF_SET_NAME, sync-file export/import */
	SC_FILEOP,	/* lseek, read, write, poll, fcntl */
	SC_VGEM,	/* dumb create, PRIME import/export, GEM close, map */
	SC_CLOSE,
	SC_DUP,
	SC_SOCK,	/* sendmsg/recvmsg with SCM_RIGHTS */
	SC_FORK,	/* fork, waitpid */
	SC_OTHER,	/* pipes, memfds, eventfds, sysfs */
	SC_RESERVE,	/* reserve_bytes, drop_caches, the reserve's counters */
	SC_PIN,		/* gpubuf_pinprobe: open, PIN_HOLD, HELD_SUM, close */
	SC_COUNT
};

#define FZ_MAX_BUFS	16
#define FZ_MAX_MAPS	24
#define FZ_MAX_OTHER	12
#define FZ_MAX_HANDLES	16
#define FZ_ARG_BYTES	16384	/* largest size an ioctl number can carry */
#define FZ_MAX_HOLDS	2	/* buffers a thread keeps pinned after release */
#define FZ_CHUNK	(2ULL << 20)	/* the reserve's chunk, a 2 MiB page */

#define FZ_SYSFS	"/sys/class/misc/gpubuf/"
#define FZ_PARAMS	"/sys/module/gpubuf/parameters/"

struct fz_buf {
	int fd;
	uint64_t size;
	int writable;		/* O_RDWR, else O_RDONLY */
	int shared;		/* another thread or process may write it */
	unsigned int id;
};

struct fz_map {
	char *addr;
	size_t len;		/* page multiple */
	int prot;
	unsigned int buf_id;
	int exclusive;		/* only this thread writes the buffer */
};

struct fz_handle {
	uint32_t handle;
	uint64_t size;		/* 0: a vgem dumb buffer's, not imported */
	unsigned int buf_id;
};

/*
 * A released buffer whose pages gpubuf_pinprobe still pins (PIN_HOLD), as
 * an RDMA MR or a CUDA registration keeps them: its chunks are held.
 */
struct fz_hold {
	int probe;		/* the pinprobe fd holding the pin */
	uint64_t addr;		/* where it was mapped: HELD_SUM wants it */
	uint64_t size;
	uint64_t sum;		/* what HELD_SUM must still read */
};

/* What a thread did to the reserve and to held chunks: the run's proof. */
struct fz_rsv_stats {
	long take_bufs;		/* fresh buffers INFO said the reserve lent to */
	long take_chunks;	/* 2 MiB chunks the reserve lent them */
	long resizes;		/* reserve_bytes writes accepted */
	long resize_zero;	/* of them to 0 */
	long resize_over;	/* of them above half of RAM (clamped) */
	long resize_refused;	/* not numbers: EINVAL or ERANGE, as they must */
	long shrinks;		/* drop_caches writes (every shrinker runs) */
	long shrunk;		/* of them, reserve_shrunk_bytes grew across */
	long held_releases;	/* buffers released while pinned */
	long held_seen;		/* held_buffers > 0 read right after */
	long unpins;		/* pins dropped, their data checked first */
	long counter_reads;	/* consistency checks of the counters */
};

/* Counters a forked child adds to: one MAP_SHARED page per thread. */
struct fz_shared {
	long calls[SC_COUNT];
	long violations;
};

struct fz_thread {
	int idx;
	uint64_t rng;
	long calls[SC_COUNT];
	long fails[SC_COUNT];
	long budget;		/* calls this thread is to make */
	long touches;
	long violations;
	struct fz_shared *child;
	int dev;		/* /dev/gpubuf */
	int vgem;		/* -1 without vgem */
	int sock;		/* receiving end of this thread's socket */
	int closed_fd;		/* an fd number this thread closed */
	unsigned int next_id;
	int nbufs, nmaps, nother, nhandles;
	struct fz_buf bufs[FZ_MAX_BUFS];
	struct fz_map maps[FZ_MAX_MAPS];
	int other[FZ_MAX_OTHER];
	struct fz_handle handles[FZ_MAX_HANDLES];
	int nholds;
	struct fz_hold holds[FZ_MAX_HOLDS];
	struct fz_rsv_stats rsv;
	/* ioctl arguments: a page, then a guard page that is never mapped */
	unsigned char *arg;
	unsigned char *arg_ro;	/* a read-only page (copy-out fails) */
	unsigned char *arg_edge;	/* the last bytes before the guard */
};

/* Global settings, read-only once the workers run. */
struct fz_config {
	int threads;
	long calls;
	uint64_t seed;
	uint64_t max_buffer_bytes;	/* what the fuzzer set the limits to */
	uint64_t max_total_bytes;
	unsigned long long online_nodes;	/* bit per online node, < 64 */
	unsigned long long memory_nodes;
	uint64_t half_ram;		/* the most reserve_bytes takes */
	int *socks;			/* sending end of each thread's socket */
	long page;
};

extern struct fz_config fz_cfg;

/* Pseudo-random numbers (xorshift64*), per thread so runs reproduce. */
static inline uint64_t fz_rand(struct fz_thread *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t fz_below(struct fz_thread *t, uint64_t n)
{
	return n ? fz_rand(t) % n : 0;
}

/* True with probability 1/n. */
static inline int fz_one_in(struct fz_thread *t, unsigned int n)
{
	return fz_below(t, n) == 0;
}

/*
 * Count one syscall of kind @sc and turn its result into a value or a
 * negative errno. Used as fz_sys(t, SC_X, (long)call(...)), so errno is
 * read right after the call.
 */
static inline long fz_sys(struct fz_thread *t, enum fz_sc sc, long ret)
{
	t->calls[sc]++;
	if (ret == -1) {
		ret = -errno;
		t->fails[sc]++;
	}
	return ret;
}

/* Syscall-kind name for the report. */
const char *fz_sc_name(enum fz_sc sc);

/*
 * Report a broken invariant: counted, and the first few printed as TAP
 * comments with the thread and seed, so the run can be repeated.
 */
void fz_violation(struct fz_thread *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Fail unless @err (a negative errno or 0) is in the zero-ended @allowed. */
void fz_check_errno(struct fz_thread *t, const char *what, long err,
		    const int *allowed);

/* Values that break size and offset arithmetic: 0, 1, page +-1, 2^63... */
uint64_t fz_nasty_u64(struct fz_thread *t);
uint64_t fz_round_page(uint64_t v);

/* fuzz_ioctl.c: the /dev/gpubuf ioctls */
void fz_op_alloc(struct fz_thread *t);
void fz_op_info(struct fz_thread *t);
void fz_op_version(struct fz_thread *t);
void fz_op_badcmd(struct fz_thread *t);
int fz_info_size(struct fz_thread *t, int fd, uint64_t *size);

/* fuzz_map.c: CPU mappings of the buffers */
void fz_op_mmap(struct fz_thread *t);
void fz_op_munmap(struct fz_thread *t);
void fz_op_mremap(struct fz_thread *t);
void fz_op_mprotect(struct fz_thread *t);
void fz_op_madvise(struct fz_thread *t);
void fz_op_touch(struct fz_thread *t);
int fz_map_add(struct fz_thread *t, char *addr, size_t len, int prot,
	       const struct fz_buf *b);
void fz_map_drop(struct fz_thread *t, int i);
int fz_check_zero(struct fz_thread *t, const char *p, size_t len);

/* fuzz_fd.c: dma-buf fd operations, other fds, fork, fd passing */
void fz_op_sync(struct fz_thread *t);
void fz_op_dmabuf_misc(struct fz_thread *t);
void fz_op_fileop(struct fz_thread *t);
void fz_op_close(struct fz_thread *t);
void fz_op_dup(struct fz_thread *t);
void fz_op_other_fd(struct fz_thread *t);
void fz_op_send(struct fz_thread *t);
int fz_op_recv(struct fz_thread *t);
void fz_op_fork(struct fz_thread *t);
int fz_any_fd(struct fz_thread *t);
int fz_buf_add(struct fz_thread *t, int fd, uint64_t size, int writable,
	       int shared);
void fz_buf_drop(struct fz_thread *t, int i);
void fz_buf_mark_shared(struct fz_thread *t, unsigned int id);
void fz_other_add(struct fz_thread *t, int fd);
void fz_thread_cleanup(struct fz_thread *t);

/* fuzz_vgem.c: vgem import, export, mapping and GEM close */
void fz_op_vgem(struct fz_thread *t);
int fz_vgem_open(struct fz_thread *t);

/* fuzz_reserve.c: the reserve of 2 MiB pages and held chunks */
void fz_op_reserve(struct fz_thread *t);
void fz_op_hold(struct fz_thread *t);
void fz_reserve_note_alloc(struct fz_thread *t, int fd);
void fz_hold_release_all(struct fz_thread *t);
int fz_sysfs_read(struct fz_thread *t, const char *path, uint64_t *v);

#endif /* GPUBUF_FUZZ_H */
