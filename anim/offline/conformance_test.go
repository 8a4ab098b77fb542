package offline

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
)

// Conformance (issue 28 §3): glTF 2.0 files nobody here wrote (Khronos's
// sample models, see testdata/khronos/README.md and
// cmd/crowd/testdata/README.md) and generated ones (gltf_gen_test.go)
// are imported, compressed with every codec at the default options, and
// sampled by the runtime; the poses are compared in world space with the
// file's own animation evaluated here, independently of the importer: its
// JSON and accessors (sparse ones included) read by this file, glTF 2.0's
// STEP, LINEAR (slerp on the shorter arc) and CUBICSPLINE (Hermite, the
// first in-tangent and the last out-tangent unused) interpolation over the
// whole node hierarchy, the non-joint nodes above and between the joints
// included. The measure is the one Compress holds to its target: virtual
// vertices 3 cm (in world space) from each joint along its three axes.

// refGLTF is the subset of a glTF 2.0 document the reference reads.
type refGLTF struct {
	Nodes []struct {
		Name        string    `json:"name"`
		Children    []int     `json:"children"`
		Matrix      []float64 `json:"matrix"`
		Translation []float64 `json:"translation"`
		Rotation    []float64 `json:"rotation"`
		Scale       []float64 `json:"scale"`
	} `json:"nodes"`
	Skins []struct {
		Joints []int `json:"joints"`
	} `json:"skins"`
	Animations []struct {
		Name     string `json:"name"`
		Channels []struct {
			Sampler int `json:"sampler"`
			Target  struct {
				Node *int   `json:"node"`
				Path string `json:"path"`
			} `json:"target"`
		} `json:"channels"`
		Samplers []struct {
			Input         int    `json:"input"`
			Output        int    `json:"output"`
			Interpolation string `json:"interpolation"`
		} `json:"samplers"`
	} `json:"animations"`
	Accessors []struct {
		BufferView    *int   `json:"bufferView"`
		ByteOffset    int    `json:"byteOffset"`
		ComponentType int    `json:"componentType"`
		Normalized    bool   `json:"normalized"`
		Count         int    `json:"count"`
		Type          string `json:"type"`
		Sparse        *struct {
			Count   int `json:"count"`
			Indices struct {
				BufferView    int `json:"bufferView"`
				ByteOffset    int `json:"byteOffset"`
				ComponentType int `json:"componentType"`
			} `json:"indices"`
			Values struct {
				BufferView int `json:"bufferView"`
				ByteOffset int `json:"byteOffset"`
			} `json:"values"`
		} `json:"sparse"`
	} `json:"accessors"`
	BufferViews []struct {
		Buffer     int `json:"buffer"`
		ByteOffset int `json:"byteOffset"`
		ByteLength int `json:"byteLength"`
		ByteStride int `json:"byteStride"`
	} `json:"bufferViews"`
	Buffers []struct {
		URI        string `json:"uri"`
		ByteLength int    `json:"byteLength"`
	} `json:"buffers"`

	bufs   [][]byte
	parent []int
}

// parseRef reads a .gltf (JSON, buffers embedded as data URIs or in
// files beside it in dir) or a .glb (its JSON chunk, and its BIN chunk
// for the buffer without a uri).
func parseRef(t *testing.T, data []byte, dir string) *refGLTF {
	t.Helper()
	g := &refGLTF{}
	var glbBin []byte
	if len(data) >= 12 && string(data[:4]) == "glTF" {
		// GLB (glTF 2.0 §4.4): a 12-byte header, then chunks of
		// (length, type, data padded to 4 bytes): JSON first, then BIN.
		var chunks [][]byte
		for off := 12; off+8 <= len(data); {
			n := int(binary.LittleEndian.Uint32(data[off:]))
			if off+8+n > len(data) {
				t.Fatalf("reference: GLB chunk at byte %d: length %d past the end", off, n)
			}
			chunks = append(chunks, data[off+8:off+8+n])
			off += 8 + (n+3)/4*4
		}
		if len(chunks) == 0 {
			t.Fatal("reference: GLB without chunks")
		}
		data = chunks[0]
		if len(chunks) > 1 {
			glbBin = chunks[1]
		}
	}
	if err := json.Unmarshal(data, g); err != nil {
		t.Fatalf("reference: %v", err)
	}
	for i, b := range g.Buffers {
		var raw []byte
		var err error
		if b.URI == "" && i == 0 {
			raw = glbBin
		} else if c := strings.IndexByte(b.URI, ','); strings.HasPrefix(b.URI, "data:") && c > 0 {
			raw, err = base64.StdEncoding.DecodeString(b.URI[c+1:])
		} else {
			raw, err = os.ReadFile(filepath.Join(dir, b.URI))
		}
		if err != nil || len(raw) < b.ByteLength {
			t.Fatalf("reference: buffer %d: %v (%d bytes, byteLength %d)", i, err, len(raw), b.ByteLength)
		}
		g.bufs = append(g.bufs, raw)
	}
	g.parent = make([]int, len(g.Nodes))
	for i := range g.parent {
		g.parent[i] = -1
	}
	for i, n := range g.Nodes {
		for _, c := range n.Children {
			g.parent[c] = i
		}
	}
	return g
}

