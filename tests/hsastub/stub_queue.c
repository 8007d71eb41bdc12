// SPDX-License-Identifier: MIT
/*
 * The stand-in's signals, AQL queues and pool memory, and the queries
 * tests read them with (stub_dispatch.c says what they pretend).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stub_dispatch.h"

/* ---- signals ------------------------------------------------------------ */

/* A live signal of this handle, under stub_lock; NULL and a violation if not. */
static struct stub_signal *stub_signal_of(uint64_t h, const char *what)
{
	for (int i = 0; i < STUB_MAX_SIGNALS; i++)
		if (D.signal[i] && (uintptr_t)D.signal[i] == h &&
		    D.signal[i]->live)
			return D.signal[i];
	stub_violation("%s of signal 0x%llx, which is not live", what,
		       (unsigned long long)h);
	return NULL;
}

static struct stub_signal *stub_signal_new(int64_t v)
{
	for (int i = 0; i < STUB_MAX_SIGNALS; i++)
		if (!D.signal[i]) {
			D.signal[i] = calloc(1, sizeof(*D.signal[i]));
			if (!D.signal[i])
				return NULL;
			D.signal[i]->live = 1;
			atomic_store(&D.signal[i]->value, v);
			D.nsignals++;
			return D.signal[i];
		}
	return NULL;
}

static void stub_signal_free(struct stub_signal *sig)
{
	for (int i = 0; i < STUB_MAX_SIGNALS; i++)
		if (D.signal[i] == sig) {
			free(sig);
			D.signal[i] = NULL;
		}
}

STUB_EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial_value,
					   uint32_t num_consumers,
					   const hsa_agent_t *consumers,
					   hsa_signal_t *signal)
{
	struct stub_signal *sig;

	STUB_BEGIN_D(hsa_signal_create);
	if (!signal || (num_consumers && !consumers))
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	sig = stub_signal_new(initial_value);
	if (!sig)
		return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
	signal->handle = (uintptr_t)sig;
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t signal)
{
	struct stub_signal *sig;

	STUB_BEGIN_D(hsa_signal_destroy);
	sig = stub_signal_of(signal.handle, "destroy");
	if (!sig || sig->queue) {
		if (sig)
			stub_violation("destroy of a queue's doorbell");
		return stub_end(HSA_STATUS_ERROR_INVALID_SIGNAL);
	}
	stub_signal_free(sig);
	return stub_end(HSA_STATUS_SUCCESS);
}

/* Counted like the others; no fault injection (the call has no status). */
static void stub_count(int fn)
{
	pthread_mutex_lock(&stub_lock);
	S.calls[fn]++;
	S.calls_total[fn]++;
	if (!S.inited)
		stub_violation("%s before a successful hsa_init",
			       stub_fn_names[fn]);
}

/* ---- queues ------------------------------------------------------------- */

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

		if (id > q->rung || id >= atomic_load(&q->write) ||
		    type == HSA_PACKET_TYPE_INVALID)
			return;
		if (type == HSA_PACKET_TYPE_BARRIER_AND &&
		    !stub_barrier_ready((hsa_barrier_and_packet_t *)pkt))
			return;
		if (type != HSA_PACKET_TYPE_BARRIER_AND &&
		    type != HSA_PACKET_TYPE_KERNEL_DISPATCH)
			stub_violation("packet %llu of type %u",
				       (unsigned long long)id, type);
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

	(void)callback, (void)data, (void)private_segment_size,
	(void)group_segment_size;
	STUB_BEGIN_D(hsa_queue_create);
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
		q->q.doorbell_signal.handle = (uintptr_t)q->doorbell;
		q->agent = agent.handle;
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

	STUB_BEGIN_D(hsa_queue_destroy);
	slot = stub_queue_slot(queue);
	if (!slot) {
		stub_violation("destroy of a queue that is not live");
		return stub_end(HSA_STATUS_ERROR_INVALID_QUEUE);
	}
	q = *slot;
	stub_signal_free(q->doorbell);
	free(q->q.base_address);
	free(q);
	*slot = NULL;
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

/* A doorbell runs its queue (unless held); another signal is set. */
STUB_EXPORT void hsa_signal_store_screlease(hsa_signal_t signal,
					    hsa_signal_value_t value)
{
	struct stub_signal *sig;

	stub_count(STUB_ID_hsa_signal_store_screlease);
	sig = stub_signal_of(signal.handle, "store");
	if (sig) {
		atomic_store(&sig->value, value);
		if (sig->queue) {
			if ((uint64_t)value >= atomic_load(&sig->queue->write))
				stub_violation("doorbell rung with %lld, past the write index",
					       (long long)value);
			if ((uint64_t)value > sig->queue->rung)
				sig->queue->rung = (uint64_t)value;
			if (!D.hold)
				stub_queue_run(sig->queue);
		}
	}
	pthread_mutex_unlock(&stub_lock);
}

