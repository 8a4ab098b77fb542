package kernels

import (
	"fmt"
	"math"

	"github.com/vkjobs/vkjobs/sched"
)

// Limits of the uniform-palette skinning kernels: the palette is one 64 KiB
// uniform block (Vulkan guarantees only 16 KiB, lavapipe and desktop GPUs
// give 64 KiB), so it holds 1024 matrices or 2048 dual quaternions. A GPU
// executor should bind UniformPaletteBytes (the declared block size) even
// when the stream is shorter.
const (
	UniformPaletteBytes = 65536
	UniformLBSBones     = UniformPaletteBytes / 64
	UniformDQSBones     = UniformPaletteBytes / 32
)

// skinSetup is what both skinning kernels check before running.
type skinSetup struct {
	verts []SkinVertex
	out   []SkinnedVertex
	nv    uint32 // vertices per instance, 0 = none
	v     uint32 // bind-pose vertex of the first item
	base  uint32 // palette offset of the first item's instance
}

func newSkinSetup(d *sched.TaskData) (skinSetup, error) {
	var s skinSetup
	var err error
	if s.verts, err = inSlice[SkinVertex](d, 0, 1); err != nil {
		return s, err
	}
	if s.out, err = outSlice[SkinnedVertex](d, 0, 1); err != nil {
		return s, err
	}
	if err = needLen("output", 0, len(s.out), uint64(d.End), "range end"); err != nil {
		return s, err
	}
	s.nv = d.Params[0]
	if s.nv == 0 {
		err = needLen("input", 0, len(s.verts), uint64(d.End), "range end (Params[0] = 0: one vertex per item)")
		s.v = d.Begin
	} else {
		err = needLen("input", 0, len(s.verts), uint64(s.nv), "Params[0] (vertices per instance)")
		s.v = d.Begin % s.nv
		s.base = d.Begin / s.nv * d.Params[1]
	}
	return s, err
}

// jointIndices returns a vertex's four palette indices for the instance
// whose palette starts at inst, and whether all of them are below np.
func jointIndices(sv *SkinVertex, inst, np uint32) (i0, i1, i2, i3 uint32, ok bool) {
	base := sv.Palette + inst
	j := sv.Joints
	i0, i1, i2, i3 = base+j&0xff, base+j>>8&0xff, base+j>>16&0xff, base+j>>24
	return i0, i1, i2, i3, i0 < np && i1 < np && i2 < np && i3 < np
}

func badJoint(item uint32, v *SkinVertex, base uint32, n int) error {
	return fmt.Errorf("item %d: joints %#08x with palette base %d reach outside the palette of %d bones", item, v.Joints, base, n)
}

// skinLBS returns the CPU linear-blend-skinning kernel; maxBones > 0
// refuses larger palettes (the uniform-block variant).
func skinLBS(maxBones int) sched.KernelFunc { return skinKernel(maxBones, lbs) }

// skinKernel returns a CPU skinning kernel over a palette of P (Mat4 or
// DualQuat) that skins with run; maxBones > 0 refuses larger palettes.
func skinKernel[P any](maxBones int, run func(s *skinSetup, pal []P, begin, end, stride uint32) error) sched.KernelFunc {
	return func(_ *sched.Ctx, d *sched.TaskData) error {
		pal, err := inSlice[P](d, 1, 1)
		if err != nil {
			return err
		}
		if maxBones > 0 && len(pal) > maxBones {
			return fmt.Errorf("input stream 1: %d bones, more than the %d a uniform palette holds", len(pal), maxBones)
		}
		s, err := newSkinSetup(d)
		if err != nil {
			return err
		}
		return run(&s, pal, d.Begin, d.End, d.Params[1])
	}
}

