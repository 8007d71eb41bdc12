/* SPDX-License-Identifier: MIT */
/*
 * rdma mode internals, shared by rdma.c (the side channel, the
 * measurement, the mode) and rdma_verbs.c (libibverbs loaded with dlopen,
 * the device, queue pair and registrations, posting operations). Only
 * built with libibverbs-dev's headers.
 */
#ifndef GPUBUF_BENCH_RDMA_H
#define GPUBUF_BENCH_RDMA_H

#include <infiniband/verbs.h>

#include "bench.h"

#define QUEUE_DEPTH 16
#define LAT_OPS 200
#define NMEM 2 /* gpubuf, mlock */

extern const char *const rdma_mem_names[NMEM];

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
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
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
	size_t size;			/* of each registration: 2 x max_len, 4 KiB pages */
	uint64_t max_len;		/* the largest operation */
	unsigned int ops;		/* RDMA_OP_*: measured (--peer), granted (--serve) */
	uint32_t max_msg_sz;		/* port 1's */
	uint64_t sizes[MAX_SIZES];	/* bandwidth sizes, from bench_sizes() */
	int nr_sizes;
	int gid_index;
	/* RDMA READs in flight as responder and as initiator (perftest's rule) */
	int rd_atom_dest, rd_atom_init;
	int sock;
	int no_peer;			/* --peer: nobody to connect to (unavailable) */
	uint64_t last_sent;		/* now_ns() of the last line sent */
	char where[128];		/* --serve: the address listened on */
	struct peer_info me, peer;
	char why[256];
};

int rdma_fail(struct rdma *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rdma_verbs_load(struct rdma *r);
/* The device (name or the first), its port 1 and GID, a PD, CQ and RC QP. */
int rdma_device_open(struct rdma *r, const char *name);
/*
 * r->size of a gpubuf buffer and of mlock'd memory, registered. Serving,
 * with remote access for r->ops only, and filled with a pattern; measuring,
 * with local access only, as nothing remote touches it.
 */
int rdma_memory_register(struct rdma *r);
int rdma_qp_connect(struct rdma *r);
int rdma_ops_run(struct rdma *r, enum ibv_wr_opcode op, int k, size_t loff,
		 size_t roff, size_t len, int n);
/* Everything rdma_verbs.c and the side channel opened, in reverse. */
void rdma_close(struct rdma *r);

#endif
