/* SPDX-License-Identifier: MIT */
/*
 * The stand-in's dispatch state, shared by stub_dispatch.c (ISAs, code
 * objects, executables) and stub_queue.c (signals, queues, pool memory).
 */
#ifndef HSASTUB_STUB_DISPATCH_H
#define HSASTUB_STUB_DISPATCH_H

#include <stdatomic.h>

#include "stub.h"

#define STUB_MAX_OBJS		64
#define STUB_MAX_SIGNALS	1024
#define STUB_LOG		256
#define STUB_NKERNELS		6

struct stub_signal {
	_Atomic int64_t value;
	int live;
	struct stub_queue *queue;	/* a doorbell's queue */
};

struct stub_queue {
	hsa_queue_t q;			/* first: the handle is its address */
	int live;
	uint64_t agent;
	_Atomic uint64_t write, read;
	uint64_t rung;			/* highest doorbell value */
	struct stub_signal *doorbell;
};

struct stub_reader {
	int live;
	unsigned int mach;
};

struct stub_exec {
	int live, loaded, frozen;
	uint64_t agent;
	struct stub_reader *reader;
};

struct stub_alloc {
	int live;
	void *p;
	size_t size;
	uint64_t pool, allowed;
};

struct stub_done {
	hsa_kernel_dispatch_packet_t pkt;
	unsigned char kernarg[128];
	uint64_t agent;
	uint64_t id;
};

struct stub_dispatch {
	char isa[96];
	uint32_t grid_max;
	int hold;
	struct stub_reader reader[STUB_MAX_OBJS];
	struct stub_exec exec[STUB_MAX_OBJS];
	struct stub_queue *queue[STUB_MAX_OBJS];
	struct stub_alloc alloc[STUB_MAX_OBJS];
	struct stub_signal *signal[STUB_MAX_SIGNALS];
	struct stub_done done[STUB_LOG];
	unsigned long ndone;		/* since hsastub_reset_log() */
	unsigned long nsignals;		/* signals created, ever */
};

extern struct stub_dispatch D;

#define STUB_BEGIN_D(name)						\
	do {								\
		hsa_status_t stub_s_ = stub_begin(STUB_ID_##name, 1);	\
		if (stub_s_ != HSA_STATUS_SUCCESS)			\
			return stub_s_;					\
	} while (0)

#endif /* HSASTUB_STUB_DISPATCH_H */
