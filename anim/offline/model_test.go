package offline

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
)

// LocalToModel matches the float64 reference for random poses with
// non-uniform scales, over several instances.
func TestLocalToModel(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	sk := synthSkeleton()
	parents := append(sk.Parents, 1, 4, 0) // a branch and a second chain
	nb := len(parents)
	const inst = 5
	local := make([]float32, inst*nb*anim.PoseFloats)
	ref := make([][]Transform, inst)
	for i := range inst {
		ref[i] = make([]Transform, nb)
		for b := range nb {
			tr := Transform{
				T: Vec3{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()},
				R: randomQuat(rng),
				S: Vec3{0.5 + rng.Float64(), 0.5 + rng.Float64(), 0.5 + rng.Float64()},
			}
			w := poseWords(tr)
			copy(local[(i*nb+b)*anim.PoseFloats:], w[:])
			for k := range 3 { // the reference uses the float32 values
				tr.T[k], tr.S[k] = float64(w[4+k]), float64(w[8+k])
			}
			tr.R = Quat{float64(w[0]), float64(w[1]), float64(w[2]), float64(w[3])}
			ref[i][b] = tr
		}
	}
	model := make([]float32, inst*nb*anim.ModelFloats)
	if err := anim.LocalToModel(parents, local, model, 1, inst); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < nb*anim.ModelFloats; k++ {
		if model[k] != 0 {
			t.Fatal("instance 0 written outside [1, 5)")
		}
	}
	want := make([]mat4, nb)
	for i := 1; i < inst; i++ {
		modelMatrices(parents, ref[i], want)
		for b := range nb {
			for k := range 16 {
				got := float64(model[(i*nb+b)*anim.ModelFloats+k])
				if math.Abs(got-want[b][k]) > 1e-4*(1+math.Abs(want[b][k])) {
					t.Fatalf("instance %d bone %d element %d: %v, want %v", i, b, k, got, want[b][k])
				}
			}
		}
	}
}

func TestLocalToModelRejects(t *testing.T) {
	local := make([]float32, 2*4*anim.PoseFloats)
	model := make([]float32, 2*4*anim.ModelFloats)
	cases := []struct {
		name, want string
		parents    []int32
		local      []float32
		model      []float32
		begin, end int
	}{
		{"no bones", "no bones", nil, local, model, 0, 1},
		{"parent after child", "parents must come first", []int32{-1, 2, 0, 1}, local, model, 0, 1},
		{"parent is self", "parents must come first", []int32{-1, 1, 0, 1}, local, model, 0, 1},
		{"parent below -1", "parents must come first", []int32{-2, 0, 0, 1}, local, model, 0, 1},
		{"end past local", "range", []int32{-1, 0, 1, 2}, local[:4*anim.PoseFloats], model, 0, 2},
		{"end past model", "range", []int32{-1, 0, 1, 2}, local, model[:4*anim.ModelFloats+3], 0, 2},
		{"begin negative", "range", []int32{-1, 0, 1, 2}, local, model, -1, 1},
		{"end before begin", "range", []int32{-1, 0, 1, 2}, local, model, 2, 1},
	}
	for _, tc := range cases {
		err := anim.LocalToModel(tc.parents, tc.local, tc.model, tc.begin, tc.end)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func BenchmarkLocalToModel(b *testing.B) {
	sk := synthSkeleton()
	const inst = 64
	parents := make([]int32, 90)
	for i := range parents {
		parents[i] = int32(i/3) - 1 // a 90-bone tree
	}
	local := make([]float32, inst*90*anim.PoseFloats)
	for i := 0; i < len(local); i += anim.PoseFloats {
		w := poseWords(sk.Rest[1])
		copy(local[i:], w[:])
	}
	model := make([]float32, inst*90*anim.ModelFloats)
	b.ReportAllocs()
	for b.Loop() {
		if err := anim.LocalToModel(parents, local, model, 0, inst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*inst*90), "ns/bone")
}
