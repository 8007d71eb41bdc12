// SPDX-License-Identifier: MIT
/*
 * gpubuf-bench rdma, the verbs side: libibverbs.so.1 loaded with dlopen(),
 * port 1 of the device and its RoCE v2 (or IB) GID, one RC queue pair
 * taken through INIT, RTR and RTS, a gpubuf buffer and mlock'd memory
 * registered, and RDMA WRITE/READ posted with a bounded queue.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdma.h"

const char *const rdma_mem_names[NMEM] = { "gpubuf", "mlock" };

int rdma_fail(struct rdma *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return -1;
}

int rdma_verbs_load(struct rdma *r)
{
	struct verbs *v = &r->v;

	v->lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!v->lib)
		return rdma_fail(r, "libibverbs.so.1 not loadable (install libibverbs1 and a provider): %s",
				 dlerror() ?: "no reason given");
#define SYM(field, name)							\
	do {									\
		*(void **)&v->field = dlsym(v->lib, name);			\
		if (!v->field)							\
			return rdma_fail(r, "libibverbs.so.1 has no %s", name);	\
	} while (0)
	SYM(get_device_list, "ibv_get_device_list");
	SYM(free_device_list, "ibv_free_device_list");
	SYM(get_device_name, "ibv_get_device_name");
	SYM(open_device, "ibv_open_device");
	SYM(close_device, "ibv_close_device");
	SYM(alloc_pd, "ibv_alloc_pd");
	SYM(dealloc_pd, "ibv_dealloc_pd");
	SYM(reg_mr, "ibv_reg_mr");
	SYM(dereg_mr, "ibv_dereg_mr");
	SYM(create_cq, "ibv_create_cq");
	SYM(destroy_cq, "ibv_destroy_cq");
	SYM(create_qp, "ibv_create_qp");
	SYM(destroy_qp, "ibv_destroy_qp");
	SYM(modify_qp, "ibv_modify_qp");
	SYM(query_gid_ex, "_ibv_query_gid_ex");
	SYM(wc_status_str, "ibv_wc_status_str");
	SYM(query_device, "ibv_query_device");
#undef SYM
	return 0;
}

/* The port's MTU and LID, through the provider's ops (verbs.h's inline). */
static int port_query(struct rdma *r, struct ibv_port_attr *pa)
{
	struct verbs_context *vctx = verbs_get_ctx_op(r->ctx, query_port);

	memset(pa, 0, sizeof(*pa));
	if (!vctx)
		return rdma_fail(r, "the provider has no query_port op");
	if (vctx->query_port(r->ctx, 1, pa, sizeof(*pa)))
		return rdma_fail(r, "query_port: %s", strerror(errno));
	if (pa->state != IBV_PORT_ACTIVE)
		return rdma_fail(r, "port 1 of %s is not active",
				 r->v.get_device_name(r->ctx->device));
	r->max_msg_sz = pa->max_msg_sz;
	return 0;
}

/* RoCE v2 over IPv4 where there is one, else the port's GID 0 (IB). */
static int gid_pick(struct rdma *r, const struct ibv_port_attr *pa)
{
	struct ibv_gid_entry e;
	int i;

	r->gid_index = 0;
	for (i = 0; i < pa->gid_tbl_len; i++) {
		if (r->v.query_gid_ex(r->ctx, 1, (uint32_t)i, &e, 0, sizeof(e)))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			r->gid_index = i;
			r->me.gid = e.gid;
			return 0;
		}
	}
	if (pa->link_layer == IBV_LINK_LAYER_ETHERNET)
		return rdma_fail(r, "no RoCE v2 IPv4 GID on port 1 (is an IPv4 address on its netdev?)");
	if (r->v.query_gid_ex(r->ctx, 1, 0, &e, 0, sizeof(e)))
		return rdma_fail(r, "query_gid_ex 0: %s", strerror(errno));
	r->me.gid = e.gid;
	return 0;
}

