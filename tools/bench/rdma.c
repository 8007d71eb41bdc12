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
 * registers its memory and waits, as RDMA needs nothing more of it. The
 * server is what the network sees: it listens on its RDMA port's network
 * device's address (--bind for another), allows sizes up to --max-size,
 * grants rkeys for the operations asked for only, and, like the measuring
 * side, waits at most --tcp-timeout for each line of the side channel.
 * libibverbs.so.1 is dlopen()ed: gpubuf-bench needs it only for this mode.
 * This file: the side channel and the measurement; rdma_verbs.c: verbs.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
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

static int timeout_ms(const struct rdma *r)
{
	return r->b->o.tcp_timeout * 1000;
}

static int line_send(struct rdma *r, const char *text)
{
	size_t len = strlen(text), done = 0;

	/* SO_SNDTIMEO bounds each send() (set when the socket was made). */
	while (done < len) {
		ssize_t n = send(r->sock, text + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return rdma_fail(r, "sending to the peer: timed out after %d s (--tcp-timeout)",
					 r->b->o.tcp_timeout);
		if (n <= 0)
			return rdma_fail(r, "sending to the peer: %s", strerror(errno));
		done += (size_t)n;
	}
	r->last_sent = now_ns();
	return 0;
}

/*
 * One line, without its newline, within --tcp-timeout seconds for the
 * whole line (a peer trickling bytes cannot stretch it); what names the
 * line in the message.
 */
static int line_recv(struct rdma *r, char *buf, size_t len, const char *what)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms(r) * 1000000;
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = r->sock, .events = POLLIN };
		uint64_t t = now_ns();
		ssize_t got;
		int rc = t < end ? poll(&p, 1, (int)((end - t + 999999) / 1000000)) : 0;

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return rdma_fail(r, "poll: %s", strerror(errno));
		if (rc == 0)
			return rdma_fail(r, "timed out after %d s (--tcp-timeout) waiting for %s",
					 r->b->o.tcp_timeout, what);
		got = recv(r->sock, buf + n, 1, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return rdma_fail(r, "the peer closed the connection (waiting for %s)", what);
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return 0;
}

