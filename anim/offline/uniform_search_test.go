package offline_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/internal/animtest"
	"github.com/vkjobs/vkjobs/anim/offline"
)

// uniformSearchCase is one clip of TestUniformSearchIdentical.
type uniformSearchCase struct {
	name string
	load func(t *testing.T) (*offline.Skeleton, *offline.Clip)
	tol  float64
	want string // sha256 of the blob's bytes
}

func realClip(path string, seconds float64) func(t *testing.T) (*offline.Skeleton, *offline.Clip) {
	return realClipAt(path, seconds, offline.ImportOptions{})
}

// realClipAt is realClip with import options: a glTF pinned to the rate
// its hash was taken at.
func realClipAt(path string, seconds float64, opt offline.ImportOptions) func(t *testing.T) (*offline.Skeleton, *offline.Clip) {
	return func(t *testing.T) (*offline.Skeleton, *offline.Clip) {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: %v (install assimp-testmodels)", path, err)
		}
		imp, err := offline.LoadFile(path, opt)
		if err != nil {
			t.Fatal(err)
		}
		c := imp.Clips[0]
		if seconds > 0 {
			c = firstFrames(c, int(seconds*c.Rate)+1)
		}
		return imp.Skeleton, c
	}
}

func chainClip(nb, frames int) func(t *testing.T) (*offline.Skeleton, *offline.Clip) {
	return func(t *testing.T) (*offline.Skeleton, *offline.Clip) { return animtest.Chain(nb, frames, 30) }
}

// uniformSearchCases: the expected hashes are the sha256 of the blob
// bytes that the rate search produced BEFORE its incremental re-scoring
// (commit 2569a7d, the search that re-scored every related track over its
// whole subtree after each step), printed by this test with
// VKJOBS_PRINT_HASHES=1 on that commit. The rewrite must not change a bit.
// The chain clips' last bone is scaled (0.8 to 1.2): their hashes were
// printed again when the virtual vertices moved to a distance in model
// space (VertexDistance over the bone's scale), which changed the errors
// the search weighs there; the real clips, unscaled, keep theirs.
var uniformSearchCases = []uniformSearchCase{
	{"01_01 2.5 s", realClip("/usr/share/assimp/models/BVH/01_01.bvh", 2.5), 0, "8252d7ac02634762792d3ff2d0053adce3df55bcdc0a6a2c6ec1b729ddc591b5"},
	{"01_03 2.5 s", realClip("/usr/share/assimp/models/BVH/01_03.bvh", 2.5), 0, "8f3c074c23195ce08eaa18002c100622c65e13d1a1c20a8389d632a987d4630c"},
	// Boxing_Toes: the calibration keeps its fourth target between the
	// passes that met and missed Tolerance (the search's rounds for each
	// target are unchanged); before, that pass left the bracket and
	// repeated the first pass's clip, which the hash then held.
	{"Boxing_Toes 2.5 s", realClip("/usr/share/assimp/models/BVH/Boxing_Toes.bvh", 2.5), 0, "2cd486adaf4b59b5b5dcc7dfe32747ca85fce47a8df3469436dbcc968107f6e6"},
	// Cesium Man on its 24 Hz key grid, the rate the import chose when
	// the hash was taken (it now resamples at 48 Hz, where the codecs'
	// nlerp follows the keys' slerp).
	{"cesium_man", realClipAt(filepath.Join("..", "..", "cmd", "crowd", "testdata", "cesium_man.gltf"), 0, offline.ImportOptions{GLTF: offline.GLTFOptions{Rate: 24}}), 0, "cea9fab0870e4857b99990a343f9bca63448a2d0392c0e81c970c533ddc7ccc3"},
	{"chain 16 x 40", chainClip(16, 40), 0.001, "8b0b933f779fe22e91b880c2f1daea805bfbb9bddddfd11b585e45d3194e1b99"},
	{"chain 64 x 3", chainClip(64, 3), 0.001, "c32f2ed758e82e96a21fc73848508f282e3871b12454e889a6fa5f15c48c81da"},
	{"chain 16 x 40 at 0.01 cm", chainClip(16, 40), 0, "a8e8f5a824d83a0b6cbad955bfd14b5835a02e50114f5eccea79f92c8a7e36aa"},
}

// TestUniformSearchIdentical: CodecUniform's output on real and synthetic
// clips is bit-identical to the output of the search before its
// incremental re-scoring (see uniformSearchCases).
func TestUniformSearchIdentical(t *testing.T) {
	print := os.Getenv("VKJOBS_PRINT_HASHES") != ""
	for _, tc := range uniformSearchCases {
		sk, c := tc.load(t)
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Codec: anim.CodecUniform, Tolerance: tc.tol})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var b offline.Builder
		if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		data, err := b.Bytes()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// The hashes were taken at blob format version 2; version 3
		// changed the curve codec's segment headers only, so a uniform
		// blob differs in its version word alone.
		binary.LittleEndian.PutUint32(data[4:], 2)
		h := sha256.Sum256(data)
		got := hex.EncodeToString(h[:])
		if print {
			t.Logf("%q: %s (%d bytes, %d tracks)", tc.name, got, len(data), cc.Stats.AnimatedTracks)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: blob sha256 %s, the search before its rewrite gave %s", tc.name, got, tc.want)
		}
	}
}

// BenchmarkUniformChain: the rate search on a 3-frame chain of single
// children (the shape whose cost grew with the cube of the length).
func BenchmarkUniformChain(b *testing.B) {
	for _, nb := range []int{64, 128} {
		b.Run(string(rune('0'+nb/100))+string(rune('0'+nb/10%10))+string(rune('0'+nb%10)), func(b *testing.B) {
			sk, c := animtest.Chain(nb, 3, 30)
			for b.Loop() {
				if _, err := offline.Compress(sk, c, offline.CompressOptions{Codec: anim.CodecUniform, Tolerance: 0.001}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
