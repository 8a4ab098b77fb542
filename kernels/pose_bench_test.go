package kernels

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkPoseChain times poseChain on one 90-bone skeleton with skin
// (L1-resident), in three hierarchy shapes: a single chain (every bone
// waits for the previous one), a star (every bone's parent is the root: no
// dependency between bones) and the random tree of the kernel benchmarks;
// go and asm are the two paths.
func BenchmarkPoseChain(b *testing.B) {
	const nb = 90
	r := rand.New(rand.NewPCG(21, 22))
	local := randLocal(r, nb)
	invBind := randRigidPalette(r, nb)
	model, skin := make([]Mat4, nb), make([]Mat4, nb)
	shapes := []struct {
		name    string
		parents []int32
	}{{"chain", randPoseParents(r, nb, 2)}, {"star", make([]int32, nb)}, {"tree", randParents(r, nb)}}
	shapes[1].parents[0] = -1
	for _, s := range shapes {
		benchGoAndAsm(b, s.name, &poseFast, poseHasAsm, func(b *testing.B) {
			for b.Loop() {
				poseChain(local, s.parents, model, invBind, skin)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nb, "ns/bone")
		})
	}
}