/* Measuring: a line at least every second, so the server knows we live. */
static int keepalive(struct rdma *r)
{
	if (now_ns() - r->last_sent < 1000000000ull)
		return 0;
	return line_send(r, "alive\n");
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

static int info_parse(struct rdma *r, const char *line)
{
	char gid[33];
	unsigned long long a0, a1;
	unsigned int lid;
	int i;

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

static int info_recv(struct rdma *r, const char *what)
{
	char line[512];

	return line_recv(r, line, sizeof(line), what) || info_parse(r, line) ? -1 : 0;
}

/* FNV-1a: what each side checks of the other's memory. */
static uint64_t mem_sum(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* The sum of the first len bytes of the server's memory of kind k. */
static int peer_sum(struct rdma *r, int k, size_t len, uint64_t *sum)
{
	char line[128];
	unsigned long long v;

	snprintf(line, sizeof(line), "sum %d %zu\n", k, len);
	if (line_send(r, line) || line_recv(r, line, sizeof(line), "the server's sum of its memory"))
		return -1;
	if (sscanf(line, "sum %llx", &v) != 1)
		return rdma_fail(r, "the peer sent '%.60s', not a sum", line);
	*sum = v;
	return 0;
}

static const char *ops_name(unsigned int ops)
{
	return ops == RDMA_OP_WRITE ? "write" : ops == RDMA_OP_READ ? "read" : "write,read";
}

/* ---- measurement (the --peer side) ---------------------------------------- */

/*
 * The data moved: WRITE a pattern and compare the server's sum of its
 * memory with ours; READ the server's memory (the pattern, or the
 * server's own) into the other half and compare its sum likewise.
 */
static int verify(struct rdma *r, int k)
{
	size_t len = (size_t)r->max_len, half = r->size / 2;
	uint8_t *p = r->mem[k];
	uint64_t sum;
	size_t i;

	if (r->ops & RDMA_OP_WRITE) {
		for (i = 0; i < len; i++)
			p[i] = (uint8_t)(i * 31 + (size_t)k * 7 + 1);
		if (rdma_ops_run(r, IBV_WR_RDMA_WRITE, k, 0, 0, len, 1) ||
		    peer_sum(r, k, len, &sum))
			return -1;
		if (sum != mem_sum(p, len))
			return rdma_fail(r, "%s memory: the peer's memory differs from what was written",
					 rdma_mem_names[k]);
	}
	if (r->ops & RDMA_OP_READ) {
		memset(p + half, 0, len);
		if (rdma_ops_run(r, IBV_WR_RDMA_READ, k, half, 0, len, 1) ||
		    peer_sum(r, k, len, &sum))
			return -1;
		if (sum != mem_sum(p + half, len))
			return rdma_fail(r, "%s memory: data READ differs from the peer's memory",
					 rdma_mem_names[k]);
	}
	return 0;
}

struct sample_set {
	const char *op;
	enum ibv_wr_opcode opcode;
	unsigned int need;	/* RDMA_OP_* */
	int latency;
};

static const struct sample_set sets[] = {
	{ "write", IBV_WR_RDMA_WRITE, RDMA_OP_WRITE, 0 },
	{ "read", IBV_WR_RDMA_READ, RDMA_OP_READ, 0 },
	{ "write_lat", IBV_WR_RDMA_WRITE, RDMA_OP_WRITE, 1 },
	{ "read_lat", IBV_WR_RDMA_READ, RDMA_OP_READ, 1 },
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

		if (!(r->ops & s->need))
			continue;
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

					if (sample(r, s, k, len, bytes, &x) || keepalive(r)) {
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

/* Sends on a socket give up after --tcp-timeout seconds. */
static void sock_timeouts(struct rdma *r)
{
	struct timeval tv = { .tv_sec = r->b->o.tcp_timeout };

	setsockopt(r->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* connect() within --tcp-timeout seconds; -1 with errno (ETIMEDOUT). */
static int connect_within(struct rdma *r, const struct sockaddr *a, socklen_t len)
{
	struct pollfd p = { .fd = r->sock, .events = POLLOUT };
	int fl = fcntl(r->sock, F_GETFL), err = 0, rc;
	socklen_t elen = sizeof(err);

	if (fl < 0 || fcntl(r->sock, F_SETFL, fl | O_NONBLOCK))
		return -1;
	rc = connect(r->sock, a, len);
	if (rc && errno == EINPROGRESS) {
		do
			rc = poll(&p, 1, timeout_ms(r));
		while (rc < 0 && errno == EINTR);
		if (rc == 0)
			errno = ETIMEDOUT;
		if (rc <= 0)
			return -1;
		if (getsockopt(r->sock, SOL_SOCKET, SO_ERROR, &err, &elen))
			return -1;
		if (err) {
			errno = err;
			return -1;
		}
		rc = 0;
	}
	if (rc || fcntl(r->sock, F_SETFL, fl))
		return -1;
	return 0;
}

static int tcp_connect(struct rdma *r, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *a;
	int rc = getaddrinfo(host, port, &hints, &res), err = 0;

	r->no_peer = 1;
	if (rc)
		return rdma_fail(r, "%s: %s", host, gai_strerror(rc));
	for (a = res; a; a = a->ai_next) {
		r->sock = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
		if (r->sock >= 0 && !connect_within(r, a->ai_addr, a->ai_addrlen))
			break;
		err = errno;
		if (r->sock >= 0)
			close(r->sock);
		r->sock = -1;
	}
	freeaddrinfo(res);
	if (r->sock < 0 && err == ETIMEDOUT)
		return rdma_fail(r, "connecting to %s port %s: timed out after %d s (--tcp-timeout)",
				 host, port, r->b->o.tcp_timeout);
	if (r->sock < 0)
		return rdma_fail(r, "connecting to %s port %s (is 'gpubuf-bench rdma --serve' running there?): %s",
				 host, port, strerror(err));
	r->no_peer = 0;
	sock_timeouts(r);
	return 0;
}

/*
 * The network device of the RDMA port: the one of the GID in use (RoCE),
 * else one whose device is the RDMA device's (IPoIB, iWARP).
 */
static int port_netdev(struct rdma *r, char *name, size_t len)
{
	const char *ib = r->ctx->device->ibdev_path;
	char path[PATH_MAX + 64], want[PATH_MAX], got[PATH_MAX];
	struct dirent *e;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "%s/ports/1/gid_attrs/ndevs/%d", ib, r->gid_index);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(name, (int)len, f))
			name[0] = 0;
		fclose(f);
		name[strcspn(name, "\n")] = 0;
		if (name[0])
			return 0;
	}
	snprintf(path, sizeof(path), "%s/device", ib);
	if (!realpath(path, want))
		return -1;
	d = opendir("/sys/class/net");
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/device", e->d_name);
		if (e->d_name[0] != '.' && realpath(path, got) && !strcmp(got, want) &&
		    strlen(e->d_name) < len) {
			strcpy(name, e->d_name);
			closedir(d);
			return 0;
		}
	}
	closedir(d);
	return -1;
}

/*
 * Where --serve listens by default: an address of the port's network
 * device, the GID's own IPv4 address first (RoCE v2), else its first IPv4,
 * else its first IPv6 address.
 */
static int port_address(struct rdma *r, struct sockaddr_storage *ss, socklen_t *sslen,
			char *dev, size_t devlen)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	const char *ib = r->v.get_device_name(r->ctx->device);
	struct ifaddrs *all, *a;
	int best = 0;

	if (port_netdev(r, dev, devlen))
		return rdma_fail(r, "%s port 1 has no network device to listen on: give --bind ADDR (0.0.0.0 for every interface)",
				 ib);
	if (getifaddrs(&all))
		return rdma_fail(r, "getifaddrs: %s", strerror(errno));
	for (a = all; a; a = a->ifa_next) {
		int rank = 0;

		if (!a->ifa_addr || strcmp(a->ifa_name, dev))
			continue;
		if (a->ifa_addr->sa_family == AF_INET) {
			const struct sockaddr_in *in = (const void *)a->ifa_addr;

			rank = !memcmp(r->me.gid.raw, v4mapped, 12) &&
			       !memcmp(r->me.gid.raw + 12, &in->sin_addr, 4) ? 4 : 3;
		} else if (a->ifa_addr->sa_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const void *)a->ifa_addr;

			rank = IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) ? 1 : 2;
		}
		if (rank > best) {
			best = rank;
			*sslen = a->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
				 sizeof(struct sockaddr_in6);
			memcpy(ss, a->ifa_addr, *sslen);
		}
	}
	freeifaddrs(all);
	if (!best)
		return rdma_fail(r, "%s, the network device of %s port 1, has no IP address to listen on: give --bind ADDR (0.0.0.0 for every interface)",
				 dev, ib);
	return 0;
}

