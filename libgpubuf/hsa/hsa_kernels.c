// SPDX-License-Identifier: MIT
/*
 * gpubuf_hsa_gemv() / gpubuf_hsa_gemm(): the embedded AMD code objects
 * (hsa_code.h) dispatched through an HSA AQL queue.
 *
 * Per GPU agent, on first use and then for the life of the process (like
 * the CUDA module cache; the runtime is never shut down), hsa_kload.c
 * loads the code object, creates one AQL queue shared by every thread
 * and a ring of kernarg slots; dispatches read that state without a lock.
 * A queue the runtime stopped on an error (its callback, hsa_kload.c)
 * ends every wait on it within GPUBUF_HSAK_WAIT_MS: the dispatches that
 * learn of it return -EIO, and the next one makes a new queue.
 *
 * Operands are checked (kernel_args.c, the same checks as CUDA's) before
 * the runtime is touched. Never run on AMD hardware: the dispatch path is
 * checked against tests/hsastub only.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa/hsa_kernels.h"
#include "core/internal.h"
#include "kernels/kernel_args.h"

#if defined(GPUBUF_HAVE_HSA) && defined(GPUBUF_HAVE_HSA_KERNELS)

/* ---- dispatch ----------------------------------------------------------- */

/* Headers: ordered after every earlier packet, host memory visible both ways. */
#define GPUBUF_HSAK_HEADER(type)					\
	(((type) << HSA_PACKET_HEADER_TYPE) |				\
	 (1 << HSA_PACKET_HEADER_BARRIER) |				\
	 (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE) | \
	 (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE))

/*
 * The queue failed: say so, once per dispatch that learns it, and mark
 * the failure reported, after which the next dispatch renews the queue.
 * -EIO whatever the status: the kernel or packet failed, not the call.
 */
static int gpubuf_hsak_dead(const struct gpubuf_hsa *hsa,
			    struct gpubuf_hsak_agent *a)
{
	hsa_status_t s = (hsa_status_t)atomic_load(&a->qstatus);
	const char *text = NULL;
	int dead = GPUBUF_HSAK_Q_DEAD;

	atomic_compare_exchange_strong(&a->qstate, &dead,
				       GPUBUF_HSAK_Q_REPORTED);
	if (hsa->hsa_status_string(s, &text) != HSA_STATUS_SUCCESS || !text)
		text = "unknown HSA status";
	gpubuf_error_set("the HSA queue of GPU agent %d failed (0x%x): %s; its unfinished kernels never complete, the next dispatch makes a new queue",
			 a->gpu, (unsigned int)s, text);
	return -EIO;
}

/*
 * Count this dispatch as a user of agent gpu's queue, if it is live.
 * A failure nobody has been told of yet is this call's error; one that
 * was reported makes the queue be renewed first.
 */
static int gpubuf_hsak_enter(const struct gpubuf_hsa *hsa, int gpu,
			     struct gpubuf_hsak_agent **out)
{
	struct gpubuf_hsak_agent *a;
	int err, st;

	err = gpubuf_hsak_get(hsa, gpu, &a);
	while (!err) {
		/* Counted before the state is read: see gpubuf_hsak_renew(). */
		atomic_fetch_add(&a->users, 1);
		st = atomic_load(&a->qstate);
		if (st == GPUBUF_HSAK_Q_LIVE) {
			*out = a;
			return 0;
		}
		atomic_fetch_sub(&a->users, 1);
		if (st == GPUBUF_HSAK_Q_DEAD)
			return gpubuf_hsak_dead(hsa, a);
		err = gpubuf_hsak_renew(hsa, a);
	}
	return err;
}

static void gpubuf_hsak_leave(struct gpubuf_hsak_agent *a)
{
	atomic_fetch_sub_explicit(&a->users, 1, memory_order_release);
}

static bool gpubuf_hsak_live(struct gpubuf_hsak_agent *a)
{
	return atomic_load(&a->qstate) == GPUBUF_HSAK_Q_LIVE;
}

