// Package rig builds the crowd demo's content: a skeleton of N bones (the
// source's joints plus procedural chains), its clips compressed into one
// anim blob (cached on disk, because compression takes seconds), the
// per-bone procedural motion of the extra bones, the inverse bind
// matrices and a skinned mesh in which every bone deforms geometry.
//
// Sources are either CMU motion capture (BVH, 31 joints, in CMU units)
// with a procedural mesh of one box per bone, or a glTF character
// (skeleton, clips and its own skinned mesh, plus boxes for the extra
// bones). Everything here runs once at start-up; nothing is on the frame
// path.
package rig

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

// CMUDir is where the CMU clips are: BVH in Debian's assimp-testmodels
// directory, /usr/share/assimp/models, or in the directory named by the
// environment variable VKJOBS_ASSIMP_MODELS (for machines without the
// package: the GPU bundle of scripts/gpu-bundle carries the clips).
var CMUDir = filepath.Join(assimpModels(), "BVH")

// assimpModels is $VKJOBS_ASSIMP_MODELS, or Debian's models directory.
func assimpModels() string {
	if d := os.Getenv("VKJOBS_ASSIMP_MODELS"); d != "" {
		return d
	}
	return "/usr/share/assimp/models"
}

// MaxBones is the most bones a crowd skeleton may have: the skinning
// kernels pack joint indices in 8 bits.
const MaxBones = 256

// version changes whenever the blob the builder writes would change, so
// that stale cache entries are not used.
const version = "crowd-rig-5"

// Options select the content.
type Options struct {
	// Bones is the number of bones per skeleton: the source's joints plus
	// procedural chains up to this count. 0 means the source's joints only.
	Bones int
	// Tolerance is the compression error target in metres, at virtual
	// vertices 3 cm from each bone (default 0.001 m).
	Tolerance float64
	// Rate, when > 0, resamples every clip recorded faster than Rate Hz
	// to Rate before compressing it, as a game ships animation (120 Hz
	// motion capture at 30 Hz reads a quarter of the curve points per
	// second of playback); 0 keeps the source's rate.
	Rate float64
	// Codec is the clip codec (anim.CodecCurve by default; see
	// anim.Codec for the trade-off).
	Codec anim.Codec
	// BVH lists CMU BVH clips that share one skeleton; nil means every
	// NN_NN.bvh in CMUDir.
	BVH []string
	// Model is a glTF file: skeleton, clips and mesh come from it instead.
	Model string
	// CacheDir holds compressed blobs keyed by their sources and options;
	// "" means os.UserCacheDir()/vkjobs-crowd, "off" disables the cache.
	CacheDir string

	noBlob bool // tests: skip compression (Rig.Blob and Clips stay empty)
}

// Clip describes one clip of the blob.
type Clip struct {
	Name      string
	Offset    uint32 // anim.SampleInput.Clip
	Duration  float32
	Events    int
	FootDowns int
	Animated  int // animated tracks
	Bytes     int
}

// Extra is the procedural motion of one extra bone: its local rotation is
// Rest * rotation(Axis, Amp*sin(Omega*t + phase - Lag)).
type Extra struct {
	Bone  int
	Rest  [4]float32 // rest local rotation (x, y, z, w)
	Axis  [3]float32 // unit axis in the bone's rest frame
	Amp   float32    // radians
	Omega float32    // radians per second
	Lag   float32    // radians behind the chain's driver
}

// Mesh is a skinned mesh in the skinning kernels' layout. Vertices index
// bones directly (Palette 0, joints = bone indices), so one mesh serves
// every character with Params[0] = len(Vertices).
type Mesh struct {
	Name     string
	Vertices []kernels.SkinVertex
	Indices  []uint32 // triangle list, counter-clockwise seen from outside
}

// Rig is the built content.
type Rig struct {
	Blob         *anim.Blob
	Bones        int
	SourceBones  int
	Names        []string
	Parents      []int32
	InvBind      []kernels.Mat4
	RestModel    []kernels.Mat4 // rest-pose model matrices (bind pose for boxes)
	Clips        []Clip
	CursorStride int
	Extras       []Extra
	Chains       []string // description of the procedural chains
	Mesh         Mesh
	Height       float32 // rest-pose height of the joints (m)
	Radius       float32 // bounding sphere radius about the root (m), generous
	Source       string  // what was loaded, for the summary
	Notes        []string
	Cached       bool // the blob came from the cache
	CachePath    string
}

