package offline_test

import (
	"math"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim/offline"
)

const riggedSimple = "../../cmd/crowd/testdata/rigged_simple.gltf"

// riggedSimpleJSON returns rigged_simple.gltf decoded, for a test to edit.
func riggedSimpleJSON(t *testing.T) map[string]any { return readJSON(t, riggedSimple) }

func parseJSON(t *testing.T, doc map[string]any) (*offline.Import, error) {
	return parseWith(t, doc, offline.GLTFOptions{})
}

// TestGLTFAnimationTie: every clip names the glTF animation it came from
// (index and name), and ClipOf finds a clip by animation index.
func TestGLTFAnimationTie(t *testing.T) {
	doc := riggedSimpleJSON(t)
	anims := doc["animations"].([]any)
	wave := map[string]any{}
	for k, v := range anims[0].(map[string]any) {
		wave[k] = v
	}
	wave["name"] = "wave"
	doc["animations"] = append(anims, wave)
	im, err := parseJSON(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []offline.AnimationRef{{Index: 0, Name: ""}, {Index: 1, Name: "wave"}}
	if len(im.Clips) != 2 || len(im.Animations) != 2 || im.Animations[0] != want[0] || im.Animations[1] != want[1] {
		t.Fatalf("Animations %v for %d clips, want %v", im.Animations, len(im.Clips), want)
	}
	if im.Clips[1].Name != "wave" || im.ClipOf(1) != im.Clips[1] || im.ClipOf(0) != im.Clips[0] || im.ClipOf(2) != nil {
		t.Fatalf("ClipOf: %p %p %v; clips %p %p", im.ClipOf(0), im.ClipOf(1), im.ClipOf(2), im.Clips[0], im.Clips[1])
	}
}

// TestGLTF1Refused: a glTF 1.0 file is refused by its version, not with
// a JSON type error.
func TestGLTF1Refused(t *testing.T) {
	for _, v := range []string{`"1.0"`, `1.0`, `"1.1"`} {
		src := `{"asset":{"version":` + v + `},"accessors":{"acc0":{"bufferView":"bv0"}},"nodes":{"n":{}}}`
		_, err := offline.ParseGLTF("old.gltf", []byte(src), offline.GLTFOptions{})
		want := "anim: old.gltf: asset.version: glTF " + strings.Trim(v, `"`) + " is not supported (asset.version " + v + ")"
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "json:") {
			t.Errorf("version %s: %v, want %q", v, err, want)
		}
	}
}

// TestGLTFErrorsStartWithAnim: import errors start with "anim: ".
func TestGLTFErrorsStartWithAnim(t *testing.T) {
	_, err := offline.ParseGLTF("bad.gltf", []byte(`{"asset":{"version":"2.0"},"skins":[]}`), offline.GLTFOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "anim: bad.gltf: ") {
		t.Fatalf("%v, want an error starting \"anim: bad.gltf: \"", err)
	}
	_, err = offline.ParseBVH("bad.bvh", []byte("HIERARCHY\nROOT"), offline.BVHOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "anim: bad.bvh:") {
		t.Fatalf("%v, want an error starting \"anim: bad.bvh:\"", err)
	}
}