// accessor returns accessor i's elements (float, or normalised integer
// components as glTF 2.0 §3.11 maps them), sparse substitution applied.
func (g *refGLTF) accessor(t *testing.T, i int) [][]float64 {
	t.Helper()
	a := g.Accessors[i]
	nc := map[string]int{"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}[a.Type]
	size := map[int]int{5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}[a.ComponentType]
	comp := func(b []byte) float64 {
		switch a.ComponentType {
		case 5126:
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case 5120:
			return math.Max(float64(int8(b[0]))/127, -1)
		case 5121:
			return float64(b[0]) / 255
		case 5122:
			return math.Max(float64(int16(binary.LittleEndian.Uint16(b)))/32767, -1)
		case 5123:
			return float64(binary.LittleEndian.Uint16(b)) / 65535
		}
		t.Fatalf("reference: accessor %d: componentType %d", i, a.ComponentType)
		return 0
	}
	read := func(view, off, count int) [][]float64 {
		bv := g.BufferViews[view]
		stride := bv.ByteStride
		if stride == 0 {
			stride = nc * size
		}
		buf := g.bufs[bv.Buffer][bv.ByteOffset : bv.ByteOffset+bv.ByteLength]
		out := make([][]float64, count)
		for e := range out {
			out[e] = make([]float64, nc)
			for c := range nc {
				out[e][c] = comp(buf[off+e*stride+c*size:])
			}
		}
		return out
	}
	var out [][]float64
	if a.BufferView != nil {
		out = read(*a.BufferView, a.ByteOffset, a.Count)
	} else {
		out = make([][]float64, a.Count)
		for e := range out {
			out[e] = make([]float64, nc)
		}
	}
	if sp := a.Sparse; sp != nil {
		iv := g.BufferViews[sp.Indices.BufferView]
		ib := g.bufs[iv.Buffer][iv.ByteOffset+sp.Indices.ByteOffset:]
		vals := read(sp.Values.BufferView, sp.Values.ByteOffset, sp.Count)
		for k := range sp.Count {
			var idx int
			switch sp.Indices.ComponentType {
			case 5121:
				idx = int(ib[k])
			case 5123:
				idx = int(binary.LittleEndian.Uint16(ib[2*k:]))
			default:
				idx = int(binary.LittleEndian.Uint32(ib[4*k:]))
			}
			out[idx] = vals[k]
		}
	}
	return out
}

// refChannel is one channel of an animation, read for the reference.
type refChannel struct {
	node   int
	path   string
	interp string
	times  []float64
	vals   [][]float64 // per key; CUBICSPLINE: 3 per key (in-tangent, value, out-tangent)
}

func (g *refGLTF) channels(t *testing.T, ai int) []refChannel {
	a := g.Animations[ai]
	var out []refChannel
	for _, ch := range a.Channels {
		if ch.Target.Node == nil || ch.Target.Path == "weights" {
			continue
		}
		s := a.Samplers[ch.Sampler]
		c := refChannel{node: *ch.Target.Node, path: ch.Target.Path, interp: s.Interpolation, vals: g.accessor(t, s.Output)}
		if c.interp == "" {
			c.interp = "LINEAR"
		}
		for _, v := range g.accessor(t, s.Input) {
			c.times = append(c.times, v[0])
		}
		out = append(out, c)
	}
	return out
}

// at evaluates the channel at time t per glTF 2.0 (Appendix C).
func (c *refChannel) at(t float64) []float64 {
	n := len(c.times)
	val := func(k int) []float64 {
		if c.interp == "CUBICSPLINE" {
			return c.vals[3*k+1]
		}
		return c.vals[k]
	}
	norm := func(v []float64) []float64 {
		if c.path != "rotation" {
			return v
		}
		l := math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2] + v[3]*v[3])
		return []float64{v[0] / l, v[1] / l, v[2] / l, v[3] / l}
	}
	if t <= c.times[0] {
		return norm(val(0))
	}
	if t >= c.times[n-1] {
		return norm(val(n - 1))
	}
	k := sort.SearchFloat64s(c.times, t) // first time >= t
	if c.times[k] > t {
		k--
	}
	td := c.times[k+1] - c.times[k]
	u := (t - c.times[k]) / td
	a, b := val(k), val(k+1)
	out := make([]float64, len(a))
	switch c.interp {
	case "STEP":
		copy(out, a)
	case "CUBICSPLINE":
		bo, ai := c.vals[3*k+2], c.vals[3*(k+1)] // out-tangent of k, in-tangent of k+1
		u2, u3 := u*u, u*u*u
		for i := range out {
			out[i] = (2*u3-3*u2+1)*a[i] + td*(u3-2*u2+u)*bo[i] + (-2*u3+3*u2)*b[i] + td*(u3-u2)*ai[i]
		}
	default:
		if c.path != "rotation" {
			for i := range out {
				out[i] = a[i] + u*(b[i]-a[i])
			}
			break
		}
		// slerp, glTF 2.0 Appendix C: the shorter arc.
		d := a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3]
		s := 1.0
		if d < 0 {
			s, d = -1, -d
		}
		wa, wb := 1-u, u
		if th := math.Acos(math.Min(d, 1)); th > 1e-9 {
			wa, wb = math.Sin((1-u)*th)/math.Sin(th), math.Sin(u*th)/math.Sin(th)
		}
		for i := range out {
			out[i] = wa*a[i] + s*wb*b[i]
		}
	}
	return norm(out)
}