static void addr_text(const struct sockaddr *a, socklen_t len, char *buf, size_t buflen)
{
	if (getnameinfo(a, len, buf, (socklen_t)buflen, NULL, 0, NI_NUMERICHOST))
		snprintf(buf, buflen, "?");
}

/*
 * Listen on --bind, or on the address of the RDMA port's network device,
 * and take one peer, with no time limit: a server waits for its peer.
 */
static int tcp_accept(struct rdma *r, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	char dev[IFNAMSIZ + 1] = "", host[INET6_ADDRSTRLEN + IFNAMSIZ + 2];
	int one = 1, lsock = -1, err = 0;

	if (r->b->o.rdma_bind) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
		struct addrinfo *res, *a;
		int rc = getaddrinfo(r->b->o.rdma_bind, port, &hints, &res);

		if (rc)
			return rdma_fail(r, "--bind %s: %s", r->b->o.rdma_bind, gai_strerror(rc));
		for (a = res; a && lsock < 0; a = a->ai_next) {
			lsock = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
			if (lsock < 0)
				continue;
			setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (!bind(lsock, a->ai_addr, a->ai_addrlen)) {
				sslen = a->ai_addrlen;
				memcpy(&ss, a->ai_addr, sslen);
				break;
			}
			err = errno;
			close(lsock);
			lsock = -1;
		}
		freeaddrinfo(res);
	} else {
		if (port_address(r, &ss, &sslen, dev, sizeof(dev)))
			return -1;
		if (ss.ss_family == AF_INET)
			((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)atoi(port));
		else
			((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)atoi(port));
		lsock = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lsock >= 0) {
			setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(lsock, (struct sockaddr *)&ss, sslen)) {
				err = errno;
				close(lsock);
				lsock = -1;
			}
		} else {
			err = errno;
		}
	}
	addr_text((struct sockaddr *)&ss, sslen, host, sizeof(host));
	if (lsock < 0 || listen(lsock, 1)) {
		if (lsock >= 0) {
			err = errno;
			close(lsock);
		}
		return rdma_fail(r, "listening on %s port %s: %s",
				 sslen ? host : r->b->o.rdma_bind, port, strerror(err));
	}
	if (dev[0])
		snprintf(r->where, sizeof(r->where), "%s (%s, of %s port 1)",
			 host, dev, r->v.get_device_name(r->ctx->device));
	else
		snprintf(r->where, sizeof(r->where), "%s (--bind)", host);
	fprintf(stderr, "gpubuf-bench rdma: waiting for a peer on %s port %s\n", r->where, port);
	r->sock = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
	close(lsock);
	if (r->sock < 0)
		return rdma_fail(r, "accept: %s", strerror(errno));
	sock_timeouts(r);
	return 0;
}