// lbs skins items [begin, end): the blended 3x4 matrix is w0*P0 + w1*P1 +
// w2*P2 + w3*P3, positions get its full transform, normals its 3x3 part and
// are then normalised (a zero normal gives NaN, as on the GPU). On amd64
// with AVX2 and FMA it runs lbsAVX2 (skin_amd64.go) over runs of vertices
// that stay within one instance, elsewhere lbsGo.
func lbs(s *skinSetup, pal []Mat4, begin, end, stride uint32) error {
	if !lbsFast {
		return lbsGo(s, pal, begin, end, stride)
	}
	out := s.out[begin:end]
	// lbsGo compares indices with uint32(len(pal)); so does the assembly
	// with this slice.
	apal := pal[:uint32(len(pal))]
	v, inst := s.v, s.base
	for i := 0; i < len(out); {
		// A run: vertices v.. of instance inst, up to the instance's end
		// (with Params[0] = 0 there are no instances: the whole range).
		n := len(out) - i
		if s.nv != 0 {
			n = min(n, int(s.nv-v))
		}
		// The slicing checks the lengths the assembly trusts.
		k := lbsAVX2(s.verts[v:int(v)+n], apal, out[i:i+n], inst)
		if k < n {
			sv := &s.verts[int(v)+k]
			return badJoint(begin+uint32(i+k), sv, sv.Palette+inst, len(pal))
		}
		i += n
		if v += uint32(n); v == s.nv {
			v, inst = 0, inst+stride
		}
	}
	return nil
}

// lbsGo is lbs in pure Go, the reference of the assembly.
func lbsGo(s *skinSetup, pal []Mat4, begin, end, stride uint32) error {
	verts, out := s.verts, s.out[begin:end]
	np := uint32(len(pal))
	v, inst := s.v, s.base
	for i := range out {
		sv := &verts[v]
		i0, i1, i2, i3, ok := jointIndices(sv, inst, np)
		if !ok {
			return badJoint(begin+uint32(i), sv, sv.Palette+inst, len(pal))
		}
		p0, p1, p2, p3 := &pal[i0], &pal[i1], &pal[i2], &pal[i3]
		w0, w1, w2, w3 := sv.Weights[0], sv.Weights[1], sv.Weights[2], sv.Weights[3]
		var m0, m1, m2, m4, m5, m6, m8, m9, m10, m12, m13, m14 float32
		if w2 == 0 && w3 == 0 {
			// One or two joints (most vertices of most meshes): the zero
			// terms add nothing (a finite 0*x is ±0), so skipping them
			// saves time on most vertices.
			m0 = w0*p0[0] + w1*p1[0]
			m1 = w0*p0[1] + w1*p1[1]
			m2 = w0*p0[2] + w1*p1[2]
			m4 = w0*p0[4] + w1*p1[4]
			m5 = w0*p0[5] + w1*p1[5]
			m6 = w0*p0[6] + w1*p1[6]
			m8 = w0*p0[8] + w1*p1[8]
			m9 = w0*p0[9] + w1*p1[9]
			m10 = w0*p0[10] + w1*p1[10]
			m12 = w0*p0[12] + w1*p1[12]
			m13 = w0*p0[13] + w1*p1[13]
			m14 = w0*p0[14] + w1*p1[14]
		} else {
			m0 = w0*p0[0] + w1*p1[0] + w2*p2[0] + w3*p3[0]
			m1 = w0*p0[1] + w1*p1[1] + w2*p2[1] + w3*p3[1]
			m2 = w0*p0[2] + w1*p1[2] + w2*p2[2] + w3*p3[2]
			m4 = w0*p0[4] + w1*p1[4] + w2*p2[4] + w3*p3[4]
			m5 = w0*p0[5] + w1*p1[5] + w2*p2[5] + w3*p3[5]
			m6 = w0*p0[6] + w1*p1[6] + w2*p2[6] + w3*p3[6]
			m8 = w0*p0[8] + w1*p1[8] + w2*p2[8] + w3*p3[8]
			m9 = w0*p0[9] + w1*p1[9] + w2*p2[9] + w3*p3[9]
			m10 = w0*p0[10] + w1*p1[10] + w2*p2[10] + w3*p3[10]
			m12 = w0*p0[12] + w1*p1[12] + w2*p2[12] + w3*p3[12]
			m13 = w0*p0[13] + w1*p1[13] + w2*p2[13] + w3*p3[13]
			m14 = w0*p0[14] + w1*p1[14] + w2*p2[14] + w3*p3[14]
		}
		x, y, z := sv.Pos[0], sv.Pos[1], sv.Pos[2]
		o := &out[i]
		o.Pos[0] = m0*x + m4*y + m8*z + m12
		o.Pos[1] = m1*x + m5*y + m9*z + m13
		o.Pos[2] = m2*x + m6*y + m10*z + m14
		x, y, z = sv.Normal[0], sv.Normal[1], sv.Normal[2]
		nx := m0*x + m4*y + m8*z
		ny := m1*x + m5*y + m9*z
		nz := m2*x + m6*y + m10*z
		inv := 1 / float32(math.Sqrt(float64(nx*nx+ny*ny+nz*nz)))
		o.Normal = [3]float32{nx * inv, ny * inv, nz * inv}
		if v++; v == s.nv {
			v, inst = 0, inst+stride
		}
	}
	return nil
}

