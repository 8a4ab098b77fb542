package offline

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vkjobs/vkjobs/anim"
)

// importWithin parses data under a watchdog, so a hang fails the test.
func importWithin(t *testing.T, name string, data []byte) (*Import, error) {
	t.Helper()
	type res struct {
		im  *Import
		err error
		p   any
	}
	ch := make(chan res, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				ch <- res{p: r}
			}
		}()
		im, err := ParseGLTF(name, data, GLTFOptions{})
		ch <- res{im: im, err: err}
	}()
	select {
	case r := <-ch:
		if r.p != nil {
			t.Fatalf("%s: panic: %v", name, r.p)
		}
		return r.im, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: ParseGLTF did not return in 10 s", name)
	}
	return nil, nil
}

// wantParseError checks err is a *ParseError naming the file, an element
// starting with elem and a message containing want.
func wantParseError(t *testing.T, err error, file, elem, want string) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *ParseError", err)
	}
	if pe.File != file || !strings.HasPrefix(pe.Element, elem) || !strings.Contains(pe.Msg, want) {
		t.Fatalf("err = %v, want file %s, element %s…, message with %q", err, file, elem, want)
	}
}

// linearMini is miniGLTF with the knee's rotation LINEAR, so both codecs
// (the uniform one has no discontinuities: anim's doc) can follow it.
func linearMini() map[string]any {
	d := miniGLTF()
	a := d["animations"].([]any)[0].(map[string]any)
	delete(a["samplers"].([]any)[1].(map[string]any), "interpolation")
	return d
}

// rotTol is Compress's default tolerance, 0.1 mm, as an angle at Measure's
// 3 cm from the joint.
const rotTol = 0.0001 / 0.03

// poseAt compresses clip 0 of im with codec, loads it and samples at t.
func poseAt(t *testing.T, im *Import, codec anim.Codec, at float32) []float32 {
	t.Helper()
	cc, err := Compress(im.Skeleton, im.Clips[0], CompressOptions{Codec: codec})
	if err != nil {
		t.Fatalf("Compress: %v", err)
	}
	var b Builder
	b.AddClip(b.AddSkeleton(im.Skeleton), cc)
	blob, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	bl, err := anim.Load(blob)
	if err != nil {
		t.Fatal(err)
	}
	return sampleAt(t, bl.Clip(0), at)
}

// The glTF specification forbids animating a node that has a matrix:
// the matrix would be replaced by the animated TRS silently.
func TestGLTFMatrixNodeWithAnimatedTRSIsRefused(t *testing.T) {
	d := miniGLTF()
	hip := d["nodes"].([]any)[1].(map[string]any)
	delete(hip, "translation")
	hip["matrix"] = []any{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1}
	_, err := importWithin(t, "matrix.gltf", encodeGLTF(t, d))
	wantParseError(t, err, "matrix.gltf", "animations[0].channels[0].target.node", "matrix")

	// The same for a non-joint node above the skeleton, which the
	// importer folds frame by frame when animated.
	d = linearMini()
	turn := d["nodes"].([]any)[0].(map[string]any)
	delete(turn, "rotation")
	turn["matrix"] = []any{0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1}
	r := float32(math.Sqrt2 / 2)
	out := appendAccessor(d, f32bytes(0, r, 0, r, 0, 0, 0, 1, 0, r, 0, r), 3, "VEC4", 5126, false)
	addChannel(d, 0, "rotation", 0, out, "")
	_, err = importWithin(t, "matrix2.gltf", encodeGLTF(t, d))
	wantParseError(t, err, "matrix2.gltf", "animations[0].channels[2].target.node", "matrix")

	// Not animated, the matrix is the node's transform: it imports.
	d = linearMini()
	turn = d["nodes"].([]any)[0].(map[string]any)
	delete(turn, "rotation")
	turn["matrix"] = []any{0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1}
	im, err := importWithin(t, "matrix3.gltf", encodeGLTF(t, d))
	if err != nil {
		t.Fatal(err)
	}
	if a := quatAngle(im.Skeleton.Rest[0].R, axisAngle(1, math.Pi/2)); a > 1e-6 {
		t.Errorf("root rest rotation from the matrix off by %v rad", a)
	}
}

