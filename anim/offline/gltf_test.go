package offline

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
)

// miniGLTF returns a small glTF document as a JSON map: a non-joint root
// node (a 90° turn about y) above a two-joint skin; joint "hip" moves up
// (LINEAR) and joint "knee" turns about x in STEPs at 0.5 s and 1 s.
func miniGLTF() map[string]any {
	var buf bytes.Buffer
	put := func(vs ...float32) {
		for _, v := range vs {
			binary.Write(&buf, binary.LittleEndian, v)
		}
	}
	put(0, 0.5, 1)                     // 0: times
	put(0, 1, 0, 0, 1.2, 0, 0, 1.1, 0) // 12: hip translations
	s, c := float32(math.Sin(0.25)), float32(math.Cos(0.25))
	put(0, 0, 0, 1, s, 0, 0, c, 0, 0, 0, 1)                // 48: knee rotations
	put(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, -1, 0, 1)   // 96: inverse binds
	put(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, -0.5, 0, 1) //
	data := buf.Bytes()
	view := func(off, n int) map[string]any {
		return map[string]any{"buffer": 0, "byteOffset": off, "byteLength": n}
	}
	acc := func(view, count int, typ string) map[string]any {
		return map[string]any{"bufferView": view, "componentType": 5126, "count": count, "type": typ}
	}
	r := float32(math.Sqrt2 / 2)
	return map[string]any{
		"asset": map[string]any{"version": "2.0"},
		"nodes": []any{
			map[string]any{"name": "turn", "children": []any{1}, "rotation": []any{0, r, 0, r}},
			map[string]any{"name": "hip", "children": []any{2}, "translation": []any{0, 1, 0}},
			map[string]any{"name": "knee", "translation": []any{0, 0.5, 0}},
		},
		"skins":       []any{map[string]any{"joints": []any{1, 2}, "inverseBindMatrices": 3}},
		"buffers":     []any{map[string]any{"byteLength": len(data), "uri": "data:application/gltf-buffer;base64," + base64.StdEncoding.EncodeToString(data)}},
		"bufferViews": []any{view(0, 12), view(12, 36), view(48, 48), view(96, 128)},
		"accessors":   []any{acc(0, 3, "SCALAR"), acc(1, 3, "VEC3"), acc(2, 3, "VEC4"), acc(3, 2, "MAT4")},
		"animations": []any{map[string]any{
			"name": "walk",
			"channels": []any{
				map[string]any{"sampler": 0, "target": map[string]any{"node": 1, "path": "translation"}},
				map[string]any{"sampler": 1, "target": map[string]any{"node": 2, "path": "rotation"}},
			},
			"samplers": []any{
				map[string]any{"input": 0, "output": 1},
				map[string]any{"input": 0, "output": 2, "interpolation": "STEP"},
			},
		}},
	}
}

