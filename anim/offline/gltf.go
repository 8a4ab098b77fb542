package offline

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strings"

	"github.com/qmuntal/gltf"
	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/format"
	"github.com/vkjobs/vkjobs/anim/vmath"
)

// GLTFOptions are the import choices for glTF 2.0 files.
type GLTFOptions struct {
	// Rate is the resampling rate in Hz; 0 picks the rate of the key grid
	// (e.g. 24 Hz when every key time is a multiple of 1/24 s, 1000 Hz
	// for keys on no frame rate's grid but the millisecond's), or 30 Hz,
	// then doubles it while interpolating the samples as the codecs do
	// misses the file's own interpolation (ResampleMax, ResampleP99), up to
	// MaxResampleRate and the frame limits.
	Rate float64
	// Skin selects the skin that defines the skeleton (default 0).
	Skin int
	// Dir resolves relative buffer URIs; nil refuses external buffers.
	Dir fs.FS
	// MergeAnimations imports all the file's animations as one clip, as
	// a viewer plays them together: the shape of exporters that write one
	// animation per animated node (COLLADA2GLTF, whose output Khronos's
	// RiggedFigure and many older samples are). Two channels for the same
	// node and path, in one animation or two, are then an error naming
	// both. Without it each animation is its own clip, and a file whose
	// animations animate disjoint nodes gets a note saying so.
	MergeAnimations bool
}

// Limits on glTF content, so a hostile file cannot make us allocate without
// bound: values per accessor and bytes per external buffer.
const (
	maxAccessorValues = 1 << 22
	maxBufferBytes    = 1 << 28
)

// gltfShadow decodes the enum strings that gltf.Document maps silently to
// defaults (an unknown "path" becomes translation there), so we can reject
// them with the element's name.
type gltfShadow struct {
	Accessors []struct {
		ComponentType int    `json:"componentType"`
		Type          string `json:"type"`
	} `json:"accessors"`
	Animations []struct {
		Channels []struct {
			Target struct {
				Path string `json:"path"`
			} `json:"target"`
		} `json:"channels"`
		Samplers []struct {
			Interpolation *string `json:"interpolation"`
		} `json:"samplers"`
	} `json:"animations"`
}

type gltfReader struct {
	file    string
	doc     gltf.Document
	shadow  gltfShadow
	bufs    [][]byte
	rootAnc []Transform // per bone: the folded non-joint nodes above it, up to its parent joint
	// Per bone: those nodes, nearest first (rootAnc is their rest
	// transforms composed), and the joint node's own rest transform
	// before folding; folded marks every such node. An animation that
	// animates one of them is folded frame by frame (see animation).
	ancNodes  [][]int
	localRest []Transform
	folded    map[int]bool
}

func (g *gltfReader) errf(elem, format string, args ...any) error {
	return &ParseError{File: g.file, Element: elem, Msg: fmt.Sprintf(format, args...)}
}

