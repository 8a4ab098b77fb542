package offline

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/qmuntal/gltf"
)

// MeshInfluences is the number of bone influences per vertex a
// SkinnedMesh keeps (what the skinning kernels take).
const MeshInfluences = 4

// SkinnedMesh is the triangle mesh a glTF skin deforms, in the imported
// skeleton's terms: every triangle primitive of the first node that uses
// the skin, concatenated. Positions and normals are in the mesh's bind
// space (what the skeleton's InverseBind matrices expect); a primitive
// without NORMAL gets smooth normals from its triangles (noted).
//
// Influences name skeleton bones (the skin's joint indices, JOINTS_n,
// already mapped through the skin to bones), four per vertex with weights
// summing to 1: glTF weights are renormalised (files often sum to a little
// less than 1). A vertex with more than four influences (JOINTS_1 and
// WEIGHTS_1) keeps its four largest, renormalised; Import.Notes says how
// many vertices lost weight that way. A vertex whose weights are all zero
// is bound to its first joint.
type SkinnedMesh struct {
	Positions [][3]float32
	Normals   [][3]float32
	Bones     [][MeshInfluences]uint16 // skeleton bone of each influence (0 with weight 0 when unused)
	Weights   [][MeshInfluences]float32
	Indices   []uint32 // three per triangle
	// Truncated counts the vertices that had more than four non-zero
	// influences (the smallest were dropped).
	Truncated int
}

