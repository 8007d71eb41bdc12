// SPDX-License-Identifier: MIT
/*
 * The stand-in's AQL queues and the queries tests read what they ran
 * with (stub_dispatch.c says what they pretend). Their doorbells are
 * signals of stub_memory.c, rung through its stores.
 *
 * Queue errors, as ROCr handles them (ROCR-Runtime,
 * src/core/runtime/amd_aql_queue.cpp, AqlQueue::DynamicScratchHandler):
 * when the packet processor reports an error for a queue (an invalid
 * packet, an illegal instruction, a trap, a memory aperture violation),
 * the runtime's handler thread turns it into an hsa_status_t, suspends
 * the queue (AqlQueue::Suspend) and calls the callback given to
 * hsa_queue_create, if there is one; nothing else. The faulting packet
 * never completes, so its completion signal keeps its value, the read
 * index stays where it is and no later packet of that queue runs; the
 * queue is still there until hsa_queue_destroy, which waits for the
 * handler to finish. Here hsastub_fault_next() makes an agent's next
 * kernel dispatch packet fault so; the callback runs on a thread of the
 * stand-in's own, as ROCr's runs on its async-handler thread, never on
 * the thread that rang the doorbell.
 */
#include <stdlib.h>
#include <string.h>

#include "stub_dispatch.h"

/* ---- queues ------------------------------------------------------------- */

/* ROCr's error handler thread, reduced to the callback. */
static void *stub_queue_reporter(void *arg)
{
	struct stub_queue *q = arg;

	q->callback(q->error, &q->q, q->data);
	pthread_mutex_lock(&stub_lock);
	D.faults_reported++;
	pthread_mutex_unlock(&stub_lock);
	return NULL;
}

/*
 * A queue error on q: suspend it and report it to its callback, if it
 * has one, from another thread; under stub_lock.
 */
static void stub_queue_error(struct stub_queue *q, hsa_status_t s)
{
	q->error = s;
	if (!q->callback)
		return;
	if (pthread_create(&q->reporter, NULL, stub_queue_reporter, q))
		stub_violation("no thread for a queue error callback");
	else
		q->reporting = 1;
}

/*
 * A barrier-AND packet may complete once every dependency (handle 0 is
 * none) has reached 0; under stub_lock.
 */
static int stub_barrier_ready(const hsa_barrier_and_packet_t *b)
{
	for (int i = 0; i < 5; i++) {
		struct stub_signal *dep;

		if (!b->dep_signal[i].handle)
			continue;
		dep = stub_signal_of(b->dep_signal[i].handle, "dependency");
		if (dep && atomic_load(&dep->value) != 0)
			return 0;
	}
	return 1;
}

/*
 * Complete the handed-over packets of q up to its doorbell, in order,
 * under stub_lock: kernel dispatches at once, barrier-AND packets when
 * their dependencies are met; anything else is a violation.
 */
static void stub_queue_run(struct stub_queue *q)
{
	for (;;) {
		uint64_t id = atomic_load(&q->read);
		hsa_kernel_dispatch_packet_t *pkt =
			(hsa_kernel_dispatch_packet_t *)q->q.base_address +
			(id & (q->q.size - 1));
		uint16_t header = __atomic_load_n(&pkt->header, __ATOMIC_ACQUIRE);
		unsigned int type = (header >> HSA_PACKET_HEADER_TYPE) & 0xff;
		struct stub_done *d = &D.done[D.ndone % STUB_LOG];
		struct stub_signal *sig;

		if (q->error || id > q->rung || id >= atomic_load(&q->write) ||
		    type == HSA_PACKET_TYPE_INVALID)
			return;
		if (type == HSA_PACKET_TYPE_BARRIER_AND &&
		    !stub_barrier_ready((hsa_barrier_and_packet_t *)pkt))
			return;
		if (type != HSA_PACKET_TYPE_BARRIER_AND &&
		    type != HSA_PACKET_TYPE_KERNEL_DISPATCH)
			stub_violation("packet %llu of type %u",
				       (unsigned long long)id, type);
		if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH && D.fault_status &&
		    D.fault_agent == q->agent) {
			stub_queue_error(q, D.fault_status);
			D.fault_status = (hsa_status_t)0;
			return;
		}
		d->pkt = *pkt;
		d->agent = q->agent;
		d->id = id;
		memset(d->kernarg, 0, sizeof(d->kernarg));
		if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH && pkt->kernarg_address)
			memcpy(d->kernarg, pkt->kernarg_address,
			       sizeof(d->kernarg));
		D.ndone++;
		if (pkt->completion_signal.handle) {
			sig = stub_signal_of(pkt->completion_signal.handle,
					     "completion");
			if (sig)
				atomic_fetch_sub(&sig->value, 1);
		}
		__atomic_store_n(&pkt->header,
				 (uint16_t)(HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE),
				 __ATOMIC_RELEASE);
		atomic_store(&q->read, id + 1);
	}
}

