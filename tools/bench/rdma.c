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
 * This file: the side channel and the measurement; rdma_verbs.c: verbs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#include "rdma.h"

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

/* ---- measurement (the --peer side) ---------------------------------------- */

/* WRITE a pattern, READ it back into the other half: the data moved. */
static int verify(struct rdma *r, int k)
{
	size_t half = r->size / 2;
	uint8_t *p = r->mem[k];
	size_t i;

	for (i = 0; i < half; i++)
		p[i] = (uint8_t)(i * 31 + (size_t)k * 7 + 1);
	memset(p + half, 0, half);
	if (rdma_ops_run(r, IBV_WR_RDMA_WRITE, k, 0, 0, half, 1) ||
	    rdma_ops_run(r, IBV_WR_RDMA_READ, k, half, 0, half, 1))
		return -1;
	if (memcmp(p, p + half, half))
		return rdma_fail(r, "%s memory: data READ back differs from what was written",
				 rdma_mem_names[k]);
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
			if (rdma_ops_run(r, s->opcode, k, 0, 0, len, 1))
				return -1;
	} else if (rdma_ops_run(r, s->opcode, k, 0, 0, len, n)) {
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
	snprintf(res->memory, sizeof(res->memory), "%s", rdma_mem_names[k]);
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
		if (rdma_device_open(r, o->ib_dev) || rdma_memory_register(r) || info_send(r) ||
		    info_recv(r) || rdma_qp_connect(r) || line_send(r, "ready\n") ||
		    line_recv(r, line, sizeof(line)))
			return -1;
		return line_send(r, "bye\n");
	}
	if (tcp_connect(r, o->rdma_peer, o->tcp_port))
		return -1;
	snprintf(line, sizeof(line), "hello %zu\n", r->size);
	if (line_send(r, line) || rdma_device_open(r, o->ib_dev) || rdma_memory_register(r) ||
	    info_recv(r) || info_send(r) || rdma_qp_connect(r) ||
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
	if (rdma_verbs_load(&r) || run(&r)) {
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
	result_reason(res, "%s port 1, RC, GID index %d, MTU %d, READs in flight %d (responder %d); %s %s",
		      r.v.get_device_name(r.ctx->device), r.gid_index,
		      128 << r.me.mtu, r.rd_atom_init, r.rd_atom_dest,
		      b->o.rdma_serve ? "served" : "measured against",
		      b->o.rdma_serve ? "one peer" : b->o.rdma_peer);
	rdma_close(&r);
	return EXIT_OK;
}

#endif /* GPUBUF_TOOLS_HAVE_RDMA */
