// SPDX-License-Identifier: MIT
/* DRM card discovery via DRM_IOCTL_VERSION; see drmdev.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "drmdev.h"

#ifndef GPUBUF_TOOLS_HAVE_DRM
/* Built without libdrm's headers: cards are listed, not asked. */
int drm_card_query(int fd, struct drm_card *card)
{
	(void)fd;
	(void)card;
	return -EOPNOTSUPP;
}
#else
#include <drm.h>

int drm_card_query(int fd, struct drm_card *card)
{
	struct drm_version v;

	memset(&v, 0, sizeof(v));
	v.name = card->driver;
	v.name_len = sizeof(card->driver) - 1;
	v.desc = card->desc;
	v.desc_len = sizeof(card->desc) - 1;
	memset(card->driver, 0, sizeof(card->driver));
	memset(card->desc, 0, sizeof(card->desc));
	if (ioctl(fd, DRM_IOCTL_VERSION, &v) < 0)
		return -errno;
	card->major = v.version_major;
	card->minor = v.version_minor;
	card->patch = v.version_patchlevel;
	return 0;
}
#endif

static int drm_card_cmp(const void *a, const void *b)
{
	const struct drm_card *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);

	/* card10 after card9 */
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->path, y->path);
}

int drm_card_list(struct drm_card *cards, int max)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	d = opendir("/dev/dri");
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max) {
		struct drm_card *c = &cards[n];
		int fd;

		if (strncmp(de->d_name, "card", 4))
			continue;
		memset(c, 0, sizeof(*c));
		snprintf(c->path, sizeof(c->path), "/dev/dri/%.50s", de->d_name);
		fd = open(c->path, O_RDWR | O_CLOEXEC);
		if (fd < 0 || drm_card_query(fd, c))
			snprintf(c->driver, sizeof(c->driver), "?");
		if (fd >= 0)
			close(fd);
		n++;
	}
	closedir(d);
	qsort(cards, n, sizeof(*cards), drm_card_cmp);
	return n;
}