// mesh reads the skinned mesh of skin si into im.Mesh (none when no node
// uses the skin with a mesh).
func (g *gltfReader) mesh(si int, boneOf []int, im *Import) error {
	doc := &g.doc
	mi := -1
	for i, n := range doc.Nodes {
		if n != nil && n.Skin != nil && (*n.Skin < 0 || *n.Skin >= len(doc.Skins)) {
			// Otherwise the mesh that names it would be dropped without a word.
			return g.errf(fmt.Sprintf("nodes[%d].skin", i), "skin index %d out of range (%d skins)", *n.Skin, len(doc.Skins))
		}
		if n != nil && n.Skin != nil && *n.Skin == si && n.Mesh != nil {
			mi = *n.Mesh
			break
		}
	}
	if mi < 0 {
		return nil
	}
	melem := fmt.Sprintf("meshes[%d]", mi)
	if mi >= len(doc.Meshes) || doc.Meshes[mi] == nil {
		return g.errf(melem, "mesh index out of range (%d meshes)", len(doc.Meshes))
	}
	joints := doc.Skins[si].Joints
	m := &SkinnedMesh{}
	for pi, p := range doc.Meshes[mi].Primitives {
		pelem := fmt.Sprintf("%s.primitives[%d]", melem, pi)
		if p == nil {
			return g.errf(pelem, "null primitive")
		}
		if p.Mode != gltf.PrimitiveTriangles {
			im.notef("%s: mode %v, not triangles: skipped", pelem, p.Mode)
			continue
		}
		// KHR_mesh_quantization: positions may be plain integers.
		quantized := slices.Contains(doc.ExtensionsUsed, "KHR_mesh_quantization") || slices.Contains(doc.ExtensionsRequired, "KHR_mesh_quantization")
		attr := func(name string, comps int, required bool) ([]float32, error) {
			ai, ok := p.Attributes[name]
			if !ok {
				if required {
					return nil, g.errf(pelem+".attributes", "no %s", name)
				}
				return nil, nil
			}
			v, _, err := g.floatsOpt(ai, pelem+".attributes."+name, quantized && name == gltf.POSITION, comps)
			return v, err
		}
		pos, err := attr(gltf.POSITION, 3, true)
		if err != nil {
			return err
		}
		n := len(pos) / 3
		nrm, err := attr(gltf.NORMAL, 3, false)
		if err != nil {
			return err
		}
		var infl [][2][]float32 // per set: joints (as integers), weights
		for set := 0; ; set++ {
			jn, wn := fmt.Sprintf("JOINTS_%d", set), fmt.Sprintf("WEIGHTS_%d", set)
			ja, jok := p.Attributes[jn]
			_, wok := p.Attributes[wn]
			if !jok && !wok {
				break
			}
			if jok != wok {
				return g.errf(pelem+".attributes", "%s without %s", map[bool]string{true: jn, false: wn}[jok], map[bool]string{true: wn, false: jn}[jok])
			}
			j, err := g.ints(ja, pelem+".attributes."+jn, 4)
			if err != nil {
				return err
			}
			w, err := attr(wn, 4, true)
			if err != nil {
				return err
			}
			infl = append(infl, [2][]float32{j, w})
		}
		if len(infl) == 0 {
			return g.errf(pelem+".attributes", "no JOINTS_0/WEIGHTS_0: the mesh is not skinned")
		}
		if nrm != nil && len(nrm) != len(pos) {
			return g.errf(pelem, "%d normals for %d positions", len(nrm)/3, n)
		}
		for _, s := range infl {
			if len(s[0]) != 4*n || len(s[1]) != 4*n {
				return g.errf(pelem, "joints or weights count differs from %d positions", n)
			}
		}
		base := uint32(len(m.Positions))
		firstIndex := len(m.Indices)
		if len(m.Positions)+n > maxAccessorValues {
			return g.errf(melem, "more than %d vertices", maxAccessorValues)
		}
		type iw struct {
			bone int
			w    float32
		}
		cand := make([]iw, 0, 4*len(infl))
		for v := range n {
			cand = cand[:0]
			for _, s := range infl {
				for k := range 4 {
					j, w := int(s[0][4*v+k]), s[1][4*v+k]
					if w < 0 {
						return g.errf(pelem, "vertex %d has weight %v", v, w)
					}
					if j >= len(joints) {
						return g.errf(pelem, "vertex %d names joint %d of %d", v, j, len(joints))
					}
					b := boneOf[joints[j]]
					if b < 0 {
						return g.errf(pelem, "vertex %d: joint %d is not a bone", v, j)
					}
					cand = append(cand, iw{b, w})
				}
			}
			// The largest weights first; ties keep file order.
			sort.SliceStable(cand, func(a, b int) bool { return cand[a].w > cand[b].w })
			if len(cand) > 4 && cand[4].w > 0 {
				m.Truncated++
			}
			var bones [4]uint16
			var ws [4]float32
			sum := float32(0)
			for k := range min(4, len(cand)) {
				bones[k], ws[k] = uint16(cand[k].bone), cand[k].w
				sum += ws[k]
			}
			if !(sum > 0) {
				b := boneOf[joints[int(infl[0][0][4*v])]]
				bones, ws, sum = [4]uint16{uint16(b)}, [4]float32{1}, 1
			}
			for k := range ws {
				ws[k] /= sum
			}
			m.Positions = append(m.Positions, [3]float32(pos[3*v:3*v+3]))
			if nrm != nil {
				m.Normals = append(m.Normals, [3]float32(nrm[3*v:3*v+3]))
			} else {
				m.Normals = append(m.Normals, [3]float32{})
			}
			m.Bones = append(m.Bones, bones)
			m.Weights = append(m.Weights, ws)
		}
		if p.Indices != nil {
			idx, err := g.ints(*p.Indices, pelem+".indices", 1)
			if err != nil {
				return err
			}
			if len(idx)%3 != 0 {
				return g.errf(pelem+".indices", "%d indices is not whole triangles", len(idx))
			}
			for _, x := range idx {
				if int(x) >= n {
					return g.errf(pelem+".indices", "index %v of %d vertices", x, n)
				}
				m.Indices = append(m.Indices, base+uint32(x))
			}
		} else {
			if n%3 != 0 {
				return g.errf(pelem, "%d vertices without indices is not whole triangles", n)
			}
			for v := range n {
				m.Indices = append(m.Indices, base+uint32(v))
			}
		}
		if nrm == nil {
			smoothNormals(m, base, firstIndex)
			im.notef("%s: no NORMAL: smooth normals computed from the triangles", pelem)
		}
	}
	if len(m.Positions) == 0 {
		im.notef("%s: no triangles", melem)
		return nil
	}
	if m.Truncated > 0 {
		im.notef("%s: %d vertices had more than 4 influences: the 4 largest kept, renormalised", melem, m.Truncated)
	}
	im.Mesh = m
	return nil
}

