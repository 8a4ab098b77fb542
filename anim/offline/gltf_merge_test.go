package offline_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/anim/offline"
)

const cesiumMan = "../../cmd/crowd/testdata/cesium_man.gltf"

// splitPerChannel rewrites a glTF document's animations the way
// exporters that write one animation per animated node do (COLLADA2GLTF,
// Khronos's RiggedFigure): every channel becomes an animation of its own
// with its sampler, named after the source animation and channel.
func splitPerChannel(t *testing.T, doc map[string]any) int {
	t.Helper()
	var out []any
	for ai, a := range doc["animations"].([]any) {
		am := a.(map[string]any)
		samplers := am["samplers"].([]any)
		for ci, c := range am["channels"].([]any) {
			ch := map[string]any{}
			for k, v := range c.(map[string]any) {
				ch[k] = v
			}
			s := int(ch["sampler"].(float64))
			ch["sampler"] = 0
			out = append(out, map[string]any{
				"name":     fmt.Sprintf("animation %d channel %d", ai, ci),
				"channels": []any{ch},
				"samplers": []any{samplers[s]},
			})
		}
	}
	doc["animations"] = out
	return len(out)
}

func parseWith(t *testing.T, doc map[string]any, opt offline.GLTFOptions) (*offline.Import, error) {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return offline.ParseGLTF("user.gltf", data, opt)
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestGLTFMergeAnimationsPerNodeExport: Cesium Man's one animation split
// into one animation per channel, as COLLADA2GLTF writes RiggedFigure,
// imports with MergeAnimations as the same clip, sample for sample and
// between samples, as the unsplit file; without it each animation is a
// clip of its own and a note names the option.
func TestGLTFMergeAnimationsPerNodeExport(t *testing.T) {
	whole, err := parseWith(t, readJSON(t, cesiumMan), offline.GLTFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Clips) != 1 {
		t.Fatalf("%d clips in Cesium Man, want 1", len(whole.Clips))
	}
	for _, n := range whole.Notes {
		if strings.Contains(n, "MergeAnimations") {
			t.Errorf("one animation, yet a merge note: %q", n)
		}
	}
	doc := readJSON(t, cesiumMan)
	n := splitPerChannel(t, doc)

	split, err := parseWith(t, doc, offline.GLTFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(split.Clips) != n || len(split.Animations) != n || split.Merged != nil {
		t.Fatalf("split without merging: %d clips, %d refs, merged %v; want %d, %d, nil", len(split.Clips), len(split.Animations), split.Merged, n, n)
	}
	noted := false
	for _, note := range split.Notes {
		noted = noted || strings.Contains(note, "GLTFOptions.MergeAnimations")
	}
	if !noted {
		t.Errorf("no note names MergeAnimations for %d per-node animations: %q", n, split.Notes)
	}

	merged, err := parseWith(t, doc, offline.GLTFOptions{MergeAnimations: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Clips) != 1 || len(merged.Animations) != 1 || len(merged.Merged) != n {
		t.Fatalf("merged: %d clips, %d refs, %d merged; want 1, 1, %d", len(merged.Clips), len(merged.Animations), len(merged.Merged), n)
	}
	for ai := range n {
		if merged.ClipOf(ai) != merged.Clips[0] {
			t.Fatalf("ClipOf(%d) is not the merged clip", ai)
		}
	}
	if merged.ClipOf(n) != nil {
		t.Errorf("ClipOf(%d) found a clip past the animations", n)
	}
	a, b := whole.Clips[0], merged.Clips[0]
	if a.Rate != b.Rate || a.Frames != b.Frames || len(a.Tracks) != len(b.Tracks) {
		t.Fatalf("merged clip %g Hz x %d frames x %d tracks, unsplit %g x %d x %d", b.Rate, b.Frames, len(b.Tracks), a.Rate, a.Frames, len(a.Tracks))
	}
	for i := range a.Tracks {
		if len(a.Tracks[i].Values) != len(b.Tracks[i].Values) {
			t.Fatalf("track %d: %d samples merged, %d unsplit", i, len(b.Tracks[i].Values), len(a.Tracks[i].Values))
		}
		for f := range a.Tracks[i].Values {
			if a.Tracks[i].Values[f] != b.Tracks[i].Values[f] {
				t.Fatalf("track %d frame %d: merged %v, unsplit %v", i, f, b.Tracks[i].Values[f], a.Tracks[i].Values[f])
			}
		}
		for _, u := range []float64{0.37, 0.5, 0.93} {
			tm := (float64(len(a.Tracks[i].Values)/2) + u) / a.Rate
			if a.Between(i, tm) != b.Between(i, tm) {
				t.Fatalf("track %d at %v s between samples: merged %v, unsplit %v", i, tm, b.Between(i, tm), a.Between(i, tm))
			}
		}
	}
}

// TestGLTFMergeAnimationsRefusesOverlap: merging animations that animate
// the same node's path (a file of alternative motions, such as a walk and
// a run of one rig) is refused, naming the channel and both animations;
// such a file gets no merge note without the option.
func TestGLTFMergeAnimationsRefusesOverlap(t *testing.T) {
	doc := riggedSimpleJSON(t)
	anims := doc["animations"].([]any)
	run := map[string]any{}
	for k, v := range anims[0].(map[string]any) {
		run[k] = v
	}
	run["name"] = "run"
	doc["animations"] = append(anims, run)
	im, err := parseWith(t, doc, offline.GLTFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range im.Notes {
		if strings.Contains(n, "MergeAnimations") {
			t.Errorf("alternative motions of the same nodes, yet a merge note: %q", n)
		}
	}
	_, err = parseWith(t, doc, offline.GLTFOptions{MergeAnimations: true})
	if err == nil {
		t.Fatal("merging two animations of the same nodes succeeded")
	}
	for _, want := range []string{"animations[1].channels[0]", "animations[0] too"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestGLTFMergeAnimationsCounts: merging zero animations gives no clip,
// one gives that animation's clip, and an animation that animates no
// joint (morph weights only) is left out of Import.Merged.
func TestGLTFMergeAnimationsCounts(t *testing.T) {
	doc := riggedSimpleJSON(t)
	anims := doc["animations"].([]any)
	one, err := parseWith(t, doc, offline.GLTFOptions{})
	if err != nil {
		t.Fatal(err)
	}

	doc["animations"] = []any{}
	im, err := parseWith(t, doc, offline.GLTFOptions{MergeAnimations: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Clips) != 0 || len(im.Animations) != 0 || im.Merged != nil || im.ClipOf(0) != nil {
		t.Fatalf("no animations merged: %d clips, refs %v, merged %v", len(im.Clips), im.Animations, im.Merged)
	}

	weights := map[string]any{
		"name":     "blink",
		"channels": []any{map[string]any{"sampler": 0, "target": map[string]any{"node": 0, "path": "weights"}}},
		"samplers": anims[0].(map[string]any)["samplers"].([]any)[:1],
	}
	doc["animations"] = []any{weights, anims[0]}
	im, err = parseWith(t, doc, offline.GLTFOptions{MergeAnimations: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Clips) != 1 || len(im.Merged) != 1 || im.Merged[0] != 1 || im.ClipOf(1) != im.Clips[0] || im.ClipOf(0) != nil {
		t.Fatalf("one animation and a weights-only one merged: %d clips, merged %v", len(im.Clips), im.Merged)
	}
	a, b := one.Clips[0], im.Clips[0]
	if a.Frames != b.Frames || a.Rate != b.Rate {
		t.Fatalf("one animation merged: %d frames at %g Hz, alone %d at %g", b.Frames, b.Rate, a.Frames, a.Rate)
	}
	for i := range a.Tracks {
		for f := range a.Tracks[i].Values {
			if a.Tracks[i].Values[f] != b.Tracks[i].Values[f] {
				t.Fatalf("track %d frame %d: merged %v, alone %v", i, f, b.Tracks[i].Values[f], a.Tracks[i].Values[f])
			}
		}
	}
}