// Build loads, extends, compresses (or reads the cache) and meshes.
func Build(opt Options) (*Rig, error) {
	if opt.Tolerance == 0 {
		opt.Tolerance = 0.001
	}
	if !(opt.Tolerance > 0) {
		return nil, fmt.Errorf("rig: tolerance %v must be positive", opt.Tolerance)
	}
	if opt.Bones < 0 || opt.Bones > MaxBones {
		return nil, fmt.Errorf("rig: %d bones; 0..%d", opt.Bones, MaxBones)
	}
	r := &Rig{}
	var files []string
	var sk *offline.Skeleton
	var clips []*offline.Clip
	var gm *gltfMesh
	if opt.Model != "" {
		im, err := offline.LoadFile(opt.Model, offline.ImportOptions{})
		if err != nil {
			return nil, err
		}
		if len(im.Clips) == 0 {
			return nil, fmt.Errorf("rig: %s has no animation", opt.Model)
		}
		sk, clips = im.Skeleton, im.Clips
		files = []string{opt.Model}
		for _, n := range im.Notes {
			r.Notes = append(r.Notes, filepath.Base(opt.Model)+": "+n)
		}
		if gm, err = skinVertices(opt.Model, im.Mesh); err != nil {
			return nil, err
		}
		r.Source = fmt.Sprintf("glTF %s (%d joints, %d clip(s), mesh of %d vertices)", filepath.Base(opt.Model), sk.NumBones(), len(clips), len(gm.verts))
	} else {
		files = opt.BVH
		if files == nil {
			ents, err := os.ReadDir(CMUDir)
			if err != nil {
				return nil, fmt.Errorf("rig: %w (install Debian's assimp-testmodels for the CMU motion capture, or pass -model FILE.gltf)", err)
			}
			cmu := regexp.MustCompile(`^[0-9]+_[0-9]+\.bvh$`)
			for _, e := range ents {
				if cmu.MatchString(e.Name()) {
					files = append(files, filepath.Join(CMUDir, e.Name()))
				}
			}
			sort.Strings(files)
			if len(files) == 0 {
				return nil, fmt.Errorf("rig: no CMU clips (NN_NN.bvh) in %s (install assimp-testmodels)", CMUDir)
			}
		}
		var used, paths []string
		for _, f := range files {
			im, err := offline.LoadFile(f, offline.ImportOptions{})
			if err != nil {
				return nil, err
			}
			if sk == nil {
				sk = im.Skeleton
				for _, n := range im.Notes {
					if strings.HasPrefix(n, "unit:") {
						r.Notes = append(r.Notes, filepath.Base(f)+": "+n)
					}
				}
			} else if !sameSkeleton(sk, im.Skeleton) {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: skipped (its skeleton differs from %s)", filepath.Base(f), filepath.Base(files[0])))
				continue
			}
			clips = append(clips, im.Clips...)
			used = append(used, filepath.Base(f))
			paths = append(paths, f)
		}
		files = paths // the cache key's sources
		r.Source = fmt.Sprintf("CMU motion capture %s (%d joints)", strings.Join(used, ", "), sk.NumBones())
	}
	r.SourceBones = sk.NumBones()
	bones := opt.Bones
	if bones == 0 {
		bones = sk.NumBones()
	}
	if bones < sk.NumBones() {
		return nil, fmt.Errorf("rig: -bones %d is fewer than the source's %d joints", bones, sk.NumBones())
	}

	// Foot contacts on the source motion (before it is made in place, so
	// that a planted foot is still).
	for _, c := range clips {
		ev, err := offline.DetectFootContacts(sk, c, offline.ContactOptions{})
		if err != nil {
			feet := lowestLeaves(sk, 2)
			ev, err = offline.DetectFootContacts(sk, c, offline.ContactOptions{Bones: feet})
			if err == nil {
				r.Notes = append(r.Notes, fmt.Sprintf("clip %s: no bone named toe/foot; foot contacts of the lowest leaf bones %v", c.Name, feet))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("rig: clip %s: %w", c.Name, err)
		}
		c.Events = ev
		inPlace(sk, c)
	}

	ext := extend(sk, bones)
	r.Extras, r.Chains = ext.extras, ext.chains
	for _, c := range clips {
		extendClip(ext.sk, c)
	}

	if !opt.noBlob {
		if err := r.loadOrCompress(opt, files, ext.sk, clips); err != nil {
			return nil, err
		}
	}
	r.Bones = ext.sk.NumBones()
	r.Names = ext.sk.Names
	r.Parents = ext.sk.Parents

	// Rest model matrices, inverse bind matrices, mesh.
	model := restModel(ext.sk)
	r.RestModel = make([]kernels.Mat4, r.Bones)
	r.InvBind = make([]kernels.Mat4, r.Bones)
	for b := range r.Bones {
		r.RestModel[b] = toMat4(&model[b])
		inv := model[b].Inverse()
		r.InvBind[b] = toMat4(&inv)
		if gm != nil && b < len(sk.InverseBind) {
			r.InvBind[b] = kernels.Mat4(sk.InverseBind[b])
		}
	}
	if gm != nil {
		r.Mesh = Mesh{Name: filepath.Base(opt.Model), Vertices: gm.verts, Indices: gm.indices}
		boxes(&r.Mesh, ext.sk, model, r.SourceBones, ext)
		r.Mesh.Name += fmt.Sprintf(" + %d boxes", r.Bones-r.SourceBones)
	} else {
		r.Mesh = Mesh{Name: fmt.Sprintf("procedural: one box per bone (%d)", r.Bones)}
		boxes(&r.Mesh, ext.sk, model, 0, ext)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for b := range r.SourceBones {
		y := model[b][13]
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	r.Height = float32(hi - lo)
	root := model[0].Translation()
	var rad float64
	for _, p := range r.RestSkinned() {
		d := vec3{float64(p[0]), float64(p[1]), float64(p[2])}.Sub(root).Len()
		rad = math.Max(rad, d)
	}
	// Animated limbs reach further than the rest pose: a generous margin.
	r.Radius = float32(rad * 1.3)
	return r, nil
}

// sameSkeleton reports whether two skeletons have the same bones and
// hierarchy (clips of one CMU subject do).
func sameSkeleton(a, b *offline.Skeleton) bool {
	if a.NumBones() != b.NumBones() {
		return false
	}
	for i := range a.Parents {
		if a.Parents[i] != b.Parents[i] || a.Names[i] != b.Names[i] {
			return false
		}
	}
	return true
}

// lowestLeaves returns the n leaf bones lowest in the rest pose.
func lowestLeaves(sk *offline.Skeleton, n int) []int {
	model := restModel(sk)
	child := make([]bool, sk.NumBones())
	for _, p := range sk.Parents {
		if p >= 0 {
			child[p] = true
		}
	}
	var leaves []int
	for b := range sk.NumBones() {
		if !child[b] {
			leaves = append(leaves, b)
		}
	}
	sort.Slice(leaves, func(i, j int) bool { return model[leaves[i]][13] < model[leaves[j]][13] })
	if len(leaves) > n {
		leaves = leaves[:n]
	}
	return leaves
}

// inPlace removes the root's horizontal travel (x and z of its translation
// track) so that characters stay in their places in the crowd; vertical
// motion and rotation are kept.
func inPlace(sk *offline.Skeleton, c *offline.Clip) {
	for b, p := range sk.Parents {
		if p >= 0 {
			continue
		}
		tr := &c.Tracks[b*3+int(offline.TrackTranslation)]
		if len(tr.Values) == 0 {
			continue
		}
		x, z := tr.Values[0][0], tr.Values[0][2]
		for i := range tr.Values {
			tr.Values[i][0], tr.Values[i][2] = x, z
		}
	}
}

// restModel returns the rest-pose model matrices of a skeleton.
func restModel(sk *offline.Skeleton) []mat {
	m := make([]mat, sk.NumBones())
	for b, p := range sk.Parents {
		r := sk.Rest[b]
		l := r.Matrix()
		if p < 0 {
			m[b] = l
		} else {
			m[b] = m[p].Mul(&l)
		}
	}
	return m
}

func toMat4(m *mat) kernels.Mat4 {
	var o kernels.Mat4
	for i := range o {
		o[i] = float32(m[i])
	}
	return o
}

// extendClip appends constant tracks (the rest pose) for the bones the
// clip lacks. Constant tracks cost nothing in the compressed stream: they
// live in the clip's default pose, which the sampler copies.
func extendClip(sk *offline.Skeleton, c *offline.Clip) {
	for b := c.NumBones(); b < sk.NumBones(); b++ {
		r := sk.Rest[b]
		vals := [3][4]float64{{r.T[0], r.T[1], r.T[2], 0}, r.R, {r.S[0], r.S[1], r.S[2], 0}}
		for k := range 3 {
			tr := offline.Track{Frames: make([]int32, c.Frames), Values: make([][4]float64, c.Frames)}
			for f := range c.Frames {
				tr.Frames[f] = int32(f)
				tr.Values[f] = vals[k]
			}
			c.Tracks = append(c.Tracks, tr)
		}
	}
}

// loadOrCompress fills r.Blob and r.Clips from the cache, or compresses
// the clips and stores the blob there.
func (r *Rig) loadOrCompress(opt Options, files []string, sk *offline.Skeleton, clips []*offline.Clip) error {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n%g\n%g\n%s\n", version, sk.NumBones(), opt.Tolerance, opt.Rate, opt.Codec)
	for i, n := range sk.Names {
		rt := sk.Rest[i]
		fmt.Fprintf(h, "%s %d %v %v %v\n", n, sk.Parents[i], rt.T, rt.R, rt.S)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		abs, _ := filepath.Abs(f)
		fmt.Fprintf(h, "%s %d %d\n", abs, st.Size(), st.ModTime().UnixNano())
	}
	key := hex.EncodeToString(h.Sum(nil))[:20]
	dir := opt.CacheDir
	if dir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(d, "vkjobs-crowd")
		} else {
			dir = "off"
		}
	}
	path := ""
	if dir != "off" {
		path = filepath.Join(dir, "crowd-"+key+".anim")
		r.CachePath = path
		if data, err := os.ReadFile(path); err == nil {
			if bl, err := anim.Load(data); err == nil && bl.NumClips() == len(clips) && bl.NumSkeletons() == 1 && bl.Skeleton(0).Bones() == sk.NumBones() {
				r.Cached = true
				return r.setBlob(bl)
			}
			r.Notes = append(r.Notes, fmt.Sprintf("cache %s unusable: rebuilding", path))
		}
	}
	var b offline.Builder
	si := b.AddSkeleton(sk)
	for _, c := range clips {
		// One pass, at the default share: the calibration's extra passes
		// (which land the 99th percentile exactly on the tolerance and save
		// a few per cent of bytes) would triple the demo's first start
		// (3.5 s -> 9.3 s). The default share keeps the error near the
		// tolerance (calibrating the CMU clips ends at shares of 0.46 to
		// 0.49); cmd/animc calibrates.
		if opt.Rate > 0 && c.Rate > opt.Rate {
			// Below one frame per clip duration the resampled clip keeps
			// a single frame: no motion, no duration.
			if d := c.Duration(); d*opt.Rate < 1 {
				return fmt.Errorf("rig: -clip-rate %v Hz keeps one frame of clip %s (%.2f s): want at least %.3g Hz, or 0 for the source's rate", opt.Rate, c.Name, d, 1/d)
			}
			rc, err := c.Resample(opt.Rate)
			if err != nil {
				return fmt.Errorf("rig: %w", err)
			}
			c = rc
		}
		cc, err := offline.Compress(sk, c, offline.CompressOptions{Tolerance: opt.Tolerance, Passes: 1, Codec: opt.Codec})
		if err != nil {
			return fmt.Errorf("rig: compress %s: %w", c.Name, err)
		}
		if err := b.AddClip(si, cc); err != nil {
			return err
		}
	}
	data, err := b.Bytes()
	if err != nil {
		return err
	}
	bl, err := anim.Load(data)
	if err != nil {
		return err
	}
	if path != "" {
		// A cache that cannot be written costs the next run the
		// compression again: say so (a note), but run.
		tmp := path + ".tmp"
		if err := os.MkdirAll(dir, 0o755); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("cache not written (the next run compresses again): %v", err))
		} else if err := os.WriteFile(tmp, data, 0o644); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("cache not written (the next run compresses again): %v", err))
		} else if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			r.Notes = append(r.Notes, fmt.Sprintf("cache not written (the next run compresses again): %v", err))
		}
	}
	return r.setBlob(bl)
}

func (r *Rig) setBlob(bl *anim.Blob) error {
	if bl.NumClips() == 0 {
		return errors.New("rig: blob has no clips")
	}
	r.Blob = bl
	r.Clips = r.Clips[:0]
	for i := range bl.NumClips() {
		c := bl.Clip(i)
		ci := Clip{Name: c.Name(), Offset: c.Offset(), Duration: c.Duration(), Events: c.NumEvents(), Animated: c.AnimatedTracks(), Bytes: c.Bytes()}
		for e := range c.NumEvents() {
			if c.Event(e).Type == anim.EventFootDown {
				ci.FootDowns++
			}
		}
		if !(ci.Duration > 0) {
			return fmt.Errorf("rig: clip %s has no duration", ci.Name)
		}
		r.CursorStride = max(r.CursorStride, c.CursorWords())
		r.Clips = append(r.Clips, ci)
	}
	return nil
}
