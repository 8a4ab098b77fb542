package offline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ParseError reports malformed input: the file, and either the line
// (text formats) or the element path (glTF), and what is wrong. Its text
// starts with "anim: ", as every error of this package does.
type ParseError struct {
	File    string
	Line    int    // 1-based; 0 when not line-oriented
	Element string // e.g. "animations[0].samplers[2].input"; "" for BVH
	Msg     string
}

func (e *ParseError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("anim: %s:%d: %s", e.File, e.Line, e.Msg)
	case e.Element != "":
		return fmt.Sprintf("anim: %s: %s: %s", e.File, e.Element, e.Msg)
	}
	return fmt.Sprintf("anim: %s: %s", e.File, e.Msg)
}

// LengthUnit is the length unit of a source file, as an explicit choice.
type LengthUnit struct {
	Name   string
	Metres float64 // metres per file unit
}

// Units the importers know.
var (
	// UnitCMU is the CMU motion-capture unit: 1/0.45 inch = 0.056444 m.
	UnitCMU        = LengthUnit{"CMU mocap unit (1/0.45 in = 0.056444 m)", 0.0254 / 0.45}
	UnitCentimetre = LengthUnit{"cm", 0.01}
	UnitMetre      = LengthUnit{"m", 1}
	UnitInch       = LengthUnit{"inch", 0.0254}
)

// ParseUnit maps a command-line name (cmu, cm, m, in, auto) to a unit;
// auto returns the zero unit (importer decides and reports).
func ParseUnit(s string) (LengthUnit, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return LengthUnit{}, nil
	case "cmu":
		return UnitCMU, nil
	case "cm":
		return UnitCentimetre, nil
	case "m":
		return UnitMetre, nil
	case "in", "inch":
		return UnitInch, nil
	}
	return LengthUnit{}, fmt.Errorf("anim: unknown unit %q (want auto, cmu, cm, m or in)", s)
}

// Import is what an importer produced: one skeleton, its clips, the unit
// chosen and human-readable notes on every choice made (unit and why,
// dropped frames, resampling, skipped channels).
type Import struct {
	File     string
	Skeleton *Skeleton
	Clips    []*Clip
	// Animations ties each clip to its source: Animations[i] is the glTF
	// animation (index in the file's animations array, and name) that
	// Clips[i] was made from (an animation that targets no bone of the
	// skeleton makes no clip, so i and the index may differ). Nil for BVH
	// (one clip, the file's motion). Clip.Name is the animation's name
	// (or made up when it has none) and is what anim.Blob.ClipByName
	// finds at run time.
	Animations []AnimationRef
	// Merged lists the glTF animations merged into the one clip of
	// GLTFOptions.MergeAnimations (those that animate the skeleton); nil
	// without it.
	Merged []int
	// Mesh is the triangle mesh the skin deforms (glTF; nil for BVH and
	// for a skin no node uses with a mesh).
	Mesh *SkinnedMesh
	// MeshErr, when not nil, says why the skin's mesh was not imported
	// although the skeleton and clips were: its geometry is compressed by
	// an extension the importer does not decode (KHR_draco_mesh_compression,
	// EXT_meshopt_compression, KHR_meshopt_compression), which the error
	// names. Mesh is nil then. A file that lists such an extension in
	// extensionsRequired is refused whole instead (the glTF rule for a
	// required extension).
	MeshErr error
	Unit    LengthUnit
	Notes   []string
}

// AnimationRef names a glTF animation: its index in the file's animations
// array and its name ("" when it has none). For the one clip of
// GLTFOptions.MergeAnimations, Index is the first animation merged into it
// (Import.Merged lists them all) and Name the clip's.
type AnimationRef struct {
	Index int
	Name  string
}

// ClipOf returns the clip made from the glTF animation with the given
// index (the merged clip for any animation merged into it), or nil when
// there is none (no such animation, or it targets no bone).
func (im *Import) ClipOf(animation int) *Clip {
	for i, a := range im.Animations {
		if i < len(im.Clips) && (a.Index == animation || containsInt(im.Merged, animation)) {
			return im.Clips[i]
		}
	}
	return nil
}

func (im *Import) notef(format string, args ...any) {
	im.Notes = append(im.Notes, fmt.Sprintf(format, args...))
}

// ImportOptions selects import choices for LoadFile.
type ImportOptions struct {
	BVH  BVHOptions
	GLTF GLTFOptions
}

// LoadFile imports a .bvh or .gltf/.glb file by its extension.
func LoadFile(path string, opt ImportOptions) (*Import, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".bvh":
		return ParseBVH(name, data, opt.BVH)
	case ".gltf", ".glb":
		o := opt.GLTF
		if o.Dir == nil {
			o.Dir = os.DirFS(filepath.Dir(path))
		}
		return ParseGLTF(name, data, o)
	}
	return nil, fmt.Errorf("anim: %s: unknown file type (want .bvh, .gltf or .glb)", path)
}