// world returns every node's world matrix at time t with the channels
// chans applied (the other nodes at their own transforms).
func (g *refGLTF) world(chans []refChannel, t float64) []mat4 {
	n := len(g.Nodes)
	local := make([]mat4, n)
	for i, nd := range g.Nodes {
		if len(nd.Matrix) == 16 {
			copy(local[i][:], nd.Matrix)
			continue
		}
		tr := IdentityTransform
		if len(nd.Translation) == 3 {
			tr.T = Vec3{nd.Translation[0], nd.Translation[1], nd.Translation[2]}
		}
		if len(nd.Rotation) == 4 {
			tr.R = Quat{nd.Rotation[0], nd.Rotation[1], nd.Rotation[2], nd.Rotation[3]}
		}
		if len(nd.Scale) == 3 {
			tr.S = Vec3{nd.Scale[0], nd.Scale[1], nd.Scale[2]}
		}
		for ci := range chans {
			c := &chans[ci]
			if c.node != i {
				continue
			}
			v := c.at(t)
			switch c.path {
			case "translation":
				tr.T = Vec3{v[0], v[1], v[2]}
			case "rotation":
				tr.R = Quat{v[0], v[1], v[2], v[3]}
			case "scale":
				tr.S = Vec3{v[0], v[1], v[2]}
			}
		}
		local[i] = tr.Matrix()
	}
	w := make([]mat4, n)
	done := make([]bool, n)
	var get func(i int) mat4
	get = func(i int) mat4 {
		if !done[i] {
			w[i] = local[i]
			if p := g.parent[i]; p >= 0 {
				pm := get(p)
				w[i] = pm.Mul(&local[i])
			}
			done[i] = true
		}
		return w[i]
	}
	for i := range n {
		get(i)
	}
	return w
}

// decodedModel returns the model (world) matrices of a decoded pose.
func decodedModel(sk *Skeleton, pose []float32) []mat4 {
	nb := sk.NumBones()
	out := make([]mat4, nb)
	for b := range nb {
		p := pose[b*anim.PoseFloats:]
		l := Transform{
			R: Quat{float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])}.Normalized(),
			T: Vec3{float64(p[4]), float64(p[5]), float64(p[6])},
			S: Vec3{float64(p[8]), float64(p[9]), float64(p[10])},
		}
		m := l.Matrix()
		if pb := sk.Parents[b]; pb >= 0 {
			out[b] = out[pb].Mul(&m)
		} else {
			out[b] = m
		}
	}
	return out
}

