// SPDX-License-Identifier: MIT
/*
 * gpubuf-bench: how fast is the host<->GPU path, and what does pinning buy?
 * See gpubuf-bench(1). Results go to stdout; notes, progress and errors to
 * stderr, so the output can be piped into scripts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static int (*const mode_fns[MODE_COUNT])(struct bench *) = {
	[MODE_HOST] = mode_host,
	[MODE_ALLOC] = mode_alloc,
	[MODE_DRM] = mode_drm,
	[MODE_CUDA] = mode_cuda,
	[MODE_HSA] = mode_hsa,
	[MODE_VULKAN] = mode_vulkan,
	[MODE_RDMA] = mode_rdma,
	[MODE_STORAGE] = mode_storage,
};

/*
 * The one rule for "no gpubuf context", applied by every mode that needs
 * one (host, alloc, drm): the module being absent is "unsupported" (77),
 * because GPUBUF_BACKEND=module asked for it and forbade the memfd
 * fallback that auto (the default) or memfd would take. Any other reason
 * the context could not be opened (no permission on /dev/gpubuf, an ABI
 * mismatch, a bad GPUBUF_BACKEND) is a failure (1): something is broken,
 * not missing. Returns EXIT_OK when the mode can go on.
 */
int bench_need_ctx(struct bench *b, enum bench_mode m)
{
	struct result *r;

	if (b->ctx)
		return EXIT_OK;
	if (b->open_rc != -ENOENT) {
		fprintf(stderr, "ERROR: %s: no gpubuf context: %s\n",
			mode_name(m), b->hdr.open_error);
		return EXIT_FAIL;
	}
	r = result_add(b, m, RES_UNAVAILABLE);
	snprintf(r->op, sizeof(r->op), "all");
	snprintf(r->memory, sizeof(r->memory), "gpubuf");
	result_reason(r, "%.120s%s", b->hdr.open_error, m == MODE_DRM ? "" :
		      "; GPUBUF_BACKEND=auto or memfd runs this mode on memfd");
	return EXIT_UNSUPPORTED;
}

int main(int argc, char **argv)
{
	struct bench b;
	int rc, m, ran = 0, failed = 0, unsupported = 0;

	memset(&b, 0, sizeof(b));
	rc = bench_parse(&b.o, argc, argv);
	if (rc == EXIT_USAGE)
		bench_usage(stderr);
	if (rc >= 0)
		return rc;
	b.alloc = (struct gpubuf_alloc_opts)GPUBUF_ALLOC_OPTS_INIT;
	if (b.o.node >= 0) {
		b.alloc.numa_node = b.o.node;
		b.alloc.flags = GPUBUF_ALLOC_NUMA_STRICT;
	}

	rc = gpubuf_open_err(&b.ctx, GPUBUF_OPEN_ALLOW_MEMFD,
			     b.hdr.open_error, sizeof(b.hdr.open_error));
	if (rc) {
		b.ctx = NULL;
		b.open_rc = rc;
		if (!b.hdr.open_error[0])
			snprintf(b.hdr.open_error, sizeof(b.hdr.open_error),
				 "%s", gpubuf_strerror(rc));
		/* Not an error yet: the modes that need a context decide. */
		fprintf(stderr, "%s: gpubuf_open: %s\n",
			rc == -ENOENT ? "note" : "ERROR", b.hdr.open_error);
	}
	header_collect(&b);
	if (b.hdr.emulated)
		fprintf(stderr, "note: running under emulation (QEMU); only ratios within this run are meaningful\n");
	fprintf(stderr, "gpubuf-bench: backend %s, library %s, kernel %s\n",
		b.hdr.backend, b.hdr.library, b.hdr.kernel);

	for (m = 0; m < MODE_COUNT; m++) {
		if (!(b.o.modes & (1u << m)))
			continue;
		rc = mode_fns[m](&b);
		if (rc == EXIT_FAIL)
			failed++;
		else if (rc == EXIT_UNSUPPORTED)
			unsupported++;
		else
			ran++;
	}
	output_results(&b);
	if (b.o.json_file && output_json_file(&b, b.o.json_file) != EXIT_OK)
		failed++;
	if (b.o.plot && plot_write(&b, b.o.plot) != EXIT_OK)
		failed++;
	gpubuf_close(b.ctx);
	ratio_free_all(&b);
	free(b.res);
	if (failed)
		return EXIT_FAIL;
	return ran || !unsupported ? EXIT_OK : EXIT_UNSUPPORTED;
}
