package anim_test

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/vmath"
)

// TestLocalToModelBadParents: parents out of order, cyclic, out of
// range, or buffers of the wrong size are errors and nothing is written.
func TestLocalToModelBadParents(t *testing.T) {
	local := make([]float32, 4*anim.PoseFloats)
	for b := 0; b < 4; b++ {
		local[b*anim.PoseFloats+3] = 1
		local[b*anim.PoseFloats+8], local[b*anim.PoseFloats+9], local[b*anim.PoseFloats+10] = 1, 1, 1
	}
	for _, tc := range []struct {
		name    string
		parents []int32
		local   int
		model   int
		b, e    int
	}{
		{"child before parent", []int32{-1, 2, 0, 1}, 4, 4, 0, 1},
		{"self parent", []int32{-1, 1, 1, 2}, 4, 4, 0, 1},
		{"parent out of range", []int32{-1, 0, 9, 2}, 4, 4, 0, 1},
		{"parent -2", []int32{-1, 0, -2, 2}, 4, 4, 0, 1},
		{"short local", []int32{-1, 0, 1, 2}, 3, 4, 0, 1},
		{"short model", []int32{-1, 0, 1, 2}, 4, 3, 0, 1},
		{"end past the poses", []int32{-1, 0, 1, 2}, 4, 4, 0, 2},
		{"begin > end", []int32{-1, 0, 1, 2}, 4, 4, 1, 0},
		{"negative begin", []int32{-1, 0, 1, 2}, 4, 4, -1, 1},
	} {
		model := make([]float32, tc.model*anim.ModelFloats)
		for i := range model {
			model[i] = 7
		}
		err := anim.LocalToModel(tc.parents, local[:tc.local*anim.PoseFloats], model, tc.b, tc.e)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
		for i, v := range model {
			if v != 7 {
				t.Errorf("%s: model[%d] written (%v) despite the error", tc.name, i, v)
				break
			}
		}
	}
}

// LocalToModel matches the float64 reference for random poses with
// non-uniform scales, over several instances.
func TestLocalToModel(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	parents := []int32{-1, 0, 1, 2, 1, 4, 0} // a chain, a branch and a second chain
	nb := len(parents)
	const inst = 5
	local := make([]float32, inst*nb*anim.PoseFloats)
	ref := make([][]vmath.Transform, inst)
	for i := range inst {
		ref[i] = make([]vmath.Transform, nb)
		for b := range nb {
			tr := vmath.Transform{
				T: vmath.Vec3{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()},
				R: randomQuat(rng),
				S: vmath.Vec3{0.5 + rng.Float64(), 0.5 + rng.Float64(), 0.5 + rng.Float64()},
			}
			w := poseWords(tr)
			copy(local[(i*nb+b)*anim.PoseFloats:], w[:])
			for k := range 3 { // the reference uses the float32 values
				tr.T[k], tr.S[k] = float64(w[4+k]), float64(w[8+k])
			}
			tr.R = vmath.Quat{float64(w[0]), float64(w[1]), float64(w[2]), float64(w[3])}
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
	want := make([]vmath.Mat4, nb)
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
	spine := vmath.Transform{T: vmath.Vec3{0, 0.5, 0}, R: vmath.IdentityQuat, S: vmath.Vec3{1, 1, 1}}
	const inst = 64
	parents := make([]int32, 90)
	for i := range parents {
		parents[i] = int32(i/3) - 1 // a 90-bone tree
	}
	local := make([]float32, inst*90*anim.PoseFloats)
	for i := 0; i < len(local); i += anim.PoseFloats {
		w := poseWords(spine)
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

// poseWords is t as a local pose (PoseFloats words: rotation, translation,
// scale).
func poseWords(t vmath.Transform) [12]float32 {
	return [12]float32{
		float32(t.R[0]), float32(t.R[1]), float32(t.R[2]), float32(t.R[3]),
		float32(t.T[0]), float32(t.T[1]), float32(t.T[2]), 0,
		float32(t.S[0]), float32(t.S[1]), float32(t.S[2]), 0,
	}
}

// modelMatrices is the float64 reference: each bone's model matrix, from
// its local transform and its parent's model matrix.
func modelMatrices(parents []int32, local []vmath.Transform, out []vmath.Mat4) {
	for i, p := range parents {
		m := local[i].Matrix()
		if p < 0 {
			out[i] = m
		} else {
			out[i] = out[p].Mul(&m)
		}
	}
}

// randomQuat is a uniformly random unit quaternion.
func randomQuat(rng *rand.Rand) vmath.Quat {
	for {
		q := vmath.Quat{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		if n := q.Norm(); n > 1e-3 {
			return q.Scale(1 / n)
		}
	}
}
