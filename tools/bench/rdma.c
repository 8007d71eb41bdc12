// SPDX-License-Identifier: MIT
/*
 * gpubuf-bench rdma: RDMA WRITE and READ between two machines over one RC
 * queue pair, out of and into gpubuf buffers, against the same on mlock'd
 * anonymous memory; bandwidth, the completion time of one small operation,
 * and gpubuf/mlock ratios from interleaved samples.
 *
 * One machine runs "gpubuf-bench rdma --serve", the other
 * "gpubuf-bench rdma --peer HOST": a TCP connection (--tcp-port) carries
 * the queue pair numbers, GIDs, addresses and rkeys; the serving side only
 * registers its memory and waits, as RDMA needs nothing more of it.
 * libibverbs.so.1 is dlopen()ed: gpubuf-bench needs it only for this mode.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#ifndef GPUBUF_TOOLS_HAVE_RDMA

int mode_rdma(struct bench *b)
{
	struct result *r = result_add(b, MODE_RDMA, RES_UNAVAILABLE);

	snprintf(r->op, sizeof(r->op), "all");
	snprintf(r->memory, sizeof(r->memory), "gpubuf");
	result_reason(r, "gpubuf-bench was built without libibverbs-dev's infiniband/verbs.h");
	return EXIT_UNSUPPORTED;
}

#else

#include <infiniband/verbs.h>

#define QUEUE_DEPTH 16
#define LAT_OPS 200
#define NMEM 2 /* gpubuf, mlock */

static const char *const mem_names[NMEM] = { "gpubuf", "mlock" };

/* The libibverbs entry points used; the rest are inline through ops. */
struct verbs {
	void *lib;
	struct ibv_device **(*get_device_list)(int *n);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx,
				    struct ibv_comp_channel *ch, int vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	const char *(*wc_status_str)(enum ibv_wc_status status);
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
			    struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size);
};

/* What each side tells the other, as one text line. */
struct peer_info {
	uint32_t qpn, psn, mtu;
	uint16_t lid;
	union ibv_gid gid;
	uint64_t addr[NMEM];
	uint32_t rkey[NMEM];
};

struct rdma {
	struct bench *b;
	struct verbs v;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct gpubuf *gbuf;
	void *mem[NMEM];
	struct ibv_mr *mr[NMEM];
	size_t size;
	uint64_t sizes[MAX_SIZES];	/* bandwidth sizes, from bench_sizes() */
	int nr_sizes;
	int gid_index;
	int sock;
	struct peer_info me, peer;
	char why[256];
};

static int rdma_fail(struct rdma *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int rdma_fail(struct rdma *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return -1;
}

static int verbs_load(struct rdma *r)
{
	struct verbs *v = &r->v;

	v->lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!v->lib)
		return rdma_fail(r, "libibverbs.so.1 not loadable (install libibverbs1 and a provider): %s",
				 dlerror());
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

static int device_open(struct rdma *r, const char *name)
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

/* A gpubuf buffer and mlock'd anonymous memory of r->size, registered. */
static int memory_register(struct rdma *r)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	int rc, k;

	rc = gpubuf_alloc(r->b->ctx, r->size, NULL, &r->gbuf);
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
		memset(r->mem[k], 0, r->size);
		r->mr[k] = r->v.reg_mr(r->pd, r->mem[k], r->size, access);
		if (!r->mr[k])
			return rdma_fail(r, "ibv_reg_mr on %s memory: %s", mem_names[k], strerror(errno));
		r->me.addr[k] = (uintptr_t)r->mem[k];
		r->me.rkey[k] = r->mr[k]->rkey;
	}
	return 0;
}

static void rdma_close(struct rdma *r)
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

/* ---- the TCP side channel ------------------------------------------------ */

static int line_send(struct rdma *r, const char *text)
{
	size_t len = strlen(text);

	if (send(r->sock, text, len, MSG_NOSIGNAL) != (ssize_t)len)
		return rdma_fail(r, "sending to the peer: %s", strerror(errno));
	return 0;
}

static int line_recv(struct rdma *r, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t got = recv(r->sock, buf + n, 1, 0);

		if (got <= 0)
			return rdma_fail(r, "the peer closed the connection");
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return 0;
}

