/* SPDX-License-Identifier: MIT */
/*
 * Private to libgpubuf: one HSA GPU agent's loaded kernels, queue and
 * kernarg ring (hsa_kload.c), which hsa_kernels.c dispatches on.
 */
#ifndef GPUBUF_HSA_KERNELS_H
#define GPUBUF_HSA_KERNELS_H

#if defined(GPUBUF_HAVE_HSA) && defined(GPUBUF_HAVE_HSA_KERNELS)

#include <stdatomic.h>
#include <stdint.h>

#include "hsa/hsa_code.h"
#include "hsa/hsa_runtime.h"

/* Every kernarg segment fits (112 bytes at most), 16-byte aligned. */
#define GPUBUF_HSAK_KERNARG_SLOT	128
/* Packets in the queue, unless the agent needs more. */
#define GPUBUF_HSAK_QUEUE_SIZE		64
/* Slot tokens; signal handles are addresses, never 0 or 1. */
#define GPUBUF_HSAK_FREE		0
#define GPUBUF_HSAK_SYNC		1
/* GEMV blocks beyond this only queue up behind the resident ones. */
#define GPUBUF_HSAK_GEMV_GRID_MAX	(1u << 20)
/*
 * One round of a wait for a kernel: how long after the runtime reports a
 * queue error a waiter notices it. Short next to a human's patience and
 * to any timeout a caller may have, long enough that a waiter wakes only
 * 50 times a second during a long kernel.
 */
#define GPUBUF_HSAK_WAIT_MS		20

/* The agent's queue (gpubuf_hsak_agent.qstate). */
enum {
	GPUBUF_HSAK_Q_LIVE,	/* dispatches use it */
	GPUBUF_HSAK_Q_DEAD,	/* the runtime reported an error, nobody was told */
	GPUBUF_HSAK_Q_REPORTED,	/* a dispatch was told: the next renews it */
};

struct gpubuf_hsak_kernel {
	uint64_t object;		/* kernel descriptor address */
	uint32_t group_segment_size;
	uint32_t private_segment_size;
};

/*
 * One agent's loaded kernels and queue. The kernels are immutable once
 * published. The queue, its kernarg ring and tokens are replaced only by
 * gpubuf_hsak_renew(), under the agent's lock, while qstate is not LIVE
 * and no dispatch uses them (users == 0): a dispatch counts itself in
 * users, then reads qstate, and uses the queue only if it is LIVE.
 */
struct gpubuf_hsak_agent {
	const struct gpubuf_hsa_code *code;
	hsa_code_object_reader_t reader;	/* must outlive exec */
	hsa_executable_t exec;
	struct gpubuf_hsak_kernel k[GPUBUF_HSA_NR_KERNELS];
	int gpu;				/* its index, for messages */
	uint64_t wait_ticks;			/* GPUBUF_HSAK_WAIT_MS in timestamp ticks */
	/*
	 * GPUBUF_HSAK_Q_*, set to DEAD by the queue's error callback (on the
	 * runtime's thread; it takes no lock), with the status it got.
	 */
	_Atomic int qstate;
	_Atomic int qstatus;
	_Atomic unsigned int users;		/* dispatches using the queue */
	hsa_queue_t *queue;			/* NULL after a failed renewal */
	/*
	 * 2 * queue->size kernarg slots, slot (packet id mod 2 * size), and
	 * per slot a token saying whether its last kernel may still read it
	 * (GPUBUF_HSAK_FREE, GPUBUF_HSAK_SYNC: a synchronous caller still
	 * waits for it, else the handle of the signal its completion drops
	 * to 0, which the slot's next user waits for and destroys). Slots
	 * are reused on observed completion only, never on the read index.
	 */
	unsigned char *kernarg;
	_Atomic uint64_t *token;
	uint32_t grid_max;		/* work-items in one grid */
};

/*
 * GPU agent gpu's loaded state, loading it on first use (once per
 * process, under that agent's lock only); the pointer stays valid for
 * the process. -ENODEV for no such agent; a failed load leaves nothing
 * behind and is tried again by the next call.
 */
int gpubuf_hsak_get(const struct gpubuf_hsa *hsa, int gpu,
		    struct gpubuf_hsak_agent **out);

/*
 * Replace a's queue, kernarg ring and tokens after a reported queue
 * error (qstate REPORTED): wait until no dispatch uses them, destroy
 * them, the signals left in the tokens too, and make new ones. 0 also
 * when another thread renewed it first; a failure leaves no queue and
 * the state REPORTED, for the next dispatch to try again.
 */
int gpubuf_hsak_renew(const struct gpubuf_hsa *hsa,
		      struct gpubuf_hsak_agent *a);

#endif /* GPUBUF_HAVE_HSA && GPUBUF_HAVE_HSA_KERNELS */

#endif /* GPUBUF_HSA_KERNELS_H */