/*
 * Wait until sig drops below 1, in rounds of GPUBUF_HSAK_WAIT_MS (a
 * wait may also return early): 0, or -EIO once the queue failed, whose
 * packets then never complete.
 */
static int gpubuf_hsak_wait(const struct gpubuf_hsa *hsa,
			    struct gpubuf_hsak_agent *a, hsa_signal_t sig)
{
	uint64_t ticks = a->wait_ticks;

	for (;;) {
		if (hsa->hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_LT,
						   1, ticks,
						   HSA_WAIT_STATE_BLOCKED) < 1)
			return 0;
		if (!ticks)
			return gpubuf_hsak_dead(hsa, a);
		/* Failed: one more look, the kernel may have completed first. */
		if (!gpubuf_hsak_live(a))
			ticks = 0;
	}
}

/*
 * Take a kernarg slot for a dispatch whose token is mine: wait until its
 * last kernel has completed (a synchronous caller clears its own token;
 * an asynchronous kernel's signal is waited for here and destroyed).
 * The slot's last packet was handed over before ours could be reserved,
 * so every wait here ends, or the queue failed: -EIO.
 */
static int gpubuf_hsak_claim(const struct gpubuf_hsa *hsa,
			     struct gpubuf_hsak_agent *a,
			     _Atomic uint64_t *token, uint64_t mine)
{
	for (;;) {
		uint64_t t = atomic_load_explicit(token, memory_order_acquire);
		int err = 0;

		if (t == GPUBUF_HSAK_SYNC) {
			if (!gpubuf_hsak_live(a))
				return gpubuf_hsak_dead(hsa, a);
			sched_yield();
			continue;
		}
		if (t != GPUBUF_HSAK_FREE)
			err = gpubuf_hsak_wait(hsa, a, (hsa_signal_t){ t });
		if (err)
			return err;
		if (atomic_compare_exchange_strong(token, &t, mine)) {
			if (t != GPUBUF_HSAK_FREE)
				hsa->hsa_signal_destroy((hsa_signal_t){ t });
			return 0;
		}
	}
}

/* Room in the ring for packets up to last, unless the queue failed. */
static int gpubuf_hsak_room(const struct gpubuf_hsa *hsa,
			    struct gpubuf_hsak_agent *a, uint64_t last)
{
	hsa_queue_t *q = a->queue;

	while (last - hsa->hsa_queue_load_read_index_scacquire(q) >= q->size) {
		if (!gpubuf_hsak_live(a))
			return gpubuf_hsak_dead(hsa, a);
		sched_yield();
	}
	return 0;
}

/* Hand a filled packet over: its first 32 bits last, atomically. */
static void gpubuf_hsak_publish(void *pkt, uint16_t header, uint16_t setup)
{
	__atomic_store_n((uint32_t *)pkt, header | (uint32_t)setup << 16,
			 __ATOMIC_RELEASE);
}

/*
 * Kernel k with args over blocks_x x blocks_y groups of 256 work-items on
 * agent gpu. signal 0: the kernel completes a signal of the library's
 * own, waited for here. Else the kernel completes the caller's signal,
 * and a barrier-AND packet behind it, which (barrier bit) starts only
 * once the kernel has completed, completes the library's signal, the
 * last use of that signal by the packet processor: the slot's next user
 * may then wait for it and destroy it.
 */
