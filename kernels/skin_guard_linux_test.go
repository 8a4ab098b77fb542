package kernels

import (
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns a slice of n T that ends exactly at an inaccessible
// page: reading or writing past its end faults.
func guarded[T any](t *testing.T, n int) []T {
	t.Helper()
	page := syscall.Getpagesize()
	size := int(unsafe.Sizeof(*new(T))) * n
	data := (size + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, data+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[data:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&mem[data-size])), n)
}

// TestSkinLBSAsmGuardPages: lbsAVX2 on vertices, palette and output that
// each end at an inaccessible page, with joints that reach exactly the
// palette's end (refused) or its last matrix, reads and writes nothing
// outside them.
func TestSkinLBSAsmGuardPages(t *testing.T) {
	skipWithoutLBSAsm(t)
	r := rng(36)
	const n, np = 37, 20
	verts := guarded[SkinVertex](t, n)
	pal := guarded[Mat4](t, np)
	out := guarded[SkinnedVertex](t, n)
	copy(verts, randSkinVertices(r, n, np))
	copy(pal, randRigidPalette(r, np))
	for k := range verts {
		if k%2 == 0 {
			verts[k].Weights = [4]float32{0.5, 0.5, 0, 0}
		} else {
			verts[k].Weights = [4]float32{0.25, 0.25, 0.25, 0.25}
		}
	}
	verts[n-1].Joints = PackJoints(np-1, np-1, np-1, np-1)
	verts[n-2].Joints = PackJoints(0, np-1, 0, np-1)
	if k := lbsAVX2(verts, pal, out, 0); k != n {
		t.Fatalf("completed %d of %d", k, n)
	}
	for slot := range 4 {
		j := [4]uint8{1, 2, 3, 4}
		j[slot] = np
		verts[n-1].Joints = PackJoints(j[0], j[1], j[2], j[3])
		if k := lbsAVX2(verts, pal, out, 0); k != n-1 {
			t.Fatalf("joint %d = len(pal): completed %d, want %d", slot, k, n-1)
		}
		verts[n-1].Joints = 0
		verts[n-1].Palette = np - 1
		verts[n-1].Joints = uint32(1) << (8 * slot)
		if k := lbsAVX2(verts, pal, out, 0); k != n-1 {
			t.Fatalf("Palette %d + joint 1 in slot %d: completed %d, want %d", np-1, slot, k, n-1)
		}
		verts[n-1].Palette = 0
	}
}