// appendAccessor appends raw to buffer 0 (4-byte aligned) with a view and
// an accessor of count elements of typ and componentType ct; it returns
// the accessor's index.
func appendAccessor(d map[string]any, raw []byte, count int, typ string, ct int, normalized bool) int {
	b := d["buffers"].([]any)[0].(map[string]any)
	uri := b["uri"].(string)
	data, _ := base64.StdEncoding.DecodeString(uri[strings.IndexByte(uri, ',')+1:])
	for len(data)%4 != 0 {
		data = append(data, 0)
	}
	off := len(data)
	data = append(data, raw...)
	b["uri"] = "data:application/gltf-buffer;base64," + base64.StdEncoding.EncodeToString(data)
	b["byteLength"] = len(data)
	d["bufferViews"] = append(d["bufferViews"].([]any), map[string]any{"buffer": 0, "byteOffset": off, "byteLength": len(raw)})
	acc := map[string]any{"bufferView": len(d["bufferViews"].([]any)) - 1, "componentType": ct, "count": count, "type": typ}
	if normalized {
		acc["normalized"] = true
	}
	d["accessors"] = append(d["accessors"].([]any), acc)
	return len(d["accessors"].([]any)) - 1
}

func f32bytes(vs ...float32) []byte {
	var out []byte
	for _, v := range vs {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// addChannel animates node's path with a new sampler of the given accessors.
func addChannel(d map[string]any, node int, path string, in, out int, interp string) {
	a := d["animations"].([]any)[0].(map[string]any)
	s := map[string]any{"input": in, "output": out}
	if interp != "" {
		s["interpolation"] = interp
	}
	a["samplers"] = append(a["samplers"].([]any), s)
	a["channels"] = append(a["channels"].([]any), map[string]any{"sampler": len(a["samplers"].([]any)) - 1, "target": map[string]any{"node": node, "path": path}})
}

// gltfpack writes rotation keys as normalized SHORT (KHR_mesh_quantization
// era core glTF allows normalized integer rotation outputs): they decode
// as c/32767 and are normalised.
func TestGLTFNormalizedShortRotationKeys(t *testing.T) {
	d := linearMini()
	s, c := math.Sin(0.25), math.Cos(0.25)
	q := func(v float64) int16 { return int16(math.Round(v * 32767)) }
	var raw []byte
	for _, k := range [][4]float64{{0, 0, 0, 1}, {s, 0, 0, c}, {0, 0, 0, 1}} {
		for _, v := range k {
			raw = binary.LittleEndian.AppendUint16(raw, uint16(q(v)))
		}
	}
	out := appendAccessor(d, raw, 3, "VEC4", 5122, true)
	a := d["animations"].([]any)[0].(map[string]any)
	a["samplers"].([]any)[1].(map[string]any)["output"] = out
	im, err := importWithin(t, "short.gltf", encodeGLTF(t, d))
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		// LINEAR: halfway between 0.5 rad (0.5 s) and the identity (1 s).
		p := poseAt(t, im, codec, 0.75)
		got := Quat{float64(p[12]), float64(p[13]), float64(p[14]), float64(p[15])}
		if e := quatAngle(got, axisAngle(0, 0.25)); e > rotTol {
			t.Errorf("codec %v: knee at 0.75 s off by %v rad: %v", codec, e, got)
		}
	}
}

// LINEAR rotation keys that are not unit length: the importer normalises
// them (minKeyQuatLength's comment), so slerp between the directions.
func TestGLTFNonUnitLinearRotationKeys(t *testing.T) {
	d := miniGLTF()
	s, c := float32(math.Sin(0.5)), float32(math.Cos(0.5))
	out := appendAccessor(d, f32bytes(0, 0, 0, 2, 3*s, 0, 0, 3*c, 0, 0, 0, 0.5), 3, "VEC4", 5126, false)
	a := d["animations"].([]any)[0].(map[string]any)
	sm := a["samplers"].([]any)[1].(map[string]any)
	sm["output"] = out
	delete(sm, "interpolation")
	im, err := importWithin(t, "nonunit.gltf", encodeGLTF(t, d))
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		p := poseAt(t, im, codec, 0.25)
		got := Quat{float64(p[12]), float64(p[13]), float64(p[14]), float64(p[15])}
		if e := quatAngle(got, axisAngle(0, 0.5)); e > rotTol {
			t.Errorf("codec %v: knee at 0.25 s off by %v rad: %v", codec, e, got)
		}
	}
}

