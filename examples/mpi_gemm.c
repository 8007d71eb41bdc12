// SPDX-License-Identifier: MIT
/*
 * A distributed GEMM, C = A B, over MPI with every matrix in gpubuf memory:
 * the example to copy for moving matrices between machines without copies.
 *
 * Ring algorithm on P ranks: rank r owns a block of rows of A and C and a
 * block of rows of B. In each of P steps it multiplies the panel of its A
 * that matches the B block it holds (an O(1) sub-view, no copy) into its C,
 * then passes the B block to the next rank while receiving the previous
 * rank's.
 *
 * The blocks that travel, B's and C's, are gpubuf matrices whose rows are
 * not padded (ld == cols): the first rows of such a block are one
 * contiguous run of memory, and MPI sends them as rows * cols doubles
 * straight from the gpubuf pages. Over UCX on RDMA hardware a block above
 * UCX's rendezvous threshold goes by zero-copy rendezvous, the NIC reading
 * and writing the gpubuf pages; a smaller one is copied through UCX's
 * eager buffers, as any small message is. A stays on its rank: its rows
 * are padded to 256 bytes, and its panels are sub-views.
 *
 * Why not send padded rows with an MPI_Type_vector? A datatype with gaps
 * is not sent in place: Open MPI 4.1's pml_ucx hands it to UCX as a
 * generic datatype, and the CPU packs every byte into UCX's buffers and
 * unpacks it on the other side. With padded blocks this example packed
 * 35,840 and 66,560 bytes on its two ranks at the default size; now it
 * packs none (tests/cluster/ucx_pack_count.c counts them in make check).
 *
 * The same memory could be handed to a GPU (gpubuf_cuda_matrix_view(),
 * gpubuf_vk_matrix_view()) for the local multiply; here the CPU does it so
 * the example runs anywhere. At the end rank 0 gathers C and checks it
 * against a single-process reference within a stated rounding bound.
 *
 *   mpicc -o mpi_gemm mpi_gemm.c $(pkg-config --cflags --libs gpubuf)
 *   mpirun -np 2 ./mpi_gemm [M N K]
 */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <gpubuf.h>

/* Row alignment of A: 256 bytes, so its ld is padded past cols. */
#define ROW_ALIGN 256
/* The blocks that travel: rows aligned to one element, so ld == cols. */
#define UNPADDED sizeof(double)

static double a_elem(size_t i, size_t k) { return (double)((i * 7 + k * 3) % 11) - 5.0; }
static double b_elem(size_t k, size_t j) { return (double)((k * 5 + j * 2) % 13) / 3.0 - 1.5; }

/* First row of block r when n rows are split over p ranks. */
static size_t block_start(size_t n, int p, int r)
{
	return n / (size_t)p * (size_t)r + ((size_t)r < n % (size_t)p ? (size_t)r : n % (size_t)p);
}

static size_t block_rows(size_t n, int p, int r)
{
	return block_start(n, p, r + 1) - block_start(n, p, r);
}

static double *at(const struct gpubuf_matrix *m, size_t r, size_t c)
{
	return (double *)gpubuf_matrix_data(m) + r * m->ld + c;
}

static int alloc(struct gpubuf_ctx *ctx, size_t rows, size_t cols, size_t align,
		 struct gpubuf_matrix *m)
{
	/* A zero-row block still gets a valid one-row allocation. */
	int rc = gpubuf_matrix_alloc(ctx, GPUBUF_DTYPE_F64, rows ? rows : 1, cols,
				     GPUBUF_ROW_MAJOR, align, m);

	if (rc) {
		fprintf(stderr, "mpi_gemm: gpubuf_matrix_alloc(%zu x %zu): %s\n",
			rows, cols, gpubuf_strerror(rc));
	} else if (align == UNPADDED && (m->ld != cols || rows * cols > INT_MAX)) {
		fprintf(stderr, "mpi_gemm: a %zu x %zu block is not one message (ld %zu)\n",
			rows, cols, m->ld);
		gpubuf_matrix_release(m);
		rc = -1;
	}
	return rc;
}

/*
 * Elements in the first `rows` rows of an unpadded block (ld == cols): a
 * count of MPI_DOUBLE, one contiguous message sent in place.
 */
static int block_count(size_t rows, const struct gpubuf_matrix *m)
{
	return (int)(rows * m->cols);
}

/* C += A_panel B_block on the CPU, straight on the gpubuf views. */
static void local_gemm(const struct gpubuf_matrix *a, const struct gpubuf_matrix *b,
		       size_t kb, const struct gpubuf_matrix *c)
{
	for (size_t i = 0; i < c->rows; i++)
		for (size_t k = 0; k < kb; k++) {
			double aik = *at(a, i, k);

			for (size_t j = 0; j < c->cols; j++)
				*at(c, i, j) += aik * *at(b, k, j);
		}
}

