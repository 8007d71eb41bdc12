// SPDX-License-Identifier: MIT
/*
 * For topology/: the PCI address of Vulkan device index (gpubuf_vk_open's
 * numbering), from VK_EXT_pci_bus_info, read from an instance alone.
 */
#include <errno.h>
#include <stdio.h>

#include "core/internal.h"
#include "topology/topology.h"
#include "vulkan/vk_internal.h"

#ifdef GPUBUF_HAVE_VULKAN
int gpubuf_vk_pci_address(int index, char *buf, size_t len)
{
	struct gpubuf_vk_info info;
	int err = gpubuf_vk_phys_info(index, &info);

	if (err)
		return err;
	if (!info.pci_valid) {
		gpubuf_error_set("Vulkan device %d (%s) has no PCI address (no VK_EXT_pci_bus_info)",
				 index, info.name);
		return -ENOENT;
	}
	snprintf(buf, len, "%04x:%02x:%02x.%x", info.pci_domain,
		 info.pci_bus, info.pci_device & 0x1f, info.pci_function & 7);
	return 0;
}
#else
/* The same answer as gpubuf_vk_open(): built without Vulkan. */
int gpubuf_vk_pci_address(int index, char *buf, size_t len)
{
	struct gpubuf_vk *vk;

	(void)buf;
	(void)len;
	return gpubuf_vk_open(index, 0, &vk);
}
#endif