// ParseGLTF imports the skeleton of one skin (opt.Skin), the mesh it
// deforms (Import.Mesh, see SkinnedMesh) and every animation of a glTF 2.0
// file (JSON .gltf or binary .glb), resampled on a uniform
// grid (GLTFOptions.Rate; by default the keys' grid, raised until the
// samples follow the file's interpolation: ResampleMax). Units are metres.
// Transforms of non-joint nodes above the skeleton root are folded into
// the root bone, and those of non-joint nodes between two joints into the
// child (so model space is the scene space glTF skinning uses; such nodes
// must scale uniformly). Where such a node is animated, the bones below
// it (to the next joint) are folded frame by frame: their tracks are the
// node's animated transform composed with the joint's, so the skeleton
// follows the node, and an animation that animates only such nodes is a
// clip too. STEP keys become discontinuities (snapped to the next sample
// when off the grid), one at the clip's last time included (see Track). A file that requires an extension the importer does not
// implement (extensionsRequired; see gltfIgnorableExtensions for those it
// accepts, none of which changes what it reads) is refused, naming it;
// so is a rotation key of (near) zero length, a channel targeting a node
// defined by a matrix (which glTF forbids animating), and a glTF 1.0 file
// (asset.version). A skinned mesh compressed by an extension the file
// only uses (Draco, meshopt) is not imported: Import.MeshErr names the
// extension, and the skeleton and clips still are. Each animation is a
// clip, or all are one with GLTFOptions.MergeAnimations (files that write
// one animation per node); Import.Animations ties each clip to its
// animation. Errors name the file and the element.
func ParseGLTF(name string, data []byte, opt GLTFOptions) (*Import, error) {
	g := &gltfReader{file: name}
	jsonData, bin, err := g.container(data)
	if err != nil {
		return nil, err
	}
	if err := g.checkVersion(jsonData); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(jsonData, &g.doc); err != nil {
		return nil, g.errf("json", "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := json.Unmarshal(jsonData, &g.shadow); err != nil {
		return nil, g.errf("json", "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := g.checkShadow(); err != nil {
		return nil, err
	}
	if err := g.checkExtensions(); err != nil {
		return nil, err
	}
	if err := g.loadBuffers(bin, opt.Dir); err != nil {
		return nil, err
	}
	im := &Import{File: name, Unit: UnitMetre}
	im.notef("unit: m (glTF)")
	sk, boneOf, err := g.skeleton(opt.Skin, im)
	if err != nil {
		return nil, err
	}
	im.Skeleton = sk
	if im.MeshErr = g.meshCompressed(opt.Skin); im.MeshErr != nil {
		im.notef("%v", im.MeshErr)
	} else if err := g.mesh(opt.Skin, boneOf, im); err != nil {
		return nil, err
	}
	if opt.MergeAnimations {
		c, from, err := g.mergedAnimation(sk, boneOf, opt.Rate, im)
		if err != nil {
			return nil, err
		}
		if c != nil {
			im.Clips = append(im.Clips, c)
			im.Animations = append(im.Animations, AnimationRef{Index: from[0], Name: c.Name})
			im.Merged = from
		}
		return im, nil
	}
	if g.disjointAnimations() {
		im.notef("animations: the file's %d animations animate different nodes (one animation per node, as COLLADA2GLTF writes them): each is a clip of its own; GLTFOptions.MergeAnimations imports them as one", len(g.doc.Animations))
	}
	for ai := range g.doc.Animations {
		c, err := g.animation(ai, sk, boneOf, opt.Rate, im)
		if err != nil {
			return nil, err
		}
		if c != nil {
			im.Clips = append(im.Clips, c)
			im.Animations = append(im.Animations, AnimationRef{Index: ai, Name: g.doc.Animations[ai].Name})
		}
	}
	return im, nil
}

// gltfIgnorableExtensions are the extensions a file may require that
// change nothing the importer reads (the skin, the node transforms, the
// animations, the skinned mesh's triangles, positions, joints and
// weights): they concern materials, textures, lights and cameras, which
// it does not import. Any other required extension (a compressed or
// quantised buffer, a different animation target, anything unknown)
// changes how those would have to be read, so the file is refused, as
// the glTF specification requires of a loader that does not implement it.
// Extensions a file merely uses (extensionsUsed) are ignored.
var gltfIgnorableExtensions = map[string]bool{
	"KHR_texture_transform":               true,
	"KHR_texture_basisu":                  true,
	"EXT_texture_webp":                    true,
	"EXT_texture_avif":                    true,
	"KHR_materials_unlit":                 true,
	"KHR_materials_pbrSpecularGlossiness": true,
	"KHR_materials_emissive_strength":     true,
	"KHR_materials_clearcoat":             true,
	"KHR_materials_transmission":          true,
	"KHR_materials_volume":                true,
	"KHR_materials_ior":                   true,
	"KHR_materials_specular":              true,
	"KHR_materials_sheen":                 true,
	"KHR_materials_iridescence":           true,
	"KHR_materials_anisotropy":            true,
	"KHR_materials_dispersion":            true,
	"KHR_materials_variants":              true,
	"KHR_lights_punctual":                 true,
	// KHR_mesh_quantization lets mesh attributes be integers; it changes
	// neither the skin nor the animations (their accessors keep the core
	// types), and the mesh reader decodes it (floatsOpt's rawInts: integer
	// positions are their integer values, dequantised by the skin's
	// inverse bind matrices as for any skinned mesh). gltfpack requires it
	// by default.
	"KHR_mesh_quantization": true,
}

// checkExtensions refuses a file that requires an extension the importer
// does not implement (see gltfIgnorableExtensions).
func (g *gltfReader) checkExtensions() error {
	for i, e := range g.doc.ExtensionsRequired {
		if !gltfIgnorableExtensions[e] {
			return g.errf(fmt.Sprintf("extensionsRequired[%d]", i), "the file requires extension %q, which this importer does not implement", e)
		}
	}
	return nil
}

// checkShadow makes sure the strict decode saw the same arrays.
func (g *gltfReader) checkShadow() error {
	if len(g.shadow.Accessors) != len(g.doc.Accessors) || len(g.shadow.Animations) != len(g.doc.Animations) {
		return g.errf("json", "inconsistent arrays")
	}
	for i, a := range g.doc.Animations {
		if a != nil && (len(a.Channels) != len(g.shadow.Animations[i].Channels) || len(a.Samplers) != len(g.shadow.Animations[i].Samplers)) {
			return g.errf(fmt.Sprintf("animations[%d]", i), "inconsistent arrays")
		}
	}
	return nil
}

// container splits GLB into its JSON and BIN chunks, or returns JSON as is.
func (g *gltfReader) container(data []byte) (jsonData, bin []byte, err error) {
	if len(data) < 4 || string(data[:4]) != "glTF" {
		return data, nil, nil
	}
	if len(data) < 20 {
		return nil, nil, g.errf("glb", "truncated header (%d bytes)", len(data))
	}
	le := binary.LittleEndian
	if v := le.Uint32(data[4:]); v != 2 {
		return nil, nil, g.errf("glb", "version %d, want 2", v)
	}
	if n := le.Uint32(data[8:]); uint64(n) > uint64(len(data)) {
		return nil, nil, g.errf("glb", "header says %d bytes, file has %d", n, len(data))
	}
	off := 12
	for off+8 <= len(data) {
		n := int(le.Uint32(data[off:]))
		typ := le.Uint32(data[off+4:])
		if n < 0 || n > len(data)-off-8 {
			return nil, nil, g.errf("glb", "chunk at byte %d has length %d beyond the file", off, n)
		}
		chunk := data[off+8 : off+8+n]
		switch typ {
		case 0x4E4F534A: // JSON
			if jsonData == nil {
				jsonData = chunk
			}
		case 0x004E4942: // BIN
			if bin == nil {
				bin = chunk
			}
		}
		off += 8 + (n+3)&^3
	}
	if jsonData == nil {
		return nil, nil, g.errf("glb", "no JSON chunk")
	}
	return jsonData, bin, nil
}

func (g *gltfReader) loadBuffers(bin []byte, dir fs.FS) error {
	g.bufs = make([][]byte, len(g.doc.Buffers))
	for i, b := range g.doc.Buffers {
		elem := fmt.Sprintf("buffers[%d]", i)
		if b == nil {
			return g.errf(elem, "null buffer")
		}
		if b.ByteLength < 0 || b.ByteLength > maxBufferBytes {
			return g.errf(elem, "byteLength %d", b.ByteLength)
		}
		var data []byte
		switch {
		case b.URI == "":
			if i != 0 || bin == nil {
				return g.errf(elem, "no uri and no GLB BIN chunk")
			}
			data = bin
		case strings.HasPrefix(b.URI, "data:"):
			comma := strings.IndexByte(b.URI, ',')
			if comma < 0 || !strings.HasSuffix(b.URI[:comma], ";base64") {
				return g.errf(elem, "data URI is not base64")
			}
			var err error
			data, err = base64.StdEncoding.DecodeString(b.URI[comma+1:])
			if err != nil {
				return g.errf(elem, "data URI: %v", err)
			}
		default:
			if dir == nil {
				return g.errf(elem, "external buffer %q and no directory to read it from", b.URI)
			}
			if !fs.ValidPath(b.URI) {
				return g.errf(elem, "buffer uri %q is not a relative path", b.URI)
			}
			f, err := fs.Stat(dir, b.URI)
			if err != nil {
				return g.errf(elem, "%v", err)
			}
			if f.Size() > maxBufferBytes {
				return g.errf(elem, "%q has %d bytes", b.URI, f.Size())
			}
			data, err = fs.ReadFile(dir, b.URI)
			if err != nil {
				return g.errf(elem, "%v", err)
			}
		}
		if len(data) < b.ByteLength {
			return g.errf(elem, "has %d bytes, byteLength says %d", len(data), b.ByteLength)
		}
		g.bufs[i] = data[:b.ByteLength]
	}
	return nil
}

var accessorComps = map[string]int{"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}

// floats reads accessor ai as float32 values (count*comps of them), with
// every index, offset, size and value checked. Integer components must be
// normalized (as glTF allows for animation outputs).
func (g *gltfReader) floats(ai int, elem string, wantComps ...int) ([]float32, int, error) {
	return g.floatsOpt(ai, elem, false, wantComps...)
}

// floatsOpt is floats; with rawInts, integer components that are not
// normalized read as their integer values (KHR_mesh_quantization's
// positions), where without it they are an error.
func (g *gltfReader) floatsOpt(ai int, elem string, rawInts bool, wantComps ...int) ([]float32, int, error) {
	if ai < 0 || ai >= len(g.doc.Accessors) || g.doc.Accessors[ai] == nil {
		return nil, 0, g.errf(elem, "accessor index %d out of range (%d accessors)", ai, len(g.doc.Accessors))
	}
	acc := g.doc.Accessors[ai]
	aelem := fmt.Sprintf("accessors[%d]", ai)
	sh := g.shadow.Accessors[ai]
	comps, ok := accessorComps[sh.Type]
	if !ok {
		return nil, 0, g.errf(aelem, "type %q", sh.Type)
	}
	if len(wantComps) > 0 && !containsInt(wantComps, comps) {
		return nil, 0, g.errf(elem, "accessor %d has type %s", ai, sh.Type)
	}
	var csize int
	switch sh.ComponentType {
	case 5126:
		csize = 4
	case 5120, 5121:
		csize = 1
	case 5122, 5123:
		csize = 2
	default:
		return nil, 0, g.errf(aelem, "componentType %d is not float or normalized integer", sh.ComponentType)
	}
	if sh.ComponentType != 5126 && !acc.Normalized && !rawInts {
		return nil, 0, g.errf(aelem, "integer componentType %d is not normalized", sh.ComponentType)
	}
	if acc.Count < 1 || acc.Count > maxAccessorValues/comps {
		return nil, 0, g.errf(aelem, "count %d", acc.Count)
	}
	out := make([]float32, acc.Count*comps)
	if acc.BufferView != nil {
		if err := g.readView(*acc.BufferView, acc.ByteOffset, acc.Count, comps, csize, sh.ComponentType, acc.Normalized, out, aelem); err != nil {
			return nil, 0, err
		}
	}
	if sp := acc.Sparse; sp != nil {
		selem := aelem + ".sparse"
		if sp.Count < 1 || sp.Count > acc.Count {
			return nil, 0, g.errf(selem, "count %d for %d elements", sp.Count, acc.Count)
		}
		var isize int
		switch sp.Indices.ComponentType {
		case gltf.ComponentUbyte:
			isize = 1
		case gltf.ComponentUshort:
			isize = 2
		case gltf.ComponentUint:
			isize = 4
		default:
			return nil, 0, g.errf(selem+".indices", "componentType %v", sp.Indices.ComponentType)
		}
		ib, err := g.viewBytes(sp.Indices.BufferView, sp.Indices.ByteOffset, sp.Count*isize, selem+".indices")
		if err != nil {
			return nil, 0, err
		}
		vals := make([]float32, sp.Count*comps)
		if err := g.readView(sp.Values.BufferView, sp.Values.ByteOffset, sp.Count, comps, csize, sh.ComponentType, acc.Normalized, vals, selem+".values"); err != nil {
			return nil, 0, err
		}
		prev := -1
		for k := 0; k < sp.Count; k++ {
			var idx int
			switch isize {
			case 1:
				idx = int(ib[k])
			case 2:
				idx = int(binary.LittleEndian.Uint16(ib[2*k:]))
			default:
				idx = int(binary.LittleEndian.Uint32(ib[4*k:]))
			}
			if idx <= prev || idx >= acc.Count {
				return nil, 0, g.errf(selem+".indices", "index %d at %d out of order or range", idx, k)
			}
			prev = idx
			copy(out[idx*comps:(idx+1)*comps], vals[k*comps:(k+1)*comps])
		}
	}
	for i, v := range out {
		if !format.Finite(float64(v)) {
			return nil, 0, g.errf(aelem, "value %d is not finite", i)
		}
	}
	return out, comps, nil
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// viewBytes returns n bytes at offset off of buffer view bv, checked.
func (g *gltfReader) viewBytes(bv, off, n int, elem string) ([]byte, error) {
	if bv < 0 || bv >= len(g.doc.BufferViews) || g.doc.BufferViews[bv] == nil {
		return nil, g.errf(elem, "bufferView index %d out of range (%d views)", bv, len(g.doc.BufferViews))
	}
	v := g.doc.BufferViews[bv]
	velem := fmt.Sprintf("bufferViews[%d]", bv)
	if v.Buffer < 0 || v.Buffer >= len(g.bufs) {
		return nil, g.errf(velem, "buffer index %d out of range (%d buffers)", v.Buffer, len(g.bufs))
	}
	buf := g.bufs[v.Buffer]
	if v.ByteOffset < 0 || v.ByteLength < 0 || v.ByteOffset > len(buf) || v.ByteLength > len(buf)-v.ByteOffset {
		return nil, g.errf(velem, "bytes %d+%d outside buffer %d (%d bytes)", v.ByteOffset, v.ByteLength, v.Buffer, len(buf))
	}
	view := buf[v.ByteOffset : v.ByteOffset+v.ByteLength]
	if off < 0 || n < 0 || off > len(view) || n > len(view)-off {
		return nil, g.errf(elem, "bytes %d+%d outside bufferView %d (%d bytes)", off, n, bv, len(view))
	}
	return view[off : off+n], nil
}

func (g *gltfReader) readView(bv, off, count, comps, csize, ctype int, normalized bool, out []float32, elem string) error {
	if bv < 0 || bv >= len(g.doc.BufferViews) || g.doc.BufferViews[bv] == nil {
		return g.errf(elem, "bufferView index %d out of range (%d views)", bv, len(g.doc.BufferViews))
	}
	esize := comps * csize
	stride := g.doc.BufferViews[bv].ByteStride
	if stride == 0 {
		stride = esize
	}
	if stride < esize || stride > 252 {
		return g.errf(fmt.Sprintf("bufferViews[%d]", bv), "byteStride %d for %d-byte elements", stride, esize)
	}
	b, err := g.viewBytes(bv, off, (count-1)*stride+esize, elem)
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	for i := range count {
		e := b[i*stride:]
		for c := range comps {
			var v float32
			switch ctype {
			case 5126:
				v = math.Float32frombits(le.Uint32(e[4*c:]))
			case 5120:
				v = max(float32(int8(e[c]))/127, -1)
			case 5121:
				v = float32(e[c]) / 255
			case 5122:
				v = max(float32(int16(le.Uint16(e[2*c:])))/32767, -1)
			case 5123:
				v = float32(le.Uint16(e[2*c:])) / 65535
			}
			if !normalized && ctype != 5126 {
				v = rawInt(e[c*csize:], ctype)
			}
			out[i*comps+c] = v
		}
	}
	return nil
}

// rawInt is the integer component of type ctype at e, as a float.
func rawInt(e []byte, ctype int) float32 {
	switch ctype {
	case 5120:
		return float32(int8(e[0]))
	case 5121:
		return float32(e[0])
	case 5122:
		return float32(int16(binary.LittleEndian.Uint16(e)))
	}
	return float32(binary.LittleEndian.Uint16(e))
}

// nodeTransform returns a node's local transform (TRS or decomposed matrix).
func (g *gltfReader) nodeTransform(ni int) (Transform, error) {
	n := g.doc.Nodes[ni]
	if n.Matrix != gltf.DefaultMatrix {
		m := mat4(n.Matrix)
		t, ok := m.Decompose()
		if !ok {
			return t, g.errf(fmt.Sprintf("nodes[%d].matrix", ni), "not a rotation, translation and positive scale")
		}
		return t, nil
	}
	r := Quat(n.RotationOrDefault())
	t := Transform{T: Vec3(n.TranslationOrDefault()), R: r, S: Vec3(n.ScaleOrDefault())}
	if !t.T.Finite() || !t.R.Finite() || !t.S.Finite() {
		return t, g.errf(fmt.Sprintf("nodes[%d]", ni), "transform is not finite")
	}
	if nr := r.Norm(); math.Abs(nr-1) > 1e-3 {
		return t, g.errf(fmt.Sprintf("nodes[%d].rotation", ni), "length %v, want 1", nr)
	}
	t.R = r.Normalized()
	return t, nil
}

// skeleton builds the skeleton of skin si; boneOf maps node -> bone (-1).
func (g *gltfReader) skeleton(si int, im *Import) (*Skeleton, []int, error) {
	doc := &g.doc
	if len(doc.Skins) == 0 {
		return nil, nil, g.errf("skins", "file has no skin")
	}
	if si < 0 || si >= len(doc.Skins) || doc.Skins[si] == nil {
		return nil, nil, g.errf("skins", "skin %d out of range (%d skins)", si, len(doc.Skins))
	}
	skin := doc.Skins[si]
	selem := fmt.Sprintf("skins[%d]", si)
	nn := len(doc.Nodes)
	// Node parents, with range, duplicate-parent and cycle checks.
	parent := make([]int, nn)
	for i := range parent {
		parent[i] = -1
	}
	for i, n := range doc.Nodes {
		if n == nil {
			return nil, nil, g.errf(fmt.Sprintf("nodes[%d]", i), "null node")
		}
		for k, c := range n.Children {
			if c < 0 || c >= nn {
				return nil, nil, g.errf(fmt.Sprintf("nodes[%d].children[%d]", i, k), "node index %d out of range (%d nodes)", c, nn)
			}
			if c == i {
				return nil, nil, g.errf(fmt.Sprintf("nodes[%d].children[%d]", i, k), "node is its own child (cycle)")
			}
			if parent[c] >= 0 {
				return nil, nil, g.errf(fmt.Sprintf("nodes[%d].children[%d]", i, k), "node %d already has parent %d", c, parent[c])
			}
			parent[c] = i
		}
	}
	depth := make([]int, nn)
	for i := range nn {
		d, p := 0, parent[i]
		for p >= 0 {
			d++
			if d > nn {
				return nil, nil, g.errf(fmt.Sprintf("nodes[%d]", i), "cycle in the node hierarchy")
			}
			p = parent[p]
		}
		depth[i] = d
	}
	nj := len(skin.Joints)
	if nj == 0 || nj > MaxBones {
		return nil, nil, g.errf(selem+".joints", "%d joints (1..%d)", nj, MaxBones)
	}
	isJoint := make([]int, nn) // skin joint index + 1
	for k, j := range skin.Joints {
		if j < 0 || j >= nn {
			return nil, nil, g.errf(fmt.Sprintf("%s.joints[%d]", selem, k), "node index %d out of range (%d nodes)", j, nn)
		}
		if isJoint[j] != 0 {
			return nil, nil, g.errf(fmt.Sprintf("%s.joints[%d]", selem, k), "node %d listed twice", j)
		}
		isJoint[j] = k + 1
	}
	// Bone order: skin order when parents already come first, else by depth.
	order := make([]int, nj) // bone -> skin joint index
	for k := range order {
		order[k] = k
	}
	jointParent := func(node int) int { // nearest ancestor that is a joint, as skin index
		for p := parent[node]; p >= 0; p = parent[p] {
			if isJoint[p] != 0 {
				return isJoint[p] - 1
			}
		}
		return -1
	}
	sorted := true
	for k, j := range skin.Joints {
		if jp := jointParent(j); jp >= k {
			sorted = false
		}
	}
	if !sorted {
		sort.SliceStable(order, func(a, b int) bool { return depth[skin.Joints[order[a]]] < depth[skin.Joints[order[b]]] })
		im.notef("reordered skin joints so parents come first (Skeleton.SkinJoint maps bones to skin joints)")
	}
	boneOfSkin := make([]int, nj)
	for b, k := range order {
		boneOfSkin[k] = b
	}
	boneOf := make([]int, nn)
	for i := range boneOf {
		boneOf[i] = -1
	}
	sk := &Skeleton{Name: g.file, Names: make([]string, nj), Parents: make([]int32, nj), Rest: make([]Transform, nj)}
	if skin.Name != "" {
		sk.Name = skin.Name
	}
	var ibm []float32
	if skin.InverseBindMatrices != nil {
		var err error
		ibm, _, err = g.floats(*skin.InverseBindMatrices, selem+".inverseBindMatrices", 16)
		if err != nil {
			return nil, nil, err
		}
		if len(ibm) < 16*nj {
			return nil, nil, g.errf(selem+".inverseBindMatrices", "%d matrices for %d joints", len(ibm)/16, nj)
		}
		sk.InverseBind = make([][16]float32, nj)
	}
	if !sorted {
		sk.SkinJoint = make([]int32, nj)
	}
	g.rootAnc = make([]Transform, nj)
	g.ancNodes, g.localRest, g.folded = make([][]int, nj), make([]Transform, nj), map[int]bool{}
	for b, k := range order {
		node := skin.Joints[k]
		boneOf[node] = b
		nm := doc.Nodes[node].Name
		if nm == "" {
			nm = fmt.Sprintf("node%d", node)
		}
		sk.Names[b] = nm
		jp := jointParent(node)
		if jp < 0 {
			sk.Parents[b] = -1
		} else {
			sk.Parents[b] = int32(boneOfSkin[jp])
		}
		t, err := g.nodeTransform(node)
		if err != nil {
			return nil, nil, err
		}
		// Fold the transforms of the non-joint nodes between the joint and
		// its parent joint (the scene root for a root) into the bone.
		anc, err := g.ancestorTransform(node, parent, isJoint)
		if err != nil {
			return nil, nil, err
		}
		g.rootAnc[b], g.localRest[b] = anc, t
		for p := parent[node]; p >= 0 && isJoint[p] == 0; p = parent[p] {
			g.ancNodes[b] = append(g.ancNodes[b], p)
			g.folded[p] = true
		}
		t = compose(anc, t)
		sk.Rest[b] = t
		if ibm != nil {
			copy(sk.InverseBind[b][:], ibm[16*k:16*k+16])
		}
		if sk.SkinJoint != nil {
			sk.SkinJoint[b] = int32(k)
		}
	}
	if err := sk.Validate(); err != nil {
		return nil, nil, g.errf(selem, "%v", err)
	}
	im.notef("skin %d: %d joints", si, nj)
	return sk, boneOf, nil
}

// ancestorTransform composes the transforms of node's ancestors up to
// its nearest joint ancestor (isJoint[n] != 0), not included.
func (g *gltfReader) ancestorTransform(node int, parent, isJoint []int) (Transform, error) {
	t := IdentityTransform
	for p := parent[node]; p >= 0 && isJoint[p] == 0; p = parent[p] {
		pt, err := g.nodeTransform(p)
		if err != nil {
			return t, err
		}
		if math.Abs(pt.S[0]-pt.S[1]) > 1e-5*pt.S[0] || math.Abs(pt.S[0]-pt.S[2]) > 1e-5*pt.S[0] {
			return t, g.errf(fmt.Sprintf("nodes[%d]", p), "non-uniform scale on a node above a joint that is not a joint is not supported")
		}
		t = compose(pt, t)
	}
	return t, nil
}

// minKeyQuatLength is the shortest rotation key accepted: glTF asks for
// unit quaternions; shorter ones (normalized int8 keys are at least
// 1/127 long when not zero) are normalised, and below this length a key
// has no meaningful direction.
const minKeyQuatLength = 1e-3

type gltfChannel struct {
	bone   int // -1: a folded non-joint node's channel (node)
	node   int
	kind   TrackKind
	interp string
	times  []float32
	values []float32 // comps per key (3 per key for CUBICSPLINE: in, value, out)
	comps  int
	elem   string
}

// animation imports animation ai as a clip, or nil when it animates no
// joint of the skeleton.
func (g *gltfReader) animation(ai int, sk *Skeleton, boneOf []int, rate float64, im *Import) (*Clip, error) {
	aelem := fmt.Sprintf("animations[%d]", ai)
	chans, skipped, err := g.channels(ai, boneOf, map[[2]int]int{})
	if err != nil {
		return nil, err
	}
	name := g.doc.Animations[ai].Name
	if name == "" {
		name = fmt.Sprintf("animation%d", ai)
	}
	if len(chans) == 0 {
		im.notef("%s %q: animates no joint of the skin nor a node above one, skipped", aelem, name)
		return nil, nil
	}
	if skipped > 0 {
		im.notef("%s %q: skipped %d channels (weights, or nodes that are neither joints nor above one)", aelem, name, skipped)
	}
	return g.clip(aelem, name, chans, sk, rate, im)
}

// mergedAnimation imports every animation of the file as one clip
// (GLTFOptions.MergeAnimations), or nil when none animates a joint of
// the skeleton. Two channels for the same node and path, in one
// animation or two, are an error naming both.
func (g *gltfReader) mergedAnimation(sk *Skeleton, boneOf []int, rate float64, im *Import) (*Clip, []int, error) {
	var chans []gltfChannel
	var from []int
	seen := map[[2]int]int{}
	skipped := 0
	for ai := range g.doc.Animations {
		c, n, err := g.channels(ai, boneOf, seen)
		if err != nil {
			return nil, nil, err
		}
		if len(c) > 0 {
			from = append(from, ai)
		}
		chans, skipped = append(chans, c...), skipped+n
	}
	const elem = "animations"
	if len(chans) == 0 {
		im.notef("%s: none animates a joint of the skin nor a node above one", elem)
		return nil, nil, nil
	}
	if skipped > 0 {
		im.notef("%s: skipped %d channels (weights, or nodes that are neither joints nor above one)", elem, skipped)
	}
	var names []string
	for _, ai := range from {
		if n := g.doc.Animations[ai].Name; n != "" {
			names = append(names, n)
		}
	}
	name := "merged"
	if len(names) > 0 && len(names) <= 4 {
		name = strings.Join(names, "+")
	}
	im.notef("%s: %d animations (%v) merged into one clip %q (GLTFOptions.MergeAnimations)", elem, len(from), from, name)
	clip, err := g.clip(elem, name, chans, sk, rate, im)
	return clip, from, err
}

// disjointAnimations reports whether the file has two or more animations
// and no node's path is animated by more than one of them: the shape of
// exporters that write one animation per node (COLLADA2GLTF's output,
// such as Khronos's RiggedFigure sample), whose animations a viewer plays
// together.
func (g *gltfReader) disjointAnimations() bool {
	if len(g.doc.Animations) < 2 {
		return false
	}
	owner := map[[2]int]int{}
	for ai, a := range g.doc.Animations {
		if a == nil {
			return false
		}
		for ci, ch := range a.Channels {
			if ch == nil || ch.Target.Node == nil {
				continue
			}
			key := [2]int{*ch.Target.Node, pathKey(g.shadow.Animations[ai].Channels[ci].Target.Path)}
			if o, ok := owner[key]; ok && o != ai {
				return false
			}
			owner[key] = ai
		}
	}
	return true
}

// pathKey numbers a channel's target path for the maps of channels.
func pathKey(path string) int {
	switch path {
	case "translation":
		return int(TrackTranslation)
	case "rotation":
		return int(TrackRotation)
	case "scale":
		return int(TrackScale)
	}
	return 3
}

// channels reads animation ai's channels that animate a joint of the
// skeleton or a folded node above one, and counts those it skips. seen
// holds, for each (node, kind) already read, the animation that read it:
// a second channel for it is an error naming both.
func (g *gltfReader) channels(ai int, boneOf []int, seen map[[2]int]int) ([]gltfChannel, int, error) {
	a := g.doc.Animations[ai]
	aelem := fmt.Sprintf("animations[%d]", ai)
	if a == nil {
		return nil, 0, g.errf(aelem, "null animation")
	}
	sh := g.shadow.Animations[ai]
	var chans []gltfChannel
	skipped := 0
	for ci, ch := range a.Channels {
		celem := fmt.Sprintf("%s.channels[%d]", aelem, ci)
		if ch == nil {
			return nil, 0, g.errf(celem, "null channel")
		}
		path := sh.Channels[ci].Target.Path
		var kind TrackKind
		switch path {
		case "translation":
			kind = TrackTranslation
		case "rotation":
			kind = TrackRotation
		case "scale":
			kind = TrackScale
		case "weights":
			skipped++
			continue
		default:
			return nil, 0, g.errf(celem+".target.path", "unknown path %q", path)
		}
		if ch.Target.Node == nil {
			skipped++
			continue
		}
		node := *ch.Target.Node
		if node < 0 || node >= len(g.doc.Nodes) {
			return nil, 0, g.errf(celem+".target.node", "node index %d out of range (%d nodes)", node, len(g.doc.Nodes))
		}
		if ch.Sampler < 0 || ch.Sampler >= len(a.Samplers) || a.Samplers[ch.Sampler] == nil {
			return nil, 0, g.errf(celem+".sampler", "sampler index %d out of range (%d samplers)", ch.Sampler, len(a.Samplers))
		}
		bone := boneOf[node]
		if bone < 0 && !g.folded[node] {
			skipped++
			continue
		}
		if g.doc.Nodes[node].Matrix != gltf.DefaultMatrix {
			// glTF: a node targeted by an animation must not have a
			// matrix; the animated TRS would silently replace it.
			return nil, 0, g.errf(celem+".target.node", "node %d has a matrix: glTF forbids animating a node defined by a matrix (use translation, rotation and scale)", node)
		}
		key := [2]int{node, int(kind)}
		if prev, ok := seen[key]; ok {
			if prev == ai {
				return nil, 0, g.errf(celem, "second channel for node %d %s", node, path)
			}
			return nil, 0, g.errf(celem, "node %d %s is animated by animations[%d] too: merged animations must animate different nodes or paths", node, path, prev)
		}
		seen[key] = ai
		s := a.Samplers[ch.Sampler]
		selem := fmt.Sprintf("%s.samplers[%d]", aelem, ch.Sampler)
		interp := "LINEAR"
		if p := sh.Samplers[ch.Sampler].Interpolation; p != nil {
			interp = *p
		}
		if interp != "LINEAR" && interp != "STEP" && interp != "CUBICSPLINE" {
			return nil, 0, g.errf(selem+".interpolation", "unknown interpolation %q", interp)
		}
		times, _, err := g.floats(s.Input, selem+".input", 1)
		if err != nil {
			return nil, 0, err
		}
		for k, t := range times {
			if t < 0 || (k > 0 && !(t > times[k-1])) {
				return nil, 0, g.errf(selem+".input", "key time %d (%v s) is negative or not increasing", k, t)
			}
		}
		want := 3
		if kind == TrackRotation {
			want = 4
		}
		vals, _, err := g.floats(s.Output, selem+".output", want)
		if err != nil {
			return nil, 0, err
		}
		per := 1
		if interp == "CUBICSPLINE" {
			per = 3
		}
		if len(vals) != len(times)*want*per {
			return nil, 0, g.errf(selem+".output", "%d values for %d keys (want %d per key)", len(vals)/want, len(times), per)
		}
		if kind == TrackRotation {
			// A key of (near) zero length is no rotation: normalising it
			// would invent one (identity), so it is refused. CUBICSPLINE
			// tangents may be zero; only the values are checked.
			for k := range times {
				q := vals[(k*per+per/2)*4:][:4]
				n := math.Sqrt(float64(q[0])*float64(q[0]) + float64(q[1])*float64(q[1]) + float64(q[2])*float64(q[2]) + float64(q[3])*float64(q[3]))
				if n < minKeyQuatLength {
					return nil, 0, g.errf(selem+".output", "animation %d (%q) channel %d (node %d rotation): key %d at %v s is the quaternion %v of length %.3g, not a rotation", ai, a.Name, ci, node, k, times[k], q, n)
				}
			}
		}
		if bone < 0 && kind == TrackScale {
			// A folded node must scale uniformly (ancestorTransform),
			// at its keys and, for CUBICSPLINE, in its tangents.
			for e := 0; e+2 < len(vals); e += 3 {
				if x := float64(vals[e]); math.Abs(x-float64(vals[e+1])) > 1e-5*math.Abs(x) || math.Abs(x-float64(vals[e+2])) > 1e-5*math.Abs(x) {
					return nil, 0, g.errf(selem+".output", "animation %d (%q) channel %d animates the scale of node %d, a non-joint node above a joint, non-uniformly (%v): not supported", ai, a.Name, ci, node, vals[e:e+3])
				}
			}
		}
		chans = append(chans, gltfChannel{bone: bone, node: node, kind: kind, interp: interp, times: times, values: vals, comps: want, elem: selem})
	}
	return chans, skipped, nil
}

// clip resamples channels chans (of one animation, or of all merged) as
// the clip name; aelem names the source in errors and notes.
func (g *gltfReader) clip(aelem, name string, chans []gltfChannel, sk *Skeleton, rate float64, im *Import) (*Clip, error) {
	dur := 0.0
	for _, c := range chans {
		dur = math.Max(dur, float64(c.times[len(c.times)-1]))
	}
	auto := rate == 0
	if auto {
		rate = keyGridRate(chans)
	}
	if !(rate > 0) || rate > 1e4 {
		return nil, g.errf(aelem, "resample rate %v", rate)
	}
	byKey := map[[2]int]*gltfChannel{}  // joint channels by (bone, kind)
	byNode := map[[2]int]*gltfChannel{} // folded nodes' channels by (node, kind)
	for i := range chans {
		if c := &chans[i]; c.bone >= 0 {
			byKey[[2]int{c.bone, int(c.kind)}] = c
		} else {
			byNode[[2]int{c.node, int(c.kind)}] = c
		}
	}
	// A bone with an animated folded node above it (up to its parent
	// joint) is folded frame by frame: its three tracks are the components
	// of the nodes' transforms at that frame composed with the joint's.
	moving := make([]bool, sk.NumBones())
	for b := range moving {
		for _, n := range g.ancNodes[b] {
			for k := range 3 {
				moving[b] = moving[b] || byNode[[2]int{n, k}] != nil
			}
		}
	}
	build := func(rate float64) (*Clip, error) {
		if dur*rate+1 > MaxFrames || (dur*rate+1)*3*float64(sk.NumBones()) > MaxClipSamples {
			return nil, g.errf(aelem, "%v s at %g Hz for %d joints exceeds %d frames or %d samples", dur, rate, sk.NumBones(), MaxFrames, MaxClipSamples)
		}
		frames := int(math.Round(dur*rate)) + 1
		clip := &Clip{Name: name, Rate: rate, Frames: frames, Tracks: make([]Track, 3*sk.NumBones())}
		resampled := map[*gltfChannel]Track{}
		track := func(c *gltfChannel) Track {
			tr, ok := resampled[c]
			if !ok {
				tr = c.resample(frames, rate)
				resampled[c] = tr
			}
			return tr
		}
		for b := range sk.NumBones() {
			if moving[b] {
				g.foldMoving(clip, b, byKey, byNode, track)
				continue
			}
			for k := TrackKind(0); k < 3; k++ {
				c := byKey[[2]int{b, int(k)}]
				var tr Track
				if c == nil {
					tr = constantTrack(frames, component(sk.Rest[b], k))
				} else {
					tr = track(c)
					if g.rootAnc[b] != IdentityTransform {
						foldTrack(&tr, k, g.rootAnc[b])
					}
				}
				if k == TrackRotation {
					makeContinuous(&tr)
				}
				clip.Tracks[b*3+int(k)] = tr
			}
		}
		// Between samples the reference is the glTF's own interpolation
		// of its keys (folded like the samples).
		// Tracks a caller appends after the import (bones the file does
		// not have, such as procedural ones added to the skeleton) are
		// not the glTF's: their own samples are their reference, as for
		// sampled motion.
		anc, nb := g.rootAnc, sk.NumBones()
		clip.Between = func(i int, t float64) [4]float64 {
			b, k := i/3, TrackKind(i%3)
			if b >= nb {
				sampled := Clip{Rate: clip.Rate, Frames: clip.Frames, Tracks: clip.Tracks}
				return sampled.ValueAt(i, t)
			}
			if moving[b] {
				return component(g.foldedAt(b, byKey, byNode, t), k)
			}
			c := byKey[[2]int{b, int(k)}]
			if c == nil {
				return clip.Tracks[i].Values[0]
			}
			tr := Track{Values: [][4]float64{c.value(t)}}
			if anc[b] != IdentityTransform {
				foldTrack(&tr, k, anc[b])
			}
			return tr.Values[0]
		}
		if err := clip.Validate(sk); err != nil {
			return nil, g.errf(aelem, "%v", err)
		}
		return clip, nil
	}
	clip, err := build(rate)
	if err != nil {
		return nil, err
	}
	if !auto {
		im.notef("%s %q: resampled at %g Hz (chosen)", aelem, name, rate)
		return clip, nil
	}
	// The key grid's rate, doubled while interpolating the samples
	// misses the file's own interpolation between them (keys off the
	// grid, cubic corners, rotation keys far apart, whose slerp the
	// codecs' nlerp departs from): both codecs interpolate between the
	// clip's samples, so what is lost here no codec can restore.
	why := "key grid"
	for {
		miss, err := resampleMiss(sk, clip)
		if err != nil {
			return nil, g.errf(aelem, "%v", err)
		}
		if miss.Between.Max <= ResampleMax && miss.Between.P99 <= ResampleP99 {
			break
		}
		next := 2 * rate
		if next > MaxResampleRate || dur*next+1 > MaxFrames || (dur*next+1)*3*float64(sk.NumBones()) > MaxClipSamples {
			im.notef("%s %q: at %g Hz, interpolating the samples misses the file's interpolation by %.3g mm (p99 %.3g mm) at %g m from the joints; a higher rate exceeds the limits",
				aelem, name, rate, miss.Between.Max*1e3, miss.Between.P99*1e3, resampleDistance)
			break
		}
		if clip, err = build(next); err != nil {
			return nil, err
		}
		rate, why = next, "key grid, doubled until the samples follow the keys' interpolation"
	}
	im.notef("%s %q: resampled at %g Hz (%s)", aelem, name, rate, why)
	return clip, nil
}

// ResampleMax and ResampleP99 bound how far, in metres at virtual
// vertices resampleDistance from each joint in model space (Measure's
// metric), interpolating an imported glTF clip's samples as the codecs
// do (lerp; nlerp for rotations) may miss the file's own interpolation of
// its keys (slerp for LINEAR rotations), at Measure's BetweenPoints times
// inside every interval: ParseGLTF doubles the key grid's rate
// (GLTFOptions.Rate 0) until both hold. They are fractions of Compress's
// default Tolerance (0.1 mm), so that the codecs, which interpolate
// between the clip's samples, keep most of it.
const (
	ResampleMax = 0.00005
	ResampleP99 = 0.000025
	// MaxResampleRate caps the search (the frame limits cap it too).
	MaxResampleRate = 3840
)

const resampleDistance = 0.03

// resampleMiss measures interpolating clip's samples as both codecs do
// (codecValueAt) against its Between reference, between samples (the
// samples themselves are the reference's).
func resampleMiss(sk *Skeleton, clip *Clip) (ErrorStats, error) {
	lin := *clip
	lin.Between = nil
	nb := clip.NumBones()
	st, err := measure(sk, clip, func(t float64, pose []float32) (float64, error) {
		if len(pose) < nb*anim.PoseFloats {
			return t, fmt.Errorf("anim: resample: %d floats for %d bones", len(pose), nb)
		}
		for b := range nb {
			tv, rv, sv := codecValueAt(&lin, 3*b, t), codecValueAt(&lin, 3*b+1, t), codecValueAt(&lin, 3*b+2, t)
			w := poseWords(Transform{T: Vec3{tv[0], tv[1], tv[2]}, R: Quat(rv).Normalized(), S: Vec3{sv[0], sv[1], sv[2]}})
			copy(pose[b*anim.PoseFloats:], w[:])
		}
		return t, nil
	}, true, []float64{resampleDistance})
	if err != nil {
		return ErrorStats{}, err
	}
	return st[0], nil
}

// codecValueAt is track i of clip at time t interpolated between its
// samples the way both codecs interpolate between the frames they keep
// (package anim's documentation): lerp for translations and scales, nlerp
// (lerp on the shorter arc, then normalise) for rotations. Clip.ValueAt
// slerps rotations instead, which is glTF's LINEAR; the two part by the
// nlerp's departure from the slerp, which grows with the cube of the
// angle between samples, so LINEAR rotation keys far apart (tens of
// degrees) must be resampled until that departure, carried down the
// bones beyond, is within the resampling's bound: measuring the slerp
// would call their own key grid exact.
func codecValueAt(clip *Clip, i int, t float64) [4]float64 {
	tr := &clip.Tracks[i]
	x := math.Max(0, math.Min(t*clip.Rate, float64(clip.Frames-1)))
	f0 := int(math.Floor(x))
	u := x - float64(f0)
	a := tr.Values[tr.sampleIndex(f0)]
	if u == 0 || f0+1 >= clip.Frames {
		return a
	}
	b := tr.Values[tr.leftIndex(f0+1)]
	if TrackKind(i%3) != TrackRotation {
		return lerpValue(TrackKind(i%3), a, b, u)
	}
	if a[0]*b[0]+a[1]*b[1]+a[2]*b[2]+a[3]*b[3] < 0 {
		b = [4]float64{-b[0], -b[1], -b[2], -b[3]}
	}
	var q Quat
	for j := range 4 {
		q[j] = a[j] + (b[j]-a[j])*u
	}
	return [4]float64(q.Normalized())
}

// component returns a transform's track of kind k as a track value.
func component(t Transform, k TrackKind) [4]float64 {
	switch k {
	case TrackTranslation:
		return vec4(t.T)
	case TrackRotation:
		return [4]float64(t.R)
	}
	return vec4(t.S)
}

// withChannels returns rest with the channels (node or bone, kind) that
// value returns replaced.
func withChannels(rest Transform, value func(k TrackKind) ([4]float64, bool)) Transform {
	t := rest
	if v, ok := value(TrackTranslation); ok {
		t.T = Vec3{v[0], v[1], v[2]}
	}
	if v, ok := value(TrackRotation); ok {
		t.R = Quat(v).Normalized()
	}
	if v, ok := value(TrackScale); ok {
		t.S = Vec3{v[0], v[1], v[2]}
	}
	return t
}

// foldedAt returns bone b's transform at time t with its folded nodes'
// channels applied: the nodes' transforms (rest where not animated)
// composed, nearest last, with the joint's.
func (g *gltfReader) foldedAt(b int, byKey, byNode map[[2]int]*gltfChannel, t float64) Transform {
	at := func(c *gltfChannel) ([4]float64, bool) {
		if c == nil {
			return [4]float64{}, false
		}
		return c.value(t), true
	}
	f := withChannels(g.localRest[b], func(k TrackKind) ([4]float64, bool) { return at(byKey[[2]int{b, int(k)}]) })
	for _, n := range g.ancNodes[b] {
		rest, _ := g.nodeTransform(n) // checked by ancestorTransform
		f = compose(withChannels(rest, func(k TrackKind) ([4]float64, bool) { return at(byNode[[2]int{n, int(k)}]) }), f)
	}
	return f
}

// foldMoving writes bone b's three tracks into clip when a folded node
// above it is animated: at each frame the folded transform (foldedAt's
// composition of the resampled channels), and where any of those
// channels has a discontinuity at a frame, the transforms of its left-
// and right-hand values there (a pair in each track whose value
// changes).
func (g *gltfReader) foldMoving(clip *Clip, b int, byKey, byNode map[[2]int]*gltfChannel, track func(*gltfChannel) Track) {
	var involved []*Track
	get := func(c *gltfChannel) *Track {
		if c == nil {
			return nil
		}
		tr := track(c)
		involved = append(involved, &tr)
		return &tr
	}
	var own [3]*Track
	for k := range 3 {
		own[k] = get(byKey[[2]int{b, k}])
	}
	nodes := g.ancNodes[b]
	anc := make([][3]*Track, len(nodes))
	rests := make([]Transform, len(nodes))
	for i, n := range nodes {
		rests[i], _ = g.nodeTransform(n)
		for k := range 3 {
			anc[i][k] = get(byNode[[2]int{n, k}])
		}
	}
	at := func(f int, right bool) Transform {
		val := func(tr *Track) ([4]float64, bool) {
			if tr == nil {
				return [4]float64{}, false
			}
			if right {
				return tr.Values[tr.sampleIndex(f)], true
			}
			return tr.Values[tr.leftIndex(f)], true
		}
		t := withChannels(g.localRest[b], func(k TrackKind) ([4]float64, bool) { return val(own[k]) })
		for i := range nodes {
			t = compose(withChannels(rests[i], func(k TrackKind) ([4]float64, bool) { return val(anc[i][k]) }), t)
		}
		return t
	}
	var out [3]Track
	for f := range clip.Frames {
		r := at(f, true)
		jump := false
		for _, tr := range involved {
			jump = jump || tr.leftIndex(f) != tr.sampleIndex(f)
		}
		var l Transform
		if jump {
			l = at(f, false)
		}
		for k := TrackKind(0); k < 3; k++ {
			tr := &out[k]
			if jump && component(l, k) != component(r, k) {
				tr.Frames = append(tr.Frames, int32(f))
				tr.Values = append(tr.Values, component(l, k))
			}
			tr.Frames = append(tr.Frames, int32(f))
			tr.Values = append(tr.Values, component(r, k))
		}
	}
	makeContinuous(&out[TrackRotation])
	for k := range 3 {
		clip.Tracks[3*b+k] = out[k]
	}
}

// foldTrack applies the transform of a bone's folded non-joint ancestors
// (see ancestorTransform) to its animated track. With
// a uniform ancestor scale each component folds on its own (T' = At +
// Ar·(As·T), R' = Ar·R, S' = As·S), so the other components do not matter.
func foldTrack(tr *Track, k TrackKind, anc Transform) {
	for i, v := range tr.Values {
		local := IdentityTransform
		switch k {
		case TrackTranslation:
			local.T = Vec3{v[0], v[1], v[2]}
		case TrackRotation:
			local.R = Quat(v)
		case TrackScale:
			local.S = Vec3{v[0], v[1], v[2]}
		}
		f := compose(anc, local)
		switch k {
		case TrackTranslation:
			tr.Values[i] = vec4(f.T)
		case TrackRotation:
			tr.Values[i] = [4]float64(f.R)
		case TrackScale:
			tr.Values[i] = vec4(f.S)
		}
	}
}

// gridSlack is how far, in frames, a key time at frame x may lie from its
// frame and still be on the grid: glTF stores times as float32, so a key
// at 1.2 s is 36.0000014 frames at 30 Hz. keyGridRate accepts a grid with
// this slack and resample snaps keys with the same, so a STEP key lands
// on its frame, never one frame late.
func gridSlack(x float64) float64 { return 2e-3 * math.Max(1, x/1000) }

// keyGridRate finds a common rate on whose grid every key time lies.
func keyGridRate(chans []gltfChannel) float64 {
	minDt := math.Inf(1)
	for _, c := range chans {
		for k := 1; k < len(c.times); k++ {
			minDt = math.Min(minDt, float64(c.times[k]-c.times[k-1]))
		}
	}
	// Frame rates, then the millisecond: exporters that write key times
	// rounded to the millisecond put keys off any frame rate's grid on
	// it (the smallest rate that holds every key wins).
	cands := []float64{24, 25, 30, 48, 50, 60, 100, 120, 1000}
	if format.Finite(minDt) && minDt > 0 {
		cands = append([]float64{math.Round(1 / minDt)}, cands...)
	}
	best := 0.0
	for _, r := range cands {
		if r < 1 || r > 1000 {
			continue
		}
		ok := true
		for _, c := range chans {
			for _, t := range c.times {
				x := float64(t) * r
				if math.Abs(x-math.Round(x)) > gridSlack(x) {
					ok = false
					break
				}
			}
			if !ok {
				break
			}
		}
		if ok && (best == 0 || r < best) {
			best = r
		}
	}
	if best == 0 {
		return 30
	}
	// A sparse key grid (simple_skin keys every 0.5 s) is refined to a
	// multiple of at least 24 Hz so the fitted curve follows the glTF
	// interpolation between keys, not just the keys; with CUBICSPLINE keys
	// to at least 60 Hz, as a clip's interpolation between its samples
	// (lerp, or a Hermite curve through them) follows a cubic only within
	// its curvature times the interval squared.
	floor := 24.0
	for _, c := range chans {
		if c.interp == "CUBICSPLINE" {
			floor = 60
		}
	}
	if best < floor {
		best *= math.Ceil(floor / best)
	}
	return best
}

// value returns the channel's value at time t (seconds).
func (c *gltfChannel) value(t float64) [4]float64 {
	n := len(c.times)
	per := 1
	if c.interp == "CUBICSPLINE" {
		per = 3
	}
	get := func(k, part int) [4]float64 {
		var v [4]float64
		base := (k*per + part) * c.comps
		for i := 0; i < c.comps; i++ {
			v[i] = float64(c.values[base+i])
		}
		return v
	}
	mid := 0
	if per == 3 {
		mid = 1
	}
	if t <= float64(c.times[0]) {
		return c.finish(get(0, mid))
	}
	if t >= float64(c.times[n-1]) {
		return c.finish(get(n-1, mid))
	}
	k := sort.Search(n, func(i int) bool { return float64(c.times[i]) > t }) - 1
	t0, t1 := float64(c.times[k]), float64(c.times[k+1])
	u := (t - t0) / (t1 - t0)
	switch c.interp {
	case "STEP":
		return c.finish(get(k, 0))
	case "CUBICSPLINE":
		dt := t1 - t0
		p0, m0 := get(k, 1), get(k, 2)
		p1, m1 := get(k+1, 1), get(k+1, 0)
		u2, u3 := u*u, u*u*u
		h00, h10, h01, h11 := 2*u3-3*u2+1, u3-2*u2+u, -2*u3+3*u2, u3-u2
		var v [4]float64
		for i := range v {
			v[i] = h00*p0[i] + h10*dt*m0[i] + h01*p1[i] + h11*dt*m1[i]
		}
		return c.finish(v)
	}
	a, b := get(k, 0), get(k+1, 0)
	if c.kind == TrackRotation {
		return [4]float64(vmath.Slerp(Quat(a).Normalized(), Quat(b).Normalized(), u))
	}
	var v [4]float64
	for i := range v {
		v[i] = a[i] + (b[i]-a[i])*u
	}
	return v
}

func (c *gltfChannel) finish(v [4]float64) [4]float64 {
	if c.kind == TrackRotation {
		return [4]float64(Quat(v).Normalized())
	}
	v[3] = 0
	return v
}

// resample samples the channel on the uniform grid. STEP keys produce a
// discontinuity (two samples at one frame) at the first frame at or after
// the key time, the clip's last frame included (the value before the last
// key holds until the end; see Track).
func (c *gltfChannel) resample(frames int, rate float64) Track {
	tr := Track{Frames: make([]int32, 0, frames), Values: make([][4]float64, 0, frames)}
	k := 1 // next STEP key to place
	for f := range frames {
		at := float64(f)
		if c.interp == "STEP" {
			at += gridSlack(at) // a key within the slack of f is f's
		}
		v := c.value(at / rate)
		if c.interp == "STEP" && f > 0 {
			jump := false
			for k < len(c.times) && float64(c.times[k])*rate <= at {
				jump = true
				k++
			}
			if prev := tr.Values[len(tr.Values)-1]; jump && prev != v {
				tr.Frames = append(tr.Frames, int32(f))
				tr.Values = append(tr.Values, prev)
			}
		}
		tr.Frames = append(tr.Frames, int32(f))
		tr.Values = append(tr.Values, v)
	}
	if c.interp != "STEP" && 4*len(c.times) <= frames {
		// Sparse keys: where the interpolation bends (Track.Keys).
		for _, t := range c.times {
			x := float64(t) * rate
			lo, hi := math.Floor(x), math.Ceil(x)
			if r := math.Round(x); math.Abs(x-r) <= gridSlack(x) {
				lo, hi = r, r
			}
			for _, k := range []float64{lo, hi} {
				if k > 0 && k < float64(frames-1) && (len(tr.Keys) == 0 || int32(k) > tr.Keys[len(tr.Keys)-1]) {
					tr.Keys = append(tr.Keys, int32(k))
				}
			}
		}
	}
	return tr
}