/* --serve: the largest size a peer may measure. */
static uint64_t serve_cap(const struct bench_opts *o)
{
	uint64_t max = 0;
	int i;

	if (o->max_size)
		return o->max_size;
	for (i = 0; i < o->nr_sizes; i++)
		max = o->sizes[i] > max ? o->sizes[i] : max;
	return max ? max : 4 * MIB;
}

/* Each registration holds two of the largest operation, in whole pages. */
static uint64_t reg_size(uint64_t max_len)
{
	return (2 * max_len + 4095) & ~4095ull;
}

/*
 * The peer's "hello SIZE OPS", checked before anything is allocated; a
 * refusal goes to the peer as "refused REASON" and fails the run.
 */
static int serve_request(struct rdma *r)
{
	char line[128], ops[16] = "", why[200] = "", a[32], b[32];
	unsigned long long size;
	uint64_t cap = serve_cap(&r->b->o);
	int n;

	if (line_recv(r, line, sizeof(line), "the peer's hello"))
		return -1;
	n = sscanf(line, "hello %llu %15s", &size, ops);
	if (n == 1)
		snprintf(why, sizeof(why), "the peer's gpubuf-bench is older than this one (it names no operations): run the same version on both sides");
	else if (n != 2 || !size)
		snprintf(why, sizeof(why), "the peer sent '%.60s', not hello", line);
	else if (!strcmp(ops, "write"))
		r->ops = RDMA_OP_WRITE;
	else if (!strcmp(ops, "read"))
		r->ops = RDMA_OP_READ;
	else if (!strcmp(ops, "write,read"))
		r->ops = RDMA_OP_WRITE | RDMA_OP_READ;
	else
		snprintf(why, sizeof(why), "the peer asked for operations '%.15s', not write, read or write,read",
			 ops);
	if (!why[0] && size > reg_size(cap)) {
		fmt_size(a, sizeof(a), size / 2);
		fmt_size(b, sizeof(b), cap);
		snprintf(why, sizeof(why), "the peer asked to measure sizes up to %s; this server allows up to %s (its --max-size)",
			 a, b);
	} else if (!why[0] && size / 2 > r->max_msg_sz) {
		fmt_size(a, sizeof(a), size / 2);
		fmt_size(b, sizeof(b), r->max_msg_sz);
		snprintf(why, sizeof(why), "the peer asked to measure sizes up to %s, above this port's max_msg_sz (%s)",
			 a, b);
	}
	if (why[0]) {
		char out[256];

		snprintf(out, sizeof(out), "refused %s\n", why);
		line_send(r, out);
		return rdma_fail(r, "refused the peer: %s", why);
	}
	r->size = (size_t)size;
	return 0;
}

/* --serve after "ready": sums asked for, keepalives, until "done". */
static int serve_lines(struct rdma *r)
{
	char line[128];
	unsigned long long len;
	int k;

	for (;;) {
		if (line_recv(r, line, sizeof(line),
			      "the peer (it sends a line at least every second while it measures)"))
			return -1;
		if (!strcmp(line, "alive"))
			continue;
		if (!strcmp(line, "done"))
			return line_send(r, "bye\n");
		if (sscanf(line, "sum %d %llu", &k, &len) != 2 || k < 0 || k >= NMEM ||
		    len > r->size)
			return rdma_fail(r, "the peer sent '%.60s', not done", line);
		snprintf(line, sizeof(line), "sum %llx\n",
			 (unsigned long long)mem_sum(r->mem[k], (size_t)len));
		if (line_send(r, line))
			return -1;
	}
}

/*
 * Peer: "hello SIZE OPS" ->, <- server's QP (or "refused WHY"), client's
 * QP ->, <- "ready", the checks ("sum K LEN" ->, <- "sum HEX"), the
 * measurement with "alive" -> at least every second, "done" ->, <- "bye".
 * The server opens the device first: its port's network device is where
 * it listens.
 */