// confStats are the errors at one kind of time (metres, one per bone and
// time).
type confStats []float64

func (s confStats) max() float64 {
	m := 0.0
	for _, e := range s {
		m = math.Max(m, e)
	}
	return m
}

func (s confStats) p99() float64 {
	c := append([]float64(nil), s...)
	sort.Float64s(c)
	return percentile(c, 0.99)
}

// confResult is one (file, animation, codec) measurement.
type confResult struct {
	model, anim             string
	codec                   anim.Codec
	keys, between, ends     confStats
	near                    confStats // between keys, next to them (in the table's between column)
	worst                   string    // where the largest error is
	compressErr             error
	stats                   CompressStats
	frames                  int
	rate                    float64
	bones, nchans           int
	skippedNonJointChannels int
}

// conformance imports the glTF data (file name, buffers resolved in dir)
// and measures every clip with every codec at the default options.
func conformance(t *testing.T, name string, data []byte, dir string) []confResult {
	t.Helper()
	ref := parseRef(t, data, dir)
	opt := GLTFOptions{}
	if dir != "" {
		opt.Dir = os.DirFS(dir)
	}
	im, err := ParseGLTF(name, data, opt)
	if err != nil {
		t.Fatalf("%s: import: %v", name, err)
	}
	sk := im.Skeleton
	joints := ref.Skins[0].Joints
	nodeOf := make([]int, sk.NumBones())
	isJoint := map[int]bool{}
	for b := range nodeOf {
		k := b
		if sk.SkinJoint != nil {
			k = int(sk.SkinJoint[b])
		}
		nodeOf[b] = joints[k]
		isJoint[joints[k]] = true
	}
	// The animations that drive a joint or a node above one (whose
	// motion the joints below follow), in order: the importer's clips.
	drives := map[int]bool{}
	for j := range isJoint {
		for n := j; n >= 0; n = ref.parent[n] {
			drives[n] = true
		}
	}
	var anims []int
	for ai := range ref.Animations {
		for _, c := range ref.channels(t, ai) {
			if drives[c.node] {
				anims = append(anims, ai)
				break
			}
		}
	}
	if len(anims) != len(im.Clips) {
		t.Fatalf("%s: %d clips imported, %d animations drive joints", name, len(im.Clips), len(anims))
	}
	var out []confResult
	for ci, ai := range anims {
		clip := im.Clips[ci]
		chans := ref.channels(t, ai)
		skipped := 0
		var keySet []float64
		for _, c := range chans {
			if !isJoint[c.node] {
				skipped++
			}
			keySet = append(keySet, c.times...)
		}
		sort.Float64s(keySet)
		keys := keySet[:0]
		for _, k := range keySet {
			if len(keys) == 0 || k > keys[len(keys)-1]+1e-7 {
				keys = append(keys, k)
			}
		}
		dur := clip.Duration()
		var between, near []float64
		for k := 0; k+1 < len(keys); k++ {
			// Quarters and two fractions off any sample grid (between
			// the clip's samples, where its codec interpolates).
			for _, u := range []float64{0.25, 0.5, 0.75, 0.13, 0.62} {
				between = append(between, keys[k]+u*(keys[k+1]-keys[k]))
			}
			// Just after and before each key (inside the sample
			// intervals next to it: a discontinuity placed a frame off).
			for _, u := range []float64{0.02, 0.98} {
				near = append(near, keys[k]+u*(keys[k+1]-keys[k]))
			}
		}
		ends := []float64{-0.1, 0, 1e-3, dur - 1e-3, dur, dur + 1e-3, dur + 0.25, dur + 2}
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			r := confResult{model: name, anim: clip.Name, codec: codec, frames: clip.Frames, rate: clip.Rate, bones: sk.NumBones(), nchans: len(chans), skippedNonJointChannels: skipped}
			cc, err := Compress(sk, clip, CompressOptions{Codec: codec})
			var te *ToleranceError
			if errors.As(err, &te) {
				r.compressErr, cc = err, te.Compressed
			} else if err != nil {
				t.Fatalf("%s %q %v: %v", name, clip.Name, codec, err)
			}
			r.stats = cc.Stats
			cv := mustLoad(t, blobOf(t, sk, cc)).Clip(0)
			worst := 0.0
			measureAt := func(ts []float64, into *confStats) {
				for _, tm := range ts {
					pose := sampleAt(t, cv, float32(tm))
					// The time the sampler played (clamped, snapped:
					// anim/sample.go); outside the clip the reference is
					// glTF's own clamp at the asked time.
					tr := tm
					if tm >= 0 && tm <= dur {
						f := float32(float32(tm) * float32(clip.Rate))
						if rf := float32(math.Round(float64(f))); f-rf < 1e-3 && rf-f < 1e-3 {
							f = rf
						}
						// In float32, as glTF stores times: a key
						// at 1.2 s is 1.2f, and so is frame 36's time.
						tr = float64(float32(float64(f) / clip.Rate))
					}
					w := ref.world(chans, tr)
					dec := decodedModel(sk, pose)
					for b := range dec {
						rm := w[nodeOf[b]]
						e := 0.0
						for a := range 3 {
							l := math.Sqrt(rm[4*a]*rm[4*a] + rm[4*a+1]*rm[4*a+1] + rm[4*a+2]*rm[4*a+2])
							var v Vec3
							v[a] = 0.03 / l
							e = math.Max(e, rm.Point(v).Dist(dec[b].Point(v)))
						}
						*into = append(*into, e)
						if e > worst {
							worst = e
							r.worst = fmt.Sprintf("bone %d (%s) at %.4f s", b, sk.Names[b], tm)
						}
					}
				}
			}
			measureAt(keys, &r.keys)
			measureAt(between, &r.between)
			measureAt(near, &r.near)
			measureAt(ends, &r.ends)
			out = append(out, r)
		}
	}
	return out
}

