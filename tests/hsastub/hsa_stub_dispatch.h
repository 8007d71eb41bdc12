/* SPDX-License-Identifier: MIT */
/*
 * The stand-in's dispatch queries (stub_dispatch.c, stub_queue.c) for
 * hsa_stub_dispatch.c, on top of hsa_stub_test.h, and the check that
 * only the per-agent cache is left behind.
 */
#ifndef GPUBUF_HSA_STUB_DISPATCH_H
#define GPUBUF_HSA_STUB_DISPATCH_H

#include "hsa_runtime.h"
#include "hsa_stub_test.h"

static struct {
	int (*live)(const char *kind);
	unsigned long (*dispatched)(void);
	void (*reset_dispatch)(void);
	int (*packet)(long i, hsa_kernel_dispatch_packet_t *pkt, void *kernarg,
		      uint64_t *agent);
	uint64_t (*kernel_object)(uint64_t agent, const char *name);
	int (*is_kernarg)(const void *p, uint64_t agent);
	void (*complete)(void);
	int64_t (*signal_value)(uint64_t h);
	__typeof__(hsa_signal_create) *signal_create;
	__typeof__(hsa_signal_destroy) *signal_destroy;
} dstub;

static int t_dstub_load(void)
{
	void *h;

	if (t_stub_load())
		return -1;
	h = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return -1;
#define T_DSYM(field, sym)						\
	do {								\
		*(void **)&dstub.field = dlsym(h, sym);			\
		if (!dstub.field) {					\
			printf("# the stand-in lacks %s\n", sym);	\
			dlclose(h);					\
			return -1;					\
		}							\
	} while (0)
	T_DSYM(live, "hsastub_live");
	T_DSYM(dispatched, "hsastub_dispatched");
	T_DSYM(reset_dispatch, "hsastub_reset_dispatch");
	T_DSYM(packet, "hsastub_packet");
	T_DSYM(kernel_object, "hsastub_kernel_object");
	T_DSYM(is_kernarg, "hsastub_is_kernarg");
	T_DSYM(complete, "hsastub_complete");
	T_DSYM(signal_value, "hsastub_signal_value");
	T_DSYM(signal_create, "hsa_signal_create");
	T_DSYM(signal_destroy, "hsa_signal_destroy");
#undef T_DSYM
	dlclose(h);
	return 0;
}

#define T_DSTUB() T_CHECK(t_dstub_load() == 0)

/* Nothing of the dispatcher left but one agent's cache per loaded agent. */
static int t_left(int agents)
{
	T_EQ(dstub.live("reader"), agents);
	T_EQ(dstub.live("executable"), agents);
	T_EQ(dstub.live("queue"), agents);
	T_EQ(dstub.live("alloc"), agents);
	T_EQ(dstub.live("signal"), 0);
	return T_PASS;
}

#define T_LEFT(n) T_EQ(t_left(n), T_PASS)

#endif /* GPUBUF_HSA_STUB_DISPATCH_H */
