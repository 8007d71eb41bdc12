/* SPDX-License-Identifier: MIT */
/* gpubuf-info's Vulkan devices (vkinfo.c). */
#ifndef GPUBUF_INFO_VKINFO_H
#define GPUBUF_INFO_VKINFO_H

#include <stdint.h>

#include "../common/json.h"

#define VK_LIST_MAX	8

struct vk_listing {
	int nr;			/* devices the library opened */
	char why[256];		/* why none, when nr is 0 */
	struct {
		char name[256];
		uint32_t type;		/* VkPhysicalDeviceType */
		uint32_t api;		/* VK_MAKE_API_VERSION */
		uint32_t features;	/* GPUBUF_VK_FEATURE_* */
		char pci[20];		/* "" without VK_EXT_pci_bus_info */
	} dev[VK_LIST_MAX];
};

/* Every device gpubuf_vk_open() takes, in its order. */
void vk_list(struct vk_listing *l);
void vk_list_text(const struct vk_listing *l);
/* "vulkan": { "usable", "reason" or "devices": [...] } */
void vk_list_json(struct json *j, const struct vk_listing *l);

#endif