static struct stub_queue **stub_queue_slot(const hsa_queue_t *q)
{
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (D.queue[i] && &D.queue[i]->q == q && D.queue[i]->live)
			return &D.queue[i];
	return NULL;
}

STUB_EXPORT hsa_status_t hsa_queue_create(
	hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
	void (*callback)(hsa_status_t status, hsa_queue_t *source, void *data),
	void *data, uint32_t private_segment_size,
	uint32_t group_segment_size, hsa_queue_t **queue)
{
	struct stub_queue *q;

	(void)private_segment_size, (void)group_segment_size;
	STUB_BEGIN(hsa_queue_create, 1);
	if (!stub_is_gpu(agent.handle) || !queue || size < 64 ||
	    (size & (size - 1)) || type != HSA_QUEUE_TYPE_MULTI) {
		stub_violation("queue of %u packets, type %u, for agent 0x%llx",
			       size, (unsigned int)type,
			       (unsigned long long)agent.handle);
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	for (int i = 0; i < STUB_MAX_OBJS; i++) {
		if (D.queue[i])
			continue;
		q = calloc(1, sizeof(*q));
		if (q)
			q->q.base_address = aligned_alloc(64, (size_t)size * 64);
		if (q)
			q->doorbell = stub_signal_new(0);
		if (!q || !q->q.base_address || !q->doorbell) {
			if (q) {
				free(q->q.base_address);
				if (q->doorbell)
					stub_signal_free(q->doorbell);
			}
			free(q);
			return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
		}
		/* Every slot starts INVALID, as the runtime leaves them. */
		for (uint32_t j = 0; j < size; j++)
			((hsa_kernel_dispatch_packet_t *)q->q.base_address)[j].header =
				HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE;
		q->doorbell->queue = q;
		q->q.type = type;
		q->q.size = size;
		q->q.id = (uint64_t)i;
		q->q.doorbell_signal.handle = stub_signal_handle(q->doorbell);
		q->agent = agent.handle;
		q->callback = callback;
		q->data = data;
		q->live = 1;
		D.queue[i] = q;
		*queue = &q->q;
		return stub_end(HSA_STATUS_SUCCESS);
	}
	return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
}

STUB_EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t *queue)
{
	struct stub_queue **slot, *q;

	STUB_BEGIN(hsa_queue_destroy, 1);
	slot = stub_queue_slot(queue);
	if (!slot) {
		stub_violation("destroy of a queue that is not live");
		return stub_end(HSA_STATUS_ERROR_INVALID_QUEUE);
	}
	q = *slot;
	*slot = NULL;
	/* As ROCr's ~AqlQueue, wait for the error handler to finish. */
	if (q->reporting) {
		pthread_mutex_unlock(&stub_lock);
		pthread_join(q->reporter, NULL);
		pthread_mutex_lock(&stub_lock);
	}
	stub_signal_free(q->doorbell);
	free(q->q.base_address);
	free(q);
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT uint64_t hsa_queue_add_write_index_scacq_screl(const hsa_queue_t *queue,
							   uint64_t value)
{
	struct stub_queue **slot;
	uint64_t id = 0;

	stub_count(STUB_ID_hsa_queue_add_write_index_scacq_screl);
	slot = stub_queue_slot(queue);
	if (slot)
		id = atomic_fetch_add(&(*slot)->write, value);
	else
		stub_violation("write index of a queue that is not live");
	pthread_mutex_unlock(&stub_lock);
	return id;
}

STUB_EXPORT uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *queue)
{
	struct stub_queue **slot;
	uint64_t id = 0;

	stub_count(STUB_ID_hsa_queue_load_read_index_scacquire);
	slot = stub_queue_slot(queue);
	if (slot)
		id = atomic_load(&(*slot)->read);
	else
		stub_violation("read index of a queue that is not live");
	pthread_mutex_unlock(&stub_lock);
	return id;
}

