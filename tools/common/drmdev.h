/* SPDX-License-Identifier: MIT */
/*
 * DRM device discovery through the kernel uapi only (no libdrm link):
 * /dev/dri/card* and DRM_IOCTL_VERSION.
 */
#ifndef GPUBUF_TOOLS_DRMDEV_H
#define GPUBUF_TOOLS_DRMDEV_H

#define DRMDEV_MAX	16

struct drm_card {
	char path[64];
	char driver[32];	/* "vgem", "amdgpu", ... */
	char desc[64];
	int major, minor, patch;
};

/* Fill card from an open DRM fd. Returns 0 or a negative errno. */
int drm_card_query(int fd, struct drm_card *card);
/*
 * List /dev/dri/card* in name order. Returns the number found (up to max)
 * or a negative errno when /dev/dri cannot be read. Cards that do not
 * answer DRM_IOCTL_VERSION are listed with driver "?".
 */
int drm_card_list(struct drm_card *cards, int max);

#endif
