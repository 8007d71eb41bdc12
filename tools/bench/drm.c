// SPDX-License-Identifier: MIT
/*
 * drm: how long a DRM driver takes to import a gpubuf dma-buf. One sample
 * is DRM_IOCTL_PRIME_FD_TO_HANDLE (attach + map of the exporter) followed
 * by DRM_IOCTL_GEM_CLOSE (unmap + detach). Closing the handle drops the
 * driver's import, so every sample imports afresh instead of hitting the
 * per-file PRIME cache. Needs the module backend: memfd buffers have no
 * dma-buf fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../common/drmdev.h"
#include "bench.h"

static struct result *drm_unavailable(struct bench *b, const char *why)
{
	struct result *r = result_add(b, MODE_DRM, RES_UNAVAILABLE);

	snprintf(r->op, sizeof(r->op), "all");
	snprintf(r->memory, sizeof(r->memory), "gpubuf");
	result_reason(r, "%s", why);
	return r;
}

#ifndef GPUBUF_TOOLS_HAVE_DRM
int mode_drm(struct bench *b)
{
	drm_unavailable(b, "gpubuf-bench was built without libdrm's headers (drm.h from libdrm-dev)");
	return EXIT_UNSUPPORTED;
}
#else
#include <drm.h>

static const uint64_t drm_default_sizes[] = {
	4 * KIB, 64 * KIB, 1 * MIB, 16 * MIB, 64 * MIB,
};

enum { DOP_IMPORT, DOP_CLOSE, DOP_TOTAL, DOP_COUNT };
static const char *const dop_names[DOP_COUNT] = {
	"prime_fd_to_handle", "gem_close", "import_close_total"
};

/* Opens the requested card, or the first one answering DRM_IOCTL_VERSION. */
static int drm_open_card(struct bench *b, struct drm_card *card,
			 char *why, size_t len)
{
	struct drm_card cards[DRMDEV_MAX];
	int fd, n, i;

	if (b->o.drm_card) {
		snprintf(card->path, sizeof(card->path), "%s", b->o.drm_card);
		fd = open(card->path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			snprintf(why, len, "open %s: %s", card->path,
				 strerror(errno));
			return -1;
		}
		if (drm_card_query(fd, card)) {
			snprintf(why, len, "%s is not a DRM device", card->path);
			close(fd);
			return -1;
		}
		return fd;
	}
	n = drm_card_list(cards, DRMDEV_MAX);
	for (i = 0; i < n; i++) {
		if (!strcmp(cards[i].driver, "?"))
			continue;
		fd = open(cards[i].path, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			*card = cards[i];
			return fd;
		}
	}
	snprintf(why, len, n > 0 ? "no usable DRM device among %d in /dev/dri" :
		 "no DRM device (/dev/dri/card*; modprobe vgem for a test one)",
		 n);
	return -1;
}

/* Samples one size; returns 0, or a negative errno with the reason set. */
static int drm_sample(struct bench *b, int dfd, uint64_t size, int warmup,
		      int reps, double *ns[DOP_COUNT], char *why, size_t len)
{
	struct gpubuf *buf;
	int rep, err;

	err = gpubuf_alloc(b->ctx, size, BENCH_ALLOC(b), &buf);
	if (err) {
		snprintf(why, len, "gpubuf_alloc: %s", gpubuf_strerror(err));
		return err;
	}
	for (rep = 0; rep < warmup + reps; rep++) {
		struct drm_prime_handle ph = { .fd = gpubuf_fd(buf) };
		struct drm_gem_close gc = { 0 };
		uint64_t t0, t1, t2;

		t0 = now_ns();
		if (ioctl(dfd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph)) {
			err = -errno;
			snprintf(why, len, "DRM_IOCTL_PRIME_FD_TO_HANDLE: %s",
				 strerror(errno));
			break;
		}
		t1 = now_ns();
		gc.handle = ph.handle;
		if (ioctl(dfd, DRM_IOCTL_GEM_CLOSE, &gc)) {
			err = -errno;
			snprintf(why, len, "DRM_IOCTL_GEM_CLOSE: %s",
				 strerror(errno));
			break;
		}
		t2 = now_ns();
		if (rep < warmup)
			continue;
		ns[DOP_IMPORT][rep - warmup] = (double)(t1 - t0);
		ns[DOP_CLOSE][rep - warmup] = (double)(t2 - t1);
		ns[DOP_TOTAL][rep - warmup] = (double)(t2 - t0);
	}
	gpubuf_unref(buf);
	return err;
}

static void drm_one_size(struct bench *b, int dfd, const struct drm_card *c,
			 uint64_t size, int warmup, int reps)
{
	double *ns[DOP_COUNT];
	char why[160], sz[32];
	struct result *r;
	int op, err = -ENOMEM;

	fmt_size(sz, sizeof(sz), size);
	progress("drm: %s %s", c->driver, sz);
	for (op = 0; op < DOP_COUNT; op++)
		ns[op] = calloc(reps, sizeof(double));
	snprintf(why, sizeof(why), "out of memory for the measurement");
	if (ns[0] && ns[1] && ns[2])
		err = drm_sample(b, dfd, size, warmup, reps, ns, why,
				 sizeof(why));
	for (op = 0; op < DOP_COUNT; op++) {
		r = result_add(b, MODE_DRM, err ? RES_SKIPPED : RES_OK);
		snprintf(r->op, sizeof(r->op), "%s", dop_names[op]);
		snprintf(r->memory, sizeof(r->memory), "gpubuf");
		r->size_bytes = size;
		r->reps = reps;
		r->threads = 1;
		if (err) {
			result_reason(r, "%s", why);
		} else {
			stats(ns[op], reps, &r->med, &r->min, &r->max);
			result_reason(r, "%s (%s)", c->path, c->driver);
		}
		if (err)
			break;	/* one row says why */
	}
	for (op = 0; op < DOP_COUNT; op++)
		free(ns[op]);
}

int mode_drm(struct bench *b)
{
	uint64_t sizes[MAX_SIZES];
	int reps = b->o.reps ? b->o.reps : 100;
	int warmup = b->o.warmup >= 0 ? b->o.warmup : 10;
	struct drm_card card;
	char why[192];
	int nr, i, dfd;

	nr = bench_need_ctx(b, MODE_DRM);
	if (nr != EXIT_OK)
		return nr;
	if (gpubuf_backend(b->ctx) != GPUBUF_BACKEND_MODULE) {
		drm_unavailable(b, "memfd backend: buffers have no dma-buf fd (needs gpubuf.ko)");
		return EXIT_UNSUPPORTED;
	}
	memset(&card, 0, sizeof(card));
	dfd = drm_open_card(b, &card, why, sizeof(why));
	if (dfd < 0) {
		drm_unavailable(b, why);
		return EXIT_UNSUPPORTED;
	}
	fprintf(stderr, "drm: importing into %s (driver %s %d.%d.%d)\n",
		card.path, card.driver, card.major, card.minor, card.patch);
	nr = bench_sizes(&b->o, drm_default_sizes,
			 sizeof(drm_default_sizes) / sizeof(uint64_t), sizes);
	progress_start();
	for (i = 0; i < nr; i++)
		drm_one_size(b, dfd, &card, sizes[i], warmup, reps);
	progress_end();
	close(dfd);
	return nr ? EXIT_OK : EXIT_FAIL;
}
#endif /* GPUBUF_TOOLS_HAVE_DRM */