// A clip whose keys start late holds the first key before it (glTF
// clamps), and the clip still starts at 0.
func TestGLTFFirstKeyAfterZero(t *testing.T) {
	d := linearMini()
	editBuffer(d, 0, 0.25)
	im, err := importWithin(t, "late.gltf", encodeGLTF(t, d))
	if err != nil {
		t.Fatal(err)
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		p := poseAt(t, im, codec, 0.1)
		if y := p[5]; math.Abs(float64(y)-1) > 1e-4 {
			t.Errorf("codec %v: hip y at 0.1 s = %v, want the first key 1", codec, y)
		}
		p = poseAt(t, im, codec, 0.375)
		if y := p[5]; math.Abs(float64(y)-1.1) > 1e-4 {
			t.Errorf("codec %v: hip y at 0.375 s = %v, want 1.1", codec, y)
		}
	}
}

// A sampler with one key: a one-frame clip, which must compress, load
// and sample with both codecs.
func TestGLTFSingleKeyAnimation(t *testing.T) {
	d := linearMini()
	for _, ai := range []int{0, 1, 2} {
		d["accessors"].([]any)[ai].(map[string]any)["count"] = 1
	}
	im, err := importWithin(t, "one.gltf", encodeGLTF(t, d))
	if err != nil {
		t.Fatal(err)
	}
	if im.Clips[0].Frames != 1 {
		t.Errorf("frames %d, want 1", im.Clips[0].Frames)
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		p := poseAt(t, im, codec, 0)
		if y := p[5]; math.Abs(float64(y)-1) > 1e-4 {
			t.Errorf("codec %v: hip y = %v, want 1", codec, y)
		}
	}
}

// Scale keys of zero (a bone shrinking away) and negative (mirroring):
// imported as the keys say, or refused; never a different answer.
func TestGLTFZeroAndNegativeScaleKeys(t *testing.T) {
	for _, k := range []float32{0, -1} {
		d := linearMini()
		out := appendAccessor(d, f32bytes(1, 1, 1, k, k, k, 1, 1, 1), 3, "VEC3", 5126, false)
		addChannel(d, 2, "scale", 0, out, "")
		im, err := importWithin(t, "scale.gltf", encodeGLTF(t, d))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("scale %v: %v is not a *ParseError", k, err)
			}
			t.Logf("scale %v refused: %v", k, err)
			continue
		}
		for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
			p := poseAt(t, im, codec, 0.5)
			for c := range 3 {
				if math.Abs(float64(p[20+c]-k)) > 1e-3 {
					t.Errorf("scale key %v, codec %v: knee scale at 0.5 s = %v", k, codec, p[20:23])
					break
				}
			}
		}
	}
}

// A negative scale in a joint's rest (a mirrored limb) must survive as
// the node says, or be refused.
func TestGLTFNegativeRestScale(t *testing.T) {
	d := linearMini()
	d["nodes"].([]any)[2].(map[string]any)["scale"] = []any{-1, 1, 1}
	im, err := importWithin(t, "mirror.gltf", encodeGLTF(t, d))
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("%v is not a *ParseError", err)
		}
		t.Logf("refused: %v", err)
		return
	}
	if s := im.Skeleton.Rest[1].S; s != (Vec3{-1, 1, 1}) {
		t.Errorf("knee rest scale %v", s)
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		p := poseAt(t, im, codec, 0.25)
		if p[20] != -1 || p[21] != 1 {
			t.Errorf("codec %v: knee scale %v, want -1 1 1", codec, p[20:23])
		}
	}
}