func encodeGLTF(t testing.TB, doc map[string]any) []byte {
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// glb packs a JSON document with its buffer 0 as the BIN chunk.
func glb(t testing.TB, doc map[string]any) []byte {
	b := doc["buffers"].([]any)[0].(map[string]any)
	uri := b["uri"].(string)
	bin, _ := base64.StdEncoding.DecodeString(uri[strings.IndexByte(uri, ',')+1:])
	delete(b, "uri")
	js := encodeGLTF(t, doc)
	for len(js)%4 != 0 {
		js = append(js, ' ')
	}
	var out bytes.Buffer
	le := binary.LittleEndian
	binary.Write(&out, le, [3]uint32{0x46546C67, 2, uint32(12 + 8 + len(js) + 8 + len(bin))})
	binary.Write(&out, le, [2]uint32{uint32(len(js)), 0x4E4F534A})
	out.Write(js)
	binary.Write(&out, le, [2]uint32{uint32(len(bin)), 0x004E4942})
	out.Write(bin)
	return out.Bytes()
}

func TestGLTFMini(t *testing.T) {
	for _, form := range []string{"gltf", "glb"} {
		var data []byte
		if form == "gltf" {
			data = encodeGLTF(t, miniGLTF())
		} else {
			data = glb(t, miniGLTF())
		}
		im, err := ParseGLTF("mini."+form, data, GLTFOptions{})
		if err != nil {
			t.Fatal(form, err)
		}
		sk := im.Skeleton
		if sk.NumBones() != 2 || sk.Names[0] != "hip" || sk.Parents[1] != 0 || len(im.Clips) != 1 {
			t.Fatalf("%s: %+v, %d clips", form, sk, len(im.Clips))
		}
		c := im.Clips[0]
		if c.Name != "walk" || c.Rate != 24 || c.Frames != 25 {
			t.Errorf("%s: clip %q at %v Hz, %d frames", form, c.Name, c.Rate, c.Frames)
		}
		// The turn above the root is folded into it: the hip's rest
		// translation (0,1,0) is unchanged by a turn about y, its rotation
		// becomes the turn.
		if a := quatAngle(sk.Rest[0].R, axisAngle(1, math.Pi/2)); a > 1e-6 {
			t.Errorf("%s: root rest rotation off by %v", form, a)
		}
		// LINEAR: halfway between keys 0 and 0.5 s the hip is at 1.1 m.
		if y := c.Tracks[0].Values[c.Tracks[0].sampleIndex(6)][1]; math.Abs(y-1.1) > 1e-6 {
			t.Errorf("%s: hip y at 0.25 s = %v", form, y)
		}
		// STEP: the knee jumps at frame 12 (0.5 s): two samples there.
		kt := &c.Tracks[4]
		i := kt.sampleIndex(12)
		if kt.Frames[i-1] != 12 || quatAngle(Quat(kt.Values[i-1]), IdentityQuat) > 1e-6 || quatAngle(Quat(kt.Values[i]), axisAngle(0, 0.5)) > 1e-6 {
			t.Errorf("%s: no discontinuity at the STEP key: %v %v", form, kt.Frames[i-2:i+1], kt.Values[i-1:i+1])
		}
		if sk.InverseBind == nil || sk.InverseBind[1][13] != -0.5 {
			t.Errorf("%s: inverse bind %v", form, sk.InverseBind)
		}
		// The STEP survives compression as a jump, and so does the last
		// key (back to the identity at the clip's end, 1 s): the curve
		// codec's end pair.
		cc, err := Compress(sk, c, CompressOptions{})
		if err != nil {
			t.Fatalf("%s: Compress: %v", form, err)
		}
		var b Builder
		b.AddClip(b.AddSkeleton(sk), cc)
		blob, _ := b.Bytes()
		bl, err := anim.Load(blob)
		if err != nil {
			t.Fatal(err)
		}
		before, at := sampleAt(t, bl.Clip(0), 0.4999), sampleAt(t, bl.Clip(0), 0.5)
		qb := Quat{float64(before[12]), float64(before[13]), float64(before[14]), float64(before[15])}
		qa := Quat{float64(at[12]), float64(at[13]), float64(at[14]), float64(at[15])}
		if quatAngle(qb, IdentityQuat) > 1e-3 || quatAngle(qa, axisAngle(0, 0.5)) > 1e-3 {
			t.Errorf("%s: knee %v just before the step, %v at it", form, qb, qa)
		}
		before, at = sampleAt(t, bl.Clip(0), 0.9999), sampleAt(t, bl.Clip(0), 1)
		qb = Quat{float64(before[12]), float64(before[13]), float64(before[14]), float64(before[15])}
		qa = Quat{float64(at[12]), float64(at[13]), float64(at[14]), float64(at[15])}
		if quatAngle(qb, axisAngle(0, 0.5)) > 1e-3 || quatAngle(qa, IdentityQuat) > 1e-3 {
			t.Errorf("%s: knee %v just before the clip's end, %v at it", form, qb, qa)
		}
	}
}

// Every malformed document is an error naming the file and the element.
func TestGLTFMalformed(t *testing.T) {
	type doc = map[string]any
	at := func(d doc, path ...any) any {
		var cur any = d
		for _, p := range path {
			switch k := p.(type) {
			case string:
				cur = cur.(doc)[k]
			case int:
				cur = cur.([]any)[k]
			}
		}
		return cur
	}
	set := func(key string, v any, path ...any) func(doc) {
		return func(d doc) { at(d, path...).(doc)[key] = v }
	}
	cases := []struct {
		name, elem, want string
		mut              func(doc)
		raw              []byte
	}{
		{"not json", "json", "invalid character", nil, []byte("{nope")},
		{"truncated glb", "glb", "truncated header", nil, []byte("glTF\x02\x00\x00\x00")},
		{"glb chunk beyond file", "glb", "beyond the file", nil, []byte("glTF\x02\x00\x00\x00\x14\x00\x00\x00\xff\x00\x00\x00JSON")},
		{"no skin", "skins", "no skin", func(d doc) { delete(d, "skins") }, nil},
		{"skin joint out of range", "skins[0].joints[1]", "out of range", set("joints", []any{1, 7}, "skins", 0), nil},
		{"skin joint twice", "skins[0].joints[1]", "listed twice", set("joints", []any{1, 1}, "skins", 0), nil},
		{"child out of range", "nodes[1].children[0]", "out of range", set("children", []any{9}, "nodes", 1), nil},
		{"node its own child", "nodes[2].children[0]", "own child", set("children", []any{2}, "nodes", 2), nil},
		{"two parents", "nodes[2].children[0]", "already has parent", set("children", []any{1}, "nodes", 2), nil},
		{"cycle", "nodes[", "cycle", func(d doc) {
			at(d, "nodes", 2).(doc)["children"] = []any{0}
		}, nil},
		{"bad rotation", "nodes[2].rotation", "length", set("rotation", []any{0, 0, 0, 2}, "nodes", 2), nil},
		{"mirror matrix", "nodes[0].matrix", "positive scale", func(d doc) {
			n := at(d, "nodes", 0).(doc)
			delete(n, "rotation")
			n["matrix"] = []any{-1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}
		}, nil},
		{"accessor out of range", "animations[0].samplers[0].input", "accessor index 9 out of range", set("input", 9, "animations", 0, "samplers", 0), nil},
		{"sampler out of range", "animations[0].channels[1].sampler", "out of range", set("sampler", 5, "animations", 0, "channels", 1), nil},
		{"target node out of range", "animations[0].channels[0].target.node", "out of range", set("node", 42, "animations", 0, "channels", 0, "target"), nil},
		{"unknown path", "animations[0].channels[0].target.path", "unknown path \"position\"", set("path", "position", "animations", 0, "channels", 0, "target"), nil},
		{"unknown interpolation", "animations[0].samplers[1].interpolation", "unknown interpolation \"SMOOTH\"", set("interpolation", "SMOOTH", "animations", 0, "samplers", 1), nil},
		{"wrong output type", "animations[0].samplers[0].output", "has type VEC4", set("output", 2, "animations", 0, "samplers", 0), nil},
		{"output count", "animations[0].samplers[1].output", "for 3 keys", set("count", 2, "accessors", 2), nil},
		{"times not increasing", "animations[0].samplers[0].input", "not increasing", func(d doc) { editBuffer(d, 8, 0.25) }, nil},
		{"unknown accessor type", "json", "unknown accessor's type: SCALER", set("type", "SCALER", "accessors", 0), nil},
		{"integer not normalized", "accessors[1]", "not normalized", set("componentType", 5123, "accessors", 1), nil},
		{"accessor beyond view", "accessors[1]", "outside bufferView", set("count", 5, "accessors", 1), nil},
		{"view beyond buffer", "bufferViews[3]", "outside buffer", set("byteLength", 4000, "bufferViews", 3), nil},
		{"view index", "accessors[2]", "bufferView index 8", set("bufferView", 8, "accessors", 2), nil},
		{"buffer index", "bufferViews[0]", "buffer index 3", set("buffer", 3, "bufferViews", 0), nil},
		{"byteStride", "bufferViews[1]", "byteStride 4", set("byteStride", 4, "bufferViews", 1), nil},
		{"bad base64", "buffers[0]", "data URI", set("uri", "data:application/octet-stream;base64,@@@", "buffers", 0), nil},
		{"short buffer", "buffers[0]", "byteLength says", set("byteLength", 9999, "buffers", 0), nil},
		{"external buffer", "buffers[0]", "no directory", set("uri", "mesh.bin", "buffers", 0), nil},
		{"negative count", "accessors[0]", "count -1", set("count", -1, "accessors", 0), nil},
		{"two channels one target", "animations[0].channels[1]", "second channel", func(d doc) {
			tg := at(d, "animations", 0, "channels", 1, "target").(doc)
			tg["node"], tg["path"] = 1, "translation"
		}, nil},
	}
	for _, tc := range cases {
		data := tc.raw
		if data == nil {
			d := miniGLTF()
			tc.mut(d)
			data = encodeGLTF(t, d)
		}
		_, err := ParseGLTF("bad.gltf", data, GLTFOptions{})
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v is not a *ParseError", tc.name, err)
			continue
		}
		if pe.File != "bad.gltf" || !strings.HasPrefix(pe.Element, tc.elem) || !strings.Contains(pe.Msg, tc.want) {
			t.Errorf("%s: %v; want element %s… and %q", tc.name, err, tc.elem, tc.want)
		}
	}
}

