/* SPDX-License-Identifier: MIT */
/*
 * The stand-in's dispatch queries (stub_dispatch.c, stub_queue.c) for
 * hsa_stub_dispatch.c, on top of hsa_stub_test.h: the check that only
 * the per-agent cache is left behind, operands in a locked buffer, and
 * the header every packet must carry.
 */
#ifndef GPUBUF_HSA_STUB_DISPATCH_H
#define GPUBUF_HSA_STUB_DISPATCH_H

#include "hsa/hsa_runtime.h"
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
	void (*fault_next)(uint64_t agent, hsa_status_t s);
	unsigned long (*faults_reported)(void);
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
	T_DSYM(fault_next, "hsastub_fault_next");
	T_DSYM(faults_reported, "hsastub_faults_reported");
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

/* Three operands in one buffer locked for every GPU agent, viewed on agent. */
struct t_ops {
	struct gpubuf *buf;
	void *ap;
	struct gpubuf_hsa_matrix d[3];
};

__attribute__((unused))
static int t_ops_make(struct gpubuf_ctx *ctx, int agent, enum gpubuf_dtype dt,
		      enum gpubuf_layout lay, const size_t shape[3][2],
		      struct t_ops *o)
{
	size_t es = gpubuf_dtype_size(dt), off[3], total = 0;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	struct gpubuf_matrix m;

	for (int i = 0; i < 3; i++) {
		off[i] = total;
		total += (shape[i][0] * shape[i][1] * es + 255) & ~(size_t)255;
	}
	o->buf = t_buf(ctx, (total + ps - 1) / ps);
	T_EQ(gpubuf_hsa_lock(o->buf, NULL, 0, &o->ap), 0);
	for (int i = 0; i < 3; i++) {
		size_t ld = lay == GPUBUF_ROW_MAJOR ? shape[i][1] : shape[i][0];

		T_EQ(gpubuf_matrix_view(o->buf, off[i], dt, shape[i][0],
					shape[i][1], ld, lay, &m), 0);
		T_EQ(gpubuf_hsa_matrix_view(&m, agent, &o->d[i]), 0);
		T_CHECK(o->d[i].agent_ptr == (uintptr_t)o->ap + off[i]);
	}
	return T_PASS;
}

__attribute__((unused))
static uint64_t t_bits(double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return v;
}

/* The header every packet must carry. */
__attribute__((unused))
static int t_header_ok(const hsa_kernel_dispatch_packet_t *p, int dims)
{
	unsigned int h = p->header;

	T_EQ((h >> HSA_PACKET_HEADER_TYPE) & 0xff,
	     HSA_PACKET_TYPE_KERNEL_DISPATCH);
	T_EQ((h >> HSA_PACKET_HEADER_BARRIER) & 1, 1);
	/* Host memory: the kernel must see the CPU's writes and vice versa. */
	T_EQ((h >> HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) & 3,
	     HSA_FENCE_SCOPE_SYSTEM);
	T_EQ((h >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3,
	     HSA_FENCE_SCOPE_SYSTEM);
	T_EQ(p->setup >> HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS, dims);
	T_EQ(p->workgroup_size_x, 256);
	T_EQ(p->workgroup_size_y, 1);
	T_EQ(p->workgroup_size_z, 1);
	T_EQ(p->grid_size_z, 1);
	T_EQ(p->private_segment_size, 0);
	return T_PASS;
}

#endif /* GPUBUF_HSA_STUB_DISPATCH_H */
