// SPDX-License-Identifier: MIT
/*
 * For topology/: the PCI address of Vulkan device index (gpubuf_vk_open's
 * numbering), from VK_EXT_pci_bus_info. Opening the device is the price of
 * asking by index; an application with a device reads gpubuf_vk_info().
 */
#include <errno.h>
#include <stdio.h>

#include "core/internal.h"
#include "topology/topology.h"

int gpubuf_vk_pci_address(int index, char *buf, size_t len)
{
	struct gpubuf_vk_info info;
	struct gpubuf_vk *vk;
	int err = gpubuf_vk_open(index, 0, &vk);

	if (err)
		return err;
	err = gpubuf_vk_info(vk, &info);
	gpubuf_vk_close(vk);
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
