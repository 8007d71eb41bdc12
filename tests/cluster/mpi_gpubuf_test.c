// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf memory moved by Open MPI over UCX between the two cluster guests
 * (tests/cluster/run.sh). Every buffer is a gpubuf buffer or matrix from
 * libgpubuf. Rank 0 prints TAP; each result is the logical AND of both
 * ranks' checks, and a failing rank says why on a "#" line.
 *
 *   mpi-gpubuf-test            two-sided, derived-datatype, one-sided and
 *                              zero-copy (held_bytes) checks
 *   mpi-gpubuf-test --pfnmap   the control: a PFNMAP mapping sent the same
 *                              way (its own mpirun, in case UCX aborts)
 *   mpi-gpubuf-test --host     make check's short run: two ranks on one
 *                              machine, memfd buffers, UCX's shared-memory
 *                              and TCP transports; no RDMA, so no zero-copy
 *                              check (the two guests' run has it)
 *   mpi-gpubuf-test --zero-copy [--uncached]
 *                              the zero-copy check alone (the guests run it
 *                              again with UCX_RNDV_SCHEME=get_zcopy); with
 *                              --uncached, UCX runs with its registration
 *                              caches off and nothing may stay held: the
 *                              control that shows the check can fail
 *
 * Every mode but --pfnmap needs the pack counter (ucx_pack_count.c)
 * preloaded: mpirun -x LD_PRELOAD=.../ucx-pack-count.so.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gpubuf.h>

#include "../selftests/gpubuf_helpers.h"

#define GUARD 0xa5
#define MIB (1UL << 20)

static int rank, ntest;
static struct gpubuf_ctx *ctx;

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("# rank %d: %s\n", rank, line);
	fflush(stdout);
}

/* One TAP result: passes only when every rank's check passed. */
static int result(int local_ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int result(int local_ok, const char *fmt, ...)
{
	int all = 0;
	va_list ap;

	MPI_Allreduce(&local_ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("%s %d - ", all ? "ok" : "not ok", ++ntest);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		fflush(stdout);
	}
	return all;
}

/*
 * The pack counter (ucx_pack_count.c, preloaded): the bytes that UCX's
 * generic datatypes made the CPU pack and unpack on this rank since the
 * last call. Returns 0, saying why, when the counter is not there.
 */
static int pack_delta(unsigned long long *packed, unsigned long long *unpacked)
{
	static unsigned long long seen_packed, seen_unpacked;
	void (*count)(unsigned long long counts[3]);
	unsigned long long c[3];

	*(void **)&count = dlsym(RTLD_DEFAULT, "ucx_pack_count");
	if (!count) {
		diag("the pack counter is not preloaded (LD_PRELOAD=.../ucx-pack-count.so)");
		return 0;
	}
	count(c);
	*packed = c[1] - seen_packed;
	*unpacked = c[2] - seen_unpacked;
	seen_packed = c[1];
	seen_unpacked = c[2];
	return 1;
}

/* The messages since the last check were contiguous: the CPU packed nothing. */
static void packed_nothing(const char *what)
{
	unsigned long long packed, unpacked;
	int ok = pack_delta(&packed, &unpacked);

	if (ok && (packed || unpacked)) {
		diag("%s: the CPU packed %llu and unpacked %llu bytes (UCX generic datatypes)",
		     what, packed, unpacked);
		ok = 0;
	}
	result(ok, "pack counter: %s needed no packing, 0 bytes packed or unpacked by the CPU through UCX generic datatypes", what);
}

static uint8_t pattern(size_t i, int from, int seed)
{
	return (uint8_t)(i * 131 + (i >> 12) + (size_t)from * 17 + (size_t)seed * 7);
}

static void fill(uint8_t *p, size_t len, int from, int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(i, from, seed);
}

/* 1 when p holds the pattern; else says where it first differs. */
static int holds(const uint8_t *p, size_t len, int from, int seed, const char *what)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != pattern(i, from, seed)) {
			diag("%s: byte %zu of %zu is 0x%02x, expected 0x%02x",
			     what, i, len, p[i], pattern(i, from, seed));
			return 0;
		}
	}
	return 1;
}

