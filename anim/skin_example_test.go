package anim_test

import (
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

// Example_skinning skins a glTF character (Cesium Man) in a few lines:
// import, compress its walk, load the blob; then, on the caller's
// goroutine, one call per step: sample, local-to-model with the skinning
// palette, linear blend skinning, and dual quaternion skinning. The
// importer's skeleton (parents, inverse bind matrices) and mesh go into
// the calls as they are. The scheduler and GPU paths (anim.SampleJob, the
// kernels' tasks) are the batch form of the same code.
func Example_skinning() {
	im, err := offline.LoadFile("../cmd/crowd/testdata/cesium_man.gltf", offline.ImportOptions{})
	must(err)
	sk, mesh := im.Skeleton, im.Mesh
	cc, err := offline.Compress(sk, im.Clips[0], offline.CompressOptions{Tolerance: 0.001})
	must(err)
	var b offline.Builder
	must(b.AddClip(b.AddSkeleton(sk), cc))
	data, err := b.Bytes()
	must(err)
	blob, err := anim.Load(data)
	must(err)
	clip, n := blob.Clip(0), sk.NumBones()
	verts, err := kernels.SkinVertices(nil, mesh.Positions, mesh.Normals, mesh.Bones, mesh.Weights)
	must(err)
	cursor, local := make([]uint32, clip.CursorWords()), make([]kernels.Transform, n)
	model, palette, dq := make([]kernels.Mat4, n), make([]kernels.Mat4, n), make([]kernels.DualQuat, n)
	lbs, dqs := make([]kernels.SkinnedVertex, len(verts)), make([]kernels.SkinnedVertex, len(verts))

	// Every frame:
	must(clip.Sample(0.5, cursor, local))
	must(kernels.ToModelSkin(sk.Parents, local, sk.InverseBind, model, palette))
	must(kernels.LBS(verts, palette, lbs))
	must(kernels.DualQuatPalette(palette, dq))
	must(kernels.DQS(verts, dq, dqs))

	fmt.Printf("%s: %d bones, %d vertices, clip %q (animation %d) of %.2f s\n",
		im.File, n, len(verts), clip.Name(), im.Animations[0].Index, clip.Duration())
	fmt.Printf("vertex 0 at 0.5 s: LBS %.3f, DQS %.3f\n", lbs[0].Pos, dqs[0].Pos)
	fmt.Printf("largest LBS-DQS distance: %.1f mm\n", 1000*maxDist(lbs, dqs))
	// Output:
	// cesium_man.gltf: 19 bones, 3273 vertices, clip "animation0" (animation 0) of 2.00 s
	// vertex 0 at 0.5 s: LBS [0.104 0.962 -0.016], DQS [0.105 0.962 -0.016]
	// largest LBS-DQS distance: 23.9 mm
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func maxDist(a, b []kernels.SkinnedVertex) float64 {
	m := 0.0
	for i := range a {
		d := [3]float64{}
		for k := range 3 {
			d[k] = float64(a[i].Pos[k] - b[i].Pos[k])
		}
		m = math.Max(m, math.Sqrt(d[0]*d[0]+d[1]*d[1]+d[2]*d[2]))
	}
	return m
}
