/* SPDX-License-Identifier: MIT */
/*
 * The stand-in's dispatch state, shared by stub_dispatch.c (ISAs, code
 * objects, executables) and stub_queue.c (AQL queues); signals and pool
 * blocks are everyone's, in stub.h's struct stub_state.
 */
#ifndef HSASTUB_STUB_DISPATCH_H
#define HSASTUB_STUB_DISPATCH_H

#include <stdatomic.h>

#include "stub.h"

#define STUB_MAX_OBJS		64
#define STUB_LOG		256
#define STUB_NKERNELS		6

struct stub_queue {
	hsa_queue_t q;			/* first: the handle is its address */
	int live;
	uint64_t agent;
	_Atomic uint64_t write, read;
	uint64_t rung;			/* highest doorbell value */
	struct stub_signal *doorbell;
	/* hsa_queue_create's error callback and its data, or NULL */
	void (*callback)(hsa_status_t status, hsa_queue_t *source, void *data);
	void *data;
	/* Not 0: the queue error that suspended it (stub_queue.c). */
	hsa_status_t error;
	int reporting;			/* reporter started: join it */
	pthread_t reporter;		/* the thread calling callback */
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
	struct stub_done done[STUB_LOG];
	unsigned long ndone;		/* since hsastub_reset_dispatch() */
	/* hsastub_fault_next(): the next kernel of this agent faults */
	uint64_t fault_agent;
	hsa_status_t fault_status;	/* 0: none armed */
	unsigned long faults_reported;	/* error callbacks returned */
};

extern struct stub_dispatch D;

#endif /* HSASTUB_STUB_DISPATCH_H */
