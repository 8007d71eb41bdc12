/* SPDX-License-Identifier: MIT */
/*
 * hsa/, libgpubuf's ROCm consumer: the HSA runtime loaded with dlopen
 * (hsa_runtime.c), buffers locked for GPU agents and held by their lock
 * (hsa.c), and the GEMV/GEMM code objects built from kernels/, loaded and
 * dispatched (hsa_kload.c, hsa_kernels.c, hsaco.S, hsa_code.h). Types come
 * from libhsa-runtime-dev's headers at build time; nothing links against
 * libhsa-runtime64.
 */
#ifndef GPUBUF_HSA_RUNTIME_H
#define GPUBUF_HSA_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#ifdef GPUBUF_HAVE_HSA

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

/* The runtime table and what gpubuf's tools call: shared with them. */
#include <gpubuf/tools.h>

/* Index of a GPU agent handle in hsa->gpus, or -1. */
int gpubuf_hsa_gpu_index(const struct gpubuf_hsa *hsa, uint64_t handle);

#endif /* GPUBUF_HAVE_HSA */

struct gpubuf;

/*
 * One more lock count on a buffer already locked for GPU agent index gpu
 * (enumeration order), for DLPack kDLROCM exports: 0 with the agent
 * pointer, -ENXIO if it is not locked for that agent.
 * gpubuf_hsa_unlock() gives it back.
 */
int gpubuf_hsa_hold(struct gpubuf *buf, int gpu, uint64_t *agent_ptr);

#endif /* GPUBUF_HSA_RUNTIME_H */
