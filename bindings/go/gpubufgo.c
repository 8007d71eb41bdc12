// SPDX-License-Identifier: MIT
/* C helpers of the Go binding: see gpubufgo.h. */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpubufgo.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000	/* Linux 4.17 */
#endif

/* The agents a lock may name; more GPUs than this in one machine are rare. */
#define GBGO_MAX_AGENTS 64

static int gbgo_detail(int err, struct gbgo_msg *msg)
{
	const char *d = err ? gpubuf_last_error() : "";

	snprintf(msg->text, sizeof(msg->text), "%s", d ? d : "");
	return err;
}

int gbgo_open(struct gpubuf_ctx **ctx, unsigned int flags,
	      struct gbgo_msg *msg)
{
	msg->text[0] = '\0';
	return gpubuf_open_err(ctx, flags, msg->text, sizeof(msg->text));
}

int gbgo_release(struct gpubuf *buf, int fence)
{
	void *ptr = gpubuf_ptr(buf), *res;
	size_t size = gpubuf_size(buf);
	long page = sysconf(_SC_PAGESIZE);

	/*
	 * The caller's reference is the only one the binding holds, so a
	 * count of 1 cannot rise while we look: nobody else has the pointer.
	 */
	if (!fence || gpubuf_refcount(buf) != 1) {
		gpubuf_unref(buf);
		return 0;
	}
	gpubuf_unref(buf);	/* munmap(ptr, size) */
	size = (size + (size_t)page - 1) & ~((size_t)page - 1);
	res = mmap(ptr, size, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
		   -1, 0);
	if (res == MAP_FAILED)
		return -errno;	/* EEXIST: something was mapped there first */
	if (res != ptr) {	/* a kernel before 4.17 took the address as a hint */
		munmap(res, size);
		return -EEXIST;
	}
	return 1;
}

int gbgo_cuda_device_count(int *count, struct gbgo_msg *msg)
{
	return gbgo_detail(gpubuf_cuda_device_count(count), msg);
}

int gbgo_device_node(const char *device, int *node, struct gbgo_msg *msg)
{
	return gbgo_detail(gpubuf_device_node(device, node), msg);
}

int gbgo_alloc(struct gpubuf_ctx *ctx, size_t size,
	       const struct gpubuf_alloc_opts *opts, struct gpubuf **buf,
	       struct gbgo_msg *msg)
{
	return gbgo_detail(gpubuf_alloc(ctx, size, opts, buf), msg);
}

int gbgo_matrix_alloc(struct gpubuf_ctx *ctx, enum gpubuf_dtype dtype,
		      size_t rows, size_t cols, enum gpubuf_layout layout,
		      size_t align, const struct gpubuf_alloc_opts *opts,
		      struct gpubuf_matrix *m, struct gbgo_msg *msg)
{
	return gbgo_detail(gpubuf_matrix_alloc_opts(ctx, dtype, rows, cols,
						    layout, align, opts, m),
			   msg);
}

int gbgo_opts_near(struct gpubuf_alloc_opts *opts, const char *device,
		   struct gbgo_msg *msg)
{
	opts->size = sizeof(*opts);
	opts->numa_node = GPUBUF_NUMA_ANY;
	return gbgo_detail(gpubuf_alloc_opts_near(opts, device), msg);
}

int gbgo_cuda_view(const struct gpubuf_matrix *m, int device,
		   unsigned int flags, struct gpubuf_cuda_matrix *out,
		   struct gbgo_msg *msg)
{
	uint64_t base;
	int err = gpubuf_cuda_register(m->buf, device, flags, &base);

	if (err)
		return gbgo_detail(err, msg);
	err = gpubuf_cuda_matrix_view(m, device, out);
	if (err) {
		gbgo_detail(err, msg);
		gpubuf_cuda_unregister(m->buf, device);
		return err;
	}
	/* The library's flag only records what the registration promised. */
	if (flags & GPUBUF_CUDA_REGISTER_READ_ONLY)
		out->flags |= GPUBUF_CUDA_MATRIX_READ_ONLY;
	return 0;
}

int gbgo_cuda_gemm(double alpha, const struct gpubuf_cuda_matrix *a,
		   const struct gpubuf_cuda_matrix *b, double beta,
		   const struct gpubuf_cuda_matrix *c, struct gbgo_msg *msg)
{
	return gbgo_detail(gpubuf_cuda_gemm(alpha, a, b, beta, c, NULL), msg);
}

int gbgo_hsa_agent_count(int *count, struct gbgo_msg *msg)
{
	uint64_t agents[GBGO_MAX_AGENTS];

	return gbgo_detail(gpubuf_hsa_agents(agents, GBGO_MAX_AGENTS, count), msg);
}

int gbgo_hsa_view(const struct gpubuf_matrix *m, int agent,
		  struct gpubuf_hsa_matrix *out, struct gbgo_msg *msg)
{
	uint64_t agents[GBGO_MAX_AGENTS];
	void *agent_ptr;
	int count = 0;
	int err = gpubuf_hsa_agents(agents, GBGO_MAX_AGENTS, &count);

	if (err)
		return gbgo_detail(err, msg);
	if (agent < 0 || agent >= count || agent >= GBGO_MAX_AGENTS) {
		snprintf(msg->text, sizeof(msg->text),
			 "no HSA GPU agent %d (%d present)", agent, count);
		return -ENODEV;
	}
	err = gpubuf_hsa_lock(m->buf, &agents[agent], 1, &agent_ptr);
	if (err)
		return gbgo_detail(err, msg);
	err = gpubuf_hsa_matrix_view(m, agent, out);
	if (err) {
		gbgo_detail(err, msg);
		gpubuf_hsa_unlock(m->buf);
	}
	return err;
}

int gbgo_hsa_gemm(double alpha, const struct gpubuf_hsa_matrix *a,
		  const struct gpubuf_hsa_matrix *b, double beta,
		  const struct gpubuf_hsa_matrix *c, struct gbgo_msg *msg)
{
	return gbgo_detail(gpubuf_hsa_gemm(alpha, a, b, beta, c, 0), msg);
}
