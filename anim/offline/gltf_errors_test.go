package offline_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim/offline"
)

const modelDir = "../../cmd/crowd/testdata/"

// parseGuarded runs ParseGLTF under a watchdog and turns a panic into a
// test failure that shows what was fed in.
func parseGuarded(t *testing.T, what string, data []byte) (*offline.Import, error) {
	t.Helper()
	type result struct {
		imp   *offline.Import
		err   error
		panic string
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{panic: fmt.Sprintf("%v\n%s", r, debug.Stack())}
			}
		}()
		imp, err := offline.ParseGLTF(what, data, offline.GLTFOptions{})
		done <- result{imp: imp, err: err}
	}()
	select {
	case r := <-done:
		if r.panic != "" {
			t.Fatalf("%s: ParseGLTF panicked: %s", what, r.panic)
		}
		return r.imp, r.err
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: ParseGLTF did not return in 60 s", what)
		return nil, nil
	}
}

// checkFinite fails if an accepted import holds NaN or Inf values.
func checkFinite(t *testing.T, what string, imp *offline.Import) {
	t.Helper()
	if imp == nil || imp.Skeleton == nil {
		t.Fatalf("%s: accepted without a skeleton", what)
	}
	if err := imp.Skeleton.Validate(); err != nil {
		t.Fatalf("%s: accepted skeleton does not validate: %v", what, err)
	}
	for _, c := range imp.Clips {
		if err := c.Validate(imp.Skeleton); err != nil {
			t.Fatalf("%s: accepted clip %q does not validate: %v", what, c.Name, err)
		}
		if c.Frames <= 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate <= 0 {
			t.Fatalf("%s: clip %q has %d frames at %v Hz", what, c.Name, c.Frames, c.Rate)
		}
		pose := make([]offline.Transform, c.NumBones())
		for f := 0; f < c.Frames; f += max(1, c.Frames/7) {
			c.Pose(f, pose)
			for b, tr := range pose {
				for _, v := range []float64{tr.T[0], tr.T[1], tr.T[2], tr.R[0], tr.R[1], tr.R[2], tr.R[3], tr.S[0], tr.S[1], tr.S[2]} {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("%s: clip %q frame %d bone %d: non-finite %+v", what, c.Name, f, b, tr)
					}
				}
			}
		}
	}
}