// skinDQS returns the CPU dual-quaternion-skinning kernel; maxBones > 0
// refuses larger palettes (the uniform-block variant).
func skinDQS(maxBones int) sched.KernelFunc { return skinKernel(maxBones, dqs) }

// negIf returns -w when neg, else w, with a conditional move rather than a
// branch.
func negIf(w float32, neg bool) float32 {
	var m uint32
	if neg {
		m = 1 << 31
	}
	return math.Float32frombits(math.Float32bits(w) ^ m)
}

func dot4(a, b *[4]float32) float32 {
	return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3]
}

// dqs skins items [begin, end) by blending dual quaternions: weights of
// bones antipodal to the first are negated, the blend is divided by the
// length of its real part, positions are rotated and translated, normals
// rotated. On amd64 with AVX2 it runs dqsAVX2 (skin_amd64.go) over runs of
// vertices within one instance, elsewhere dqsGo.
func dqs(s *skinSetup, pal []DualQuat, begin, end, stride uint32) error {
	if !lbsFast {
		return dqsGo(s, pal, begin, end, stride)
	}
	out := s.out[begin:end]
	apal := pal[:uint32(len(pal))] // dqsGo compares indices with uint32(len(pal))
	v, inst := s.v, s.base
	for i := 0; i < len(out); {
		n := len(out) - i
		if s.nv != 0 {
			n = min(n, int(s.nv-v))
		}
		vs := s.verts[v : int(v)+n]
		k := dqsAVX2(vs, apal, out[i:i+n], inst)
		if r := n - k; r > 0 && r < 8 {
			// The last 1-7 vertices: a group of eight on the stack, padded
			// with copies of the last vertex (whose joints are then those
			// of a vertex of the run), skinned by the assembly too.
			var gv [8]SkinVertex
			var gout [8]SkinnedVertex
			copy(gv[:], vs[k:])
			for j := r; j < 8; j++ {
				gv[j] = vs[n-1]
			}
			if dqsAVX2(gv[:], apal, gout[:], inst) == 8 {
				copy(out[i+k:i+n], gout[:r])
				k = n
			}
		}
		if k < n {
			// A group with a joint outside the palette: dqsGo (the same
			// bits) finishes the run and reports the bad joint at its item.
			rest := skinSetup{verts: s.verts, out: s.out, nv: s.nv, v: v + uint32(k), base: inst}
			b := begin + uint32(i+k)
			if err := dqsGo(&rest, pal, b, b+uint32(n-k), stride); err != nil {
				return err
			}
		}
		i += n
		if v += uint32(n); v == s.nv {
			v, inst = 0, inst+stride
		}
	}
	return nil
}

