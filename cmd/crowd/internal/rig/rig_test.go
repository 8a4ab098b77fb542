package rig

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkjobs/vkjobs/kernels"
)

func needCMU(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(CMUDir, "01_01.bvh")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CMU motion capture missing (install Debian's assimp-testmodels): %v", err)
		}
		t.Skipf("CMU motion capture missing: %v", err)
	}
}

// checkRig checks what every rig must satisfy: the hierarchy, the extra
// bones, inverse bind matrices, and a mesh in which every bone deforms
// geometry with weights summing to one and outward-facing triangles.
func checkRig(t *testing.T, r *Rig, bones int) {
	t.Helper()
	if r.Bones != bones || len(r.Parents) != bones || len(r.Names) != bones || len(r.InvBind) != bones {
		t.Fatalf("%d bones (%d parents, %d names, %d inverse binds), want %d", r.Bones, len(r.Parents), len(r.Names), len(r.InvBind), bones)
	}
	if len(r.Extras) != bones-r.SourceBones {
		t.Errorf("%d extras for %d extra bones", len(r.Extras), bones-r.SourceBones)
	}
	for i, e := range r.Extras {
		if e.Bone != r.SourceBones+i || !(e.Amp > 0) || !(e.Omega > 0) {
			t.Errorf("extra %d: %+v", i, e)
		}
		if l := math.Hypot(math.Hypot(float64(e.Axis[0]), float64(e.Axis[1])), float64(e.Axis[2])); math.Abs(l-1) > 1e-5 {
			t.Errorf("extra %d: axis length %v", i, l)
		}
	}
	seen := map[string]bool{}
	for b, p := range r.Parents {
		if int(p) >= b || p < -1 {
			t.Fatalf("bone %d has parent %d", b, p)
		}
		if seen[r.Names[b]] {
			t.Errorf("bone name %q twice", r.Names[b])
		}
		seen[r.Names[b]] = true
	}
	if r.Blob != nil {
		if r.Blob.Skeleton(0).Bones() != bones {
			t.Errorf("blob skeleton has %d bones", r.Blob.Skeleton(0).Bones())
		}
		for i, c := range r.Clips {
			if v := r.Blob.Clip(i); v.Bones() != bones {
				t.Errorf("clip %s has %d bones", c.Name, v.Bones())
			}
		}
	}
	// Vertices: weights sum to 1, joints valid; count the bones they follow.
	deforms := make([]int, bones)
	for i, v := range r.Mesh.Vertices {
		var sum float32
		for k := range 4 {
			w := v.Weights[k]
			j := int(v.Joints >> (8 * k) & 0xff)
			if w != 0 && j >= bones {
				t.Fatalf("vertex %d: joint %d of %d", i, j, bones)
			}
			if w > 0.3 {
				deforms[j]++
			}
			sum += w
		}
		if math.Abs(float64(sum)-1) > 1e-4 {
			t.Fatalf("vertex %d: weights sum to %v", i, sum)
		}
	}
	for b := r.SourceBones; b < bones; b++ {
		if deforms[b] < 4 {
			t.Errorf("extra bone %d (%s) moves %d vertices", b, r.Names[b], deforms[b])
		}
	}
	if len(r.Mesh.Indices)%3 != 0 {
		t.Fatalf("%d indices", len(r.Mesh.Indices))
	}
	rest := r.RestSkinned()
	for i := 0; i < len(r.Mesh.Indices); i += 3 {
		a, b, c := r.Mesh.Indices[i], r.Mesh.Indices[i+1], r.Mesh.Indices[i+2]
		if int(a) >= len(rest) || int(b) >= len(rest) || int(c) >= len(rest) {
			t.Fatalf("triangle %d indexes past %d vertices", i/3, len(rest))
		}
	}
	// Skinning the rest pose with model * inverse bind reproduces the
	// bind pose (inverse bind is the inverse of the rest model matrix).
	for b := r.SourceBones; b < bones; b++ {
		m := r.RestModel[b].Mul(&r.InvBind[b])
		id := kernels.Identity()
		for i := range m {
			if math.Abs(float64(m[i]-id[i])) > 1e-4 {
				t.Fatalf("bone %d: rest model x inverse bind = %v", b, m)
			}
		}
	}
	if !(r.Radius > 0.5) || !(r.Height > 0.5) {
		t.Errorf("radius %v, height %v", r.Radius, r.Height)
	}
}

