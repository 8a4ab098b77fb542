package kernels

import "testing"

// TestSkinDQSAsmGuardPages: dqsAVX2 on vertices, palette and output that
// each end at an inaccessible page reads and writes nothing outside them:
// the last whole group of eight ends at the pages (the next group's
// indices and weights are read only when there is one), its joints reach
// the palette's last dual quaternion, and an index one past it ends the
// run before the group.
func TestSkinDQSAsmGuardPages(t *testing.T) {
	if !lbsHasAsm {
		t.Skip("no AVX2 on this CPU: dqsGo is the only path")
	}
	r := rng(37)
	const n, np = 40, 20
	verts := guarded[SkinVertex](t, n)
	pal := guarded[DualQuat](t, np)
	out := guarded[SkinnedVertex](t, n)
	copy(verts, randSkinVertices(r, n, np))
	copy(pal, randDQPalette(r, np))
	verts[n-1].Joints = PackJoints(np-1, np-1, np-1, np-1)
	verts[n-2].Joints = PackJoints(0, np-1, 0, np-1)
	if k := dqsAVX2(verts, pal, out, 0); k != n {
		t.Fatalf("completed %d of %d", k, n)
	}
	for slot := range 4 {
		j := [4]uint8{1, 2, 3, 4}
		j[slot] = np
		verts[n-1].Joints = PackJoints(j[0], j[1], j[2], j[3])
		if k := dqsAVX2(verts, pal, out, 0); k != n-8 {
			t.Fatalf("joint %d = len(pal): completed %d, want %d", slot, k, n-8)
		}
		verts[n-1].Palette = np - 1
		verts[n-1].Joints = uint32(1) << (8 * slot)
		if k := dqsAVX2(verts, pal, out, 0); k != n-8 {
			t.Fatalf("Palette %d + joint 1 in slot %d: completed %d, want %d", np-1, slot, k, n-8)
		}
		verts[n-1].Palette = 0
	}
	// Through dqs: 37 vertices, the last five in the padded group.
	verts[n-1].Joints = 0
	s := skinSetup{verts: verts[3:], out: out[3:]}
	if err := dqs(&s, pal, 0, n-3, 0); err != nil {
		t.Fatal(err)
	}
}
