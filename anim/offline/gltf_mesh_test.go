package offline

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/qmuntal/gltf"
	"github.com/qmuntal/gltf/modeler"
)

// TestGLTFMeshCesiumMan checks the skinned mesh import against the same
// file read with qmuntal/gltf's modeler: every position, normal, index,
// and each influence's joint mapped through the skin to its bone.
func TestGLTFMeshCesiumMan(t *testing.T) {
	path := testModel(t, "cesium_man.gltf")
	im, err := LoadFile(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := im.Mesh
	if m == nil {
		t.Fatal("no mesh")
	}
	doc, err := gltf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p := doc.Meshes[0].Primitives[0]
	pos, _ := modeler.ReadPosition(doc, doc.Accessors[p.Attributes[gltf.POSITION]], nil)
	nrm, _ := modeler.ReadNormal(doc, doc.Accessors[p.Attributes[gltf.NORMAL]], nil)
	jts, _ := modeler.ReadJoints(doc, doc.Accessors[p.Attributes["JOINTS_0"]], nil)
	wts, _ := modeler.ReadWeights(doc, doc.Accessors[p.Attributes["WEIGHTS_0"]], nil)
	idx, _ := modeler.ReadIndices(doc, doc.Accessors[*p.Indices], nil)
	if len(m.Positions) != 3273 || len(pos) != len(m.Positions) || len(m.Indices) != len(idx) || m.Truncated != 0 {
		t.Fatalf("%d vertices (want %d), %d indices (want %d), %d truncated", len(m.Positions), len(pos), len(m.Indices), len(idx), m.Truncated)
	}
	sk := im.Skeleton
	jointOf := func(b uint16) int32 { // SkinJoint nil: bones are the joints in order
		if sk.SkinJoint == nil {
			return int32(b)
		}
		return sk.SkinJoint[b]
	}
	for v := range pos {
		if m.Positions[v] != pos[v] || m.Normals[v] != nrm[v] {
			t.Fatalf("vertex %d: %v %v, want %v %v", v, m.Positions[v], m.Normals[v], pos[v], nrm[v])
		}
		sum := wts[v][0] + wts[v][1] + wts[v][2] + wts[v][3]
		// Each of the file's influences is present with its weight, on the
		// bone whose SkinJoint is the file's joint.
		for k := range 4 {
			w := wts[v][k] / sum
			if w == 0 {
				continue
			}
			found := false
			for q := range 4 {
				if jointOf(m.Bones[v][q]) == int32(jts[v][k]) && math.Abs(float64(m.Weights[v][q]-w)) < 1e-6 {
					found = true
				}
			}
			if !found {
				t.Fatalf("vertex %d: joint %d weight %v missing from %v %v", v, jts[v][k], w, m.Bones[v], m.Weights[v])
			}
		}
	}
	for i := range idx {
		if m.Indices[i] != idx[i] {
			t.Fatalf("index %d: %d, want %d", i, m.Indices[i], idx[i])
		}
	}
}

// TestGLTFMeshInfluences: a vertex with six influences (JOINTS_1 and
// WEIGHTS_1) keeps its four largest, renormalised, and says so; a bad
// joint index is an error naming the primitive.
func TestGLTFMeshInfluences(t *testing.T) {
	doc := miniGLTF()
	var buf bytes.Buffer
	put := func(vs ...any) int {
		off := buf.Len()
		for _, v := range vs {
			binary.Write(&buf, binary.LittleEndian, v)
		}
		return off
	}
	b := doc["buffers"].([]any)[0].(map[string]any)
	uri := b["uri"].(string)
	old, _ := base64.StdEncoding.DecodeString(uri[strings.IndexByte(uri, ',')+1:])
	buf.Write(old)
	pOff := put(float32(0), float32(0), float32(0), float32(1), float32(0), float32(0), float32(0), float32(1), float32(0))
	nOff := put(float32(0), float32(0), float32(1), float32(0), float32(0), float32(1), float32(0), float32(0), float32(1))
	j0 := put([]uint8{0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0})
	w0 := put([]float32{0.1, 0.3, 0.05, 0.2, 1, 0, 0, 0, 0.5, 0.5, 0, 0})
	j1 := put([]uint8{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	w1 := put([]float32{0.25, 0.1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	data := buf.Bytes()
	b["uri"] = "data:application/gltf-buffer;base64," + base64.StdEncoding.EncodeToString(data)
	b["byteLength"] = len(data)
	views := doc["bufferViews"].([]any)
	accs := doc["accessors"].([]any)
	add := func(off, n, ctype, count int, typ string) int {
		views = append(views, map[string]any{"buffer": 0, "byteOffset": off, "byteLength": n})
		accs = append(accs, map[string]any{"bufferView": len(views) - 1, "componentType": ctype, "count": count, "type": typ})
		return len(accs) - 1
	}
	attrs := map[string]any{
		"POSITION": add(pOff, 36, 5126, 3, "VEC3"), "NORMAL": add(nOff, 36, 5126, 3, "VEC3"),
		"JOINTS_0": add(j0, 12, 5121, 3, "VEC4"), "WEIGHTS_0": add(w0, 48, 5126, 3, "VEC4"),
		"JOINTS_1": add(j1, 12, 5121, 3, "VEC4"), "WEIGHTS_1": add(w1, 48, 5126, 3, "VEC4"),
	}
	doc["bufferViews"], doc["accessors"] = views, accs
	doc["meshes"] = []any{map[string]any{"primitives": []any{map[string]any{"attributes": attrs}}}}
	nodes := doc["nodes"].([]any)
	doc["nodes"] = append(nodes, map[string]any{"name": "body", "mesh": 0, "skin": 0})
	doc["scenes"] = []any{map[string]any{"nodes": []any{0, 3}}}
	im, err := ParseGLTF("infl.gltf", encodeGLTF(t, doc), GLTFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := im.Mesh
	if m == nil || len(m.Positions) != 3 || len(m.Indices) != 3 || m.Truncated != 1 {
		t.Fatalf("mesh %+v", m)
	}
	// Vertex 0: weights 0.1 0.3 0.05 0.2 | 0.25 0.1 on joints 0 1 0 1 | 0 1:
	// the four largest are 0.3 (1), 0.25 (0), 0.2 (1), 0.1 (0), sum 0.85.
	want := [4]float32{0.3 / 0.85, 0.25 / 0.85, 0.2 / 0.85, 0.1 / 0.85}
	for k := range 4 {
		if math.Abs(float64(m.Weights[0][k]-want[k])) > 1e-6 {
			t.Errorf("vertex 0 weights %v, want %v", m.Weights[0], want)
		}
	}
	if m.Bones[0] != [4]uint16{1, 0, 1, 0} || m.Weights[1] != [4]float32{1, 0, 0, 0} || m.Weights[2] != [4]float32{0.5, 0.5, 0, 0} {
		t.Errorf("bones %v, weights %v", m.Bones, m.Weights)
	}
	if !strings.Contains(strings.Join(im.Notes, "\n"), "1 vertices had more than 4 influences") {
		t.Errorf("notes %q", im.Notes)
	}
	// A joint beyond the skin's is an error naming the primitive.
	data[j0] = 9
	b["uri"] = "data:application/gltf-buffer;base64," + base64.StdEncoding.EncodeToString(data)
	if _, err := ParseGLTF("infl.gltf", encodeGLTF(t, doc), GLTFOptions{}); err == nil || !strings.Contains(err.Error(), "meshes[0].primitives[0]") || !strings.Contains(err.Error(), "joint 9") {
		t.Errorf("bad joint: %v", err)
	}
}