// betweenAll is every point between keys: spread and next to them.
func (r *confResult) betweenAll() confStats {
	return append(append(confStats(nil), r.between...), r.near...)
}

// confTable formats results as a table (millimetres).
func confTable(rs []confResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-42s %-8s | %-17s | %-17s | %-17s | %s\n", "model / animation", "codec", "keys max / p99", "between max / p99", "ends max / p99", "Compress")
	for _, r := range rs {
		st := "ok"
		if r.compressErr != nil {
			st = "ToleranceError"
		}
		fmt.Fprintf(&b, "%-42s %-8v | %7.4f / %7.4f | %7.4f / %7.4f | %7.4f / %7.4f | %s (p99 %.4f, max %.4f mm at %.4f s); worst %s\n",
			trunc(r.model+" / "+r.anim, 42), r.codec, r.keys.max()*1e3, r.keys.p99()*1e3, r.betweenAll().max()*1e3, r.betweenAll().p99()*1e3,
			r.ends.max()*1e3, r.ends.p99()*1e3, st, r.stats.P99*1e3, r.stats.Max*1e3, r.stats.MaxTime, r.worst)
	}
	return b.String()
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// confTolerance is Compress's default target (Tolerance, metres at 3 cm).
const confTolerance = 0.0001

// confFailures checks the default target on results: the 99th
// percentile over every checked (bone, time) pair (at the keys, between
// them and at the ends, clamped past them) within the tolerance, as
// Compress's own measure holds it over (bone, sample) pairs; within 1.5 ×
// the tolerance on each kind of time alone (a small set, such as a few
// keys of a few bones, has its maximum for its 99th percentile); and no
// point more than confMaxFactor times it off. And Compress's verdict: a
// *ToleranceError exactly for the codecs in wantErr. It returns what
// failed.
func confFailures(rs []confResult, wantErr map[anim.Codec]string) []string {
	var fails []string
	for _, r := range rs {
		what := fmt.Sprintf("%s %q %v", r.model, r.anim, r.codec)
		if why, ok := wantErr[r.codec]; ok {
			var te *ToleranceError
			if !errors.As(r.compressErr, &te) {
				fails = append(fails, fmt.Sprintf("%s: Compress returned %v, want a *ToleranceError (%s)", what, r.compressErr, why))
			}
			continue
		}
		if r.compressErr != nil {
			fails = append(fails, fmt.Sprintf("%s: Compress: %v", what, r.compressErr))
			continue
		}
		// Over the keys, the points spread between them and the ends
		// (not the points next to the keys, which would weigh the keys
		// twice: they are held to the bounds below). The 1% slack covers
		// the reference being taken at other times than Compress's own
		// measure (keys, not samples).
		all := append(append(append(confStats(nil), r.keys...), r.between...), r.ends...)
		if p := all.p99(); p > 1.01*confTolerance {
			fails = append(fails, fmt.Sprintf("%s: p99 %.4f mm over %d (bone, time) pairs, want within the default tolerance %.2f mm (worst %s)", what, p*1e3, len(all), confTolerance*1e3, r.worst))
		}
		for _, c := range []struct {
			name string
			s    confStats
		}{{"keys", r.keys}, {"between keys", r.betweenAll()}, {"ends", r.ends}} {
			if p := c.s.p99(); p > 1.5*confTolerance {
				fails = append(fails, fmt.Sprintf("%s: %s: p99 %.4f mm, want within 1.5 × the default tolerance %.2f mm (worst %s)", what, c.name, p*1e3, confTolerance*1e3, r.worst))
			}
			if m := c.s.max(); m > confMaxFactor*confTolerance {
				fails = append(fails, fmt.Sprintf("%s: %s: max %.4f mm, want within %g × the tolerance (worst %s)", what, c.name, m*1e3, confMaxFactor, r.worst))
			}
		}
	}
	return fails
}

func checkConformance(t *testing.T, rs []confResult, wantErr map[anim.Codec]string) {
	t.Helper()
	for _, f := range confFailures(rs, wantErr) {
		t.Error(f)
	}
}

// confMaxFactor bounds the largest error at any checked point, in
// tolerances: Compress targets the 99th percentile; the maximum of these
// smooth clips stays within a few times it.
const confMaxFactor = 4.0

// khronosModels are the Khronos sample models: the repository's copies
// (cmd/crowd/testdata, Cesium Man and Rigged Simple) and
// testdata/khronos's (Simple Skin, and the Fox as a .glb: its JSON and
// BIN chunks, the texture it embeds unread).
func khronosModels(t *testing.T) []string {
	return []string{
		testModel(t, "cesium_man.gltf"),
		testModel(t, "rigged_simple.gltf"),
		filepath.Join("testdata", "khronos", "SimpleSkin.gltf"),
		filepath.Join("testdata", "khronos", "Fox.glb"),
	}
}

// underScaledRoot returns the GLB data with its scene's roots moved
// under a new root node that scales them by scale, as Blender exports an
// armature authored in other units (0.01 for centimetres, 0.0254 for
// inches): the same model and animations, smaller in the world.
func underScaledRoot(t *testing.T, data []byte, scale float64) []byte {
	t.Helper()
	ref := parseRef(t, data, "")
	if len(ref.Buffers) != 1 || ref.Buffers[0].URI != "" {
		t.Fatal("underScaledRoot: want a GLB with one buffer, its BIN chunk")
	}
	var doc map[string]any
	if err := json.Unmarshal(data[20:20+binary.LittleEndian.Uint32(data[12:])], &doc); err != nil {
		t.Fatal(err)
	}
	doc["buffers"].([]any)[0].(map[string]any)["uri"] = "data:application/octet-stream;base64," + base64.StdEncoding.EncodeToString(ref.bufs[0])
	nodes := doc["nodes"].([]any)
	scene := doc["scenes"].([]any)[0].(map[string]any)
	doc["nodes"] = append(nodes, map[string]any{"name": "Armature", "scale": []float64{scale, scale, scale}, "children": scene["nodes"]})
	scene["nodes"] = []int{len(nodes)}
	return glb(t, doc)
}

// TestConformanceKhronos: every animation of Khronos's skinned sample
// models, both codecs at the default tolerance, against the reference
// interpolation in world space at the keys, between them and at the ends;
// and the Fox again under a root node that scales it by 0.0254 (an
// armature authored in inches): the target holds in metres of the model's
// world whatever the nodes above the skeleton.
func TestConformanceKhronos(t *testing.T) {
	type model struct {
		name, dir string
		data      []byte
	}
	var models []model
	for _, p := range khronosModels(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, model{filepath.Base(p), filepath.Dir(p), data})
		if filepath.Base(p) == "Fox.glb" {
			models = append(models, model{"Fox.glb under scale 0.0254", "", underScaledRoot(t, data, 0.0254)})
		}
	}
	var all []confResult
	for _, m := range models {
		rs := conformance(t, m.name, m.data, m.dir)
		for _, r := range rs {
			if r.skippedNonJointChannels > 0 {
				t.Logf("%s %q: %d channels animate non-joint nodes", r.model, r.anim, r.skippedNonJointChannels)
			}
		}
		checkConformance(t, rs, nil)
		all = append(all, rs...)
	}
	t.Logf("world-space error at 3 cm, mm:\n%s", confTable(all))
}