static int info_send(struct rdma *r)
{
	char line[512], gid[33];
	int i;

	for (i = 0; i < 16; i++)
		sprintf(gid + 2 * i, "%02x", r->me.gid.raw[i]);
	snprintf(line, sizeof(line), "qp %u %u %u %u %s %llx %x %llx %x\n",
		 r->me.qpn, r->me.psn, r->me.mtu, r->me.lid, gid,
		 (unsigned long long)r->me.addr[0], r->me.rkey[0],
		 (unsigned long long)r->me.addr[1], r->me.rkey[1]);
	return line_send(r, line);
}

static int info_recv(struct rdma *r)
{
	char line[512], gid[33];
	unsigned long long a0, a1;
	unsigned int lid;
	int i;

	if (line_recv(r, line, sizeof(line)))
		return -1;
	if (sscanf(line, "qp %u %u %u %u %32s %llx %x %llx %x", &r->peer.qpn,
		   &r->peer.psn, &r->peer.mtu, &lid, gid, &a0, &r->peer.rkey[0],
		   &a1, &r->peer.rkey[1]) != 9 || strlen(gid) != 32)
		return rdma_fail(r, "the peer sent '%.60s', not its queue pair", line);
	for (i = 0; i < 16; i++)
		sscanf(gid + 2 * i, "%2hhx", &r->peer.gid.raw[i]);
	r->peer.lid = (uint16_t)lid;
	r->peer.addr[0] = a0;
	r->peer.addr[1] = a1;
	return 0;
}

