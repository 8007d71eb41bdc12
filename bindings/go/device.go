// SPDX-License-Identifier: MIT

package gpubuf

// #include "gpubufgo.h"
import "C"

import (
	"fmt"
	"runtime"
)

// The GPU runtimes are loaded by libgpubuf with dlopen when first needed:
// without a driver the calls below fail with ENODEV (errors.Is(err,
// syscall.ENODEV)) and the runtime's own words in Error.Detail, and a
// library built without CUDA or HSA support answers EOPNOTSUPP.

// CUDADeviceCount is the number of CUDA devices.
func CUDADeviceCount() (int, error) {
	var n C.int
	var msg C.struct_gbgo_msg
	if ret := C.gbgo_cuda_device_count(&n, &msg); ret != 0 {
		return 0, newError("gpubuf_cuda_device_count", ret, msgText(&msg))
	}
	return int(n), nil
}

// HSAAgentCount is the number of HSA GPU agents (the ROCm runtime's).
func HSAAgentCount() (int, error) {
	var n C.int
	var msg C.struct_gbgo_msg
	if ret := C.gbgo_hsa_agent_count(&n, &msg); ret != 0 {
		return 0, newError("gpubuf_hsa_agents", ret, msgText(&msg))
	}
	return int(n), nil
}

// deviceView is what CUDA and HSA views share: the host view and the
// registration (lock) count it holds.
type deviceView struct {
	host *Matrix
	held bool
	drop func() // gives the count back, with host.mem.mu held
}

func (d *deviceView) close() error {
	m := d.host.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if !d.held {
		return nil
	}
	d.held = false
	// After the owner's Close the buffer's last unref undid every count.
	if !m.closed.Load() {
		d.drop()
	}
	runtime.KeepAlive(d.host)
	return nil
}

// Host is the host view this device view was made from.
func (d *deviceView) Host() *Matrix { return d.host }

// CUDAMatrix is a Matrix as a CUDA device sees it (Matrix.CUDA): the buffer
// registered with cuMemHostRegister, element (0, 0) at DevPtr, the same
// Rows, Cols, Stride and Layout. It holds one registration count until
// Close.
type CUDAMatrix struct {
	deviceView
	cm C.struct_gpubuf_cuda_matrix
}

// CUDA registers the matrix's buffer with CUDA device and describes the
// view there (gpubuf_cuda_register(3), gpubuf_cuda_matrix_view(3)).
// readOnly promises the GPU only reads it (it is then refused as a GEMM
// output).
func (m *Matrix) CUDA(device int, readOnly bool) (*CUDAMatrix, error) {
	if device < 0 {
		return nil, fmt.Errorf("gpubuf: CUDA device numbers are >= 0, not %d", device)
	}
	var flags C.uint
	if readOnly {
		flags = C.GPUBUF_CUDA_REGISTER_READ_ONLY
	}
	m.mem.mu.Lock()
	defer m.mem.mu.Unlock()
	if m.mem.closed.Load() {
		return nil, ErrClosed
	}
	d := &CUDAMatrix{deviceView: deviceView{host: m, held: true}}
	var msg C.struct_gbgo_msg
	if ret := C.gbgo_cuda_view(&m.cm, C.int(device), flags, &d.cm, &msg); ret != 0 {
		return nil, newError("gpubuf_cuda_register", ret, msgText(&msg))
	}
	buf := m.cm.buf
	d.drop = func() { C.gpubuf_cuda_unregister(buf, C.int(device)) }
	return d, nil
}

// DevPtr is the CUdeviceptr of element (0, 0).
func (d *CUDAMatrix) DevPtr() uint64 { return uint64(d.cm.devptr) }

// Device is the CUDA device ordinal.
func (d *CUDAMatrix) Device() int { return int(d.cm.device) }

// ReadOnly reports whether the GPU may only read the view.
func (d *CUDAMatrix) ReadOnly() bool { return d.cm.flags&C.GPUBUF_CUDA_MATRIX_READ_ONLY != 0 }

// Close gives the registration count back; the buffer's last release
// undoes what is left. Closing twice is harmless.
func (d *CUDAMatrix) Close() error { return d.close() }

// CUDAGemm computes c = alpha*a*b + beta*c on the GPU, synchronously, for
// float32 and float64 views of either layout and any stride
// (gpubuf_cuda_gemm(3)).
func CUDAGemm(alpha float64, a, b *CUDAMatrix, beta float64, c *CUDAMatrix) error {
	for _, d := range []*CUDAMatrix{a, b, c} {
		if !d.held || d.host.mem.closed.Load() {
			return ErrClosed
		}
	}
	var msg C.struct_gbgo_msg
	ret := C.gbgo_cuda_gemm(C.double(alpha), &a.cm, &b.cm, C.double(beta), &c.cm, &msg)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	return newError("gpubuf_cuda_gemm", ret, msgText(&msg))
}

// HSAMatrix is a Matrix as an HSA GPU agent sees it (Matrix.HSA): the
// buffer locked for the agent, element (0, 0) at AgentPtr. It holds one
// lock count until Close.
type HSAMatrix struct {
	deviceView
	hm C.struct_gpubuf_hsa_matrix
}

// HSA locks the matrix's buffer for GPU agent index agent (the runtime's
// enumeration order) and describes the view there (gpubuf_hsa_lock(3)).
// A buffer is locked for one set of agents at a time: EBUSY for another.
func (m *Matrix) HSA(agent int) (*HSAMatrix, error) {
	m.mem.mu.Lock()
	defer m.mem.mu.Unlock()
	if m.mem.closed.Load() {
		return nil, ErrClosed
	}
	d := &HSAMatrix{deviceView: deviceView{host: m, held: true}}
	var msg C.struct_gbgo_msg
	if ret := C.gbgo_hsa_view(&m.cm, C.int(agent), &d.hm, &msg); ret != 0 {
		return nil, newError("gpubuf_hsa_lock", ret, msgText(&msg))
	}
	buf := m.cm.buf
	d.drop = func() { C.gpubuf_hsa_unlock(buf) }
	return d, nil
}

// AgentPtr is the address of element (0, 0) for the agent.
func (d *HSAMatrix) AgentPtr() uint64 { return uint64(d.hm.agent_ptr) }

// Agent is the GPU agent index.
func (d *HSAMatrix) Agent() int { return int(d.hm.agent) }

// Close gives the lock count back. Closing twice is harmless.
func (d *HSAMatrix) Close() error { return d.close() }

// HSAGemm is CUDAGemm on an HSA GPU agent, through an AQL queue
// (gpubuf_hsa_gemm(3)).
func HSAGemm(alpha float64, a, b *HSAMatrix, beta float64, c *HSAMatrix) error {
	for _, d := range []*HSAMatrix{a, b, c} {
		if !d.held || d.host.mem.closed.Load() {
			return ErrClosed
		}
	}
	var msg C.struct_gbgo_msg
	ret := C.gbgo_hsa_gemm(C.double(alpha), &a.hm, &b.hm, C.double(beta), &c.hm, &msg)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	return newError("gpubuf_hsa_gemm", ret, msgText(&msg))
}
