// SPDX-License-Identifier: MIT
/*
 * gpubuf-info's Vulkan devices: each device libgpubuf's Vulkan layer opens
 * (gpubuf_vk_open(3), index order), as the CUDA and HSA probes list
 * theirs: its name and type, the API version, and the imports it offers
 * gpubuf buffers (dma-buf, host memory), from gpubuf_vk_info(3).
 */
#include <stdio.h>
#include <string.h>

#include <gpubuf.h>

#include "vkinfo.h"

static const char *vk_type(uint32_t t)
{
	static const char *const names[] = {
		"other", "integrated GPU", "discrete GPU", "virtual GPU", "CPU",
	};

	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

/* JSON's word for the type: no spaces. */
static const char *vk_type_key(uint32_t t)
{
	static const char *const names[] = {
		"other", "integrated_gpu", "discrete_gpu", "virtual_gpu", "cpu",
	};

	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

void vk_list(struct vk_listing *l)
{
	memset(l, 0, sizeof(*l));
	for (int i = 0; i < VK_LIST_MAX; i++) {
		struct gpubuf_vk_info vi;
		struct gpubuf_vk *vk;
		int err = gpubuf_vk_open(i, 0, &vk);

		if (err) {
			if (!i)
				snprintf(l->why, sizeof(l->why), "%s: %s",
					 gpubuf_strerror(err),
					 gpubuf_last_error());
			break;
		}
		err = gpubuf_vk_info(vk, &vi);
		gpubuf_vk_close(vk);
		if (err)
			break;
		snprintf(l->dev[i].name, sizeof(l->dev[i].name), "%s", vi.name);
		l->dev[i].type = vi.device_type;
		l->dev[i].api = vi.api_version;
		l->dev[i].features = vi.features;
		if (vi.pci_valid)
			snprintf(l->dev[i].pci, sizeof(l->dev[i].pci),
				 "%04x:%02x:%02x.%x", vi.pci_domain,
				 vi.pci_bus, vi.pci_device & 0x1f,
				 vi.pci_function & 7);
		l->nr++;
	}
}

static void vk_imports(uint32_t f, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s",
		 f & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT ? "dma-bufs" : "",
		 (f & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT) &&
		 (f & GPUBUF_VK_FEATURE_HOST_IMPORT) ? " and " : "",
		 f & GPUBUF_VK_FEATURE_HOST_IMPORT ? "host memory" :
		 (f & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT) ? "" : "nothing");
}

void vk_list_text(const struct vk_listing *l)
{
	char imports[64];

	if (!l->nr)
		printf("%-22s n/a: %s\n", "vulkan", l->why);
	for (int i = 0; i < l->nr; i++) {
		vk_imports(l->dev[i].features, imports, sizeof(imports));
		printf("%-22s device %d: %s, %s, Vulkan %u.%u.%u, imports %s%s%s%s\n",
		       "vulkan", i, l->dev[i].name, vk_type(l->dev[i].type),
		       (l->dev[i].api >> 22) & 0x7f, (l->dev[i].api >> 12) & 0x3ff,
		       l->dev[i].api & 0xfff, imports,
		       l->dev[i].features & GPUBUF_VK_FEATURE_FLOAT64 ?
		       ", float64" : "",
		       l->dev[i].pci[0] ? ", PCI " : "", l->dev[i].pci);
	}
}

void vk_list_json(struct json *j, const struct vk_listing *l)
{
	char v[32];

	json_obj_begin(j, "vulkan");
	json_bool(j, "usable", l->nr > 0);
	if (!l->nr)
		json_str(j, "reason", l->why);
	json_arr_begin(j, "devices");
	for (int i = 0; i < l->nr; i++) {
		uint32_t f = l->dev[i].features;

		json_obj_begin(j, NULL);
		json_int(j, "index", i);
		json_str(j, "name", l->dev[i].name);
		json_str(j, "type", vk_type_key(l->dev[i].type));
		snprintf(v, sizeof(v), "%u.%u.%u", (l->dev[i].api >> 22) & 0x7f,
			 (l->dev[i].api >> 12) & 0x3ff, l->dev[i].api & 0xfff);
		json_str(j, "api_version", v);
		json_arr_begin(j, "imports");
		if (f & GPUBUF_VK_FEATURE_DMA_BUF_IMPORT)
			json_str(j, NULL, "dma-buf");
		if (f & GPUBUF_VK_FEATURE_HOST_IMPORT)
			json_str(j, NULL, "host");
		json_arr_end(j);
		json_bool(j, "float64", !!(f & GPUBUF_VK_FEATURE_FLOAT64));
		if (l->dev[i].pci[0])
			json_str(j, "pci", l->dev[i].pci);
		else
			json_null(j, "pci");
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}
