// SPDX-License-Identifier: MIT

package gpubuf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// fakeSysfs is a made-up sysfs tree (as tests/lib/fake_sysfs.h): node 1
// has no memory and is nearest node 2; rxe0 is 0000:1b:00.0's, on node 0.
func fakeSysfs(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"devices/system/node/online":             "0-2\n",
		"devices/system/node/has_memory":         "0,2\n",
		"devices/system/node/node1/distance":     "20 10 15\n",
		"bus/pci/devices/0000:1a:00.0/numa_node": "1\n",
		"bus/pci/devices/0000:1b:00.0/numa_node": "0\n",
		"bus/pci/devices/0000:2a:00.0/numa_node": "-1\n",
	}
	for rel, text := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ib := filepath.Join(dir, "class/infiniband/rxe0")
	if err := os.MkdirAll(ib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../bus/pci/devices/0000:1b:00.0", filepath.Join(ib, "device")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUBUF_SYSFS_ROOT", dir)
}

// pageNode is the node of the page at p (get_mempolicy), -1 when unknown.
func pageNode(p unsafe.Pointer) int {
	const fNode, fAddr = 1, 2 // MPOL_F_NODE, MPOL_F_ADDR
	var node int32 = -1
	_, _, e := syscall.Syscall6(syscall.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&node)),
		0, 0, uintptr(p), fNode|fAddr, 0)
	if e != 0 {
		return -1
	}
	return int(node)
}

func TestDeviceNode(t *testing.T) {
	fakeSysfs(t)
	for dev, want := range map[string]int{
		"pci:0000:1b:00.0": 0, "pci:1A:00.0": 2, "rdma:rxe0": 0,
		"pci:0000:2a:00.0": AnyNode,
	} {
		if got, err := DeviceNode(dev); err != nil || got != want {
			t.Errorf("DeviceNode(%q) = %d, %v; want %d", dev, got, err, want)
		}
	}
	if _, err := DeviceNode("gpu:0"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("gpu:0: %v, want EINVAL", err)
	}
	_, err := DeviceNode("pci:0000:99:00.0")
	var ge *Error
	if !errors.As(err, &ge) || ge.Errno != syscall.ENODEV ||
		!strings.Contains(ge.Detail, "no PCI device 0000:99:00.0") {
		t.Errorf("pci:0000:99:00.0: %v, want ENODEV with the library's detail", err)
	}
}

func TestAllocAndMatrixNear(t *testing.T) {
	fakeSysfs(t)
	ctx := openCtx(t)
	b, err := ctx.AllocNear(1<<20, "rdma:rxe0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	bs := b.Bytes()
	bs[len(bs)-1] = 1
	if n := pageNode(unsafe.Pointer(&bs[len(bs)-1])); n != 0 {
		t.Errorf("AllocNear page on node %d, want 0", n)
	}
	m, err := ctx.NewMatrixNear(Float32, 300, 500, RowMajor, "pci:0000:1b:00.0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Stride() != 512 {
		t.Errorf("Stride %d, want 512", m.Stride())
	}
	if _, err := ctx.AllocNear(4096, "rdma:nope"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("rdma:nope: %v, want ENODEV", err)
	}
	if _, err := ctx.NewMatrixNear(Float32, 2, 2, RowMajor, "cuda:x"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("cuda:x: %v, want EINVAL", err)
	}
}

func TestPoolNearAndGetNode(t *testing.T) {
	fakeSysfs(t)
	ctx := openCtx(t)
	if _, err := ctx.NewPool(PoolOptions{Near: "pci:0000:99:00.0"}); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("pool near a missing device: %v, want ENODEV", err)
	}
	p, err := ctx.NewPool(PoolOptions{Near: "rdma:rxe0"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(node int, any bool) *Buffer {
		t.Helper()
		b, err := p.GetNode(4096, node, any)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, err := p.Get(4096) // the pool's node, 0
	if err != nil {
		t.Fatal(err)
	}
	addr := a.address()
	if err := p.Put(a); err != nil {
		t.Fatal(err)
	}
	b := get(AnyNode, false) // another list: a miss
	c := get(0, false)       // node 0's: the buffer put back
	if c.address() != addr || b.address() == addr {
		t.Errorf("node 0's list did not give back its buffer")
	}
	p.Put(c)
	d := get(5, true) // node 0's buffer, allowed
	if st := p.Stats(); st.Hits != 2 || st.Misses != 2 || st.OtherNodeHits != 1 {
		t.Errorf("stats %+v, want 2 hits, 2 misses, 1 from another node", st)
	}
	p.Put(b)
	p.Put(d)
	if _, err := p.GetNode(4096, -2, false); err == nil {
		t.Errorf("GetNode(-2) worked")
	}
	if st := p.Stats(); st.NodeLists != 2 {
		t.Errorf("%d node lists, want 2 (node 0 and any)", st.NodeLists)
	}
	p.Trim()
	if st := p.Stats(); st.NodeLists != 0 || st.CachedBuffers != 0 {
		t.Errorf("after Trim: %+v, want no list and no buffer", st)
	}
}