int rdma_device_open(struct rdma *r, const char *name)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, i;

	list = r->v.get_device_list(&n);
	if (!list || !n) {
		if (list)
			r->v.free_device_list(list);
		return rdma_fail(r, "no RDMA device (ibv_get_device_list found none)");
	}
	for (i = 0; i < n; i++)
		if (!name || !strcmp(r->v.get_device_name(list[i]), name))
			break;
	if (i == n) {
		r->v.free_device_list(list);
		return rdma_fail(r, "no RDMA device named %s", name);
	}
	r->ctx = r->v.open_device(list[i]);
	r->v.free_device_list(list);
	if (!r->ctx)
		return rdma_fail(r, "ibv_open_device: %s", strerror(errno));
	if (port_query(r, &pa) || gid_pick(r, &pa))
		return -1;
	{
		struct ibv_device_attr da;

		if (r->v.query_device(r->ctx, &da))
			return rdma_fail(r, "ibv_query_device: %s", strerror(errno));
		/*
		 * READs in flight: the device's limits, as perftest sets them,
		 * capped at what this benchmark posts at once.
		 */
		r->rd_atom_dest = da.max_qp_rd_atom < QUEUE_DEPTH ?
				  da.max_qp_rd_atom : QUEUE_DEPTH;
		r->rd_atom_init = da.max_qp_init_rd_atom < QUEUE_DEPTH ?
				  da.max_qp_init_rd_atom : QUEUE_DEPTH;
		if (r->rd_atom_dest < 1)
			r->rd_atom_dest = 1;
		if (r->rd_atom_init < 1)
			r->rd_atom_init = 1;
	}
	r->me.lid = pa.lid;
	r->me.mtu = pa.active_mtu;
	r->pd = r->v.alloc_pd(r->ctx);
	r->cq = r->pd ? r->v.create_cq(r->ctx, 2 * QUEUE_DEPTH, NULL, NULL, 0) : NULL;
	if (!r->cq)
		return rdma_fail(r, "ibv_alloc_pd/ibv_create_cq: %s", strerror(errno));
	{
		struct ibv_qp_init_attr qa = {
			.send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = QUEUE_DEPTH, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		r->qp = r->v.create_qp(r->pd, &qa);
	}
	if (!r->qp)
		return rdma_fail(r, "ibv_create_qp (RC): %s", strerror(errno));
	r->me.qpn = r->qp->qp_num;
	r->me.psn = (uint32_t)getpid() & 0xffffff;
	return 0;
}

/*
 * What the other side may do: serving, only the operations the peer asked
 * for (remote write needs local write too); measuring, nothing remote,
 * and local write only for what READs bring in.
 */
static int access_flags(const struct rdma *r)
{
	if (!r->b->o.rdma_serve)
		return r->ops & RDMA_OP_READ ? IBV_ACCESS_LOCAL_WRITE : 0;
	return (r->ops & RDMA_OP_WRITE ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0) |
	       (r->ops & RDMA_OP_READ ? IBV_ACCESS_REMOTE_READ : 0);
}

int rdma_memory_register(struct rdma *r)
{
	const int access = access_flags(r);
	int rc, k;

	rc = gpubuf_alloc(r->b->ctx, r->size, BENCH_ALLOC(r->b), &r->gbuf);
	if (rc)
		return rdma_fail(r, "gpubuf_alloc(%zu): %s", r->size, gpubuf_strerror(rc));
	r->mem[0] = gpubuf_ptr(r->gbuf);
	r->mem[1] = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->mem[1] == MAP_FAILED) {
		r->mem[1] = NULL;
		return rdma_fail(r, "mmap(%zu): %s", r->size, strerror(errno));
	}
	if (mlock(r->mem[1], r->size))
		return rdma_fail(r, "mlock(%zu): %s (raise RLIMIT_MEMLOCK)", r->size, strerror(errno));
	for (k = 0; k < NMEM; k++) {
		uint8_t *p = r->mem[k];
		size_t i;

		/* What a peer that only READs reads and checks. */
		if (r->b->o.rdma_serve)
			for (i = 0; i < r->size; i++)
				p[i] = (uint8_t)(i * 131 + (size_t)k * 17 + 5);
		else
			memset(p, 0, r->size);
		r->mr[k] = r->v.reg_mr(r->pd, r->mem[k], r->size, access);
		if (!r->mr[k])
			return rdma_fail(r, "ibv_reg_mr on %s memory: %s", rdma_mem_names[k], strerror(errno));
		/* The measuring side's memory is no one else's business. */
		if (r->b->o.rdma_serve) {
			r->me.addr[k] = (uintptr_t)r->mem[k];
			r->me.rkey[k] = r->mr[k]->rkey;
		}
	}
	return 0;
}

