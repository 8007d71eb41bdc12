#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A distributed GEMM, C = A B, with mpi4py and every matrix in gpubuf memory.

The Python twin of examples/mpi_gemm.c, and the example to copy: a ring on
P ranks. Rank r owns a block of rows of A and C and a block of rows of B;
in each of P steps it multiplies the panel of its A that matches the B
block it holds (an O(1) sub-view) into its C with NumPy, working on the
gpubuf memory itself (np.asarray is a view, not a copy), then passes the B
block on.

The blocks that travel, B's and C's, have rows that are not padded
(align=8, so ld == cols): the first rows of one are a contiguous run of the
buffer's memory, which MPI sends in place as rows * cols doubles. Over UCX
on RDMA hardware a block above UCX's rendezvous threshold goes by zero-copy
rendezvous, the NIC reading and writing the gpubuf pages; a smaller one is
copied through UCX's eager buffers, as any small message is. A stays on its
rank with rows padded to 256 bytes. A padded block sent with a vector
datatype would not go in place: Open MPI 4.1's pml_ucx hands a datatype
with gaps to UCX as a generic datatype, whose every byte the CPU packs and
unpacks (tests/cluster/ucx_pack_count.c counts them: 0 here).

    mpirun -np 2 python3 mpi_gemm.py [M N K]

Needs Debian's python3-mpi4py and python3-numpy, and the gpubuf package.
Rank 0 gathers C and checks it against NumPy's product of the whole
matrices in one process, within a rounding bound that holds for any order
of summation.
"""
import sys

import mpi4py
import numpy as np
from mpi4py import MPI

import gpubuf

ROW_ALIGN = 256     # bytes: A's rows padded to it, so its ld > cols
UNPADDED = 8        # the blocks that travel: ld == cols


def block_start(n, p, r):
    """First row of block r when n rows are split over p ranks."""
    return n // p * r + min(r, n % p)


def block_rows(n, p, r):
    return block_start(n, p, r + 1) - block_start(n, p, r)


def a_elem(i, k):
    return (i * 7 + k * 3) % 11 - 5.0


def b_elem(k, j):
    return (k * 5 + j * 2) % 13 / 3.0 - 1.5


def message(m, rows=None):
    """An mpi4py message for the first `rows` rows of a row-major float64
    gpubuf matrix (a sub-view too) whose rows are not padded: one
    contiguous run of the buffer's memory from the matrix's first element,
    rows * cols doubles, sent in place."""
    rows = m.shape[0] if rows is None else rows
    assert m.order == "C" and m.dtype == "float64" and m.ld == m.shape[1]
    count = rows * m.shape[1]
    return [memoryview(m.buffer)[m.offset:m.offset + 8 * count], count, MPI.DOUBLE]


def exchange(comm, send, send_rows, recv, recv_rows, next_rank, prev_rank, tag):
    """Pass one B block on and take the previous rank's, in place."""
    comm.Sendrecv(message(send, send_rows), dest=next_rank, sendtag=tag,
                  recvbuf=message(recv, recv_rows), source=prev_rank, recvtag=tag)


def check(c, m, n, k, p):
    """Rank 0: the gathered C against one process's product."""
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    l_rows = np.arange(k)[None, :]
    l_cols = np.arange(k)[:, None]
    a = a_elem(i, l_rows)
    b = b_elem(l_cols, j)
    ref = a @ b
    # Each sum rounds at most k times: |error| <= 2(k + 2)u sum|a||b|.
    bound = 2.0 * (k + 2) * 2.0 ** -53 * (np.abs(a) @ np.abs(b)) + 1e-300
    err = np.abs(np.asarray(c) - ref) / bound
    if not np.all(err <= 1.0):
        bad = np.unravel_index(np.argmax(np.where(np.isnan(err), np.inf, err)), err.shape)
        print("mpi_gemm.py: C%s = %.17g, reference %.17g"
              % (bad, np.asarray(c)[bad], ref[bad]), file=sys.stderr)
        return 1
    print("mpi_gemm.py: C = A B, %d x %d x %d on %d ranks (ring, mpi4py %s), "
          "matrices in gpubuf memory, blocks sent in place as contiguous "
          "messages: matches the single-process reference, max error %.3g "
          "of the bound"
          % (m, n, k, p, mpi4py.__version__, err.max()))
    return 0


def main():
    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    m, n, k = (int(x) for x in sys.argv[1:4]) if len(sys.argv) == 4 else (96, 80, 112)

    with gpubuf.open() as ctx:
        def alloc(rows, cols, align=UNPADDED):
            # A zero-row block still gets a valid one-row allocation.
            return ctx.zeros((max(rows, 1), cols), "float64", align=align)

        mr, m0 = block_rows(m, p, rank), block_start(m, p, rank)
        a, c = alloc(mr, k, ROW_ALIGN), alloc(mr, n)
        b = [alloc(block_rows(k, p, 0), n), alloc(block_rows(k, p, 0), n)]

        np.asarray(a)[:mr] = a_elem(np.arange(m0, m0 + mr)[:, None], np.arange(k)[None, :])
        k0, kb = block_start(k, p, rank), block_rows(k, p, rank)
        np.asarray(b[0])[:kb] = b_elem(np.arange(k0, k0 + kb)[:, None], np.arange(n)[None, :])

        cur = 0
        for s in range(p):       # step s: this rank holds B block (rank - s) mod p
            blk = (rank - s) % p
            kb = block_rows(k, p, blk)
            if kb and mr:
                panel = a[0:mr, block_start(k, p, blk):block_start(k, p, blk) + kb]
                np.asarray(c)[:mr] += np.asarray(panel) @ np.asarray(b[cur])[:kb]
            if s + 1 < p:
                exchange(comm, b[cur], kb, b[1 - cur], block_rows(k, p, (blk - 1) % p),
                         (rank + 1) % p, (rank - 1) % p, s)
                cur = 1 - cur

        bad = 0
        if rank == 0:
            whole = alloc(m, n)
            for r in range(1, p):
                rows = block_rows(m, p, r)
                if rows:
                    dst = whole[block_start(m, p, r):block_start(m, p, r) + rows, 0:n]
                    comm.Recv(message(dst), source=r, tag=99)
            np.asarray(whole)[:mr] = np.asarray(c)[:mr]
            bad = check(whole[0:m, 0:n], m, n, k, p)
        elif mr:
            comm.Send(message(c, mr), dest=0, tag=99)
        bad = comm.bcast(bad, root=0)
    return bad


if __name__ == "__main__":
    sys.exit(main())