// editBuffer overwrites the float32 at byte off of buffer 0.
func editBuffer(d map[string]any, off int, v float32) {
	b := d["buffers"].([]any)[0].(map[string]any)
	uri := b["uri"].(string)
	raw, _ := base64.StdEncoding.DecodeString(uri[strings.IndexByte(uri, ',')+1:])
	binary.LittleEndian.PutUint32(raw[off:], math.Float32bits(v))
	b["uri"] = "data:application/gltf-buffer;base64," + base64.StdEncoding.EncodeToString(raw)
}

// Values that are not finite, in the binary buffer itself.
func TestGLTFNaN(t *testing.T) {
	d := miniGLTF()
	editBuffer(d, 16, float32(math.NaN()))
	_, err := ParseGLTF("nan.gltf", encodeGLTF(t, d), GLTFOptions{})
	if err == nil || !strings.Contains(err.Error(), "accessors[1]: value 1 is not finite") {
		t.Errorf("error %v", err)
	}
}

func TestGLTFFiles(t *testing.T) {
	simple := assimpModels + "/glTF2/simple_skin/simple_skin.gltf"
	needAssimp(t, simple)
	for _, tc := range []struct {
		path          string
		bones, frames int
		rate          float64
	}{
		// Cesium Man's 24 Hz LINEAR rotation keys, interpolated between
		// by nlerp as the codecs do, miss the slerp by more than
		// ResampleMax: the import doubles the rate once.
		{testModel(t, "cesium_man.gltf"), 19, 97, 48},
		{testModel(t, "rigged_simple.gltf"), 2, 51, 24},
		{simple, 2, 133, 24},
	} {
		im, err := LoadFile(tc.path, ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := im.Clips[0]
		if im.Skeleton.NumBones() != tc.bones || c.Frames != tc.frames || c.Rate != tc.rate || im.Unit != UnitMetre {
			t.Errorf("%s: %d bones, %d frames at %v Hz, unit %v", tc.path, im.Skeleton.NumBones(), c.Frames, c.Rate, im.Unit)
		}
		cc, err := Compress(im.Skeleton, c, CompressOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var b Builder
		b.AddClip(b.AddSkeleton(im.Skeleton), cc)
		data, _ := b.Bytes()
		bl, err := anim.Load(data)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Measure(im.Skeleton, c, bl.Clip(0), 0.03)
		if err != nil {
			t.Fatal(err)
		}
		if st[0].Max > 0.0003 {
			t.Errorf("%s: %v", tc.path, st[0])
		}
	}
	// cesium_man: the Z-up root node is folded in, so the figure stands
	// on y: its head is well above its feet in model space.
	im, _ := LoadFile(testModel(t, "cesium_man.gltf"), ImportOptions{})
	local := make([]Transform, 19)
	model := make([]mat4, 19)
	im.Clips[0].Pose(0, local)
	modelMatrices(im.Skeleton.Parents, local, model)
	lo, hi := math.Inf(1), math.Inf(-1)
	for b := range 19 {
		lo, hi = math.Min(lo, model[b][13]), math.Max(hi, model[b][13])
	}
	if hi-lo < 1 {
		t.Errorf("cesium_man spans %v m in y", hi-lo)
	}
}

func FuzzGLTF(f *testing.F) {
	f.Add(encodeGLTF(f, miniGLTF()))
	f.Add(glb(f, miniGLTF()))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := ParseGLTF("fuzz.gltf", data, GLTFOptions{})
		checkFuzzImport(t, "fuzz.gltf", im, err)
	})
}