// GLB container shapes: unknown chunks, JSON padded with spaces, a BIN
// chunk with padding, and a BIN chunk missing or too short.
func TestGLTFGLBContainerShapes(t *testing.T) {
	base := glb(t, miniGLTF())
	le := binary.LittleEndian
	jlen := int(le.Uint32(base[12:]))
	binAt := 12 + 8 + jlen
	// An unknown chunk between JSON and BIN, and three padding bytes
	// after the BIN chunk's data (the total stays a multiple of 4).
	var withUnknown []byte
	withUnknown = append(withUnknown, base[:binAt]...)
	withUnknown = le.AppendUint32(withUnknown, 4)
	withUnknown = le.AppendUint32(withUnknown, 0x12345678)
	withUnknown = append(withUnknown, 1, 2, 3, 4)
	withUnknown = append(withUnknown, base[binAt:]...)
	le.PutUint32(withUnknown[8:], uint32(len(withUnknown)))
	if _, err := importWithin(t, "unknown.glb", withUnknown); err != nil {
		t.Errorf("unknown chunk: %v", err)
	}
	// No BIN chunk.
	noBin := append([]byte(nil), base[:binAt]...)
	le.PutUint32(noBin[8:], uint32(len(noBin)))
	_, err := importWithin(t, "nobin.glb", noBin)
	wantParseError(t, err, "nobin.glb", "buffers[0]", "BIN")
	// A BIN chunk shorter than the buffer's byteLength.
	short := append([]byte(nil), base...)
	binLen := le.Uint32(short[binAt:])
	le.PutUint32(short[binAt:], binLen-8)
	short = short[:len(short)-8]
	le.PutUint32(short[8:], uint32(len(short)))
	_, err = importWithin(t, "short.glb", short)
	wantParseError(t, err, "short.glb", "buffers[0]", "byteLength")
	// A header length larger than the file.
	long := append([]byte(nil), base...)
	le.PutUint32(long[8:], uint32(len(long)+4))
	_, err = importWithin(t, "long.glb", long)
	wantParseError(t, err, "long.glb", "glb", "bytes")
}

// Skins whose joints have two roots (no common ancestor among them).
func TestGLTFSkinWithTwoRoots(t *testing.T) {
	d := miniGLTF()
	nodes := d["nodes"].([]any)
	delete(nodes[1].(map[string]any), "children")
	nodes[0].(map[string]any)["children"] = []any{1, 2}
	im, err := importWithin(t, "roots.gltf", encodeGLTF(t, d))
	if err != nil {
		t.Logf("refused: %v", err)
		return
	}
	if im.Skeleton.Parents[1] != -1 {
		t.Errorf("parents %v", im.Skeleton.Parents)
	}
	// The turn about y above both is folded into both roots.
	if a := quatAngle(im.Skeleton.Rest[1].R, axisAngle(1, math.Pi/2)); a > 1e-6 {
		t.Errorf("second root's rest rotation off by %v", a)
	}
}

// Data URIs: bad base64 is refused; huge counts are refused, not allocated.
func TestGLTFDataURIAndHugeCounts(t *testing.T) {
	d := miniGLTF()
	d["buffers"].([]any)[0].(map[string]any)["uri"] = "data:application/octet-stream;base64,@@@@"
	_, err := importWithin(t, "b64.gltf", encodeGLTF(t, d))
	wantParseError(t, err, "b64.gltf", "buffers[0]", "")
	for _, n := range []int64{1 << 31, 1<<31 - 1, 1 << 40, math.MaxInt64} {
		d := miniGLTF()
		d["accessors"].([]any)[0].(map[string]any)["count"] = n
		_, err := importWithin(t, "count.gltf", encodeGLTF(t, d))
		wantParseError(t, err, "count.gltf", "accessors[0]", "count")
	}
}

