// SPDX-License-Identifier: MIT
/*
 * hsa mode: for now it probes the runtime and reports it; the copy and
 * zero-copy benchmarks need libgpubuf's HSA interop, which is a separate
 * issue. The cuda mode is cuda.c.
 */
#include <stdio.h>

#include "../common/gpuprobe.h"
#include "bench.h"

static int gpu_mode(struct bench *b, enum bench_mode mode,
		    void (*probe)(struct gpu_probe *))
{
	struct gpu_probe p;
	struct result *r;

	probe(&p);
	r = result_add(b, mode, p.usable ? RES_INFO : RES_UNAVAILABLE);
	snprintf(r->op, sizeof(r->op), "probe");
	snprintf(r->memory, sizeof(r->memory), "-");
	snprintf(r->version, sizeof(r->version), "%s", p.version);
	r->device_count = p.device_count;
	if (p.usable) {
		result_reason(r, "%s %s, %d device(s)%s%s; copy and zero-copy benchmarks arrive with the HSA interop issue",
			      p.lib, p.version[0] ? p.version : "?",
			      p.device_count, p.device0[0] ? ", first: " : "",
			      p.device0);
		return EXIT_OK;
	}
	result_reason(r, "%s", p.reason);
	return EXIT_UNSUPPORTED;
}

int mode_hsa(struct bench *b)
{
	return gpu_mode(b, MODE_HSA, gpu_probe_hsa);
}