// dqsGo is dqs in pure Go, the reference of the assembly.
func dqsGo(s *skinSetup, pal []DualQuat, begin, end, stride uint32) error {
	verts, out := s.verts, s.out[begin:end]
	np := uint32(len(pal))
	v, inst := s.v, s.base
	for i := range out {
		sv := &verts[v]
		i0, i1, i2, i3, ok := jointIndices(sv, inst, np)
		if !ok {
			return badJoint(begin+uint32(i), sv, sv.Palette+inst, len(pal))
		}
		q0, q1, q2, q3 := &pal[i0], &pal[i1], &pal[i2], &pal[i3]
		w0, w1, w2, w3 := sv.Weights[0], sv.Weights[1], sv.Weights[2], sv.Weights[3]
		// Antipodality without branches (the signs are unpredictable):
		// negate w_k when dot(q0, q_k) < 0.
		w1 = negIf(w1, dot4(&q0.Real, &q1.Real) < 0)
		w2 = negIf(w2, dot4(&q0.Real, &q2.Real) < 0)
		w3 = negIf(w3, dot4(&q0.Real, &q3.Real) < 0)
		// Blend (scalars, not arrays: the compiler keeps them in registers).
		a, c := &q0.Real, &q1.Real
		e, f := &q2.Real, &q3.Real
		rx := w0*a[0] + w1*c[0] + w2*e[0] + w3*f[0]
		ry := w0*a[1] + w1*c[1] + w2*e[1] + w3*f[1]
		rz := w0*a[2] + w1*c[2] + w2*e[2] + w3*f[2]
		rw := w0*a[3] + w1*c[3] + w2*e[3] + w3*f[3]
		a, c = &q0.Dual, &q1.Dual
		e, f = &q2.Dual, &q3.Dual
		dx := w0*a[0] + w1*c[0] + w2*e[0] + w3*f[0]
		dy := w0*a[1] + w1*c[1] + w2*e[1] + w3*f[1]
		dz := w0*a[2] + w1*c[2] + w2*e[2] + w3*f[2]
		dw := w0*a[3] + w1*c[3] + w2*e[3] + w3*f[3]
		inv := 1 / float32(math.Sqrt(float64(rx*rx+ry*ry+rz*rz+rw*rw)))
		rx, ry, rz, rw = rx*inv, ry*inv, rz*inv, rw*inv
		dx, dy, dz, dw = dx*inv, dy*inv, dz*inv, dw*inv
		// t = 2 (rw d - dw r + r x d)
		tx := 2 * (rw*dx - dw*rx + (ry*dz - rz*dy))
		ty := 2 * (rw*dy - dw*ry + (rz*dx - rx*dz))
		tz := 2 * (rw*dz - dw*rz + (rx*dy - ry*dx))
		// p' = p + 2 r x (r x p + rw p) + t
		o := &out[i]
		px, py, pz := sv.Pos[0], sv.Pos[1], sv.Pos[2]
		ux := (ry*pz - rz*py) + rw*px
		uy := (rz*px - rx*pz) + rw*py
		uz := (rx*py - ry*px) + rw*pz
		o.Pos[0] = px + 2*(ry*uz-rz*uy) + tx
		o.Pos[1] = py + 2*(rz*ux-rx*uz) + ty
		o.Pos[2] = pz + 2*(rx*uy-ry*ux) + tz
		nx, ny, nz := sv.Normal[0], sv.Normal[1], sv.Normal[2]
		ux = (ry*nz - rz*ny) + rw*nx
		uy = (rz*nx - rx*nz) + rw*ny
		uz = (rx*ny - ry*nx) + rw*nz
		o.Normal[0] = nx + 2*(ry*uz-rz*uy)
		o.Normal[1] = ny + 2*(rz*ux-rx*uz)
		o.Normal[2] = nz + 2*(rx*uy-ry*ux)
		if v++; v == s.nv {
			v, inst = 0, inst+stride
		}
	}
	return nil
}