/* Rank 0: the gathered C against C computed in one process. */
static int check(const struct gpubuf_matrix *c, size_t m, size_t n, size_t k, int p)
{
	const double u = 0x1p-53;
	double worst = 0;

	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++) {
			double ref = 0, mag = 0;

			for (size_t l = 0; l < k; l++) {
				ref += a_elem(i, l) * b_elem(l, j);
				mag += fabs(a_elem(i, l) * b_elem(l, j));
			}
			/* Both sums round at most k times: 2(k + 2)u sum|a||b|. */
			double bound = 2.0 * (double)(k + 2) * u * mag + 1e-300;
			double err = fabs(*at(c, i, j) - ref) / bound;

			if (!(err <= 1.0)) {
				fprintf(stderr, "mpi_gemm: C(%zu,%zu) = %.17g, reference %.17g\n",
					i, j, *at(c, i, j), ref);
				return 1;
			}
			worst = err > worst ? err : worst;
		}
	printf("mpi_gemm: C = A B, %zu x %zu x %zu on %d ranks (ring), matrices in gpubuf memory, "
	       "blocks sent in place as contiguous messages: matches the single-process reference, "
	       "max error %.3g of the bound\n",
	       m, n, k, p, worst);
	return 0;
}

int main(int argc, char **argv)
{
	size_t m = 96, n = 80, k = 112;
	struct gpubuf_matrix a, c, b[2], whole;
	struct gpubuf_ctx *ctx;
	int rank, p, rc, cur = 0, bad = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &p);
	if (argc == 4) {
		m = strtoul(argv[1], NULL, 0);
		n = strtoul(argv[2], NULL, 0);
		k = strtoul(argv[3], NULL, 0);
	}
	rc = gpubuf_open(&ctx, 0);
	if (rc) {
		fprintf(stderr, "mpi_gemm: gpubuf_open: %s\n", gpubuf_strerror(rc));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}

	size_t mr = block_rows(m, p, rank), m0 = block_start(m, p, rank);
	size_t kmax = block_rows(k, p, 0);

	if (alloc(ctx, mr, k, ROW_ALIGN, &a) || alloc(ctx, mr, n, UNPADDED, &c) ||
	    alloc(ctx, kmax, n, UNPADDED, &b[0]) || alloc(ctx, kmax, n, UNPADDED, &b[1]))
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t i = 0; i < mr; i++) {
		for (size_t l = 0; l < k; l++)
			*at(&a, i, l) = a_elem(m0 + i, l);
		for (size_t j = 0; j < n; j++)
			*at(&c, i, j) = 0;
	}
	for (size_t l = 0; l < block_rows(k, p, rank); l++)
		for (size_t j = 0; j < n; j++)
			*at(&b[0], l, j) = b_elem(block_start(k, p, rank) + l, j);

	/* Step s: this rank holds B block (rank - s) mod p. */
	for (int s = 0; s < p; s++) {
		int blk = (rank - s + p) % p, next = (rank + 1) % p, prev = (rank - 1 + p) % p;
		size_t kb = block_rows(k, p, blk);
		struct gpubuf_matrix panel;

		if (kb && mr) {
			rc = gpubuf_matrix_sub(&a, 0, block_start(k, p, blk), mr, kb, &panel);
			if (rc) {
				fprintf(stderr, "mpi_gemm: gpubuf_matrix_sub: %s\n", gpubuf_strerror(rc));
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
			local_gemm(&panel, &b[cur], kb, &c);
		}
		if (s + 1 < p) {
			size_t kin = block_rows(k, p, (blk - 1 + p) % p);

			MPI_Sendrecv(gpubuf_matrix_data(&b[cur]), block_count(kb, &b[cur]),
				     MPI_DOUBLE, next, s,
				     gpubuf_matrix_data(&b[!cur]), block_count(kin, &b[!cur]),
				     MPI_DOUBLE, prev, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			cur = !cur;
		}
	}

	/* Gather the blocks of C into one unpadded matrix on rank 0. */
	if (rank == 0) {
		if (alloc(ctx, m, n, UNPADDED, &whole))
			MPI_Abort(MPI_COMM_WORLD, 1);
		for (int r = 1; r < p; r++) {
			size_t rows = block_rows(m, p, r);

			if (rows)
				MPI_Recv(at(&whole, block_start(m, p, r), 0), block_count(rows, &whole),
					 MPI_DOUBLE, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
		for (size_t i = 0; i < mr; i++)
			for (size_t j = 0; j < n; j++)
				*at(&whole, i, j) = *at(&c, i, j);
		bad = check(&whole, m, n, k, p);
		gpubuf_matrix_release(&whole);
	} else if (mr) {
		MPI_Send(gpubuf_matrix_data(&c), block_count(mr, &c), MPI_DOUBLE, 0, 99,
			 MPI_COMM_WORLD);
	}
	MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	gpubuf_matrix_release(&a);
	gpubuf_matrix_release(&c);
	gpubuf_matrix_release(&b[0]);
	gpubuf_matrix_release(&b[1]);
	gpubuf_close(ctx);
	MPI_Finalize();
	return bad;
}