func readModel(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(modelDir + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGLTFRepoModels: the repository's models import, with clips that
// validate and compress.
func TestGLTFRepoModels(t *testing.T) {
	for _, name := range []string{"cesium_man.gltf", "rigged_simple.gltf"} {
		imp, err := parseGuarded(t, name, readModel(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkFinite(t, name, imp)
		if len(imp.Clips) == 0 {
			t.Fatalf("%s: no clips", name)
		}
		imp2, err := offline.LoadFile(modelDir+name, offline.ImportOptions{})
		if err != nil {
			t.Fatalf("LoadFile(%s): %v", name, err)
		}
		if imp2.Skeleton.NumBones() != imp.Skeleton.NumBones() {
			t.Errorf("%s: LoadFile and ParseGLTF disagree: %d vs %d bones", name, imp2.Skeleton.NumBones(), imp.Skeleton.NumBones())
		}
		cc, err := offline.Compress(imp.Skeleton, imp.Clips[0], offline.CompressOptions{})
		if err != nil {
			t.Fatalf("%s: Compress: %v", name, err)
		}
		_ = cc
	}
}

// TestGLTFTruncated: every prefix of a model (JSON cut anywhere) is
// refused with an error.
func TestGLTFTruncated(t *testing.T) {
	data := readModel(t, "rigged_simple.gltf")
	for _, n := range []int{0, 1, 2, 10, 100, len(data) / 3, len(data) / 2, len(data) - 200, len(data) - 2} {
		if _, err := parseGuarded(t, fmt.Sprintf("prefix %d", n), data[:n]); err == nil {
			t.Errorf("prefix of %d of %d bytes accepted", n, len(data))
		}
	}
	for _, s := range []string{"", "{}", "[]", "null", `{"asset":{"version":"2.0"}}`, `{"asset":{"version":"1.0"}}`, "\x00\x01", "glTF"} {
		if _, err := parseGuarded(t, fmt.Sprintf("%q", s), []byte(s)); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	// GLB headers that lie.
	glb := func(total, jsonLen uint32, chunk string) []byte {
		var b bytes.Buffer
		b.WriteString("glTF")
		binary.Write(&b, binary.LittleEndian, uint32(2))
		binary.Write(&b, binary.LittleEndian, total)
		binary.Write(&b, binary.LittleEndian, jsonLen)
		b.WriteString("JSON")
		b.WriteString(chunk)
		return b.Bytes()
	}
	for _, c := range [][]byte{
		glb(20, 0, ""),
		glb(1<<31, 4, "{}  "),
		glb(24, 4, "{}  "),
		glb(24+4, 0xfffffff0, "{}  "),
		glb(24+4, 4, "{}  "),
	} {
		if _, err := parseGuarded(t, "glb", c); err == nil {
			t.Errorf("GLB %x accepted", c)
		}
	}
}

// mutate decodes rigged_simple.gltf, applies f to its JSON tree and encodes it.
func mutate(t *testing.T, f func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(readModel(t, "rigged_simple.gltf"), &doc); err != nil {
		t.Fatal(err)
	}
	f(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func arr(v any) []any          { return v.([]any) }
func obj(v any) map[string]any { return v.(map[string]any) }

// TestGLTFStructuralDefects: structural defects a hand-edited or broken
// exporter's file has. Each must be refused with an error; none may panic.
func TestGLTFStructuralDefects(t *testing.T) {
	sampler := func(doc map[string]any) map[string]any {
		return obj(arr(obj(arr(doc["animations"])[0])["samplers"])[0])
	}
	channel := func(doc map[string]any) map[string]any {
		return obj(arr(obj(arr(doc["animations"])[0])["channels"])[0])
	}
	accessorOf := func(doc map[string]any, i any) map[string]any {
		return obj(arr(doc["accessors"])[int(i.(float64))])
	}
	big := 1e12
	cases := []struct {
		name string
		f    func(doc map[string]any)
	}{
		{"no buffers", func(d map[string]any) { delete(d, "buffers") }},
		{"empty buffers", func(d map[string]any) { d["buffers"] = []any{} }},
		{"buffer without uri", func(d map[string]any) { delete(obj(arr(d["buffers"])[0]), "uri") }},
		{"external buffer uri", func(d map[string]any) { obj(arr(d["buffers"])[0])["uri"] = "missing.bin" }},
		{"bad base64", func(d map[string]any) {
			obj(arr(d["buffers"])[0])["uri"] = "data:application/octet-stream;base64,@@@@"
		}},
		{"buffer shorter than byteLength", func(d map[string]any) {
			obj(arr(d["buffers"])[0])["uri"] = "data:application/octet-stream;base64,AAAA"
		}},
		{"byteLength huge", func(d map[string]any) { obj(arr(d["buffers"])[0])["byteLength"] = big }},
		{"bufferView buffer out of range", func(d map[string]any) {
			for _, bv := range arr(d["bufferViews"]) {
				obj(bv)["buffer"] = 7.0
			}
		}},
		{"bufferView past the buffer", func(d map[string]any) {
			for _, bv := range arr(d["bufferViews"]) {
				obj(bv)["byteOffset"] = 1e9
			}
		}},
		{"bufferView negative offset", func(d map[string]any) {
			for _, bv := range arr(d["bufferViews"]) {
				obj(bv)["byteOffset"] = -16.0
			}
		}},
		{"accessor bufferView out of range", func(d map[string]any) {
			for _, a := range arr(d["accessors"]) {
				obj(a)["bufferView"] = 999.0
			}
		}},
		{"accessor count huge", func(d map[string]any) {
			for _, a := range arr(d["accessors"]) {
				obj(a)["count"] = 4e9
			}
		}},
		{"accessor count negative", func(d map[string]any) {
			for _, a := range arr(d["accessors"]) {
				obj(a)["count"] = -1.0
			}
		}},
		{"accessor offset past view", func(d map[string]any) {
			for _, a := range arr(d["accessors"]) {
				obj(a)["byteOffset"] = 1e8
			}
		}},
		{"sampler input out of range", func(d map[string]any) { sampler(d)["input"] = 1e6 }},
		{"sampler output out of range", func(d map[string]any) { sampler(d)["output"] = -3.0 }},
		{"sampler input not float", func(d map[string]any) {
			accessorOf(d, sampler(d)["input"])["componentType"] = 5123.0
		}},
		{"sampler output wrong type", func(d map[string]any) {
			accessorOf(d, sampler(d)["output"])["type"] = "MAT4"
		}},
		{"sampler output fewer keys than input", func(d map[string]any) {
			a := accessorOf(d, sampler(d)["output"])
			a["count"] = a["count"].(float64) - 1
		}},
		{"bad interpolation", func(d map[string]any) { sampler(d)["interpolation"] = "BEZIER" }},
		{"channel sampler out of range", func(d map[string]any) { channel(d)["sampler"] = 42.0 }},
		{"channel node out of range", func(d map[string]any) { obj(channel(d)["target"])["node"] = 1e5 }},
		{"channel bad path", func(d map[string]any) { obj(channel(d)["target"])["path"] = "colour" }},
		{"skin joint out of range", func(d map[string]any) {
			sk := obj(arr(d["skins"])[0])
			j := arr(sk["joints"])
			j[len(j)-1] = 500.0
		}},
		{"skin joints empty", func(d map[string]any) { obj(arr(d["skins"])[0])["joints"] = []any{} }},
		{"skin index out of range", func(d map[string]any) {
			for _, n := range arr(d["nodes"]) {
				if _, ok := obj(n)["skin"]; ok {
					obj(n)["skin"] = 9.0
				}
			}
		}},
		{"node skin index out of range (mesh dropped)", func(d map[string]any) {
			for _, n := range arr(d["nodes"]) {
				if _, ok := obj(n)["skin"]; ok {
					obj(n)["skin"] = -2.0
				}
			}
		}},
		{"node child cycle", func(d map[string]any) {
			nodes := arr(d["nodes"])
			for i, n := range nodes {
				if c, ok := obj(n)["children"]; ok && len(arr(c)) > 0 {
					child := int(arr(c)[0].(float64))
					obj(nodes[child])["children"] = []any{float64(i)}
					return
				}
			}
		}},
		{"node child out of range", func(d map[string]any) {
			obj(arr(d["nodes"])[0])["children"] = []any{1e4}
		}},
		{"node matrix short", func(d map[string]any) {
			for _, n := range arr(d["nodes"]) {
				if _, ok := obj(n)["matrix"]; ok {
					obj(n)["matrix"] = []any{1.0, 0.0}
				}
			}
		}},
		{"nodes missing", func(d map[string]any) { delete(d, "nodes") }},
		{"inverseBindMatrices out of range", func(d map[string]any) {
			obj(arr(d["skins"])[0])["inverseBindMatrices"] = 77.0
		}},
	}
	for _, c := range cases {
		data := mutate(t, c.f)
		imp, err := parseGuarded(t, c.name, data)
		if err == nil {
			checkFinite(t, c.name, imp)
			t.Errorf("%s: accepted (notes %q)", c.name, imp.Notes)
			continue
		}
		if !strings.Contains(err.Error(), "rigged") && !strings.Contains(err.Error(), c.name) {
			// the file name is in every error the importer makes
			t.Logf("%s: %v", c.name, err)
		}
	}
}

// rewriteKeys replaces the key times of sampler 0's input accessor, in the
// embedded buffer, with f(old).
func rewriteKeys(t *testing.T, f func(i int, old float32) float32) []byte {
	t.Helper()
	return mutate(t, func(d map[string]any) {
		s := obj(arr(obj(arr(d["animations"])[0])["samplers"])[0])
		acc := obj(arr(d["accessors"])[int(s["input"].(float64))])
		bv := obj(arr(d["bufferViews"])[int(acc["bufferView"].(float64))])
		buf := obj(arr(d["buffers"])[int(bv["buffer"].(float64))])
		uri := buf["uri"].(string)
		i := strings.Index(uri, ",")
		raw, err := base64.StdEncoding.DecodeString(uri[i+1:])
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		if v, ok := bv["byteOffset"]; ok {
			off += int(v.(float64))
		}
		if v, ok := acc["byteOffset"]; ok {
			off += int(v.(float64))
		}
		n := int(acc["count"].(float64))
		for k := 0; k < n; k++ {
			p := raw[off+4*k:]
			old := math.Float32frombits(binary.LittleEndian.Uint32(p))
			binary.LittleEndian.PutUint32(p, math.Float32bits(f(k, old)))
		}
		delete(acc, "min")
		delete(acc, "max")
		buf["uri"] = uri[:i+1] + base64.StdEncoding.EncodeToString(raw)
	})
}

// TestGLTFBadKeys: NaN, infinite, negative, decreasing and duplicated key
// times are refused (or, for duplicates, handled) without a panic.
func TestGLTFBadKeys(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name   string
		f      func(i int, old float32) float32
		refuse bool
	}{
		{"NaN first key", func(i int, old float32) float32 {
			if i == 0 {
				return nan
			}
			return old
		}, true},
		{"NaN middle key", func(i int, old float32) float32 {
			if i == 2 {
				return nan
			}
			return old
		}, true},
		{"Inf last key", func(i int, old float32) float32 {
			if i > 0 {
				return inf
			}
			return old
		}, true},
		{"decreasing keys", func(i int, old float32) float32 { return 10 - old }, true},
		{"negative keys", func(i int, old float32) float32 { return old - 100 }, false},
		{"huge span", func(i int, old float32) float32 { return old * 1e9 }, true},
		{"all keys equal", func(i int, old float32) float32 { return 1 }, false},
	}
	for _, c := range cases {
		imp, err := parseGuarded(t, c.name, rewriteKeys(t, c.f))
		if err != nil {
			t.Logf("%s: %v", c.name, err)
			continue
		}
		if c.refuse {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		checkFinite(t, c.name, imp)
	}
}
