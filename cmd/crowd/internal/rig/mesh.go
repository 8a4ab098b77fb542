package rig

import (
	"fmt"
	"math"
	"regexp"

	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

// widthRules give the box cross-section of source bones by name (CMU
// names; others get a width from their length). First match wins.
var widthRules = []struct {
	re     *regexp.Regexp
	wv, ww float64
}{
	{regexp.MustCompile(`(?i)^hips$|pelvis`), 0.30, 0.18},
	{regexp.MustCompile(`(?i)hipjoint`), 0.15, 0.15},
	{regexp.MustCompile(`(?i)upleg|thigh`), 0.14, 0.14},
	{regexp.MustCompile(`(?i)leg$|calf|shin`), 0.10, 0.10},
	{regexp.MustCompile(`(?i)foot`), 0.09, 0.08},
	{regexp.MustCompile(`(?i)toe`), 0.09, 0.05},
	{regexp.MustCompile(`(?i)lowerback|spine|chest`), 0.30, 0.18},
	{regexp.MustCompile(`(?i)neck`), 0.09, 0.09},
	{regexp.MustCompile(`(?i)head`), 0.19, 0.21},
	{regexp.MustCompile(`(?i)shoulder|clavicle`), 0.10, 0.10},
	{regexp.MustCompile(`(?i)forearm`), 0.075, 0.075},
	{regexp.MustCompile(`(?i)arm`), 0.09, 0.09},
	{regexp.MustCompile(`(?i)hand|fingerbase`), 0.08, 0.035},
	{regexp.MustCompile(`(?i)finger|thumb`), 0.05, 0.025},
}

// leafLength is the length of a bone without a child to point at.
func leafLength(name string) float64 {
	switch {
	case regexp.MustCompile(`(?i)head`).MatchString(name):
		return 0.21
	case regexp.MustCompile(`(?i)toe`).MatchString(name):
		return 0.07
	case regexp.MustCompile(`(?i)finger|thumb`).MatchString(name):
		return 0.045
	case regexp.MustCompile(`(?i)hand`).MatchString(name):
		return 0.08
	}
	return 0.06
}

// boxes appends one box per bone from bone `from` on: 8 vertices, the 4
// at the bone's head end weighted 0.6 to the bone and 0.4 to its parent
// (so joints bend smoothly), the 4 at the tail end weighted to the bone.
func boxes(m *Mesh, sk *offline.Skeleton, model []mat, from int, ext *extension) {
	nb := sk.NumBones()
	src := nb - len(ext.extras)
	pos := func(b int) vec3 { return model[b].Translation() }
	lo, hi := math.Inf(1), math.Inf(-1)
	for b := range src {
		lo, hi = math.Min(lo, pos(b)[1]), math.Max(hi, pos(b)[1])
	}
	scale := (hi - lo) / 1.55
	if !(scale > 0.05) {
		scale = 1
	}
	up := vec3{0, 1, 0}
	segDir := func(b int) vec3 { // direction of the first non-zero segment at or above b
		for c := b; c >= 0 && sk.Parents[c] >= 0; c = int(sk.Parents[c]) {
			d := pos(c).Sub(pos(int(sk.Parents[c])))
			if d.Len() > 0.01 {
				return d.Unit()
			}
		}
		return up
	}
	for b := from; b < nb; b++ {
		head := pos(b)
		var tail vec3
		var wv, ww float64
		side := vec3{1, 0, 0}
		centred := false
		if b >= src { // a procedural link
			sh := ext.shape[b-src]
			wv, ww, side = sh.wv, sh.ww, sh.side
			next := -1
			for c := b + 1; c < nb; c++ {
				if int(sk.Parents[c]) == b {
					next = c
					break
				}
			}
			if next >= 0 {
				tail = pos(next)
			} else {
				tail = head.Add(segDir(b).Mul(sh.length))
			}
		} else {
			var sum vec3
			n := 0
			for c := b + 1; c < src; c++ {
				if int(sk.Parents[c]) == b {
					sum = sum.Add(pos(c))
					n++
				}
			}
			if n > 0 {
				tail = sum.Mul(1 / float64(n))
			}
			if n == 0 || tail.Sub(head).Len() < 0.01 {
				if sk.Parents[b] < 0 {
					// A root whose children start where it does (CMU's
					// Hips): a block centred on it.
					centred = true
					head, tail = head.Sub(up.Mul(0.07*scale)), head.Add(up.Mul(0.07*scale))
				} else {
					tail = head.Add(segDir(b).Mul(leafLength(sk.Names[b]) * scale))
				}
			}
			l := tail.Sub(head).Len()
			wv, ww = math.Max(0.3*l, 0.02), math.Max(0.3*l, 0.02)
			if l > 0.25 {
				wv, ww = 0.08, 0.08
			}
			for _, r := range widthRules {
				if r.re.MatchString(sk.Names[b]) {
					wv, ww = r.wv*scale, r.ww*scale
					break
				}
			}
		}
		u := tail.Sub(head).Unit()
		v := side.Sub(u.Mul(side.Dot(u)))
		if v.Len() < 0.3 {
			side = vec3{0, 0, 1}
			v = side.Sub(u.Mul(side.Dot(u)))
		}
		v = v.Unit()
		w := u.Cross(v)
		parent := int(sk.Parents[b])
		base := uint32(len(m.Vertices))
		var corner [8]vec3
		for e := range 2 {
			end, es := head, -1.0
			j0, j1 := uint8(b), uint8(b)
			w0, w1 := float32(1), float32(0)
			if e == 1 {
				end, es = tail, 1
			} else if parent >= 0 && !centred {
				j1 = uint8(parent)
				w0, w1 = 0.6, 0.4
			}
			for k := range 4 {
				sv, sw := float64(k&1*2-1), float64(k>>1*2-1)
				p := end.Add(v.Mul(sv * wv / 2)).Add(w.Mul(sw * ww / 2))
				corner[e*4+k] = p
				n := v.Mul(sv).Add(w.Mul(sw)).Add(u.Mul(es * 0.5)).Unit()
				m.Vertices = append(m.Vertices, kernels.SkinVertex{
					Pos:     [3]float32{float32(p[0]), float32(p[1]), float32(p[2])},
					Normal:  [3]float32{float32(n[0]), float32(n[1]), float32(n[2])},
					Joints:  kernels.PackJoints(j0, j1, 0, 0),
					Weights: [4]float32{w0, w1, 0, 0},
				})
			}
		}
		centre := head.Add(tail).Mul(0.5)
		quads := [6][4]int{{0, 1, 3, 2}, {4, 5, 7, 6}, {1, 3, 7, 5}, {0, 2, 6, 4}, {2, 3, 7, 6}, {0, 1, 5, 4}}
		for _, q := range quads {
			for _, t := range [2][3]int{{q[0], q[1], q[2]}, {q[0], q[2], q[3]}} {
				a, bb, c := corner[t[0]], corner[t[1]], corner[t[2]]
				n := bb.Sub(a).Cross(c.Sub(a))
				out := a.Add(bb).Add(c).Mul(1.0 / 3).Sub(centre)
				if n.Dot(out) < 0 {
					t[1], t[2] = t[2], t[1]
				}
				m.Indices = append(m.Indices, base+uint32(t[0]), base+uint32(t[1]), base+uint32(t[2]))
			}
		}
	}
}

// gltfMesh is the skinned mesh of a glTF file as the skinning kernels
// take it.
type gltfMesh struct {
	verts   []kernels.SkinVertex
	indices []uint32
}

// skinVertices converts the mesh anim imported with the skeleton (bones
// already mapped from the skin's joints, four influences renormalised)
// to kernels.SkinVertex, whose joints are 8 bits.
func skinVertices(path string, m *offline.SkinnedMesh) (*gltfMesh, error) {
	if m == nil {
		return nil, fmt.Errorf("rig: %s: no mesh is skinned by skin 0", path)
	}
	gm := &gltfMesh{verts: make([]kernels.SkinVertex, len(m.Positions)), indices: m.Indices}
	for i := range m.Positions {
		b := m.Bones[i]
		for _, x := range b {
			if x >= MaxBones {
				return nil, fmt.Errorf("rig: %s: vertex %d is skinned to bone %d; the kernels take bones below %d", path, i, x, MaxBones)
			}
		}
		gm.verts[i] = kernels.SkinVertex{Pos: m.Positions[i], Normal: m.Normals[i],
			Joints: kernels.PackJoints(uint8(b[0]), uint8(b[1]), uint8(b[2]), uint8(b[3])), Weights: m.Weights[i]}
	}
	return gm, nil
}

// RestSkinned skins the mesh in the rest pose on the CPU (start-up and
// tests only).
func (r *Rig) RestSkinned() [][3]float32 {
	out := make([][3]float32, len(r.Mesh.Vertices))
	for i, v := range r.Mesh.Vertices {
		var p [3]float32
		for k := range 4 {
			w := v.Weights[k]
			if w == 0 {
				continue
			}
			j := v.Joints >> (8 * k) & 0xff
			m := r.RestModel[j].Mul(&r.InvBind[j])
			q := m.TransformPoint(v.Pos)
			p[0] += w * q[0]
			p[1] += w * q[1]
			p[2] += w * q[2]
		}
		out[i] = p
	}
	return out
}
