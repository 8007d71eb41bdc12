// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in for "gpubuf-bench rdma --peer", for 46-bench-rdma
 * (tests/tools/rdma-guest.sh): it asks a "gpubuf-bench rdma --serve" for
 * OPS (write, read or write,read) over the side channel, connects its own
 * RC queue pair to the server's, and then tries, with the rkeys it was
 * given, first the operations it asked for on both kinds of memory, then
 * the one it did not ask for, which the server must refuse. Prints one
 * line per operation ("READ gpubuf: ok", "WRITE gpubuf: completion status
 * remote access error ...") and stops at the first that fails: a failed
 * operation leaves the queue pair in the error state.
 * Usage: bench-peer HOST PORT OPS; exit 0 when the exchange went through.
 */
#include <netdb.h>
#include <sys/socket.h>

#include "rdma_verbs.h"

static int sock = -1;

static int line_send(const char *text)
{
	size_t len = strlen(text);

	return send(sock, text, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static int line_recv(char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		if (recv(sock, buf + n, 1, 0) != 1)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return 0;
}

static int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *a;

	if (getaddrinfo(host, port, &hints, &res))
		return -1;
	for (a = res; a; a = a->ai_next) {
		sock = socket(a->ai_family, a->ai_socktype, 0);
		if (sock >= 0 && !connect(sock, a->ai_addr, a->ai_addrlen))
			break;
		if (sock >= 0)
			close(sock);
		sock = -1;
	}
	freeaddrinfo(res);
	return sock < 0 ? -1 : 0;
}

/* Towards the server's QP: INIT (no remote access of ours), RTR, RTS. */
static int connect_qp(struct why *w, struct rc_pair *rc, struct ibv_qp *qp,
		      uint32_t qpn, uint32_t psn, const union ibv_gid *gid)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = RXE_PORT;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		return why_set(w, "QP to INIT: %s", strerror(ret));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = rc->mtu;
	a.dest_qp_num = qpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = rc->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = RXE_PORT;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return why_set(w, "QP to RTR: %s", strerror(ret));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			    IBV_QP_MAX_QP_RD_ATOMIC);
	return ret ? why_set(w, "QP to RTS: %s", strerror(ret)) : 0;
}

int main(int argc, char **argv)
{
	static const char *const kinds[2] = { "gpubuf", "mlock" };
	struct rc_pair rc = { 0 };
	struct ibv_qp_init_attr ia;
	struct why w = { "" };
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	union ibv_gid gid;
	char line[512], hex[33];
	unsigned long long addr[2];
	unsigned int qpn, psn, mtu, lid, rkey[2];
	struct step {
		int write, kind;
	} steps[5];
	int want_write, want_read, k, i, n, failed = 0;
	static uint8_t buf[4096];

	if (argc != 4) {
		fprintf(stderr, "usage: bench-peer HOST PORT write|read|write,read\n");
		return 2;
	}
	want_write = !!strstr(argv[3], "write");
	want_read = !!strstr(argv[3], "read");
	rc.ctx = rxe_open();
	if (!rc.ctx || port_wait_active(&w, &rc) || pick_gid(&w, &rc)) {
		fprintf(stderr, "bench-peer: rxe: %s\n", rc.ctx ? w.text : "no rxe device");
		return 1;
	}
	rc.pd = ibv_alloc_pd(rc.ctx);
	rc.cq = rc.pd ? ibv_create_cq(rc.ctx, 16, NULL, NULL, 0) : NULL;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = rc.cq;
	ia.recv_cq = rc.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = rc.cq ? ibv_create_qp(rc.pd, &ia) : NULL;
	mr = qp ? ibv_reg_mr(rc.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr) {
		fprintf(stderr, "bench-peer: PD, CQ, QP or MR: %s\n", strerror(errno));
		return 1;
	}
	if (tcp_connect(argv[1], argv[2])) {
		fprintf(stderr, "bench-peer: connecting to %s port %s: %s\n", argv[1], argv[2],
			strerror(errno));
		return 1;
	}
	snprintf(line, sizeof(line), "hello 8192 %s\n", argv[3]);
	if (line_send(line) || line_recv(line, sizeof(line))) {
		fprintf(stderr, "bench-peer: no answer to hello\n");
		return 1;
	}
	if (sscanf(line, "qp %u %u %u %u %32s %llx %x %llx %x", &qpn, &psn, &mtu, &lid, hex,
		   &addr[0], &rkey[0], &addr[1], &rkey[1]) != 9 || strlen(hex) != 32) {
		printf("answer: %s\n", line);
		return 1;
	}
	for (i = 0; i < 16; i++)
		sscanf(hex + 2 * i, "%2hhx", &gid.raw[i]);
	if ((enum ibv_mtu)mtu < rc.mtu)
		rc.mtu = (enum ibv_mtu)mtu;
	for (i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", rc.gid.raw[i]);
	snprintf(line, sizeof(line), "qp %u 0 %u 0 %s 0 0 0 0\n", qp->qp_num, rc.mtu, hex);
	if (line_send(line) || connect_qp(&w, &rc, qp, qpn, psn, &gid) ||
	    line_recv(line, sizeof(line)) || strcmp(line, "ready")) {
		fprintf(stderr, "bench-peer: connecting the queue pairs: %s\n", w.text);
		return 1;
	}
	/* What was asked for, on both kinds; then the other operation, once. */
	n = 0;
	if (want_write) {
		steps[n++] = (struct step){ 1, 0 };
		steps[n++] = (struct step){ 1, 1 };
	}
	if (want_read) {
		steps[n++] = (struct step){ 0, 0 };
		steps[n++] = (struct step){ 0, 1 };
	}
	if (!want_write || !want_read)
		steps[n++] = (struct step){ !want_write, 0 };
	/*
	 * The operation not asked for gets 15 s, well inside the server's
	 * side-channel timeout: 5.10's rxe answers it with no completion at
	 * all (the queue pair retries), later ones with an error completion.
	 */
	for (i = 0; i < n && !failed; i++) {
		int last = i == n - 1 && (!want_write || !want_read);

		k = steps[i].kind;
		failed = rdma_op_wait(&w, &rc, qp, steps[i].write ?
				      IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				      mr, buf, 8, addr[k], rkey[k],
				      last ? 15 : 120);
		printf("%s %s: %s\n", steps[i].write ? "WRITE" : "READ", kinds[k],
		       failed ? w.text : "ok");
	}
	fflush(stdout);
	if (line_send("done\n") || line_recv(line, sizeof(line)) || strcmp(line, "bye")) {
		fprintf(stderr, "bench-peer: no bye from the server\n");
		return 1;
	}
	return 0;
}