// TestGLTFCompressedMesh: a skinned mesh compressed by Draco or meshopt,
// an extension the file only uses, loses only the mesh: the skeleton and
// clips import and MeshErr names the extension and the primitive. A file
// that requires Draco is refused whole.
func TestGLTFCompressedMesh(t *testing.T) {
	draco := func(doc map[string]any) {
		doc["extensionsUsed"] = []any{"KHR_draco_mesh_compression"}
		p := doc["meshes"].([]any)[0].(map[string]any)["primitives"].([]any)[0].(map[string]any)
		p["extensions"] = map[string]any{"KHR_draco_mesh_compression": map[string]any{"bufferView": 0, "attributes": map[string]any{"POSITION": 0}}}
		for _, a := range p["attributes"].(map[string]any) {
			delete(doc["accessors"].([]any)[int(a.(float64))].(map[string]any), "bufferView")
		}
	}
	meshopt := func(doc map[string]any) {
		doc["extensionsUsed"] = []any{"EXT_meshopt_compression"}
		p := doc["meshes"].([]any)[0].(map[string]any)["primitives"].([]any)[0].(map[string]any)
		ai := int(p["attributes"].(map[string]any)["POSITION"].(float64))
		bv := int(doc["accessors"].([]any)[ai].(map[string]any)["bufferView"].(float64))
		doc["bufferViews"].([]any)[bv].(map[string]any)["extensions"] = map[string]any{"EXT_meshopt_compression": map[string]any{"buffer": 0, "byteLength": 4, "byteStride": 12, "count": 1, "mode": "ATTRIBUTES"}}
	}
	for _, tc := range []struct {
		name, ext, elem string
		edit            func(map[string]any)
	}{
		{"draco", "KHR_draco_mesh_compression", "meshes[0].primitives[0]", draco},
		{"meshopt", "EXT_meshopt_compression", "meshes[0].primitives[0] (bufferViews[", meshopt},
	} {
		doc := riggedSimpleJSON(t)
		tc.edit(doc)
		im, err := parseJSON(t, doc)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if im.Skeleton == nil || im.Skeleton.NumBones() != 2 || len(im.Clips) != 1 || im.Mesh != nil {
			t.Fatalf("%s: skeleton %v, %d clips, mesh %v", tc.name, im.Skeleton, len(im.Clips), im.Mesh != nil)
		}
		if im.MeshErr == nil || !strings.HasPrefix(im.MeshErr.Error(), "anim: user.gltf: "+tc.elem) || !strings.Contains(im.MeshErr.Error(), tc.ext) ||
			!strings.Contains(im.MeshErr.Error(), "the skeleton and clips are") {
			t.Fatalf("%s: MeshErr %v", tc.name, im.MeshErr)
		}
		if !strings.Contains(strings.Join(im.Notes, "\n"), tc.ext) {
			t.Errorf("%s: notes do not name %s: %q", tc.name, tc.ext, im.Notes)
		}
	}
	doc := riggedSimpleJSON(t)
	draco(doc)
	doc["extensionsRequired"] = []any{"KHR_draco_mesh_compression"}
	if _, err := parseJSON(t, doc); err == nil || !strings.Contains(err.Error(), `requires extension "KHR_draco_mesh_compression"`) {
		t.Fatalf("Draco required: %v", err)
	}
}

// TestCompressOptionsNameTheField: a bad CompressOptions names the field
// and its value, not the whole struct.
func TestCompressOptionsNameTheField(t *testing.T) {
	im, err := offline.LoadFile(riggedSimple, offline.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opt  offline.CompressOptions
		want string
	}{
		{offline.CompressOptions{Tolerance: -1}, "bad options: Tolerance -1 "},
		{offline.CompressOptions{Tolerance: math.NaN()}, "bad options: Tolerance NaN "},
		{offline.CompressOptions{ChainShare: -0.5}, "bad options: ChainShare -0.5 "},
		{offline.CompressOptions{SegmentSeconds: math.Inf(1)}, "bad options: SegmentSeconds +Inf "},
		{offline.CompressOptions{VertexDistance: -0.03}, "bad options: VertexDistance -0.03 "},
		{offline.CompressOptions{MaxError: -1}, "bad options: MaxError -1 "},
		{offline.CompressOptions{Passes: -2}, "bad options: Passes -2 "},
		{offline.CompressOptions{Tolerance: 1e300, SegmentSeconds: 1e10}, "overflows"},
	} {
		_, err := offline.Compress(im.Skeleton, im.Clips[0], tc.opt)
		if err == nil || !strings.HasPrefix(err.Error(), "anim: compress ") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "{") {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
}