/* A doorbell hands the queue's packets up to value over (stub.h). */
void stub_doorbell(struct stub_queue *q, hsa_signal_value_t value)
{
	if ((uint64_t)value >= atomic_load(&q->write))
		stub_violation("doorbell rung with %lld, past the write index",
			       (long long)value);
	if ((uint64_t)value > q->rung)
		q->rung = (uint64_t)value;
	if (!D.hold)
		stub_queue_run(q);
}

/* Reserved packets count: their owner will hand them over. */
int stub_queues_pending(void)
{
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (D.queue[i] &&
		    atomic_load(&D.queue[i]->read) < atomic_load(&D.queue[i]->write))
			return 1;
	return 0;
}

/* ---- queries for tests (hsastub_*) --------------------------------------- */

/* Packets completed since hsastub_reset_dispatch(). */
STUB_EXPORT unsigned long hsastub_dispatched(void)
{
	unsigned long n;

	pthread_mutex_lock(&stub_lock);
	n = D.ndone;
	pthread_mutex_unlock(&stub_lock);
	return n;
}

STUB_EXPORT void hsastub_reset_dispatch(void)
{
	pthread_mutex_lock(&stub_lock);
	D.ndone = 0;
	pthread_mutex_unlock(&stub_lock);
}

/*
 * The i-th completed packet (0 = the first since the reset, -1 = the
 * last), its first 128 kernarg bytes and its queue's agent; -1 if none.
 */
STUB_EXPORT int hsastub_packet(long i, hsa_kernel_dispatch_packet_t *pkt,
			       void *kernarg, uint64_t *agent)
{
	int r = -1;

	pthread_mutex_lock(&stub_lock);
	if (i < 0)
		i += (long)D.ndone;
	if (i >= 0 && (unsigned long)i < D.ndone &&
	    D.ndone - (unsigned long)i <= STUB_LOG) {
		const struct stub_done *d = &D.done[i % STUB_LOG];

		*pkt = d->pkt;
		memcpy(kernarg, d->kernarg, sizeof(d->kernarg));
		*agent = d->agent;
		r = 0;
	}
	pthread_mutex_unlock(&stub_lock);
	return r;
}

/* HSASTUB_QUEUE_HOLD=1: complete what every queue has been handed. */
STUB_EXPORT void hsastub_complete(void)
{
	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (D.queue[i])
			stub_queue_run(D.queue[i]);
	pthread_mutex_unlock(&stub_lock);
}

/*
 * The next kernel dispatch packet GPU agent agent's queue processes
 * faults with status s (a queue error, see the top of this file); 0
 * disarms.
 */
STUB_EXPORT void hsastub_fault_next(uint64_t agent, hsa_status_t s)
{
	pthread_mutex_lock(&stub_lock);
	D.fault_agent = agent;
	D.fault_status = s;
	pthread_mutex_unlock(&stub_lock);
}

/* Queue error callbacks that have returned since the stand-in loaded. */
STUB_EXPORT unsigned long hsastub_faults_reported(void)
{
	unsigned long n;

	pthread_mutex_lock(&stub_lock);
	n = D.faults_reported;
	pthread_mutex_unlock(&stub_lock);
	return n;
}