static int run(struct rdma *r)
{
	struct bench_opts *o = &r->b->o;
	char line[512];

	if (o->rdma_serve) {
		if (rdma_device_open(r, o->ib_dev) || tcp_accept(r, o->tcp_port) ||
		    serve_request(r) || rdma_memory_register(r) || info_send(r) ||
		    info_recv(r, "the peer's queue pair") || rdma_qp_connect(r) ||
		    line_send(r, "ready\n"))
			return -1;
		return serve_lines(r);
	}
	if (rdma_device_open(r, o->ib_dev))
		return -1;
	if (r->max_len > r->max_msg_sz) {
		char a[32], b[32];

		fmt_size(a, sizeof(a), r->max_len);
		fmt_size(b, sizeof(b), r->max_msg_sz);
		return rdma_fail(r, "size %s refused: above the max_msg_sz of %s port 1 (%s)", a,
				 r->v.get_device_name(r->ctx->device), b);
	}
	if (rdma_memory_register(r) || tcp_connect(r, o->rdma_peer, o->tcp_port))
		return -1;
	snprintf(line, sizeof(line), "hello %zu %s\n", r->size, ops_name(r->ops));
	if (line_send(r, line) || line_recv(r, line, sizeof(line), "the server's answer"))
		return -1;
	if (!strncmp(line, "refused ", 8))
		return rdma_fail(r, "the server refused: %.200s", line + 8);
	if (info_parse(r, line) || info_send(r) || rdma_qp_connect(r) ||
	    line_recv(r, line, sizeof(line), "the server's ready"))
		return -1;
	if (strcmp(line, "ready"))
		return rdma_fail(r, "the peer sent '%.60s', not ready", line);
	if (verify(r, 0) || verify(r, 1) || measure(r))
		return -1;
	return line_send(r, "done\n") ||
	       line_recv(r, line, sizeof(line), "the server's bye") ? -1 : 0;
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
	if (!b->o.rdma_serve) {
		static const uint64_t def[] = { 4 * KIB, 64 * KIB, 1 * MIB, 4 * MIB };
		int i;

		r.ops = b->o.rdma_ops ? b->o.rdma_ops : RDMA_OP_WRITE | RDMA_OP_READ;
		r.nr_sizes = bench_sizes(&b->o, def, 4, r.sizes);
		r.max_len = 8;	/* the latency rows' */
		for (i = 0; i < r.nr_sizes; i++)
			r.max_len = r.sizes[i] > r.max_len ? r.sizes[i] : r.max_len;
		/* One work request carries at most 4 GiB - 1 (sge.length is 32 bits). */
		if (r.max_len > UINT32_MAX) {
			char sz[32];

			fmt_size(sz, sizeof(sz), r.max_len);
			res = result_add(b, MODE_RDMA, RES_UNAVAILABLE);
			snprintf(res->op, sizeof(res->op), "all");
			snprintf(res->memory, sizeof(res->memory), "gpubuf");
			result_reason(res, "size %s refused: one RDMA operation moves at most 4 GiB - 1 byte (sge.length is 32 bits)",
				      sz);
			return EXIT_FAIL;
		}
		/* verify() uses two halves of the largest size. */
		r.size = (size_t)reg_size(r.max_len);
	}
	if (rdma_verbs_load(&r) || run(&r)) {
		res = result_add(b, MODE_RDMA, RES_UNAVAILABLE);
		snprintf(res->op, sizeof(res->op), "all");
		snprintf(res->memory, sizeof(res->memory), "gpubuf");
		result_reason(res, "%s", r.why);
		rdma_close(&r);
		/* No peer or device is missing hardware; a broken run is a failure. */
		return r.v.lib && r.ctx && !r.no_peer ? EXIT_FAIL : EXIT_UNSUPPORTED;
	}
	res = result_add(b, MODE_RDMA, RES_INFO);
	snprintf(res->op, sizeof(res->op), "info");
	if (b->o.rdma_serve)
		result_reason(res, "%s port 1, RC, GID index %d, MTU %d, READs in flight %d (responder %d); served one peer on %s, granting remote %s",
			      r.v.get_device_name(r.ctx->device), r.gid_index,
			      128 << r.me.mtu, r.rd_atom_init, r.rd_atom_dest, r.where,
			      r.ops == RDMA_OP_WRITE ? "write only" :
			      r.ops == RDMA_OP_READ ? "read only" : "write and read");
	else
		result_reason(res, "%s port 1, RC, GID index %d, MTU %d, READs in flight %d (responder %d); measured %s against %s",
			      r.v.get_device_name(r.ctx->device), r.gid_index,
			      128 << r.me.mtu, r.rd_atom_init, r.rd_atom_dest,
			      ops_name(r.ops), b->o.rdma_peer);
	rdma_close(&r);
	return EXIT_OK;
}

#endif /* GPUBUF_TOOLS_HAVE_RDMA */