// gltfpack's default output requires KHR_mesh_quantization: skinned mesh
// positions as plain (not normalized) UNSIGNED_SHORT, normals as
// normalized BYTE. The file imports, positions read as their integer
// values (the inverse bind matrices dequantise them), and an integer
// that is not normalized stays an error where the extension is absent
// and in animation outputs.
func TestGLTFMeshQuantization(t *testing.T) {
	build := func(ext bool) map[string]any {
		d := linearMini()
		var pos, nrm, jw []byte
		for _, v := range []uint16{0, 0, 0, 1000, 0, 0, 0, 1000, 0} {
			pos = binary.LittleEndian.AppendUint16(pos, v)
		}
		for range 3 {
			nrm = append(nrm, 0, 0, 127, 0)
			jw = append(jw, 1, 0, 0, 0)
		}
		pa := appendAccessor(d, pos, 3, "VEC3", 5123, false)
		// Normals padded to 4 bytes, as gltfpack writes them: a byteStride.
		na := appendAccessor(d, nrm, 3, "VEC3", 5120, true)
		d["bufferViews"].([]any)[len(d["bufferViews"].([]any))-1].(map[string]any)["byteStride"] = 4
		ja := appendAccessor(d, jw, 3, "VEC4", 5121, false)
		wa := appendAccessor(d, []byte{255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0}, 3, "VEC4", 5121, true)
		attrs := map[string]any{"POSITION": pa, "NORMAL": na, "JOINTS_0": ja, "WEIGHTS_0": wa}
		d["meshes"] = []any{map[string]any{"primitives": []any{map[string]any{"attributes": attrs}}}}
		d["nodes"] = append(d["nodes"].([]any), map[string]any{"name": "body", "mesh": 0, "skin": 0})
		if ext {
			d["extensionsUsed"] = []any{"KHR_mesh_quantization"}
			d["extensionsRequired"] = []any{"KHR_mesh_quantization"}
		}
		return d
	}
	im, err := importWithin(t, "pack.gltf", encodeGLTF(t, build(true)))
	if err != nil {
		t.Fatal(err)
	}
	if im.MeshErr != nil || im.Mesh == nil || len(im.Mesh.Positions) != 3 {
		t.Fatalf("mesh %+v, MeshErr %v", im.Mesh, im.MeshErr)
	}
	if p := im.Mesh.Positions[1]; p[0] != 1000 || p[1] != 0 || p[2] != 0 {
		t.Errorf("position 1 = %v, want the integer (1000, 0, 0)", p)
	}
	if n := im.Mesh.Normals[0]; math.Abs(float64(n[2])-1) > 1e-6 {
		t.Errorf("normal 0 = %v, want (0, 0, 1)", n)
	}
	if len(im.Clips) != 1 {
		t.Fatalf("%d clips", len(im.Clips))
	}
	// Without the extension an integer position is an error.
	_, err = importWithin(t, "plain.gltf", encodeGLTF(t, build(false)))
	wantParseError(t, err, "plain.gltf", "accessors[", "not normalized")
	// With it, an animation output stays core glTF: integers must be
	// normalized.
	d := build(true)
	var raw []byte
	for _, v := range []int16{0, 1, 0, 0, 2, 0, 0, 1, 0} {
		raw = binary.LittleEndian.AppendUint16(raw, uint16(v))
	}
	out := appendAccessor(d, raw, 3, "VEC3", 5122, false)
	d["animations"].([]any)[0].(map[string]any)["samplers"].([]any)[0].(map[string]any)["output"] = out
	_, err = importWithin(t, "anim.gltf", encodeGLTF(t, d))
	wantParseError(t, err, "anim.gltf", fmt.Sprintf("accessors[%d]", out), "not normalized")
}

// CUBICSPLINE keys whose first in-tangent and last out-tangent are not
// zero: the specification ignores both. Between keys the value is the
// Hermite spline of (value, out-tangent) and (value, in-tangent) scaled
// by the interval; both codecs follow it within Compress's tolerance.
func TestGLTFCubicSplineEndTangents(t *testing.T) {
	d := linearMini()
	// Per key: in-tangent, value, out-tangent (VEC3); y only.
	keys := [3][3]float32{{100, 1, 0.4}, {-0.2, 1.2, 0.2}, {0.3, 1.1, -100}}
	var vals []float32
	for _, k := range keys {
		for _, y := range k {
			vals = append(vals, 0, y, 0)
		}
	}
	out := appendAccessor(d, f32bytes(vals...), 9, "VEC3", 5126, false)
	s0 := d["animations"].([]any)[0].(map[string]any)["samplers"].([]any)[0].(map[string]any)
	s0["output"], s0["interpolation"] = out, "CUBICSPLINE"
	im, err := importWithin(t, "cubic.gltf", encodeGLTF(t, d))
	if err != nil {
		t.Fatal(err)
	}
	ref := func(tm float64) float64 {
		k := min(int(tm/0.5), 1)
		u, dt := (tm-0.5*float64(k))/0.5, 0.5
		p0, m0 := float64(keys[k][1]), float64(keys[k][2])
		p1, m1 := float64(keys[k+1][1]), float64(keys[k+1][0])
		u2, u3 := u*u, u*u*u
		return (2*u3-3*u2+1)*p0 + (u3-2*u2+u)*dt*m0 + (-2*u3+3*u2)*p1 + (u3-u2)*dt*m1
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		for _, tm := range []float32{0, 0.1, 0.25, 0.49, 0.5, 0.77, 0.99, 1} {
			p := poseAt(t, im, codec, tm)
			if e := math.Abs(float64(p[5]) - ref(float64(tm))); e > 1e-4 {
				t.Errorf("codec %v: hip y at %v s = %v, spline %v", codec, tm, p[5], ref(float64(tm)))
			}
		}
	}
}