// testModel returns the path of a glTF test model: the repository keeps
// one copy of each, beside cmd/crowd's tests (cmd/crowd/testdata, with
// their attribution).
func testModel(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "cmd", "crowd", "testdata", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test model: %v", err)
	}
	return p
}

// TestGLTFBetweenOfAppendedTracks: a caller may append tracks to an
// imported clip for bones the file does not have (cmd/crowd adds
// procedural bones at their rest pose before resampling the clips); the
// import's Between gives those tracks their own samples' interpolation
// instead of indexing past the file's joints, so ValueAt and Resample
// work on the extended clip.
func TestGLTFBetweenOfAppendedTracks(t *testing.T) {
	im, err := LoadFile(testModel(t, "cesium_man.gltf"), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := im.Clips[0]
	first := len(c.Tracks)
	// One more bone: its translation ramps from (0, 0, 0) to (1, 2, 0)
	// over the clip; its rotation and scale hold.
	ramp := Track{}
	for f := range c.Frames {
		u := float64(f) / float64(c.Frames-1)
		ramp.Frames = append(ramp.Frames, int32(f))
		ramp.Values = append(ramp.Values, [4]float64{u, 2 * u, 0, 0})
	}
	c.Tracks = append(c.Tracks, ramp, constantTrack(c.Frames, [4]float64{0, 0, 0, 1}), constantTrack(c.Frames, [4]float64{1, 1, 1, 0}))
	tm := 2.5 / c.Rate // halfway between frames 2 and 3
	want := 2.5 / float64(c.Frames-1)
	if v := c.ValueAt(first, tm); math.Abs(v[0]-want) > 1e-12 || math.Abs(v[1]-2*want) > 1e-12 {
		t.Errorf("appended translation at %v s: %v, want (%v, %v, 0)", tm, v, want, 2*want)
	}
	if v := c.ValueAt(first+1, tm); v != [4]float64{0, 0, 0, 1} {
		t.Errorf("appended rotation at %v s: %v, want identity", tm, v)
	}
	r, err := c.Resample(30)
	if err != nil {
		t.Fatal(err)
	}
	for f := range r.Frames {
		want := math.Min(float64(f)/30*c.Rate/float64(c.Frames-1), 1)
		if v := r.Tracks[first].Values[f]; math.Abs(v[0]-want) > 1e-9 {
			t.Fatalf("resampled at 30 Hz, frame %d: appended translation %v, want x %v", f, v, want)
		}
	}
}