// ints reads an accessor of unsigned integers (JOINTS_n, indices: unsigned
// byte, short or int, not normalized) as float32 (exact below 2^24, which
// the accessor limits keep).
func (g *gltfReader) ints(ai int, elem string, comps int) ([]float32, error) {
	if ai < 0 || ai >= len(g.doc.Accessors) || g.doc.Accessors[ai] == nil {
		return nil, g.errf(elem, "accessor index %d out of range (%d accessors)", ai, len(g.doc.Accessors))
	}
	acc := g.doc.Accessors[ai]
	aelem := fmt.Sprintf("accessors[%d]", ai)
	sh := g.shadow.Accessors[ai]
	if c, ok := accessorComps[sh.Type]; !ok || c != comps {
		return nil, g.errf(elem, "accessor %d has type %q, want %d components", ai, sh.Type, comps)
	}
	var csize int
	switch sh.ComponentType {
	case 5121:
		csize = 1
	case 5123:
		csize = 2
	case 5125:
		csize = 4
	default:
		return nil, g.errf(aelem, "componentType %d is not an unsigned integer", sh.ComponentType)
	}
	if acc.Normalized || acc.Sparse != nil || acc.BufferView == nil {
		return nil, g.errf(aelem, "normalized, sparse or view-less integer accessors are not supported here")
	}
	if acc.Count < 1 || acc.Count > maxAccessorValues/comps {
		return nil, g.errf(aelem, "count %d", acc.Count)
	}
	bv := *acc.BufferView
	if bv < 0 || bv >= len(g.doc.BufferViews) || g.doc.BufferViews[bv] == nil {
		return nil, g.errf(elem, "bufferView index %d out of range (%d views)", bv, len(g.doc.BufferViews))
	}
	esize := comps * csize
	stride := g.doc.BufferViews[bv].ByteStride
	if stride == 0 {
		stride = esize
	}
	if stride < esize || stride > 252 {
		return nil, g.errf(fmt.Sprintf("bufferViews[%d]", bv), "byteStride %d for %d-byte elements", stride, esize)
	}
	b, err := g.viewBytes(bv, acc.ByteOffset, (acc.Count-1)*stride+esize, elem)
	if err != nil {
		return nil, err
	}
	out := make([]float32, acc.Count*comps)
	le := binary.LittleEndian
	for i := range acc.Count {
		e := b[i*stride:]
		for c := range comps {
			var v uint32
			switch csize {
			case 1:
				v = uint32(e[c])
			case 2:
				v = uint32(le.Uint16(e[2*c:]))
			default:
				v = le.Uint32(e[4*c:])
			}
			if v >= 1<<24 {
				return nil, g.errf(aelem, "value %d too large", v)
			}
			out[i*comps+c] = float32(v)
		}
	}
	return out, nil
}

// smoothNormals sets the normals of vertices base.. to the area-weighted
// mean of the normals of the triangles in m.Indices[first:] around them.
func smoothNormals(m *SkinnedMesh, base uint32, first int) {
	sub := func(a, b [3]float32) [3]float32 { return [3]float32{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }
	for t := first; t+2 < len(m.Indices); t += 3 {
		i0, i1, i2 := m.Indices[t], m.Indices[t+1], m.Indices[t+2]
		a, b := sub(m.Positions[i1], m.Positions[i0]), sub(m.Positions[i2], m.Positions[i0])
		n := [3]float32{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
		for _, i := range [3]uint32{i0, i1, i2} {
			for k := range 3 {
				m.Normals[i][k] += n[k]
			}
		}
	}
	for i := int(base); i < len(m.Normals); i++ {
		n := &m.Normals[i]
		l := float32(math.Sqrt(float64(n[0]*n[0] + n[1]*n[1] + n[2]*n[2])))
		if l > 0 {
			n[0], n[1], n[2] = n[0]/l, n[1]/l, n[2]/l
		} else {
			*n = [3]float32{0, 1, 0}
		}
	}
}
