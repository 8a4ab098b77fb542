package vmath

import (
	"math"
	"testing"
)

func TestInverseAndRotation(t *testing.T) {
	tr := Transform{T: Vec3{1, -2, 3}, R: AxisAngle(1, 0.7).Mul(AxisAngle(0, -0.3)), S: Vec3{2, 2, 2}}
	m := tr.Matrix()
	inv := m.Inverse()
	id := m.Mul(&inv)
	for i, v := range id {
		want := 0.0
		if i%5 == 0 {
			want = 1
		}
		if math.Abs(v-want) > 1e-12 {
			t.Fatalf("m·m⁻¹ = %v", id)
		}
	}
	if a := QuatAngle(m.Rotation(), tr.R); a > 1e-12 {
		t.Errorf("Rotation off by %v rad", a)
	}
	d, ok := m.Decompose()
	if !ok || d.T.Dist(tr.T) > 1e-12 || d.S.Dist(tr.S) > 1e-12 || QuatAngle(d.R, tr.R) > 1e-12 {
		t.Errorf("Decompose: %v %v", d, ok)
	}
	p := Vec3{0.5, 0.25, -1}
	if q := m.Point(p); q.Dist(tr.T.Add(tr.R.Rotate(p.MulVec(tr.S)))) > 1e-12 {
		t.Errorf("Point %v", q)
	}
}

func TestLookAtPerspective(t *testing.T) {
	v := LookAt([3]float32{0, 0, 5}, [3]float32{0, 0, 0}, [3]float32{0, 1, 0})
	// The target is 5 in front (-z in view space).
	if z := v[2]*0 + v[6]*0 + v[10]*0 + v[14]; z != -5 {
		t.Errorf("view z of the target %v", z)
	}
	p := Perspective(math.Pi/2, 1, 1, 10)
	vp := Mul4f(&p, &v)
	// The target projects to the centre.
	if vp[12] != 0 || vp[13] != 0 {
		t.Errorf("centre %v %v", vp[12], vp[13])
	}
}