func TestBuildCMU(t *testing.T) {
	needCMU(t)
	dir := t.TempDir()
	// One clip, compressed at 1 mm: enough to test, and quick.
	opt := Options{Bones: 90, CacheDir: dir, BVH: []string{filepath.Join(CMUDir, "01_01.bvh")}}
	r, err := Build(opt)
	if err != nil {
		t.Fatal(err)
	}
	if r.SourceBones != 31 || len(r.Clips) != 1 {
		t.Fatalf("%d source bones, %d clips", r.SourceBones, len(r.Clips))
	}
	checkRig(t, r, 90)
	if r.Cached {
		t.Error("the first build came from the cache")
	}
	for _, c := range r.Clips {
		if c.FootDowns == 0 || !(c.Duration > 1) {
			t.Errorf("clip %+v: no footsteps", c)
		}
	}
	if got := len(r.Mesh.Vertices); got != 90*8 {
		t.Errorf("procedural mesh: %d vertices, want one 8-vertex box per bone", got)
	}
	// Outward triangles: the face normal agrees with its vertices' normals.
	v := r.Mesh.Vertices
	for i := 0; i < len(r.Mesh.Indices); i += 3 {
		a, b, c := v[r.Mesh.Indices[i]].Pos, v[r.Mesh.Indices[i+1]].Pos, v[r.Mesh.Indices[i+2]].Pos
		u := [3]float32{b[0] - a[0], b[1] - a[1], b[2] - a[2]}
		w := [3]float32{c[0] - a[0], c[1] - a[1], c[2] - a[2]}
		n := [3]float32{u[1]*w[2] - u[2]*w[1], u[2]*w[0] - u[0]*w[2], u[0]*w[1] - u[1]*w[0]}
		var vn [3]float32
		for k := range 3 {
			nk := v[r.Mesh.Indices[i+k]].Normal
			vn[0], vn[1], vn[2] = vn[0]+nk[0], vn[1]+nk[1], vn[2]+nk[2]
		}
		if n[0]*vn[0]+n[1]*vn[1]+n[2]*vn[2] < 0 {
			t.Fatalf("triangle %d faces inwards", i/3)
		}
	}
	// The second build reads the cache and gets the same blob.
	r2, err := Build(opt)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Cached || !bytes.Equal(r.Blob.Bytes(), r2.Blob.Bytes()) {
		t.Errorf("second build: cached %v, same blob %v", r2.Cached, bytes.Equal(r.Blob.Bytes(), r2.Blob.Bytes()))
	}
	// A corrupt cache entry is rebuilt, not trusted.
	if err := os.WriteFile(r.CachePath, []byte("ANIMgarbage!"), 0o644); err != nil {
		t.Fatal(err)
	}
	r3, err := Build(opt)
	if err != nil || r3.Cached {
		t.Errorf("corrupt cache: %v, cached %v", err, r3 != nil && r3.Cached)
	}
}

// TestBuildRate: Options.Rate resamples the 120 Hz capture before
// compression (the blob's clip plays at 30 Hz, same duration), and the
// rate is part of the cache key.
func TestBuildRate(t *testing.T) {
	needCMU(t)
	dir := t.TempDir()
	opt := Options{Bones: 31, CacheDir: dir, BVH: []string{filepath.Join(CMUDir, "01_01.bvh")}}
	full, err := Build(opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Rate = 30
	r, err := Build(opt)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cached {
		t.Error("the 30 Hz build came from the 120 Hz build's cache entry")
	}
	a, b := full.Blob.Clip(0), r.Blob.Clip(0)
	if a.Rate() != 120 || b.Rate() != 30 {
		t.Errorf("clip rates %v and %v, want 120 and 30", a.Rate(), b.Rate())
	}
	if d := a.Duration() - b.Duration(); d < -0.05 || d > 0.05 {
		t.Errorf("durations %v and %v", a.Duration(), b.Duration())
	}
	if b.Bytes() >= a.Bytes() {
		t.Errorf("30 Hz clip %d bytes, 120 Hz %d", b.Bytes(), a.Bytes())
	}
}

func TestBoneCounts(t *testing.T) {
	needCMU(t)
	dir := t.TempDir()
	for _, n := range []int{31, 40, 200} {
		r, err := Build(Options{Bones: n, CacheDir: dir, noBlob: true})
		if err != nil {
			t.Fatalf("%d bones: %v", n, err)
		}
		checkRig(t, r, n)
	}
	if _, err := Build(Options{Bones: 20, CacheDir: dir, noBlob: true}); err == nil {
		t.Error("20 bones (fewer than the source's 31): no error")
	}
	if _, err := Build(Options{Bones: 300, CacheDir: dir, noBlob: true}); err == nil {
		t.Error("300 bones: no error")
	}
}

func TestBuildGLTF(t *testing.T) {
	r, err := Build(Options{Bones: 90, Model: "../../testdata/cesium_man.gltf", CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	if r.SourceBones != 19 || len(r.Mesh.Vertices) != 3273+71*8 {
		t.Errorf("cesium man: %d joints, %d vertices", r.SourceBones, len(r.Mesh.Vertices))
	}
	checkRig(t, r, 90)
	// The figure stands on y, about 1.5 m tall once skinned in the rest pose.
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, p := range r.RestSkinned()[:3273] {
		lo, hi = min(lo, p[1]), max(hi, p[1])
	}
	if hi-lo < 1.2 || hi-lo > 2 {
		t.Errorf("cesium man spans %v m in y", hi-lo)
	}
}

// TestBuildCacheUnwritable: a cache directory that cannot be created is
// reported in Notes (the crowd prints them), not ignored.
func TestBuildCacheUnwritable(t *testing.T) {
	needCMU(t)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Build(Options{Bones: 31, CacheDir: filepath.Join(file, "cache"), BVH: []string{filepath.Join(CMUDir, "01_01.bvh")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) == 0 || !strings.Contains(strings.Join(r.Notes, "; "), "cache not written") {
		t.Errorf("an unwritable cache directory left notes %q, want one saying the cache was not written", r.Notes)
	}
}
