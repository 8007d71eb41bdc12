/* SPDX-License-Identifier: MIT */
/*
 * C helpers of the Go binding. Each does in one C call what must not be
 * split across two cgo calls: gpubuf_last_error() is per thread, and a
 * goroutine may move to another thread between two calls, so a failing
 * call and the read of its detail happen here together.
 */
#ifndef GPUBUFGO_H
#define GPUBUFGO_H

#include <stdlib.h>

#include <gpubuf.h>

/* The library's text about a failure, copied out of its thread. */
struct gbgo_msg {
	char text[512];
};

int gbgo_open(struct gpubuf_ctx **ctx, unsigned int flags,
	      struct gbgo_msg *msg);

/*
 * Drop the caller's reference. With fence set, and when it was the last
 * one, the address range the mapping had is taken back at once as an
 * inaccessible reservation (PROT_NONE), so that stale pointers into it
 * fault instead of reaching whatever is mapped there next. Returns 1 when
 * the range was fenced, 0 when others still hold the buffer (or fence was
 * 0), and a negative errno when the range could not be fenced.
 */
int gbgo_release(struct gpubuf *buf, int fence);

/* gpubuf_alloc() and gpubuf_matrix_alloc_opts() with their detail. */
int gbgo_alloc(struct gpubuf_ctx *ctx, size_t size,
	       const struct gpubuf_alloc_opts *opts, struct gpubuf **buf,
	       struct gbgo_msg *msg);
int gbgo_matrix_alloc(struct gpubuf_ctx *ctx, enum gpubuf_dtype dtype,
		      size_t rows, size_t cols, enum gpubuf_layout layout,
		      size_t align, const struct gpubuf_alloc_opts *opts,
		      struct gpubuf_matrix *m, struct gbgo_msg *msg);

int gbgo_cuda_device_count(int *count, struct gbgo_msg *msg);
/* gpubuf_device_node(), and options with only numa_node set near device. */
int gbgo_device_node(const char *device, int *node, struct gbgo_msg *msg);
int gbgo_opts_near(struct gpubuf_alloc_opts *opts, const char *device,
		   struct gbgo_msg *msg);
/* Register m's buffer with CUDA device and describe m there. */
int gbgo_cuda_view(const struct gpubuf_matrix *m, int device,
		   unsigned int flags, struct gpubuf_cuda_matrix *out,
		   struct gbgo_msg *msg);
int gbgo_cuda_gemm(double alpha, const struct gpubuf_cuda_matrix *a,
		   const struct gpubuf_cuda_matrix *b, double beta,
		   const struct gpubuf_cuda_matrix *c, struct gbgo_msg *msg);

int gbgo_hsa_agent_count(int *count, struct gbgo_msg *msg);
/* Lock m's buffer for GPU agent index agent and describe m there. */
int gbgo_hsa_view(const struct gpubuf_matrix *m, int agent,
		  struct gpubuf_hsa_matrix *out, struct gbgo_msg *msg);
int gbgo_hsa_gemm(double alpha, const struct gpubuf_hsa_matrix *a,
		  const struct gpubuf_hsa_matrix *b, double beta,
		  const struct gpubuf_hsa_matrix *c, struct gbgo_msg *msg);

#endif /* GPUBUFGO_H */
