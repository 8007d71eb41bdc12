/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Verbs plumbing for the RDMA suite: two RC queue pairs on one rxe port,
 * connected to each other (loopback: each side's "remote" QPN and GID are
 * the other QP's, exchanged in memory), and a signalled post-and-wait.
 */
#ifndef GPUBUF_RDMA_VERBS_H
#define GPUBUF_RDMA_VERBS_H

#include "rdma_setup.h"

#define RXE_PORT	1
#define MR_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)

struct rc_pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	union ibv_gid gid;
	int gid_index;
	enum ibv_mtu mtu;
};

/*
 * Wait until the port is ACTIVE, i.e. the netdev has carrier: up to 60 s,
 * a bound only a port that never comes up exceeds (TCG is slow, and
 * slower on a loaded machine).
 */
static inline int port_wait_active(struct why *w, struct rc_pair *rc)
{
	struct ibv_port_attr pa;
	int i;

	for (i = 0; i < 600; i++) {
		if (ibv_query_port(rc->ctx, RXE_PORT, &pa))
			return why_set(w, "ibv_query_port: %s", strerror(errno));
		if (pa.state == IBV_PORT_ACTIVE) {
			rc->mtu = pa.active_mtu;
			return 0;
		}
		sleep_ms(100);
	}
	return why_set(w, "port %d not ACTIVE after 60 s (state %d)", RXE_PORT, pa.state);
}

/*
 * A RoCE v2 GID, preferring an IPv4-mapped one (::ffff:a.b.c.d), which the
 * set-up's address creates shortly after the link comes up.
 */
static inline int pick_gid(struct why *w, struct rc_pair *rc)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr pa;
	int tries, i, any = -1;

	if (ibv_query_port(rc->ctx, RXE_PORT, &pa))
		return why_set(w, "ibv_query_port: %s", strerror(errno));
	for (tries = 0; tries < 50; tries++) {
		for (i = 0; i < pa.gid_tbl_len; i++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(rc->ctx, RXE_PORT, i, &e, 0) ||
			    e.gid_type != IBV_GID_TYPE_ROCE_V2)
				continue;
			if (!memcmp(e.gid.raw, v4mapped, sizeof(v4mapped))) {
				rc->gid = e.gid;
				rc->gid_index = i;
				return 0;
			}
			if (any < 0)
				any = i;
		}
		sleep_ms(200);
	}
	if (any < 0)
		return why_set(w, "no RoCE v2 GID in the %d-entry table", pa.gid_tbl_len);
	rc->gid_index = any;
	return ibv_query_gid(rc->ctx, RXE_PORT, any, &rc->gid) ?
		why_set(w, "ibv_query_gid %d: %s", any, strerror(errno)) : 0;
}

static inline int qp_connect(struct why *w, struct rc_pair *rc,
			     struct ibv_qp *qp, uint32_t remote_qpn)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = RXE_PORT;
	a.qp_access_flags = MR_ACCESS;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		return why_set(w, "QP %u to INIT: %s", qp->qp_num, strerror(ret));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = rc->mtu;
	a.dest_qp_num = remote_qpn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = rc->gid;
	a.ah_attr.grh.sgid_index = rc->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = RXE_PORT;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return why_set(w, "QP %u to RTR: %s", qp->qp_num, strerror(ret));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	/*
	 * 4.096 us << 18, about 1.07 s per try and 8.6 s with the retries: a
	 * guest descheduled by a busy host for a while loses nothing (14, 67
	 * ms, gave up after about half a second).
	 */
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			    IBV_QP_MAX_QP_RD_ATOMIC);
	return ret ? why_set(w, "QP %u to RTS: %s", qp->qp_num, strerror(ret)) : 0;
}

static inline void rc_close(struct rc_pair *rc)
{
	int i;

	for (i = 0; i < 2; i++)
		if (rc->qp[i])
			ibv_destroy_qp(rc->qp[i]);
	if (rc->cq)
		ibv_destroy_cq(rc->cq);
	if (rc->pd)
		ibv_dealloc_pd(rc->pd);
	if (rc->ctx)
		ibv_close_device(rc->ctx);
	memset(rc, 0, sizeof(*rc));
}

static inline int rc_open(struct why *w, struct rc_pair *rc)
{
	struct ibv_qp_init_attr ia;
	int i;

	memset(rc, 0, sizeof(*rc));
	rc->ctx = rxe_open();
	if (!rc->ctx)
		return why_set(w, "no rxe device (see the soft_roce.rxe0_bound_to_ethernet result)");
	if (port_wait_active(w, rc) || pick_gid(w, rc))
		goto fail;
	rc->pd = ibv_alloc_pd(rc->ctx);
	rc->cq = rc->pd ? ibv_create_cq(rc->ctx, 16, NULL, NULL, 0) : NULL;
	if (!rc->cq) {
		why_set(w, "ibv_alloc_pd/ibv_create_cq: %s", strerror(errno));
		goto fail;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = rc->cq;
	ia.recv_cq = rc->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	for (i = 0; i < 2; i++) {
		rc->qp[i] = ibv_create_qp(rc->pd, &ia);
		if (!rc->qp[i]) {
			why_set(w, "ibv_create_qp: %s", strerror(errno));
			goto fail;
		}
	}
	if (qp_connect(w, rc, rc->qp[0], rc->qp[1]->qp_num) ||
	    qp_connect(w, rc, rc->qp[1], rc->qp[0]->qp_num))
		goto fail;
	return 0;
fail:
	rc_close(rc);
	return -1;
}

/*
 * Post one signalled RDMA WRITE or READ on @qp: @len bytes between local
 * @laddr (in @lmr) and remote @raddr (in the MR of @rkey); wait for its
 * completion, up to 120 s of TCG time.
 */
static inline int rdma_op_wait(struct why *w, struct rc_pair *rc,
			       struct ibv_qp *qp, enum ibv_wr_opcode op,
			       struct ibv_mr *lmr, void *laddr, uint32_t len,
			       uint64_t raddr, uint32_t rkey, int secs)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = len,
			       .lkey = lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 42, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	time_t end = time(NULL) + secs;
	int n, ret;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	ret = ibv_post_send(qp, &wr, &bad);
	if (ret)
		return why_set(w, "ibv_post_send: %s", strerror(ret));
	while ((n = ibv_poll_cq(rc->cq, 1, &wc)) == 0 && time(NULL) < end)
		sleep_ms(1);
	if (n < 0)
		return why_set(w, "ibv_poll_cq: %d", n);
	if (n == 0)
		return why_set(w, "no completion within %d s", secs);
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 42)
		return why_set(w, "completion status %s (wr_id %llu)",
			       ibv_wc_status_str(wc.status),
			       (unsigned long long)wc.wr_id);
	return 0;
}

static inline int rdma_op(struct why *w, struct rc_pair *rc, struct ibv_qp *qp,
			  enum ibv_wr_opcode op, struct ibv_mr *lmr, void *laddr,
			  uint32_t len, uint64_t raddr, uint32_t rkey)
{
	return rdma_op_wait(w, rc, qp, op, lmr, laddr, len, raddr, rkey, 120);
}

#endif /* GPUBUF_RDMA_VERBS_H */