static int gpubuf_hsak_run(int gpu, enum gpubuf_hsa_kernel k,
			   const void *args, uint64_t blocks_x,
			   uint64_t blocks_y, uint64_t signal)
{
	const struct gpubuf_hsa *hsa;
	struct gpubuf_hsak_agent *a = NULL;	/* gcc -O2 loses it in enter() */
	hsa_kernel_dispatch_packet_t *pkt;
	hsa_barrier_and_packet_t *bar = NULL;	/* set and used only with a signal */
	_Atomic uint64_t *token;
	uint64_t id, n = signal ? 2 : 1, max_blocks, ring;
	hsa_signal_t done;
	hsa_queue_t *q;
	void *kernarg;
	hsa_status_t s;
	int err;

	err = gpubuf_hsa_get(&hsa);
	if (!err)
		err = gpubuf_hsak_enter(hsa, gpu, &a);
	if (err)
		return err;
	q = a->queue;
	ring = 2 * (uint64_t)q->size;
	/* Grids count work-items and may not exceed grid_max in all. */
	max_blocks = a->grid_max / GPUBUF_HSA_THREADS;
	if (!max_blocks)
		max_blocks = 1;
	if (blocks_x > max_blocks)
		blocks_x = max_blocks;
	if (blocks_y > max_blocks / blocks_x)
		blocks_y = max_blocks / blocks_x;
	s = hsa->hsa_signal_create(1, 0, NULL, &done);
	if (s != HSA_STATUS_SUCCESS) {
		err = gpubuf_hsa_fail(hsa, s, "hsa_signal_create");
		goto out;
	}
	/*
	 * From here on only a failed queue stops us: reserved packets must
	 * be filled, but a failed queue runs none of them again.
	 */
	id = hsa->hsa_queue_add_write_index_scacq_screl(q, n);
	token = &a->token[id % ring];
	err = gpubuf_hsak_room(hsa, a, id + n - 1);
	if (!err)
		err = gpubuf_hsak_claim(hsa, a, token,
					signal ? done.handle : GPUBUF_HSAK_SYNC);
	if (err) {
		hsa->hsa_signal_destroy(done);	/* no packet names it */
		goto out;
	}
	kernarg = a->kernarg + (id % ring) * GPUBUF_HSAK_KERNARG_SLOT;
	memcpy(kernarg, args, gpubuf_hsa_kernels[k].kernarg_size);
	pkt = (hsa_kernel_dispatch_packet_t *)q->base_address +
	      (id & (q->size - 1));
	pkt->workgroup_size_x = GPUBUF_HSA_THREADS;
	pkt->workgroup_size_y = 1;
	pkt->workgroup_size_z = 1;
	pkt->reserved0 = 0;
	pkt->grid_size_x = (uint32_t)(blocks_x * GPUBUF_HSA_THREADS);
	pkt->grid_size_y = (uint32_t)blocks_y;
	pkt->grid_size_z = 1;
	pkt->private_segment_size = a->k[k].private_segment_size;
	pkt->group_segment_size = a->k[k].group_segment_size;
	pkt->kernel_object = a->k[k].object;
	pkt->kernarg_address = kernarg;
	pkt->reserved2 = 0;
	pkt->completion_signal.handle = signal ? signal : done.handle;
	if (signal) {
		bar = (hsa_barrier_and_packet_t *)q->base_address +
		      ((id + 1) & (q->size - 1));
		/* No dependencies: the barrier bit orders it after the kernel. */
		memset((char *)bar + 4, 0, sizeof(*bar) - 4);
		bar->completion_signal = done;
	}
	gpubuf_hsak_publish(pkt, GPUBUF_HSAK_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH),
			    blocks_y > 1 ? 2 : 1);
	if (signal)
		gpubuf_hsak_publish(bar, GPUBUF_HSAK_HEADER(HSA_PACKET_TYPE_BARRIER_AND),
				    0);
	hsa->hsa_signal_store_screlease(q->doorbell_signal,
					(hsa_signal_value_t)(id + n - 1));
	if (signal)
		goto out;	/* done now belongs to the slot */
	err = gpubuf_hsak_wait(hsa, a, done);
	if (err) {
		/* The failed queue names done: renewing it destroys both. */
		atomic_store_explicit(token, done.handle, memory_order_release);
		goto out;
	}
	hsa->hsa_signal_destroy(done);
	atomic_store_explicit(token, GPUBUF_HSAK_FREE, memory_order_release);
out:
	gpubuf_hsak_leave(a);
	return err;
}

