//go:build !amd64 || purego

package kernels

// No assembly here: lbs always runs lbsGo.
var (
	lbsHasAsm = false
	lbsFast   = false
)

// lbsAVX2 has the contract of the assembly (skin_amd64.go), one vertex at
// a time through lbsGo; lbs never calls it here.
func lbsAVX2(verts []SkinVertex, pal []Mat4, out []SkinnedVertex, base uint32) int {
	n := min(len(verts), len(out))
	s := skinSetup{verts: verts[:n], out: out[:n], nv: uint32(n), base: base}
	for k := range n {
		s.v = uint32(k)
		if lbsGo(&s, pal, uint32(k), uint32(k+1), 0) != nil {
			return k
		}
	}
	return n
}

// dqsAVX2 has the contract of the assembly (skin_amd64.go), groups of
// eight vertices through dqsGo; dqs never calls it here.
func dqsAVX2(verts []SkinVertex, pal []DualQuat, out []SkinnedVertex, base uint32) int {
	if len(pal) > 1<<30 {
		return 0
	}
	n := min(len(verts), len(out)) &^ 7
	s := skinSetup{verts: verts[:n], out: out[:n], nv: uint32(n), base: base}
	for k := 0; k < n; k += 8 {
		s.v = uint32(k)
		if dqsGo(&s, pal, uint32(k), uint32(k+8), 0) != nil {
			return k
		}
	}
	return n
}