/* INIT, RTR (towards the peer's QP), RTS. */
static int qp_connect(struct rdma *r)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_LOCAL_WRITE,
	};

	if (r->v.modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return rdma_fail(r, "QP to INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = r->me.mtu < r->peer.mtu ? r->me.mtu : r->peer.mtu;
	a.dest_qp_num = r->peer.qpn;
	a.rq_psn = r->peer.psn;
	a.max_dest_rd_atomic = 1;
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
	a.max_rd_atomic = 1;
	if (r->v.modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return rdma_fail(r, "QP to RTS: %s", strerror(errno));
	return 0;
}

/* ---- measurement (the --peer side) ---------------------------------------- */

/*
 * n operations of len bytes from memory kind k at loff to the peer's kind k
 * at roff, at most QUEUE_DEPTH in flight; 0 when all completed.
 */
static int ops_run(struct rdma *r, enum ibv_wr_opcode op, int k, size_t loff,
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

/* WRITE a pattern, READ it back into the other half: the data moved. */
static int verify(struct rdma *r, int k)
{
	size_t half = r->size / 2;
	uint8_t *p = r->mem[k];
	size_t i;

	for (i = 0; i < half; i++)
		p[i] = (uint8_t)(i * 31 + (size_t)k * 7 + 1);
	memset(p + half, 0, half);
	if (ops_run(r, IBV_WR_RDMA_WRITE, k, 0, 0, half, 1) ||
	    ops_run(r, IBV_WR_RDMA_READ, k, half, 0, half, 1))
		return -1;
	if (memcmp(p, p + half, half))
		return rdma_fail(r, "%s memory: data READ back differs from what was written",
				 mem_names[k]);
	return 0;
}

struct sample_set {
	const char *op;
	enum ibv_wr_opcode opcode;
	int latency;
};

static const struct sample_set sets[] = {
	{ "write", IBV_WR_RDMA_WRITE, 0 },
	{ "read", IBV_WR_RDMA_READ, 0 },
	{ "write_lat", IBV_WR_RDMA_WRITE, 1 },
	{ "read_lat", IBV_WR_RDMA_READ, 1 },
};

/* One sample: GB/s for bandwidth sets, microseconds for latency ones. */
static int sample(struct rdma *r, const struct sample_set *s, int k, size_t len,
		  uint64_t bytes, double *value)
{
	int n = s->latency ? LAT_OPS : (int)(bytes / len ? bytes / len : 1);
	uint64_t t0 = now_ns(), dt;

	if (s->latency) {
		for (int i = 0; i < n; i++)
			if (ops_run(r, s->opcode, k, 0, 0, len, 1))
				return -1;
	} else if (ops_run(r, s->opcode, k, 0, 0, len, n)) {
		return -1;
	}
	dt = now_ns() - t0;
	*value = s->latency ? (double)dt / 1e3 / n : (double)len * n / (double)dt;
	return 0;
}

static void add_row(struct rdma *r, const struct sample_set *s, int k, size_t len,
		    double *v, int reps)
{
	struct result *res = result_add(r->b, MODE_RDMA, RES_OK);

	snprintf(res->op, sizeof(res->op), "%s", s->op);
	snprintf(res->memory, sizeof(res->memory), "%s", mem_names[k]);
	res->size_bytes = len;
	res->reps = reps;
	res->threads = 1;
	res->numa_node = -1;
	res->metric = s->latency ? "us" : "gb_per_s";
	stats(v, reps, &res->med, &res->min, &res->max);
}

static int measure(struct rdma *r)
{
	struct bench *b = r->b;
	const uint64_t *sizes = r->sizes;
	int nr = r->nr_sizes;
	uint64_t ratio_size;
	int reps = b->o.reps ? b->o.reps : 5, warm = b->o.warmup >= 0 ? b->o.warmup : 1;
	uint64_t bytes = b->o.rep_bytes_set ? b->o.rep_bytes : 16 * MIB;
	size_t si, set;

	if (reps > 1024)
		return rdma_fail(r, "--reps over 1024");
	ratio_size = bench_ratio_size(&b->o, sizes, nr);
	for (set = 0; set < sizeof(sets) / sizeof(sets[0]); set++) {
		const struct sample_set *s = &sets[set];

		for (si = 0; si < (size_t)(s->latency ? 1 : nr); si++) {
			size_t len = s->latency ? 8 : sizes[si];
			double *v = calloc(2 * (size_t)reps, sizeof(double));
			double col[NMEM][1024];
			int i, k;

			if (!v)
				return rdma_fail(r, "out of memory");
			if (len > r->size) {
				free(v);
				continue;
			}
			progress("rdma %s %zu bytes", s->op, len);
			/* gpubuf, mlock, gpubuf, mlock, ...: one ratio per pair. */
			for (i = -warm; i < reps; i++) {
				for (k = 0; k < NMEM; k++) {
					double x;

					if (sample(r, s, k, len, bytes, &x)) {
						free(v);
						return -1;
					}
					if (i >= 0) {
						col[k][i] = x;
						v[2 * i + k] = x;
					}
				}
			}
			for (k = 0; k < NMEM; k++)
				add_row(r, s, k, len, col[k], reps);
			if (!s->latency && len == ratio_size) {
				char name[48];
				int idx;

				snprintf(name, sizeof(name), "rdma_%s_gpubuf_vs_mlock", s->op);
				idx = ratio_add(b, MODE_RDMA, name, "gpubuf", len);
				if (ratio_sides(b, &b->rat[idx], s->op, s->op, "mlock"))
					ratio_pairs(&b->rat[idx], v, reps);
			}
			free(v);
		}
	}
	progress_end();
	return 0;
}

/* ---- connection -------------------------------------------------------------- */

static int tcp_connect(struct rdma *r, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *a;
	int rc = getaddrinfo(host, port, &hints, &res);

	if (rc)
		return rdma_fail(r, "%s: %s", host, gai_strerror(rc));
	for (a = res; a; a = a->ai_next) {
		r->sock = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
		if (r->sock >= 0 && !connect(r->sock, a->ai_addr, a->ai_addrlen))
			break;
		if (r->sock >= 0)
			close(r->sock);
		r->sock = -1;
	}
	freeaddrinfo(res);
	if (r->sock < 0)
		return rdma_fail(r, "connecting to %s port %s (is 'gpubuf-bench rdma --serve' running there?): %s",
				 host, port, strerror(errno));
	return 0;
}

static int tcp_accept(struct rdma *r, const char *port)
{
	struct sockaddr_in6 addr = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	int one = 1, lsock = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (lsock < 0)
		return rdma_fail(r, "socket: %s", strerror(errno));
	setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	addr.sin6_port = htons((uint16_t)atoi(port));
	if (bind(lsock, (struct sockaddr *)&addr, sizeof(addr)) || listen(lsock, 1)) {
		close(lsock);
		return rdma_fail(r, "listening on port %s: %s", port, strerror(errno));
	}
	fprintf(stderr, "gpubuf-bench rdma: waiting for a peer on port %s\n", port);
	r->sock = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
	close(lsock);
	if (r->sock < 0)
		return rdma_fail(r, "accept: %s", strerror(errno));
	return 0;
}

/*
 * Peer: "hello SIZE" ->, <- server's QP, client's QP ->, <- "ready",
 * the measurement, "done" ->, <- "bye".
 */
static int run(struct rdma *r)
{
	struct bench_opts *o = &r->b->o;
	char line[128];
	unsigned long long size;

	if (o->rdma_serve) {
		if (tcp_accept(r, o->tcp_port) || line_recv(r, line, sizeof(line)))
			return -1;
		if (sscanf(line, "hello %llu", &size) != 1 || !size)
			return rdma_fail(r, "the peer sent '%.60s', not hello", line);
		r->size = (size_t)size;
		if (device_open(r, o->ib_dev) || memory_register(r) || info_send(r) ||
		    info_recv(r) || qp_connect(r) || line_send(r, "ready\n") ||
		    line_recv(r, line, sizeof(line)))
			return -1;
		return line_send(r, "bye\n");
	}
	if (tcp_connect(r, o->rdma_peer, o->tcp_port))
		return -1;
	snprintf(line, sizeof(line), "hello %zu\n", r->size);
	if (line_send(r, line) || device_open(r, o->ib_dev) || memory_register(r) ||
	    info_recv(r) || info_send(r) || qp_connect(r) ||
	    line_recv(r, line, sizeof(line)))
		return -1;
	if (strcmp(line, "ready"))
		return rdma_fail(r, "the peer sent '%.60s', not ready", line);
	if (verify(r, 0) || verify(r, 1) || measure(r))
		return -1;
	return line_send(r, "done\n") || line_recv(r, line, sizeof(line)) ? -1 : 0;
}

int mode_rdma(struct bench *b)
{
	struct rdma r = { .b = b, .sock = -1 };
	struct result *res;
	int rc;

	if (!b->o.rdma_peer && !b->o.rdma_serve) {
		res = result_add(b, MODE_RDMA, RES_UNAVAILABLE);
		snprintf(res->op, sizeof(res->op), "all");
		snprintf(res->memory, sizeof(res->memory), "gpubuf");
		result_reason(res, "needs a second machine: 'gpubuf-bench rdma --serve' there, '--peer HOST' here");
		return EXIT_UNSUPPORTED;
	}
	rc = bench_need_ctx(b, MODE_RDMA);
	if (rc != EXIT_OK)
		return rc;
	{
		static const uint64_t def[] = { 4 * KIB, 64 * KIB, 1 * MIB, 4 * MIB };
		uint64_t max = 8;
		int i;

		r.nr_sizes = bench_sizes(&b->o, def, 4, r.sizes);
		for (i = 0; i < r.nr_sizes; i++)
			max = r.sizes[i] > max ? r.sizes[i] : max;
		/* verify() uses two halves of the largest size. */
		r.size = (size_t)(2 * max + 4095) & ~(size_t)4095;
	}
	if (verbs_load(&r) || run(&r)) {
		res = result_add(b, MODE_RDMA, RES_UNAVAILABLE);
		snprintf(res->op, sizeof(res->op), "all");
		snprintf(res->memory, sizeof(res->memory), "gpubuf");
		result_reason(res, "%s", r.why);
		rdma_close(&r);
		/* No peer or device is missing hardware; a broken run is a failure. */
		return r.v.lib && r.ctx ? EXIT_FAIL : EXIT_UNSUPPORTED;
	}
	res = result_add(b, MODE_RDMA, RES_INFO);
	snprintf(res->op, sizeof(res->op), "info");
	result_reason(res, "%s port 1, RC, GID index %d, MTU %d; %s %s",
		      r.v.get_device_name(r.ctx->device), r.gid_index,
		      128 << r.me.mtu, b->o.rdma_serve ? "served" : "measured against",
		      b->o.rdma_serve ? "one peer" : b->o.rdma_peer);
	rdma_close(&r);
	return EXIT_OK;
}

#endif /* GPUBUF_TOOLS_HAVE_RDMA */