void rdma_close(struct rdma *r)
{
	int k;

	for (k = 0; k < NMEM; k++)
		if (r->mr[k])
			r->v.dereg_mr(r->mr[k]);
	if (r->mem[1])
		munmap(r->mem[1], r->size);
	if (r->gbuf)
		gpubuf_unref(r->gbuf);
	if (r->qp)
		r->v.destroy_qp(r->qp);
	if (r->cq)
		r->v.destroy_cq(r->cq);
	if (r->pd)
		r->v.dealloc_pd(r->pd);
	if (r->ctx)
		r->v.close_device(r->ctx);
	if (r->sock >= 0)
		close(r->sock);
	if (r->v.lib)
		dlclose(r->v.lib);
}

/* INIT, RTR (towards the peer's QP), RTS. */
int rdma_qp_connect(struct rdma *r)
{
	/* Incoming RDMA: on the serving side, what the peer asked for. */
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = !r->b->o.rdma_serve ? 0 :
			(r->ops & RDMA_OP_WRITE ? IBV_ACCESS_REMOTE_WRITE : 0) |
			(r->ops & RDMA_OP_READ ? IBV_ACCESS_REMOTE_READ : 0),
	};

	if (r->v.modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return rdma_fail(r, "QP to INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = r->me.mtu < r->peer.mtu ? r->me.mtu : r->peer.mtu;
	a.dest_qp_num = r->peer.qpn;
	a.rq_psn = r->peer.psn;
	a.max_dest_rd_atomic = (uint8_t)r->rd_atom_dest;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = r->peer.lid;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = r->peer.gid;
	a.ah_attr.grh.sgid_index = (uint8_t)r->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (r->v.modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return rdma_fail(r, "QP to RTR: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = r->me.psn;
	/* Under emulation an acknowledgement can take long: retry patiently. */
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = (uint8_t)r->rd_atom_init;
	if (r->v.modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return rdma_fail(r, "QP to RTS: %s", strerror(errno));
	return 0;
}

/*
 * n operations of len bytes from memory kind k at loff to the peer's kind k
 * at roff, at most QUEUE_DEPTH in flight; 0 when all completed.
 */
int rdma_ops_run(struct rdma *r, enum ibv_wr_opcode op, int k, size_t loff,
		 size_t roff, size_t len, int n)
{
	int posted = 0, done = 0;

	while (done < n) {
		struct ibv_wc wc[QUEUE_DEPTH];
		int got, i;

		while (posted < n && posted - done < QUEUE_DEPTH) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)r->mem[k] + loff,
				.length = (uint32_t)len, .lkey = r->mr[k]->lkey,
			};
			struct ibv_send_wr wr = {
				.sg_list = &sge, .num_sge = 1, .opcode = op,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = r->peer.addr[k] + roff,
					     .rkey = r->peer.rkey[k] },
			}, *bad;

			if (ibv_post_send(r->qp, &wr, &bad))
				return rdma_fail(r, "ibv_post_send: %s", strerror(errno));
			posted++;
		}
		got = ibv_poll_cq(r->cq, QUEUE_DEPTH, wc);
		if (got < 0)
			return rdma_fail(r, "ibv_poll_cq failed");
		for (i = 0; i < got; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				return rdma_fail(r, "%s completion: %s",
						 op == IBV_WR_RDMA_WRITE ? "WRITE" : "READ",
						 r->v.wc_status_str(wc[i].status));
		done += got;
	}
	return 0;
}