static int stub_cond(hsa_signal_condition_t c, int64_t v, int64_t cmp)
{
	switch (c) {
	case HSA_SIGNAL_CONDITION_EQ: return v == cmp;
	case HSA_SIGNAL_CONDITION_NE: return v != cmp;
	case HSA_SIGNAL_CONDITION_LT: return v < cmp;
	case HSA_SIGNAL_CONDITION_GTE: return v >= cmp;
	}
	return 1;
}

/* Polls; the test's alarm() ends a wait that never comes true. */
STUB_EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(
	hsa_signal_t signal, hsa_signal_condition_t condition,
	hsa_signal_value_t compare_value, uint64_t timeout_hint,
	hsa_wait_state_t wait_state_hint)
{
	struct stub_signal *sig;
	int64_t v = 0;

	(void)timeout_hint, (void)wait_state_hint;
	stub_count(STUB_ID_hsa_signal_wait_scacquire);
	sig = stub_signal_of(signal.handle, "wait");
	pthread_mutex_unlock(&stub_lock);
	while (sig) {
		pthread_mutex_lock(&stub_lock);
		v = atomic_load(&sig->value);
		pthread_mutex_unlock(&stub_lock);
		if (stub_cond(condition, v, compare_value))
			break;
		nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	}
	return v;
}

/* ---- pool memory --------------------------------------------------------- */

STUB_EXPORT hsa_status_t hsa_amd_memory_pool_allocate(
	hsa_amd_memory_pool_t memory_pool, size_t size, uint32_t flags,
	void **ptr)
{
	STUB_BEGIN_D(hsa_amd_memory_pool_allocate);
	if (!size || flags || !ptr)
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (!D.alloc[i].live) {
			void *p = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);

			if (!p)
				return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
			D.alloc[i] = (struct stub_alloc){ 1, p, size,
							  memory_pool.handle, 0 };
			*ptr = p;
			return stub_end(HSA_STATUS_SUCCESS);
		}
	return stub_end(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
}

static struct stub_alloc *stub_alloc_of(const void *p)
{
	for (int i = 0; i < STUB_MAX_OBJS; i++)
		if (D.alloc[i].live && D.alloc[i].p == p)
			return &D.alloc[i];
	return NULL;
}

STUB_EXPORT hsa_status_t hsa_amd_memory_pool_free(void *ptr)
{
	struct stub_alloc *a;

	STUB_BEGIN_D(hsa_amd_memory_pool_free);
	a = stub_alloc_of(ptr);
	if (!a) {
		stub_violation("free of %p, which the pools did not allocate", ptr);
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	free(a->p);
	a->live = 0;
	return stub_end(HSA_STATUS_SUCCESS);
}

STUB_EXPORT hsa_status_t hsa_amd_agents_allow_access(
	uint32_t num_agents, const hsa_agent_t *agents, const uint32_t *flags,
	const void *ptr)
{
	struct stub_alloc *a;

	STUB_BEGIN_D(hsa_amd_agents_allow_access);
	a = stub_alloc_of(ptr);
	if (!a || !num_agents || !agents || flags) {
		stub_violation("allow access to %p, not a pool allocation start", ptr);
		return stub_end(HSA_STATUS_ERROR_INVALID_ARGUMENT);
	}
	for (uint32_t i = 0; i < num_agents; i++)
		a->allowed |= 1ull << ((agents[i].handle >> 8) & 63);
	return stub_end(HSA_STATUS_SUCCESS);
}

/* ---- queries for tests (hsastub_*) --------------------------------------- */

/* Live objects of a kind: reader, executable, queue, signal, alloc. */
STUB_EXPORT int hsastub_live(const char *kind)
{
	int n = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_OBJS; i++) {
		if (!strcmp(kind, "reader"))
			n += D.reader[i].live;
		else if (!strcmp(kind, "executable"))
			n += D.exec[i].live;
		else if (!strcmp(kind, "queue"))
			n += D.queue[i] != NULL;
		else if (!strcmp(kind, "alloc"))
			n += D.alloc[i].live;
	}
	/* Doorbells belong to their queues. */
	if (!strcmp(kind, "signal"))
		for (int i = 0; i < STUB_MAX_SIGNALS; i++)
			n += D.signal[i] && !D.signal[i]->queue;
	pthread_mutex_unlock(&stub_lock);
	return n;
}

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

/* Whether p lies in a live kernarg-pool allocation the agent may access. */
STUB_EXPORT int hsastub_is_kernarg(const void *p, uint64_t agent)
{
	int r = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_OBJS; i++) {
		const struct stub_alloc *a = &D.alloc[i];

		if (a->live && (const char *)p >= (char *)a->p &&
		    (const char *)p < (char *)a->p + a->size &&
		    (a->pool & 0xff) == 2 &&
		    (a->allowed & 1ull << ((agent >> 8) & 63)))
			r = 1;
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

/* A signal's value, for tests holding their own. */
STUB_EXPORT int64_t hsastub_signal_value(uint64_t h)
{
	struct stub_signal *sig;
	int64_t v = INT64_MIN;

	pthread_mutex_lock(&stub_lock);
	sig = stub_signal_of(h, "query");
	if (sig)
		v = atomic_load(&sig->value);
	pthread_mutex_unlock(&stub_lock);
	return v;
}
