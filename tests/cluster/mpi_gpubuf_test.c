// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpubuf memory moved by Open MPI over UCX between the two cluster guests
 * (tests/cluster/run.sh). Every buffer is a gpubuf buffer or matrix from
 * libgpubuf. Rank 0 prints TAP; each result is the logical AND of both
 * ranks' checks, and a failing rank says why on a "#" line.
 *
 *   mpi-gpubuf-test            two-sided, derived-datatype, one-sided and
 *                              zero-copy (pinned pages) checks
 *   mpi-gpubuf-test --pfnmap   the control: a PFNMAP mapping sent the same
 *                              way (its own mpirun, in case UCX aborts)
 *   mpi-gpubuf-test --host     make check's short run: two ranks on one
 *                              machine, memfd buffers, UCX's shared-memory
 *                              and TCP transports; no RDMA, so no zero-copy
 *                              check (the two guests' run has it)
 */
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
 * A 64 x 48 f64 tile of a padded matrix sent as an MPI vector type straight
 * from the view into a sub-view of the peer's matrix with another ld;
 * everything outside the tile keeps its signalling NaN.
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

/*
 * Zero copy: UCX's rendezvous moves a large message with RDMA straight out
 * of (and into) registered user memory, and ibv_reg_mr pins it with
 * FOLL_LONGTERM; a bounce through UCX's own buffers would pin nothing new.
 * So each rank's pinned-page count must rise by at least the buffer's pages
 * while it is registered (UCX keeps it in its registration cache).
 */
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

static void zero_copy_pins(void)
{
	const size_t len = 32 * MIB, pages = len / 4096;
	struct gpubuf *warm = warm_up(), *buf;
	long long before, during, after;
	int ok = 1;
	uint8_t *p;

	buf = buffer(len);
	p = gpubuf_ptr(buf);
	if (rank == 0)
		fill(p, len, 0, 5);
	before = gb_pins_now();
	if (rank == 0)
		MPI_Send(p, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
	else
		MPI_Recv(p, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	during = gb_pins_now();
	if (rank == 1)
		ok &= holds(p, len, 0, 5, "zero-copy message");
	if (before < 0) {
		diag("no nr_foll_pin_* counters in /proc/vmstat");
		ok = 0;
	} else if (during - before < (long long)pages) {
		diag("pinned pages rose by %lld during the %zu-page transfer: not registered in place",
		     during - before, pages);
		ok = 0;
	}
	printf("# rank %d: measured: pinned pages +%lld while a %zu-page gpubuf buffer was sent (%s)\n",
	       rank, during - before, pages, rank ? "receiver" : "sender");
	gpubuf_unref(buf);
	gpubuf_unref(warm);
	MPI_Barrier(MPI_COMM_WORLD);
	after = gb_pins_now();
	printf("# rank %d: measured: pinned pages %+lld against the start after the buffer was freed\n",
	       rank, after - before);
	fflush(stdout);
	result(ok, "zero copy: a 32 MiB gpubuf message was registered in place on both ranks (pinned pages rose by its 8192 pages)");
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
	enum gpubuf_backend want = host ? GPUBUF_BACKEND_MEMFD : GPUBUF_BACKEND_MODULE;
	int size, rc;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rank == 0)
		printf("1..%d\n", pfnmap ? 3 : host ? 12 : 13);
	rc = gpubuf_open(&ctx, 0);
	if (!result(size == 2 && rc == 0 && gpubuf_backend(ctx) == want,
		    "two ranks, each with %s buffers (%d ranks, gpubuf_open: %s)",
		    host ? "memfd" : "gpubuf.ko", size, gpubuf_strerror(rc)))
		MPI_Abort(MPI_COMM_WORLD, 1);
	if (pfnmap) {
		pfnmap_control();
	} else {
		static const size_t small[] = { 1, 100, 4096, 8193 };
		static const size_t large[] = { MIB + 7, 4 * MIB + 3, 16 * MIB + 5 };
		size_t i;

		for (i = 0; i < sizeof(small) / sizeof(small[0]); i++)
			two_sided(small[i], "small: eager");
		for (i = 0; i < sizeof(large) / sizeof(large[0]); i++)
			two_sided(large[i], "large: rendezvous");
		matrix_tile();
		one_sided();
		/* No RDMA on one machine: the guests' run checks zero copy. */
		if (!host)
			zero_copy_pins();
	}
	gpubuf_close(ctx);
	MPI_Finalize();
	return 0;
}
