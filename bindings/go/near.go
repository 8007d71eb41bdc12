// SPDX-License-Identifier: MIT

package gpubuf

// #include "gpubufgo.h"
import "C"

import "unsafe"

// AnyNode is DeviceNode's answer for a device without NUMA affinity, and
// GetNode's node for none in particular (GPUBUF_NUMA_ANY).
const AnyNode = -1

// DeviceNode is the NUMA node a device's buffers belong on
// (gpubuf_device_node(3)): device is "cuda:N", "hsa:N", "vulkan:N",
// "pci:DDDD:BB:DD.F", "drm:PATH" or "rdma:NAME". A node without memory
// gives the nearest node with memory; a device without affinity (one
// socket, lavapipe, vgem) gives AnyNode. Errors: EINVAL for a string of
// no such form, ENODEV for no such device or runtime.
func DeviceNode(device string) (int, error) {
	cs := C.CString(device)
	defer C.free(unsafe.Pointer(cs))
	var node C.int
	var msg C.struct_gbgo_msg
	if ret := C.gbgo_device_node(cs, &node, &msg); ret != 0 {
		return 0, newError("gpubuf_device_node", ret, msgText(&msg))
	}
	return int(node), nil
}

// nearOpts fills opts (C memory or a Go value) with the device's node.
func nearOpts(device string, opts *C.struct_gpubuf_alloc_opts) error {
	cs := C.CString(device)
	defer C.free(unsafe.Pointer(cs))
	var msg C.struct_gbgo_msg
	if ret := C.gbgo_opts_near(opts, cs, &msg); ret != 0 {
		return newError("gpubuf_alloc_opts_near", ret, msgText(&msg))
	}
	return nil
}

// AllocNear is Alloc with the pages on device's NUMA node (preferred:
// another node's when that one is short); see DeviceNode.
func (c *Context) AllocNear(size int, device string) (*Buffer, error) {
	var opts C.struct_gpubuf_alloc_opts
	if err := nearOpts(device, &opts); err != nil {
		return nil, err
	}
	return c.alloc(size, &opts)
}

// NewMatrixNear is NewMatrix with the pages on device's NUMA node.
func (c *Context) NewMatrixNear(dt DType, rows, cols int, layout Layout, device string) (*Matrix, error) {
	var opts C.struct_gpubuf_alloc_opts
	if err := nearOpts(device, &opts); err != nil {
		return nil, err
	}
	return c.newMatrix(dt, rows, cols, layout, 0, &opts)
}