GPUBUF_EXPORT int gpubuf_hsa_gemv(double alpha,
				  const struct gpubuf_hsa_matrix *a,
				  const struct gpubuf_hsa_matrix *x,
				  double beta,
				  const struct gpubuf_hsa_matrix *y,
				  uint64_t signal)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemv_args g;
	const struct gpubuf_hsa *hsa;
	struct gpubuf_hsak_agent *ag;
	uint64_t wave, per;
	int err;

	gpubuf_error_clear();
	err = gpubuf_hsa_gemv_args(alpha, a, x, beta, y, &g);
	if (err || !g.m)
		return err;
	/* Rows per block depend on the code object's wavefront size. */
	err = gpubuf_hsa_get(&hsa);
	if (!err)
		err = gpubuf_hsak_get(hsa, a->agent, &ag);
	if (err)
		return err;
	wave = ag->code->wavefront_size;
	per = gpubuf_kargs_gemv_by_cols(&g) ? wave : GPUBUF_HSA_THREADS / wave;
	return gpubuf_hsak_run(a->agent, a->dtype == GPUBUF_DTYPE_F32 ?
			       GPUBUF_HSA_GEMV_F32 : GPUBUF_HSA_GEMV_F64, &g,
			       gpubuf_kargs_blocks(g.m, per,
						   GPUBUF_HSAK_GEMV_GRID_MAX),
			       1, signal);
}

GPUBUF_EXPORT int gpubuf_hsa_gemm(double alpha,
				  const struct gpubuf_hsa_matrix *a,
				  const struct gpubuf_hsa_matrix *b,
				  double beta,
				  const struct gpubuf_hsa_matrix *c,
				  uint64_t signal)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemm_args g;
	int err;

	gpubuf_error_clear();
	err = gpubuf_hsa_gemm_args(alpha, a, b, beta, c, &g);
	if (err || !g.m || !g.n)
		return err;
	/* Row tiles on x, column tiles on y; the kernel loops over the rest. */
	return gpubuf_hsak_run(a->agent, a->dtype == GPUBUF_DTYPE_F32 ?
			       GPUBUF_HSA_GEMM_F32 : GPUBUF_HSA_GEMM_F64, &g,
			       gpubuf_kargs_blocks(g.m, GPUBUF_HSA_GEMM_TILE,
						   UINT32_MAX / GPUBUF_HSA_THREADS),
			       gpubuf_kargs_blocks(g.n, GPUBUF_HSA_GEMM_TILE,
						   UINT32_MAX),
			       signal);
}

#else /* no HSA headers or no code objects */

static int gpubuf_hsak_none(void)
{
#ifndef GPUBUF_HAVE_HSA
	gpubuf_error_set("libgpubuf was built without HSA support (no hsa/hsa.h at build time)");
#else
	gpubuf_error_set("libgpubuf was built without hipcc: no HSA kernels");
#endif
	return -EOPNOTSUPP;
}

/* Bad operands get the errno they get in a build with kernels. */
GPUBUF_EXPORT int gpubuf_hsa_gemv(double alpha,
				  const struct gpubuf_hsa_matrix *a,
				  const struct gpubuf_hsa_matrix *x,
				  double beta,
				  const struct gpubuf_hsa_matrix *y,
				  uint64_t signal)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemv_args g;
	int err;

	(void)signal;
	gpubuf_error_clear();
	err = gpubuf_hsa_gemv_args(alpha, a, x, beta, y, &g);
	return err ? err : gpubuf_hsak_none();
}

GPUBUF_EXPORT int gpubuf_hsa_gemm(double alpha,
				  const struct gpubuf_hsa_matrix *a,
				  const struct gpubuf_hsa_matrix *b,
				  double beta,
				  const struct gpubuf_hsa_matrix *c,
				  uint64_t signal)
{
	GPUBUF_KEEP_ERRNO;
	struct gpubuf_gemm_args g;
	int err;

	(void)signal;
	gpubuf_error_clear();
	err = gpubuf_hsa_gemm_args(alpha, a, b, beta, c, &g);
	return err ? err : gpubuf_hsak_none();
}

#endif