// Sparse accessors with indices unsorted or out of range, sampler inputs
// not strictly increasing or negative: refused, naming the element.
func TestGLTFSparseAndTimesRefused(t *testing.T) {
	sparse := func(idx []uint16) []byte {
		d := linearMini()
		var ib []byte
		for _, i := range idx {
			ib = binary.LittleEndian.AppendUint16(ib, i)
		}
		iacc := appendAccessor(d, ib, len(idx), "SCALAR", 5123, false)
		iview := d["accessors"].([]any)[iacc].(map[string]any)["bufferView"]
		vacc := appendAccessor(d, f32bytes(0, 2, 0, 0, 3, 0)[:12*len(idx)], len(idx), "VEC3", 5126, false)
		vview := d["accessors"].([]any)[vacc].(map[string]any)["bufferView"]
		a1 := d["accessors"].([]any)[1].(map[string]any)
		a1["sparse"] = map[string]any{"count": len(idx), "indices": map[string]any{"bufferView": iview, "componentType": 5123}, "values": map[string]any{"bufferView": vview}}
		return encodeGLTF(t, d)
	}
	for _, idx := range [][]uint16{{2, 1}, {3}, {1, 1}} {
		_, err := importWithin(t, "sparse.gltf", sparse(idx))
		wantParseError(t, err, "sparse.gltf", "accessors[1].sparse.indices", "out of order or range")
	}
	// Sorted and in range, it replaces those keys.
	im, err := importWithin(t, "sparse.gltf", sparse([]uint16{1, 2}))
	if err != nil {
		t.Fatal(err)
	}
	if y := im.Clips[0].Tracks[0].Values[im.Clips[0].Tracks[0].sampleIndex(12)][1]; math.Abs(y-2) > 1e-6 {
		t.Errorf("sparse key 1: hip y at 0.5 s = %v, want 2", y)
	}
	for _, times := range [][3]float32{{0, 0.5, 0.5}, {0, 0.6, 0.5}, {-0.1, 0.5, 1}} {
		d := linearMini()
		for k, tm := range times {
			editBuffer(d, 4*k, tm)
		}
		_, err := importWithin(t, "times.gltf", encodeGLTF(t, d))
		wantParseError(t, err, "times.gltf", "animations[0].samplers[0].input", "negative or not increasing")
	}
}

// An animation that only targets morph weights is no clip (noted), and
// external buffers resolve through GLTFOptions.Dir.
func TestGLTFWeightsOnlyAndExternalBuffer(t *testing.T) {
	d := linearMini()
	a := d["animations"].([]any)[0].(map[string]any)
	for _, c := range a["channels"].([]any) {
		c.(map[string]any)["target"].(map[string]any)["path"] = "weights"
	}
	im, err := importWithin(t, "weights.gltf", encodeGLTF(t, d))
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Clips) != 0 || !strings.Contains(strings.Join(im.Notes, "\n"), "animates no joint") {
		t.Errorf("%d clips, notes %q", len(im.Clips), im.Notes)
	}

	d = linearMini()
	b := d["buffers"].([]any)[0].(map[string]any)
	uri := b["uri"].(string)
	raw, _ := base64.StdEncoding.DecodeString(uri[strings.IndexByte(uri, ',')+1:])
	b["uri"] = "mini.bin"
	data := encodeGLTF(t, d)
	fsys := fstest.MapFS{"mini.bin": {Data: raw}}
	im, err = ParseGLTF("ext.gltf", data, GLTFOptions{Dir: fsys})
	if err != nil || len(im.Clips) != 1 {
		t.Fatalf("external buffer: %v", err)
	}
	_, err = ParseGLTF("ext.gltf", data, GLTFOptions{Dir: fstest.MapFS{}})
	wantParseError(t, err, "ext.gltf", "buffers[0]", "mini.bin")
	b["uri"] = "../mini.bin"
	_, err = ParseGLTF("ext.gltf", encodeGLTF(t, d), GLTFOptions{Dir: fsys})
	wantParseError(t, err, "ext.gltf", "buffers[0]", "not a relative path")
	// A short external file.
	b["uri"] = "mini.bin"
	_, err = ParseGLTF("ext.gltf", encodeGLTF(t, d), GLTFOptions{Dir: fstest.MapFS{"mini.bin": {Data: raw[:10]}}})
	wantParseError(t, err, "ext.gltf", "buffers[0]", "byteLength")
}