// TestConformanceGenerated: the generated set (gltf_gen_test.go's
// confScenes: scale above and inside the skeleton, an animated node
// above it, non-uniform scale, STEP / LINEAR / CUBICSPLINE at the first
// and last keys, sparse accessors, irregular key times on a frame grid
// and on a millisecond one), both codecs at the default tolerance,
// against the reference in world space at the keys, between them and at
// the ends. Where anim documents a limit (the uniform codec has no
// discontinuities: it ramps over the frame before a STEP, the clip's
// last included), Compress must say so with a *ToleranceError.
func TestConformanceGenerated(t *testing.T) {
	var all []confResult
	for _, s := range confScenes() {
		rs := conformance(t, s.name, s.gltf(t), "")
		all = append(all, rs...)
		for _, r := range rs {
			if why, ok := s.toleranceError[r.codec]; ok {
				t.Logf("%s %v: %v (expected: %s)", s.name, r.codec, r.compressErr, why)
			}
		}
		checkConformance(t, rs, s.toleranceError)
	}
	t.Logf("world-space error at 3 cm, mm:\n%s", confTable(all))
}

// TestConformanceNonUniformScaleAboveRefused: a non-joint node with a
// non-uniform scale above the skeleton, or between two joints, is what
// the import does not fold (ParseGLTF's documentation): it refuses the
// file with an error naming the node rather than import it wrong.
func TestConformanceNonUniformScaleAboveRefused(t *testing.T) {
	body := [][3]float64{{0, 1, 0}, {0, 0.3, 0}, {0.2, 0.1, 0}}
	times := confTimes(0, 1.0/30, 31)
	rot := confRot(times, [3]float64{1, 0, 0}, 30, 1, 0)
	above := &confScene{name: "non-uniform-above", nodes: append([]confNode{{name: "Armature", parent: -1, s: [3]float64{1, 2, 1}}}, confChain(0, 1, body)...)}
	above.chans = []confChan{{node: 2, path: "rotation", interp: "LINEAR", times: times, values: rot}}
	inside := &confScene{name: "non-uniform-inside", nodes: confChain(-1, 0, body[:2])}
	inside.nodes = append(inside.nodes, confNode{name: "Stretch", parent: 1, s: [3]float64{1, 1, 3}},
		confNode{name: "arm", parent: 2, joint: true, t: body[2]})
	inside.chans = []confChan{{node: 1, path: "rotation", interp: "LINEAR", times: times, values: rot}}
	for _, c := range []struct {
		s    *confScene
		node string
	}{{above, "nodes[0]"}, {inside, "nodes[2]"}} {
		_, err := ParseGLTF(c.s.name, c.s.gltf(t), GLTFOptions{})
		if err == nil || !strings.Contains(err.Error(), c.node) || !strings.Contains(err.Error(), "non-uniform") {
			t.Errorf("%s: %v, want an error naming %s and its non-uniform scale", c.s.name, err, c.node)
			continue
		}
		t.Logf("%s: %v", c.s.name, err)
	}
}

