/* SPDX-License-Identifier: MIT */
/*
 * topology/, the layer above the consumers: from a device to the NUMA node
 * its memory should be on (gpubuf_device_node(3)). It reads sysfs and asks
 * each GPU runtime for its device's PCI address; those answers are the
 * functions below, each defined in its consumer's folder (in a build
 * without that runtime too, answering -EOPNOTSUPP).
 */
#ifndef GPUBUF_TOPOLOGY_H
#define GPUBUF_TOPOLOGY_H

#include <stddef.h>

/*
 * "dddd:bb:dd.f" and its NUL, with room for the 32-bit domains Linux
 * names with more than four digits (VMD's "10000:e1:00.0").
 */
#define GPUBUF_PCI_ADDRESS_LEN	17

/*
 * The PCI address of a runtime's device, lower case, into buf (at least
 * GPUBUF_PCI_ADDRESS_LEN bytes). 0; -ENOENT for a device that has none
 * (lavapipe); -ENODEV for no such device or no runtime; other -errno from
 * the runtime. gpubuf_last_error() says why.
 */
int gpubuf_cuda_pci_address(int device, char *buf, size_t len);
int gpubuf_hsa_pci_address(int agent, char *buf, size_t len);
int gpubuf_vk_pci_address(int index, char *buf, size_t len);

#endif