static int guards_intact(const uint8_t *base, size_t size, size_t off, size_t len)
{
	for (size_t i = 0; i < size; i++) {
		if ((i < off || i >= off + len) && base[i] != GUARD) {
			diag("guard byte %zu (data at %zu..%zu) is 0x%02x", i, off, off + len, base[i]);
			return 0;
		}
	}
	return 1;
}

static struct gpubuf *buffer(size_t size)
{
	struct gpubuf *buf = NULL;
	int rc = gpubuf_alloc(ctx, size, NULL, &buf);

	if (rc) {
		diag("gpubuf_alloc(%zu): %s", size, gpubuf_strerror(rc));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(gpubuf_ptr(buf), GUARD, size);
	return buf;
}

/*
 * A message of len bytes from a gpubuf buffer at an odd offset into the
 * peer's gpubuf buffer at another one, then back the other way.
 */
static void two_sided(size_t len, const char *kind)
{
	const size_t soff = 3, roff = 4096 + 5, size = len + 8192 + 4096;
	struct gpubuf *buf = buffer(size);
	uint8_t *p = gpubuf_ptr(buf);
	int peer = 1 - rank, ok = 1, dir;

	for (dir = 0; dir < 2; dir++) {
		int sender = dir;

		memset(p, GUARD, size);
		if (rank == sender) {
			fill(p + soff, len, rank, dir);
			MPI_Send(p + soff, (int)len, MPI_BYTE, peer, dir, MPI_COMM_WORLD);
		} else {
			MPI_Status st;
			int count;

			MPI_Recv(p + roff, (int)len, MPI_BYTE, peer, dir, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &count);
			ok &= (size_t)count == len;
			ok &= holds(p + roff, len, peer, dir, "received") &&
			      guards_intact(p, size, roff, len);
		}
	}
	gpubuf_unref(buf);
	result(ok, "send/recv %zu bytes both ways (%s), gpubuf to gpubuf at odd offsets, every byte and the guards checked",
	       len, kind);
}

/*
 * A 64 x 48 f64 tile of a padded matrix sent as an MPI vector type from the
 * view into a sub-view of the peer's matrix with another ld; everything
 * outside the tile keeps its signalling NaN. A correctness test, not a
 * zero-copy one: a datatype with gaps is not sent in place. Open MPI 4.1's
 * pml_ucx hands it to UCX as a generic datatype, and the CPU packs the
 * tile's 24,576 bytes on the sender and unpacks them on the receiver
 * (tile_packed() checks that count, which shows the pack counter works).
 */
static void matrix_tile(void)
{
	/* Rows padded to 256 bytes (ld 96) on rank 0, 512 (ld 128) on rank 1. */
	const size_t rows = 100, cols = 80, tr = 64, tc = 48, align = rank ? 512 : 256;
	struct gpubuf_matrix m, tile;
	MPI_Datatype type;
	uint64_t snan = 0x7ff4000000000001ULL;
	int rc, ok = 1;
	size_t r, c, ld;

	rc = gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, rows, cols, GPUBUF_ROW_MAJOR, align, &m);
	if (rc) {
		diag("gpubuf_matrix_alloc: %s", gpubuf_strerror(rc));
		result(0, "a padded f64 matrix tile sent as an MPI vector type");
		return;
	}
	ld = m.ld;
	for (r = 0; r < rows; r++)
		for (c = 0; c < ld; c++)
			memcpy((double *)gpubuf_matrix_data(&m) + r * ld + c, &snan, 8);
	rc = gpubuf_matrix_sub(&m, rank ? 30 : 7, rank ? 20 : 11, tr, tc, &tile);
	if (rc) {
		diag("gpubuf_matrix_sub: %s", gpubuf_strerror(rc));
		ok = 0;
	}
	if (ld != (rank ? 128 : 96)) {
		diag("ld %zu for rows aligned to %zu bytes", ld, align);
		ok = 0;
	}
	MPI_Type_vector((int)tr, (int)tc, (int)tile.ld, MPI_DOUBLE, &type);
	MPI_Type_commit(&type);
	if (ok && rank == 0) {
		for (r = 0; r < tr; r++)
			for (c = 0; c < tc; c++)
				*(double *)gpubuf_matrix_elem(&tile, r, c) = (double)(r * 1000 + c);
		MPI_Send(gpubuf_matrix_data(&tile), 1, type, 1, 7, MPI_COMM_WORLD);
	} else if (ok) {
		MPI_Recv(gpubuf_matrix_data(&tile), 1, type, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (r = 0; r < rows && ok; r++) {
			for (c = 0; c < ld && ok; c++) {
				double *e = (double *)gpubuf_matrix_data(&m) + r * ld + c;
				int in = r >= 30 && r < 30 + tr && c >= 20 && c < 20 + tc;

				if (in && *e != (double)((r - 30) * 1000 + (c - 20))) {
					diag("tile element (%zu,%zu) is %g", r, c, *e);
					ok = 0;
				} else if (!in && memcmp(e, &snan, 8)) {
					diag("element (%zu,%zu) outside the tile was written", r, c);
					ok = 0;
				}
			}
		}
	}
	MPI_Type_free(&type);
	gpubuf_matrix_release(&m);
	result(ok, "a 64x48 f64 sub-view of a matrix with ld 96 sent as an MPI vector type into a sub-view of one with ld 128, padding untouched");
}

/* The tile above went through UCX's generic datatype: packed, then unpacked. */
static void tile_packed(void)
{
	const unsigned long long bytes = 64 * 48 * sizeof(double);
	unsigned long long packed, unpacked;
	int ok = pack_delta(&packed, &unpacked);

	if (ok) {
		printf("# rank %d: measured: the tile: the CPU packed %llu and unpacked %llu bytes\n",
		       rank, packed, unpacked);
		if (packed != (rank ? 0 : bytes) || unpacked != (rank ? bytes : 0)) {
			diag("expected %llu bytes %s, nothing else", bytes,
			     rank ? "unpacked" : "packed");
			ok = 0;
		}
	}
	result(ok, "pack counter: the tile's vector type (a datatype with gaps) was packed by the CPU: %llu bytes on the sender, unpacked on the receiver",
	       bytes);
}

/* MPI_Put, MPI_Get and MPI_Accumulate on windows over gpubuf buffers. */
static void one_sided(void)
{
	const size_t size = 8 * MIB, plen = 3 * MIB + 11, pdisp = 4097;
	const size_t glen = MIB + 3, gdisp = 4 * MIB + 5, gdst = 17;
	const size_t nacc = 65536, accdisp = 6 * MIB;
	struct gpubuf *wbuf = buffer(size), *lbuf = buffer(size);
	uint8_t *w = gpubuf_ptr(wbuf), *l = gpubuf_ptr(lbuf);
	double *acc_src = (double *)(l + accdisp);
	MPI_Win win;
	int ok;
	size_t i;

	memset(w + accdisp, 0, nacc * sizeof(double));
	if (rank == 1)
		fill(w + gdisp, glen, 1, 9);
	MPI_Win_create(w, (MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

	MPI_Win_fence(0, win);
	if (rank == 0) {
		fill(l + 1, plen, 0, 8);
		MPI_Put(l + 1, (int)plen, MPI_BYTE, 1, (MPI_Aint)pdisp, (int)plen, MPI_BYTE, win);
	}
	MPI_Win_fence(0, win);
	ok = rank != 1 || holds(w + pdisp, plen, 0, 8, "MPI_Put target");
	result(ok, "MPI_Put of %zu bytes into the peer's gpubuf window at displacement %zu", plen, pdisp);

	if (rank == 0)
		MPI_Get(l + gdst, (int)glen, MPI_BYTE, 1, (MPI_Aint)gdisp, (int)glen, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	ok = rank != 0 || holds(l + gdst, glen, 1, 9, "MPI_Get result");
	result(ok, "MPI_Get of %zu bytes from the peer's gpubuf window into a gpubuf buffer", glen);

	/* Both ranks add into rank 1's doubles: the sum is exact in f64. */
	for (i = 0; i < nacc; i++)
		acc_src[i] = (double)((rank + 1) * i);
	MPI_Accumulate(acc_src, (int)nacc, MPI_DOUBLE, 1, (MPI_Aint)accdisp, (int)nacc,
		       MPI_DOUBLE, MPI_SUM, win);
	MPI_Win_fence(0, win);
	ok = 1;
	if (rank == 1) {
		const double *sum = (const double *)(w + accdisp);

		for (i = 0; i < nacc && ok; i++) {
			if (sum[i] != 3.0 * (double)i) {
				diag("accumulated element %zu is %g, expected %g", i, sum[i], 3.0 * i);
				ok = 0;
			}
		}
	}
	result(ok, "MPI_Accumulate (MPI_SUM, %zu doubles) from both ranks into rank 1's gpubuf window", nacc);
	MPI_Win_free(&win);
	gpubuf_unref(wbuf);
	gpubuf_unref(lbuf);
}

/* UCX's first rendezvous may register memory of its own: not counted. */
static struct gpubuf *warm_up(void)
{
	struct gpubuf *warm = buffer(2 * MIB);

	if (rank == 0)
		MPI_Send(gpubuf_ptr(warm), (int)(2 * MIB), MPI_BYTE, 1, 1, MPI_COMM_WORLD);
	else
		MPI_Recv(gpubuf_ptr(warm), (int)(2 * MIB), MPI_BYTE, 0, 1, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	return warm;
}

/*
 * Zero copy: UCX's rendezvous moves a large message by RDMA straight out
 * of (and into) registered user memory, and keeps the registration (an
 * MR, which pins the pages) in its cache after the transfer. gpubuf's own
 * signal shows it: a buffer released while an MR still pins its pages is
 * held by the module and counted in held_bytes (kmod/gpubuf_held.c). So
 * after a fresh 32 MiB gpubuf buffer has been sent, gpubuf_unref() must
 * raise held_bytes by exactly its size on both ranks; a copy through UCX's
 * own buffers would leave it unchanged. The pinned-page count in
 * /proc/vmstat is printed, not asserted: it is machine-wide, and UCX's
 * bounce buffers move it too (the PFNMAP control below).
 *
 * uncached: UCX runs with its registration caches off (node.sh's control),
 * so the MRs are gone after the transfer and nothing may be held.
 */
static void zero_copy_held(int uncached)
{
	const size_t len = 32 * MIB, pages = len / 4096;
	struct gpubuf *warm = warm_up(), *buf;
	unsigned long long held_before, held_after;
	long long pins_before, pins_during;
	long long want = uncached ? 0 : (long long)len, rose;
	int ok = 1;
	uint8_t *p;

	buf = buffer(len);
	p = gpubuf_ptr(buf);
	if (rank == 0)
		fill(p, len, 0, 5);
	pins_before = gb_pins_now();
	if (rank == 0)
		MPI_Send(p, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
	else
		MPI_Recv(p, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	pins_during = gb_pins_now();
	if (rank == 1)
		ok &= holds(p, len, 0, 5, "zero-copy message");
	printf("# rank %d: measured: pinned pages %+lld (machine-wide) while a %zu-page gpubuf buffer was sent (%s)\n",
	       rank, pins_during - pins_before, pages, rank ? "receiver" : "sender");

	/* No MPI call between the two reads: the difference is buf's. */
	held_before = gb_stat("held_bytes");
	gpubuf_unref(buf);
	held_after = gb_stat("held_bytes");
	rose = (long long)(held_after - held_before);
	if (held_before == ~0ULL || held_after == ~0ULL) {
		diag("no " GPUBUF_SYSFS "held_bytes to read");
		ok = 0;
	} else {
		printf("# rank %d: measured: held_bytes %llu -> %llu (%+lld) at gpubuf_unref() of the 32 MiB buffer (%s)\n",
		       rank, held_before, held_after, rose, rank ? "receiver" : "sender");
		if (rose != want) {
			diag("held_bytes rose by %lld at the free, expected %lld", rose, want);
			ok = 0;
		}
	}
	fflush(stdout);
	gpubuf_unref(warm);
	MPI_Barrier(MPI_COMM_WORLD);
	if (uncached)
		result(ok, "zero copy, control: with UCX's registration caches off, freeing the 32 MiB buffer after its message left nothing held (held_bytes +0 on both ranks)");
	else
		result(ok, "zero copy: the 32 MiB gpubuf message was registered in place on both ranks (held_bytes rose by exactly its 32 MiB at gpubuf_unref() while UCX's cache kept the MR)");
}

/*
 * The control: 1 MiB of a VM_PFNMAP mapping (gpubuf_pinprobe.ko's) cannot
 * be pinned, so UCX cannot register it and must take a copy path. What it
 * did is recorded (the pinned-page counts on both ranks: a copy path
 * registers UCX's own bounce fragments, not the mapping). The check is that
 * the data either arrived intact or the transfer failed with an error:
 * never silently wrong.
 */
static int pfnmap_control(void)
{
	const size_t len = PINPROBE_PFNMAP_BYTES;
	long long before, after;
	struct gpubuf *dst = NULL, *warm;
	int rc = MPI_SUCCESS, ok = 1;
	uint8_t *p = NULL;

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (rank == 0) {
		p = gb_pfnmap_control(len);
		if (p == MAP_FAILED) {
			diag("no PFNMAP control mapping: %s", strerror(errno));
			ok = 0;
			p = NULL;
		}
	} else {
		dst = buffer(len);
	}
	if (!result(ok, "a VM_PFNMAP mapping of %zu bytes (gpubuf_pinprobe.ko) on rank 0", len))
		return 1;
	warm = warm_up();
	if (rank == 0)
		fill(p, len, 0, 3);
	before = gb_pins_now();
	if (rank == 0)
		rc = MPI_Send(p, (int)len, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
	else
		rc = MPI_Recv(gpubuf_ptr(dst), (int)len, MPI_BYTE, 0, 3, MPI_COMM_WORLD,
			      MPI_STATUS_IGNORE);
	after = gb_pins_now();
	if (rc != MPI_SUCCESS) {
		char text[MPI_MAX_ERROR_STRING];
		int n;

		MPI_Error_string(rc, text, &n);
		printf("# rank %d: measured: the transfer failed: %s\n", rank, text);
	} else if (rank == 1) {
		ok = holds(gpubuf_ptr(dst), len, 0, 3, "PFNMAP message");
		printf("# rank 1: measured: the PFNMAP message arrived %s\n",
		       ok ? "intact (UCX took a copy path)" : "corrupted");
	}
	printf("# rank %d: measured: pinned pages %+lld during the PFNMAP transfer\n",
	       rank, after - before);
	fflush(stdout);
	result(ok, "PFNMAP control: the message arrived intact or the transfer failed with an error");
	gpubuf_unref(warm);
	if (dst)
		gpubuf_unref(dst);
	if (p)
		munmap(p, len);
	return 0;
}

int main(int argc, char **argv)
{
	int pfnmap = argc > 1 && !strcmp(argv[1], "--pfnmap");
	int host = argc > 1 && !strcmp(argv[1], "--host");
	int zero_copy = argc > 1 && !strcmp(argv[1], "--zero-copy");
	int uncached = zero_copy && argc > 2 && !strcmp(argv[2], "--uncached");
	enum gpubuf_backend want = host ? GPUBUF_BACKEND_MEMFD : GPUBUF_BACKEND_MODULE;
	int size, rc;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rank == 0)
		printf("1..%d\n", pfnmap || zero_copy ? 3 : host ? 15 : 17);
	rc = gpubuf_open(&ctx, 0);
	if (!result(size == 2 && rc == 0 && gpubuf_backend(ctx) == want,
		    "two ranks, each with %s buffers (%d ranks, gpubuf_open: %s)",
		    host ? "memfd" : "gpubuf.ko", size, gpubuf_strerror(rc)))
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (pfnmap) {
		pfnmap_control();
	} else if (zero_copy) {
		zero_copy_held(uncached);
		packed_nothing("the contiguous 2 MiB and 32 MiB messages");
	} else {
		static const size_t small[] = { 1, 100, 4096, 8193 };
		static const size_t large[] = { MIB + 7, 4 * MIB + 3, 16 * MIB + 5 };
		size_t i;

		for (i = 0; i < sizeof(small) / sizeof(small[0]); i++)
			two_sided(small[i], "small: eager");
		for (i = 0; i < sizeof(large) / sizeof(large[0]); i++)
			two_sided(large[i], "large: rendezvous");
		packed_nothing("the 14 contiguous send/recv messages above");
		matrix_tile();
		tile_packed();
		one_sided();
		packed_nothing("MPI_Put, MPI_Get and MPI_Accumulate");
		/* No RDMA on one machine: the guests' run checks zero copy. */
		if (!host) {
			zero_copy_held(0);
			packed_nothing("the contiguous 2 MiB and 32 MiB messages");
		}
	}
	gpubuf_close(ctx);
	MPI_Finalize();
	if (!pfnmap && !host)
		printf("# rank %d: measured: held_bytes %llu after MPI_Finalize\n",
		       rank, gb_stat("held_bytes"));
	return 0;
}