// TestConformanceNonUniformScaleAnimatedAboveRefused: a non-joint node
// above the skeleton whose animated scale is non-uniform cannot be folded
// into the bones either: the import refuses the file naming the channel's
// sampler output and the node.
func TestConformanceNonUniformScaleAnimatedAboveRefused(t *testing.T) {
	times := confTimes(0, 1.0/30, 31)
	s := &confScene{name: "non-uniform-animated-above", nodes: append([]confNode{{name: "Armature", parent: -1}}, confChain(0, 1, [][3]float64{{0, 1, 0}, {0, 0.3, 0}})...)}
	s.chans = []confChan{
		{node: 2, path: "rotation", interp: "LINEAR", times: times, values: confRot(times, [3]float64{1, 0, 0}, 30, 1, 0)},
		{node: 0, path: "scale", interp: "LINEAR", times: times, values: confVec(times, func(t float64) [3]float64 { return [3]float64{1, 1 + 0.5*t, 1} })},
	}
	_, err := ParseGLTF(s.name, s.gltf(t), GLTFOptions{})
	if err == nil || !strings.Contains(err.Error(), "samplers[1].output") || !strings.Contains(err.Error(), "node 0") || !strings.Contains(err.Error(), "non-uniformly") {
		t.Fatalf("%v, want an error naming the sampler's output, node 0 and its non-uniform scale", err)
	}
	t.Log(err)
}
