// SPDX-License-Identifier: MIT
/*
 * The stand-in's hsastub_* queries, for tests (found with dlsym), and
 * its report at exit for programs that do not call them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub_dispatch.h"

static int stub_fn(const char *name)
{
	for (int i = 0; i < STUB_NFN; i++)
		if (!strcmp(stub_fn_names[i], name))
			return i;
	return -1;
}

/* Calls of fn since the last hsastub_reset_log(), -1 for an unknown fn. */
STUB_EXPORT int hsastub_calls(const char *fn)
{
	int id = stub_fn(fn), n;

	if (id < 0)
		return -1;
	pthread_mutex_lock(&stub_lock);
	n = (int)S.calls[id];
	pthread_mutex_unlock(&stub_lock);
	return n;
}

STUB_EXPORT void hsastub_reset_log(void)
{
	pthread_mutex_lock(&stub_lock);
	memset(S.calls, 0, sizeof(S.calls));
	memset(&S.last_lock, 0, sizeof(S.last_lock));
	S.last_unlock = NULL;
	pthread_mutex_unlock(&stub_lock);
}

/*
 * Arguments of the last lock call (either kind): the function's name, or
 * NULL if there was none; up to 10 agent handles go to agents.
 */
STUB_EXPORT const char *hsastub_last_lock(const void **ptr, size_t *size,
					  uint64_t *agents, int *n,
					  uint64_t *pool)
{
	const char *fn = NULL;

	pthread_mutex_lock(&stub_lock);
	if (S.last_lock.live) {
		fn = stub_fn_names[S.last_lock.fn];
		*ptr = S.last_lock.ptr;
		*size = S.last_lock.size;
		*n = S.last_lock.n;
		*pool = S.last_lock.pool;
		memcpy(agents, S.last_lock.agents, sizeof(S.last_lock.agents));
	}
	pthread_mutex_unlock(&stub_lock);
	return fn;
}

STUB_EXPORT const void *hsastub_last_unlock(void)
{
	const void *p;

	pthread_mutex_lock(&stub_lock);
	p = S.last_unlock;
	pthread_mutex_unlock(&stub_lock);
	return p;
}

/* Live locks, and whether one starts at p. */
STUB_EXPORT int hsastub_locks(void)
{
	int n = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_LOCKS; i++)
		n += S.lock[i].live;
	pthread_mutex_unlock(&stub_lock);
	return n;
}

STUB_EXPORT int hsastub_is_locked(const void *p)
{
	int r = 0;

	pthread_mutex_lock(&stub_lock);
	for (int i = 0; i < STUB_MAX_LOCKS; i++)
		r |= S.lock[i].live && S.lock[i].ptr == p;
	pthread_mutex_unlock(&stub_lock);
	return r;
}

int stub_live(const char *kind)
{
	int n = 0;

	if (!strcmp(kind, "lock"))
		for (int i = 0; i < STUB_MAX_LOCKS; i++)
			n += S.lock[i].live;
	else if (!strcmp(kind, "alloc"))
		for (int i = 0; i < STUB_MAX_ALLOCS; i++)
			n += S.alloc[i].live;
	else if (!strcmp(kind, "signal"))
		for (int i = 0; i < STUB_MAX_SIGNALS; i++)
			n += S.signal[i].live && !S.signal[i].queue;
	else if (!strcmp(kind, "queue"))
		for (int i = 0; i < STUB_MAX_OBJS; i++)
			n += D.queue[i] != NULL;
	else if (!strcmp(kind, "reader"))
		for (int i = 0; i < STUB_MAX_OBJS; i++)
			n += D.reader[i].live;
	else if (!strcmp(kind, "executable"))
		for (int i = 0; i < STUB_MAX_OBJS; i++)
			n += D.exec[i].live;
	else
		n = -1;
	return n;
}

/* Live objects of a kind, as stub_live() (stub.h) counts them. */
STUB_EXPORT int hsastub_live(const char *kind)
{
	int n;

	pthread_mutex_lock(&stub_lock);
	n = stub_live(kind);
	pthread_mutex_unlock(&stub_lock);
	return n;
}

/* Handles tests compare with: GPU agent i, CPU agent 0, its fine pool. */
STUB_EXPORT uint64_t hsastub_gpu(int i)
{
	return STUB_GPU(i);
}

STUB_EXPORT uint64_t hsastub_cpu(void)
{
	return STUB_CPU0;
}

STUB_EXPORT uint64_t hsastub_fine_pool(void)
{
	return STUB_CPU0 + 2;
}

STUB_EXPORT int hsastub_violations(char *msg, size_t len)
{
	int n;

	pthread_mutex_lock(&stub_lock);
	n = (int)S.violations;
	if (n && len)
		snprintf(msg, len, "%s", S.first_violation);
	pthread_mutex_unlock(&stub_lock);
	return n;
}

/* Everything, to stdout as TAP comments, when a test fails. */
STUB_EXPORT void hsastub_dump(void)
{
	pthread_mutex_lock(&stub_lock);
	printf("# hsastub: %d GPU agents%s, inited %d, %lu violation(s)%s%s\n",
	       S.n_gpus, S.no_fine_pool ? ", no fine-grained pool" : "",
	       S.inited, S.violations, S.violations ? ", the first: " : "",
	       S.first_violation);
	for (int i = 0; i < STUB_NFN; i++)
		if (S.calls_total[i])
			printf("# hsastub: %s called %lu time(s)\n",
			       stub_fn_names[i], S.calls_total[i]);
	for (int i = 0; i < STUB_MAX_LOCKS; i++)
		if (S.lock[i].live)
			printf("# hsastub: locked %p+%zu for %d agent(s)\n",
			       S.lock[i].ptr, S.lock[i].size, S.lock[i].n);
	printf("# hsastub: live: %d pool block(s), %d signal(s), %d queue(s), %d executable(s), %d reader(s)\n",
	       stub_live("alloc"), stub_live("signal"), stub_live("queue"),
	       stub_live("executable"), stub_live("reader"));
	pthread_mutex_unlock(&stub_lock);
}

/*
 * HSASTUB_REPORT=file: at exit, what a program that cannot call the
 * queries (gpubuf-bench) left behind, one "key value" line each:
 * violations, first_violation, live_locks, live_allocs, live_signals
 * (doorbells are their queues'), live_queues, copy_gpus (GPU agent
 * indexes copies used, as a bit mask) and calls_<fn> for every function
 * called. Also
 * written before the stand-in aborts a wait that could never end.
 */
__attribute__((destructor))
void stub_report(void)
{
	const char *path = getenv("HSASTUB_REPORT");
	FILE *f;

	if (!path || !*path)
		return;
	f = fopen(path, "w");
	if (!f)
		return;
	pthread_mutex_lock(&stub_lock);
	fprintf(f, "violations %lu\nfirst_violation %s\nlive_locks %d\n"
		"live_allocs %d\nlive_signals %d\nlive_queues %d\n"
		"copy_gpus %u\n",
		S.violations, S.violations ? S.first_violation : "-",
		stub_live("lock"), stub_live("alloc"), stub_live("signal"),
		stub_live("queue"), S.copy_gpus);
	for (int i = 0; i < STUB_NFN; i++)
		if (S.calls_total[i])
			fprintf(f, "calls_%s %lu\n", stub_fn_names[i],
				S.calls_total[i]);
	pthread_mutex_unlock(&stub_lock);
	fclose(f);
}
