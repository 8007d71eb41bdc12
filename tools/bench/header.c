// SPDX-License-Identifier: MIT
/*
 * The run header: what was measured on. Collected once before the modes
 * run, printed by output.c (and into the JSON "header").
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/gpuprobe.h"
#include "../common/sysinfo.h"
#include "bench.h"

/* Node of a freshly touched page of each kind; -1 when unknown. */
static void header_numa(struct bench *b)
{
	struct header *h = &b->hdr;
	long ps = sysconf(_SC_PAGESIZE);
	struct gpubuf *buf;
	char *p;

	h->numa_gpubuf = h->numa_anon = -1;
	h->node_requested = b->o.node;
	sys_numa_online(h->numa_online, sizeof(h->numa_online));
	p = mmap(NULL, ps, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		p[0] = 1;
		h->numa_anon = sys_numa_node_of(p);
		munmap(p, ps);
	}
	if (b->ctx && !gpubuf_alloc(b->ctx, ps, BENCH_ALLOC(b), &buf)) {
		h->numa_gpubuf = sys_numa_node_of(gpubuf_ptr(buf));
		gpubuf_unref(buf);
	}
}

static void header_probe(char *out, size_t len, struct gpu_probe *p)
{
	if (p->usable)
		snprintf(out, len, "%s %s, %d device(s)", p->lib,
			 p->version[0] ? p->version : "?", p->device_count);
	else if (p->found)
		snprintf(out, len, "%s %s, unusable: %s", p->lib,
			 p->version[0] ? p->version : "?", p->reason);
	else
		snprintf(out, len, "n/a: %s", p->reason);
}

void header_collect(struct bench *b)
{
	struct header *h = &b->hdr;
	struct gpubuf_version v;
	struct gpu_probe p;

	sys_kernel(h->kernel, sizeof(h->kernel));
	sys_cpu_model(h->cpu, sizeof(h->cpu));
	h->emulated = sys_emulated(h->emulated_why, sizeof(h->emulated_why));
	snprintf(h->library, sizeof(h->library), "%d.%d.%d (built against %s)",
		 gpubuf_version_major(), gpubuf_version_minor(),
		 gpubuf_version_patch(), GPUBUF_VERSION_STRING);
	if (!b->ctx)
		h->backend = "none";
	else if (gpubuf_backend(b->ctx) == GPUBUF_BACKEND_MODULE)
		h->backend = "module";
	else
		h->backend = "memfd";
	if (b->ctx && !gpubuf_driver_version(b->ctx, &v))
		snprintf(h->driver, sizeof(h->driver),
			 "%u.%u.%u, abi %u (min %u)", v.major, v.minor,
			 v.patch, v.abi, v.abi_min);
	else
		snprintf(h->driver, sizeof(h->driver), "n/a");
	header_numa(b);
	gpu_probe_cuda(&p);
	header_probe(h->cuda, sizeof(h->cuda), &p);
	gpu_probe_hsa(&p);
	header_probe(h->hsa, sizeof(h->hsa), &p);
}
