package offline

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmuntal/gltf"
	"github.com/qmuntal/gltf/modeler"
	"github.com/vkjobs/vkjobs/anim"
)

// This file writes glTF files (JSON and a .bin buffer, with
// qmuntal/gltf) of a generated character and checks what the importer
// and both codecs make of them in world space, against the glTF
// interpolation of the keys computed here, independently of the package.

// genChannel is one animated property of a generated glTF: key times and
// values (3 or 4 components), STEP or LINEAR.
type genChannel struct {
	node   int
	path   string // translation, rotation or scale
	step   bool
	times  []float32
	values [][4]float32
}

// genDoc is a generated glTF: a chain of joints, optionally under a
// non-joint node with a uniform scale, and its channels.
type genDoc struct {
	parentScale float64 // 0: the joints are the scene's roots
	midScale    float64 // 0: none; else a non-joint node scaled so above joint midAt
	midAt       int
	rest        [][3]float32 // per joint: rest translation (file units)
	chans       []genChannel // node = joint index
}

// write saves d in dir as a .gltf file called name, its buffer beside it
// in a .bin file of the same name, and returns the .gltf's path.
func (d *genDoc) write(t *testing.T, dir, name string) string {
	t.Helper()
	doc := gltf.NewDocument()
	doc.Buffers = []*gltf.Buffer{{URI: name + ".bin"}}
	off := 0 // node index of joint 0
	if d.parentScale != 0 {
		s := d.parentScale
		doc.Nodes = append(doc.Nodes, &gltf.Node{Name: "Armature", Scale: [3]float64{s, s, s}, Children: []int{1}})
		off = 1
	}
	var joints []int
	mid := off + len(d.rest) // the mid node's index, after the joints
	for j, r := range d.rest {
		n := &gltf.Node{Name: "joint" + string(rune('A'+j)), Translation: [3]float64{float64(r[0]), float64(r[1]), float64(r[2])}}
		if j+1 < len(d.rest) {
			n.Children = []int{off + j + 1}
			if d.midScale != 0 && j+1 == d.midAt {
				n.Children = []int{mid}
			}
		}
		doc.Nodes = append(doc.Nodes, n)
		joints = append(joints, off+j)
	}
	if d.midScale != 0 {
		s := d.midScale
		doc.Nodes = append(doc.Nodes, &gltf.Node{Name: "Scaled", Scale: [3]float64{s, s, s}, Children: []int{off + d.midAt}})
	}
	doc.Scenes[0].Nodes = []int{0}
	doc.Skins = []*gltf.Skin{{Joints: joints}}
	an := &gltf.Animation{Name: "gen"}
	for _, c := range d.chans {
		in := modeler.WriteAccessor(doc, gltf.TargetNone, c.times)
		var out int
		if c.path == "rotation" {
			out = modeler.WriteAccessor(doc, gltf.TargetNone, c.values)
		} else {
			v3 := make([][3]float32, len(c.values))
			for i, v := range c.values {
				v3[i] = [3]float32{v[0], v[1], v[2]}
			}
			out = modeler.WriteAccessor(doc, gltf.TargetNone, v3)
		}
		interp := gltf.InterpolationLinear
		if c.step {
			interp = gltf.InterpolationStep
		}
		an.Samplers = append(an.Samplers, &gltf.AnimationSampler{Input: in, Output: out, Interpolation: interp})
		path := map[string]gltf.TRSProperty{"translation": gltf.TRSTranslation, "rotation": gltf.TRSRotation, "scale": gltf.TRSScale}[c.path]
		an.Channels = append(an.Channels, &gltf.AnimationChannel{Sampler: len(an.Samplers) - 1, Target: gltf.AnimationChannelTarget{Node: gltf.Index(off + c.node), Path: path}})
	}
	doc.Animations = []*gltf.Animation{an}
	p := filepath.Join(dir, name+".gltf")
	if err := gltf.Save(doc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// at returns channel c's value at time t as glTF defines it: the first
// key's before it, the last key's from the last time on, STEP holds a
// key's value until the next key's time, LINEAR lerps (slerp for
// rotations, on the shorter arc).
func (c *genChannel) at(t float64) [4]float64 {
	n := len(c.times)
	f64 := func(v [4]float32) [4]float64 {
		return [4]float64{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])}
	}
	if t <= float64(c.times[0]) {
		return f64(c.values[0])
	}
	if t >= float64(c.times[n-1]) {
		return f64(c.values[n-1])
	}
	k := 0
	for k+1 < n && float64(c.times[k+1]) <= t {
		k++
	}
	a, b := f64(c.values[k]), f64(c.values[k+1])
	if c.step {
		return a
	}
	u := (t - float64(c.times[k])) / float64(c.times[k+1]-c.times[k])
	if c.path != "rotation" {
		return [4]float64{a[0] + u*(b[0]-a[0]), a[1] + u*(b[1]-a[1]), a[2] + u*(b[2]-a[2]), 0}
	}
	dot := a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3]
	if dot < 0 {
		dot = -dot
		for i := range b {
			b[i] = -b[i]
		}
	}
	th := math.Acos(math.Min(1, dot))
	wa, wb := 1-u, u
	if th > 1e-9 {
		wa, wb = math.Sin((1-u)*th)/math.Sin(th), math.Sin(u*th)/math.Sin(th)
	}
	var q [4]float64
	l := 0.0
	for i := range q {
		q[i] = wa*a[i] + wb*b[i]
		l += q[i] * q[i]
	}
	for i := range q {
		q[i] /= math.Sqrt(l)
	}
	return q
}

// worldRef returns the world matrices of the joints at time t: the
// parent node's scale times the chain of the joints' local transforms,
// each from its channels (glTF interpolation) or its rest pose.
func (d *genDoc) worldRef(t float64) []mat4 {
	nj := len(d.rest)
	out := make([]mat4, nj)
	root := IdentityTransform
	if d.parentScale != 0 {
		root.S = Vec3{d.parentScale, d.parentScale, d.parentScale}
	}
	parent := root.Matrix()
	for j := range nj {
		r := d.rest[j]
		l := Transform{T: Vec3{float64(r[0]), float64(r[1]), float64(r[2])}, R: IdentityQuat, S: Vec3{1, 1, 1}}
		for i := range d.chans {
			c := &d.chans[i]
			if c.node != j {
				continue
			}
			v := c.at(t)
			switch c.path {
			case "translation":
				l.T = Vec3{v[0], v[1], v[2]}
			case "rotation":
				l.R = Quat(v)
			case "scale":
				l.S = Vec3{v[0], v[1], v[2]}
			}
		}
		m := l.Matrix()
		if d.midScale != 0 && j == d.midAt {
			s := Transform{R: IdentityQuat, S: Vec3{d.midScale, d.midScale, d.midScale}}.Matrix()
			parent = parent.Mul(&s)
		}
		out[j] = parent.Mul(&m)
		parent = out[j]
	}
	return out
}

// worldDecoded returns the model matrices of a decoded pose (anim's
// layout: rotation, translation, scale per bone) on a chain skeleton: the
// importer folds the parent node into the root, so they are world
// matrices.
func worldDecoded(pose []float32, nb int) []mat4 {
	out := make([]mat4, nb)
	for b := range nb {
		p := pose[b*anim.PoseFloats:]
		l := Transform{
			R: Quat{float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])}.Normalized(),
			T: Vec3{float64(p[4]), float64(p[5]), float64(p[6])},
			S: Vec3{float64(p[8]), float64(p[9]), float64(p[10])},
		}
		m := l.Matrix()
		if b == 0 {
			out[b] = m
		} else {
			out[b] = out[b-1].Mul(&m)
		}
	}
	return out
}

// worldVertexError is the largest displacement, in world space, of the
// virtual vertices dist metres (in world space) from each joint along its
// three axes between the reference world matrices ref and the decoded dec.
func worldVertexError(ref, dec []mat4, dist float64) (float64, int) {
	e, worst := 0.0, -1
	for b := range ref {
		for a := range 3 {
			l := math.Sqrt(ref[b][4*a]*ref[b][4*a] + ref[b][4*a+1]*ref[b][4*a+1] + ref[b][4*a+2]*ref[b][4*a+2])
			var v Vec3
			v[a] = dist / l
			if x := ref[b].Point(v).Dist(dec[b].Point(v)); x > e {
				e, worst = x, b
			}
		}
	}
	return e, worst
}

// checkTimes returns the times a world-space check samples: every key
// time, three times inside every interval between keys, the ends and
// just before the end.
func checkTimes(keys []float32) []float64 {
	var ts []float64
	for k, t := range keys {
		ts = append(ts, float64(t))
		if k+1 < len(keys) {
			for _, u := range []float64{0.25, 0.5, 0.75} {
				ts = append(ts, float64(t)+u*float64(keys[k+1]-t))
			}
		}
	}
	end := float64(keys[len(keys)-1])
	return append(ts, 0, end-1e-3, end)
}

// genCharacter returns the generated character authored in units of
// unit metres under a parent node scaled by unit (unit 1: no parent
// node): a five-joint chain (hips at 1 m, spine, arm, forearm, hand)
// whose hips move and every joint turns, LINEAR keys at 30 Hz for 2 s.
func genCharacter(unit float64) *genDoc {
	d := &genDoc{}
	if unit != 1 {
		d.parentScale = unit
	}
	u := float32(1 / unit)
	d.rest = [][3]float32{{0, u, 0}, {0, 0.3 * u, 0}, {0.2 * u, 0.1 * u, 0}, {0.3 * u, 0, 0}, {0.25 * u, 0, 0}}
	const n = 61
	times := make([]float32, n)
	for k := range times {
		times[k] = float32(k) / 30
	}
	hips := genChannel{node: 0, path: "translation", times: times}
	for _, t := range times {
		x := float64(t)
		hips.values = append(hips.values, [4]float32{float32(0.2*math.Sin(2*math.Pi*0.7*x)) * u, float32(1+0.05*math.Sin(2*math.Pi*1.3*x)) * u, float32(0.3*x) * u, 0})
	}
	d.chans = append(d.chans, hips)
	axes := [][3]float64{{0, 1, 0}, {1, 0, 0}, {0, 0, 1}, {0, 0.6, 0.8}, {0.6, 0.8, 0}}
	amp := []float64{30, 25, 50, 60, 40}
	freq := []float64{0.5, 1, 0.8, 1.2, 1.5}
	for j := range 5 {
		c := genChannel{node: j, path: "rotation", times: times}
		for _, t := range times {
			ang := amp[j] * math.Pi / 180 * math.Sin(2*math.Pi*freq[j]*float64(t)+float64(j))
			s, co := math.Sin(ang/2), math.Cos(ang/2)
			a := axes[j]
			c.values = append(c.values, [4]float32{float32(a[0] * s), float32(a[1] * s), float32(a[2] * s), float32(co)})
		}
		d.chans = append(d.chans, c)
	}
	return d
}

// worldErrors imports the glTF at path, compresses its clip with codec
// at the default options and returns the largest world-space error at 3
// cm over checkTimes, with its bone and time.
func worldErrors(t *testing.T, d *genDoc, path string, codec anim.Codec) (maxErr float64, bone int, at float64) {
	t.Helper()
	im, err := LoadFile(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sk, clip := im.Skeleton, im.Clips[0]
	_, data := compressBlob(t, sk, clip, CompressOptions{Codec: codec})
	cv := mustLoad(t, data).Clip(0)
	for _, tm := range checkTimes(d.chans[0].times) {
		dec := worldDecoded(sampleAt(t, cv, float32(tm)), sk.NumBones())
		e, b := worldVertexError(d.worldRef(tm), dec, 0.03)
		if e > maxErr {
			maxErr, bone, at = e, b, tm
		}
	}
	return maxErr, bone, at
}

// TestWorldErrorUnderScaledNode: the same character authored in metres
// and in centimetres under a node scaled 0.01 (as Blender exports it)
// compresses, with either codec at the default tolerance, to the same
// world-space error (and so does the twin whose arm alone is in
// centimetres, under a scaled node between two joints) at virtual vertices 3 cm (in the world) from each
// joint, at keys, between keys and at the ends. Before, the virtual
// vertices of the scaled twin sat at 0.3 mm, so its rotations were fitted
// a hundred times too loosely.
func TestWorldErrorUnderScaledNode(t *testing.T) {
	dir := t.TempDir()
	metres := genCharacter(1)
	cm := genCharacter(0.01)
	// The arm in centimetres under a node scaled 0.01 between the spine
	// and the arm (a non-joint node inside the skeleton).
	inside := genCharacter(1)
	inside.midScale, inside.midAt = 0.01, 2
	for j := 2; j < len(inside.rest); j++ {
		for i := range 3 {
			inside.rest[j][i] *= 100
		}
	}
	pm := metres.write(t, dir, "metres")
	pc := cm.write(t, dir, "centimetres")
	pi := inside.write(t, dir, "inside")
	tol := 0.0001 // the default Tolerance
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		em, bm, tm := worldErrors(t, metres, pm, codec)
		ec, bc, tc := worldErrors(t, cm, pc, codec)
		ei, bi, ti := worldErrors(t, inside, pi, codec)
		t.Logf("%v: unscaled max %.3f mm (bone %d, %.3f s), under scale 0.01 max %.3f mm (bone %d, %.3f s), arm under scale 0.01 max %.3f mm (bone %d, %.3f s)",
			codec, em*1e3, bm, tm, ec*1e3, bc, tc, ei*1e3, bi, ti)
		// The target is the 99th percentile; the maximum stays within a
		// few times it on smooth motion.
		for _, c := range []struct {
			name string
			e    float64
		}{{"unscaled", em}, {"under scale 0.01", ec}, {"arm under scale 0.01", ei}} {
			if c.e > 4*tol {
				t.Errorf("%v, %s: max world-space error %.3f mm, want within %.1f mm", codec, c.name, c.e*1e3, 4*tol*1e3)
			}
			if c.e > 2*em+tol {
				t.Errorf("%v: %s %.3f mm, unscaled %.3f mm: not alike", codec, c.name, c.e*1e3, em*1e3)
			}
		}
	}
}

// genStepEnd returns a three-joint chain (hips, spine, head) whose spine
// turns about x in STEP keys every 1.5 s (to -45° at 4.5 s), its last key,
// at the clip's end (6 s), a jump to +30°; the hips sway (LINEAR, 30 Hz).
// The clip is long enough for the last interval to stay out of the 99th
// percentile.
func genStepEnd() *genDoc {
	d := &genDoc{rest: [][3]float32{{0, 1, 0}, {0, 0.4, 0}, {0, 0.3, 0}}}
	hips := genChannel{node: 0, path: "translation"}
	for k := range 181 {
		t := float32(k) / 30
		hips.times = append(hips.times, t)
		hips.values = append(hips.values, [4]float32{float32(0.1 * math.Sin(2*float64(t))), 1, 0, 0})
	}
	spine := genChannel{node: 1, path: "rotation", step: true, times: []float32{0, 1.5, 3, 4.5, 6}}
	for _, deg := range []float64{-10, 20, 5, -45, 30} {
		a := deg * math.Pi / 180
		spine.values = append(spine.values, [4]float32{float32(math.Sin(a / 2)), 0, 0, float32(math.Cos(a / 2))})
	}
	d.chans = []genChannel{hips, spine}
	return d
}

// TestStepKeyAtClipEnd: a STEP key at the clip's last time that jumps.
// The import holds the previous value until the end and ends on the last
// key's (a discontinuity at the last frame). The curve codec holds every
// STEP, the last interval included (its end pair), and ends exactly on
// the last key. The uniform codec ends on it too and holds every STEP
// elsewhere within the tolerance, ramping over the frame before each
// step, the last included: Compress fails with a *ToleranceError in the
// last interval, and with MaxError +Inf it compresses and reports the
// error in Stats.Max.
func TestStepKeyAtClipEnd(t *testing.T) {
	d := genStepEnd()
	path := d.write(t, t.TempDir(), "stepend")
	im, err := LoadFile(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sk, clip := im.Skeleton, im.Clips[0]
	T := clip.Duration()
	if T != 6 {
		t.Fatalf("duration %v s, want 6", T)
	}
	// The import: the spine's rotation track ends on a discontinuity,
	// held value then the last key's.
	tr := clip.Tracks[3*1+int(TrackRotation)]
	n := len(tr.Frames)
	end := int32(clip.Frames - 1)
	if n < 2 || tr.Frames[n-1] != end || tr.Frames[n-2] != end {
		t.Fatalf("spine rotation track ends on frames %v, want a discontinuity at the last frame %d", tr.Frames[max(0, n-3):], end)
	}
	ang := func(q [4]float64) float64 { return 2 * math.Atan2(q[0], q[3]) * 180 / math.Pi }
	if a, b := ang(tr.Values[n-2]), ang(tr.Values[n-1]); math.Abs(a+45) > 1e-4 || math.Abs(b-30) > 1e-4 {
		t.Errorf("last frame: %.4f° then %.4f°, want -45° then 30°", a, b)
	}
	frame := 1 / clip.Rate
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		_, err := Compress(sk, clip, CompressOptions{Codec: codec})
		var te *ToleranceError
		if codec == anim.CodecCurve {
			if err != nil {
				t.Errorf("curve: Compress: %v, want success (the end pair holds the last interval)", err)
			}
		} else if !errors.As(err, &te) {
			t.Errorf("%v: Compress returned %v, want a *ToleranceError for the last interval", codec, err)
		} else {
			t.Logf("%v: %v", codec, err)
			if te.Compressed == nil || !(te.Time > T-frame && te.Time < T) || te.Bone < 1 || !(te.Max > 0.01) {
				t.Errorf("%v: %+v: want the maximum (over 1 cm) on the spine or head inside the last interval", codec, te)
			}
		}
		cc, err := Compress(sk, clip, CompressOptions{Codec: codec, MaxError: math.Inf(1)})
		if codec == anim.CodecUniform && errors.As(err, &te) {
			// Its ramps before the mid-clip steps are in the 99th
			// percentile.
			t.Logf("%v with MaxError +Inf: %v", codec, err)
			cc, err = te.Compressed, nil
		}
		if err != nil {
			t.Fatalf("%v with MaxError +Inf: %v", codec, err)
		}
		cv := mustLoad(t, blobOf(t, sk, cc)).Clip(0)
		worstIn, worstEnd, rampMax, inAt := 0.0, 0.0, 0.0, 0.0
		for _, tm := range checkTimes(d.chans[0].times) {
			dec := worldDecoded(sampleAt(t, cv, float32(tm)), sk.NumBones())
			e, _ := worldVertexError(d.worldRef(tm), dec, 0.03)
			held := tm < T-frame-1e-9 || (codec == anim.CodecCurve && tm < T)
			if codec == anim.CodecUniform {
				// It ramps over the frame before every step.
				k := tm / 1.5
				held = held && (k-math.Floor(k) < 1e-9 || math.Ceil(k)-k > frame/1.5+1e-9)
			}
			switch {
			case tm == T:
				worstEnd = math.Max(worstEnd, e)
			case held:
				if e > worstIn {
					worstIn, inAt = e, tm
				}
			default:
				rampMax = math.Max(rampMax, e)
			}
		}
		t.Logf("%v: max world error %.3f mm (%.4f s) where the keys hold, %.3f mm at the end, %.1f mm on the ramps; Stats.Max %.1f mm at bone %d, %.4f s", codec, worstIn*1e3, inAt, worstEnd*1e3, rampMax*1e3, cc.Stats.Max*1e3, cc.Stats.MaxBone, cc.Stats.MaxTime)
		if worstEnd > 0.0002 {
			t.Errorf("%v: %.3f mm at the clip's end, want the last key's value", codec, worstEnd*1e3)
		}
		if worstIn > 0.0004 {
			t.Errorf("%v: %.3f mm where the STEP keys hold, want within the tolerance", codec, worstIn*1e3)
		}
		if codec == anim.CodecUniform && cc.Stats.Max < 0.5*rampMax {
			t.Errorf("%v: Stats.Max %.1f mm, the last interval is %.1f mm off", codec, cc.Stats.Max*1e3, rampMax*1e3)
		}
	}
}

// TestGLTFExtensionsRequired: a file that requires an extension the
// importer does not implement is refused, naming it (glTF 2.0, 3.12);
// one that requires an extension that changes nothing it imports
// (KHR_texture_transform) or one it decodes (KHR_mesh_quantization), or
// merely uses one, loads.
func TestGLTFExtensionsRequired(t *testing.T) {
	for _, c := range []struct {
		used, required []any
		refuse         string
	}{
		{[]any{"EXT_made_up"}, []any{"EXT_made_up"}, "EXT_made_up"},
		{[]any{"EXT_meshopt_compression"}, []any{"EXT_meshopt_compression"}, "EXT_meshopt_compression"},
		{[]any{"KHR_draco_mesh_compression"}, []any{"KHR_draco_mesh_compression"}, "KHR_draco_mesh_compression"},
		{[]any{"KHR_mesh_quantization"}, []any{"KHR_mesh_quantization"}, ""},
		{[]any{"KHR_texture_transform", "KHR_draco_mesh_compression"}, []any{"KHR_texture_transform", "KHR_draco_mesh_compression"}, "KHR_draco_mesh_compression"},
		{[]any{"KHR_texture_transform"}, []any{"KHR_texture_transform"}, ""},
		{[]any{"EXT_meshopt_compression", "EXT_made_up"}, nil, ""},
	} {
		doc := miniGLTF()
		doc["extensionsUsed"] = c.used
		if c.required != nil {
			doc["extensionsRequired"] = c.required
		}
		_, err := ParseGLTF("ext.gltf", encodeGLTF(t, doc), GLTFOptions{})
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("required %v, used %v: %v", c.required, c.used, err)
		case c.refuse != "" && err == nil:
			t.Errorf("required %v: loaded, want an error naming %s", c.required, c.refuse)
		case c.refuse != "" && !strings.Contains(err.Error(), c.refuse):
			t.Errorf("required %v: %v, want it to name %s", c.required, err, c.refuse)
		case err != nil:
			t.Logf("required %v: %v", c.required, err)
		}
	}
}

// TestGLTFZeroRotationKey: a rotation key (0, 0, 0, 0) is refused with
// an error naming the animation, the channel, its node and the key,
// instead of becoming the identity.
func TestGLTFZeroRotationKey(t *testing.T) {
	doc := miniGLTF()
	for i := range 4 {
		editBuffer(doc, 48+16+4*i, 0) // the knee's key 1
	}
	_, err := ParseGLTF("zero.gltf", encodeGLTF(t, doc), GLTFOptions{})
	if err == nil {
		t.Fatal("a (0,0,0,0) rotation key was accepted")
	}
	for _, want := range []string{"animation 0", `"walk"`, "channel 1", "node 2", "key 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %s", err, want)
		}
	}
	t.Log(err)
}

// TestCompressMissedToleranceIsError: when no pass meets Tolerance,
// Compress returns a *ToleranceError that says by how much and where,
// with the most accurate clip, instead of that clip and no error (here:
// the uniform codec below its float32 floor, and a tolerance of 1 µm on a
// clip whose source the curve codec's quantisation cannot reach).
func TestCompressMissedToleranceIsError(t *testing.T) {
	sk, c := synthSkeleton(), synthClip(61, 30, 0)
	for _, opt := range []CompressOptions{
		{Codec: anim.CodecUniform, Tolerance: 1e-7},
		{Codec: anim.CodecCurve, Tolerance: 1e-8},
	} {
		cc, err := Compress(sk, c, opt)
		var te *ToleranceError
		if !errors.As(err, &te) {
			t.Errorf("%v at %g m: Compress returned %v (p99 %v), want a *ToleranceError", opt.Codec, opt.Tolerance, err, statsP99(cc))
			continue
		}
		t.Log(err)
		if cc != nil || te.Compressed == nil || !(te.P99 > te.Tolerance) || te.Tolerance != opt.Tolerance ||
			te.Bone < 0 || te.Bone >= sk.NumBones() || te.BoneName != sk.Names[te.Bone] || !(te.Time >= 0 && te.Time <= c.Duration()) ||
			!(te.Max >= te.P99) || te.Compressed.Stats.P99 != te.P99 || !strings.Contains(err.Error(), "× the tolerance") {
			t.Errorf("%v: %+v", opt.Codec, te)
		}
	}
}

func statsP99(cc *CompressedClip) float64 {
	if cc == nil {
		return 0
	}
	return cc.Stats.P99
}

// A general generator for the conformance set (conformance_test.go): any
// node tree (joints and non-joint nodes, TRS with non-uniform scales),
// STEP, LINEAR and CUBICSPLINE channels at any key times, and sparse
// accessors, written as a self-contained .gltf (buffer as a data URI).

// confNode is a node of a generated scene.
type confNode struct {
	name   string
	parent int // -1: a root of the scene
	joint  bool
	t      [3]float64
	r      [4]float64 // zero: identity
	s      [3]float64 // zero: (1, 1, 1)
}

// confChan is a channel: per key one value (CUBICSPLINE: three, the
// in-tangent, the value and the out-tangent, glTF's layout).
type confChan struct {
	node      int
	path      string // translation, rotation or scale
	interp    string // STEP, LINEAR or CUBICSPLINE
	times     []float32
	values    [][4]float32
	sparseOut bool // output: a bufferView of the first element repeated, the others by sparse substitution
	sparseIn  bool // input: no bufferView (zeros), every non-zero time by sparse substitution (8-bit indices)
}

// confScene is a generated glTF: nodes (joints in order form the skin)
// and one animation.
type confScene struct {
	name  string
	nodes []confNode
	chans []confChan
	// toleranceError: the codecs Compress must fail on with a
	// *ToleranceError on this shape, and why (limits anim's
	// documentation states).
	toleranceError map[anim.Codec]string
}

// gltf encodes the scene as glTF 2.0 JSON.
func (s *confScene) gltf(t testing.TB) []byte {
	t.Helper()
	var buf []byte
	var views, accs []any
	align := func() {
		for len(buf)%4 != 0 {
			buf = append(buf, 0)
		}
	}
	view := func(b []byte) int {
		align()
		views = append(views, map[string]any{"buffer": 0, "byteOffset": len(buf), "byteLength": len(b)})
		buf = append(buf, b...)
		return len(views) - 1
	}
	f32s := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	typ := map[int]string{1: "SCALAR", 3: "VEC3", 4: "VEC4"}
	// accessor writes elements of nc floats, sparse as asked.
	accessor := func(elems [][]float32, nc int, sparse string) int {
		a := map[string]any{"componentType": 5126, "count": len(elems), "type": typ[nc]}
		var idx []int
		switch sparse {
		case "":
			var b []byte
			for _, e := range elems {
				b = append(b, f32s(e...)...)
			}
			a["bufferView"] = view(b)
		case "repeat-first":
			var b []byte
			for i, e := range elems {
				b = append(b, f32s(elems[0]...)...)
				for c := range e {
					if i > 0 && e[c] != elems[0][c] {
						idx = append(idx, i)
						break
					}
				}
			}
			a["bufferView"] = view(b)
		case "zeros":
			for i, e := range elems {
				for c := range e {
					if e[c] != 0 {
						idx = append(idx, i)
						break
					}
				}
			}
		}
		if len(idx) > 0 {
			var ib, vb []byte
			ct := 5123
			if sparse == "zeros" {
				ct = 5121
			}
			for _, i := range idx {
				if ct == 5121 {
					ib = append(ib, byte(i))
				} else {
					ib = binary.LittleEndian.AppendUint16(ib, uint16(i))
				}
				vb = append(vb, f32s(elems[i]...)...)
			}
			a["sparse"] = map[string]any{
				"count":   len(idx),
				"indices": map[string]any{"bufferView": view(ib), "componentType": ct},
				"values":  map[string]any{"bufferView": view(vb)},
			}
		}
		accs = append(accs, a)
		return len(accs) - 1
	}
	var nodes, roots, joints []any
	children := make([][]any, len(s.nodes))
	for i, n := range s.nodes {
		if n.parent >= 0 {
			children[n.parent] = append(children[n.parent], i)
		} else {
			roots = append(roots, i)
		}
		if n.joint {
			joints = append(joints, i)
		}
	}
	for i, n := range s.nodes {
		m := map[string]any{"name": n.name, "translation": n.t[:]}
		if n.r != ([4]float64{}) {
			m["rotation"] = n.r[:]
		}
		if n.s != ([3]float64{}) {
			m["scale"] = n.s[:]
		}
		if len(children[i]) > 0 {
			m["children"] = children[i]
		}
		nodes = append(nodes, m)
	}
	var channels, samplers []any
	for _, c := range s.chans {
		nc := 3
		if c.path == "rotation" {
			nc = 4
		}
		tin := make([][]float32, len(c.times))
		for k, tm := range c.times {
			tin[k] = []float32{tm}
		}
		inSparse := ""
		if c.sparseIn {
			inSparse = "zeros"
		}
		in := accessor(tin, 1, inSparse)
		accs[in].(map[string]any)["min"] = []float32{c.times[0]}
		accs[in].(map[string]any)["max"] = []float32{c.times[len(c.times)-1]}
		vout := make([][]float32, len(c.values))
		for k, v := range c.values {
			vout[k] = append([]float32(nil), v[:nc]...)
		}
		outSparse := ""
		if c.sparseOut {
			outSparse = "repeat-first"
		}
		out := accessor(vout, nc, outSparse)
		samplers = append(samplers, map[string]any{"input": in, "output": out, "interpolation": c.interp})
		channels = append(channels, map[string]any{"sampler": len(samplers) - 1, "target": map[string]any{"node": c.node, "path": c.path}})
	}
	align()
	doc := map[string]any{
		"asset":       map[string]any{"version": "2.0", "generator": "vkjobs anim/offline gltf_gen_test.go"},
		"scene":       0,
		"scenes":      []any{map[string]any{"nodes": roots}},
		"nodes":       nodes,
		"skins":       []any{map[string]any{"joints": joints}},
		"animations":  []any{map[string]any{"name": s.name, "channels": channels, "samplers": samplers}},
		"buffers":     []any{map[string]any{"byteLength": len(buf), "uri": "data:application/octet-stream;base64," + base64.StdEncoding.EncodeToString(buf)}},
		"bufferViews": views,
		"accessors":   accs,
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// confTimes returns n key times every dt seconds from t0.
func confTimes(t0, dt float64, n int) []float32 {
	ts := make([]float32, n)
	for k := range ts {
		ts[k] = float32(t0 + float64(k)*dt)
	}
	return ts
}

// confRot returns rotation keys about the unit axis ax by amp degrees ×
// sin(2π f t + ph).
func confRot(times []float32, ax [3]float64, amp, f, ph float64) [][4]float32 {
	var v [][4]float32
	for _, tm := range times {
		a := amp * math.Pi / 180 * math.Sin(2*math.Pi*f*float64(tm)+ph)
		s, c := math.Sin(a/2), math.Cos(a/2)
		v = append(v, [4]float32{float32(ax[0] * s), float32(ax[1] * s), float32(ax[2] * s), float32(c)})
	}
	return v
}

// confVec returns 3-vector keys fn(t).
func confVec(times []float32, fn func(t float64) [3]float64) [][4]float32 {
	var v [][4]float32
	for _, tm := range times {
		x := fn(float64(tm))
		v = append(v, [4]float32{float32(x[0]), float32(x[1]), float32(x[2]), 0})
	}
	return v
}

// confCubic returns CUBICSPLINE keys (in-tangent, value, out-tangent) of
// fn with its derivative dfn (per second; rotation: fn is an angle in
// radians about the unit axis ax, else a 3-vector). The first key's
// in-tangent and the last key's out-tangent, which glTF ignores, are
// junk; at the key corner (if >= 0) the in- and out-tangents differ.
func confCubic(times []float32, rot bool, ax [3]float64, fn, dfn func(t float64) [3]float64, corner int) [][4]float32 {
	val := func(tm float64) ([4]float32, [4]float32) {
		x, d := fn(tm), dfn(tm)
		if !rot {
			return [4]float32{float32(x[0]), float32(x[1]), float32(x[2])}, [4]float32{float32(d[0]), float32(d[1]), float32(d[2])}
		}
		a, da := x[0], d[0]
		s, c := math.Sin(a/2), math.Cos(a/2)
		ds, dc := c*da/2, -s*da/2
		return [4]float32{float32(ax[0] * s), float32(ax[1] * s), float32(ax[2] * s), float32(c)},
			[4]float32{float32(ax[0] * ds), float32(ax[1] * ds), float32(ax[2] * ds), float32(dc)}
	}
	junk := [4]float32{50, -40, 30, 20}
	var v [][4]float32
	for k, tm := range times {
		x, d := val(float64(tm))
		in, out := d, d
		if k == 0 {
			in = junk
		}
		if k == len(times)-1 {
			out = junk
		}
		if k == corner {
			for i := range out {
				out[i] = -out[i] * 0.5
			}
		}
		v = append(v, in, x, out)
	}
	return v
}

// confChain returns n joints in a chain (each its parent's child), the
// first under parent, at rest offsets off (file units).
func confChain(parent int, first int, off [][3]float64) []confNode {
	var ns []confNode
	for j, o := range off {
		p := parent
		if j > 0 {
			p = first + j - 1
		}
		ns = append(ns, confNode{name: fmt.Sprintf("joint%d", j), parent: p, joint: true, t: o})
	}
	return ns
}

// confScenes is the generated conformance set: each shape issue 28 §3
// lists, as a small character.
func confScenes() []*confScene {
	deg := func(a float64, ax [3]float64) [4]float64 {
		s, c := math.Sin(a*math.Pi/360), math.Cos(a*math.Pi/360)
		return [4]float64{ax[0] * s, ax[1] * s, ax[2] * s, c}
	}
	body := [][3]float64{{0, 1, 0}, {0, 0.3, 0}, {0.2, 0.1, 0}, {0.3, 0, 0}, {0.25, 0, 0}}
	t30 := confTimes(0, 1.0/30, 61)
	swing := func(s *confScene, first int, times []float32, interp string) {
		ax := [][3]float64{{0, 1, 0}, {1, 0, 0}, {0, 0, 1}, {0, 0.6, 0.8}, {0.6, 0.8, 0}}
		for j := range 5 {
			s.chans = append(s.chans, confChan{node: first + j, path: "rotation", interp: interp, times: times,
				values: confRot(times, ax[j], []float64{30, 25, 50, 60, 40}[j], []float64{0.5, 1, 0.8, 1.2, 1.5}[j], float64(j))})
		}
	}
	hips := func(u float64) func(t float64) [3]float64 {
		return func(t float64) [3]float64 {
			return [3]float64{0.2 * math.Sin(2*math.Pi*0.7*t) / u, (1 + 0.05*math.Sin(2*math.Pi*1.3*t)) / u, 0.3 * t / u}
		}
	}
	var out []*confScene

	// Scale above the skeleton: the character in centimetres under a
	// non-joint node that scales by 0.01, turns 90° about y and moves.
	{
		s := &confScene{name: "scale-above"}
		s.nodes = []confNode{{name: "Armature", parent: -1, t: [3]float64{1, 0, 2}, r: deg(90, [3]float64{0, 1, 0}), s: [3]float64{0.01, 0.01, 0.01}}}
		cm := make([][3]float64, len(body))
		for j, o := range body {
			cm[j] = [3]float64{o[0] * 100, o[1] * 100, o[2] * 100}
		}
		s.nodes = append(s.nodes, confChain(0, 1, cm)...)
		s.chans = append(s.chans, confChan{node: 1, path: "translation", interp: "LINEAR", times: t30, values: confVec(t30, hips(0.01))})
		swing(s, 1, t30, "LINEAR")
		out = append(out, s)
	}
	// Scale inside the skeleton: a non-joint node between the spine and
	// the arm (scale 0.01 and a turn; the arm in centimetres), a joint
	// with a rest scale of 2 and one whose uniform scale is animated.
	{
		s := &confScene{name: "scale-inside"}
		s.nodes = confChain(-1, 0, body[:2])
		s.nodes[1].s = [3]float64{2, 2, 2}
		s.nodes = append(s.nodes, confNode{name: "ArmSpace", parent: 1, t: [3]float64{0, 0.05, 0}, r: deg(30, [3]float64{0, 0, 1}), s: [3]float64{0.01, 0.01, 0.01}})
		for j, o := range body[2:] {
			p := 2
			if j > 0 {
				p = len(s.nodes) - 1
			}
			s.nodes = append(s.nodes, confNode{name: fmt.Sprintf("arm%d", j), parent: p, joint: true, t: [3]float64{o[0] * 100, o[1] * 100, o[2] * 100}})
		}
		s.chans = append(s.chans, confChan{node: 0, path: "translation", interp: "LINEAR", times: t30, values: confVec(t30, hips(1))})
		swing(s, 0, t30, "LINEAR")
		// joints are nodes 0, 1, 3, 4, 5: the swing of "joint 2" went to
		// node 2 (ArmSpace), which is not a joint: move it to node 3..5.
		for i := range s.chans {
			if s.chans[i].node >= 2 {
				s.chans[i].node++
			}
		}
		s.chans = append(s.chans, confChan{node: 4, path: "scale", interp: "LINEAR", times: t30,
			values: confVec(t30, func(t float64) [3]float64 { x := 1 + 0.3*math.Sin(2*math.Pi*0.9*t); return [3]float64{x, x, x} })})
		out = append(out, s)
	}
	// Non-uniform scale: a joint at rest (1, 2, 0.5) and one whose
	// non-uniform scale is animated, their children turning (shear in
	// world space).
	{
		s := &confScene{name: "non-uniform-scale"}
		s.nodes = confChain(-1, 0, body)
		s.nodes[1].s = [3]float64{1, 2, 0.5}
		s.chans = append(s.chans, confChan{node: 0, path: "translation", interp: "LINEAR", times: t30, values: confVec(t30, hips(1))})
		swing(s, 0, t30, "LINEAR")
		s.chans = append(s.chans, confChan{node: 2, path: "scale", interp: "LINEAR", times: t30,
			values: confVec(t30, func(t float64) [3]float64 {
				return [3]float64{1 + 0.5*math.Sin(2*math.Pi*0.6*t), 1 - 0.3*math.Sin(2*math.Pi*0.8*t), 1.2}
			})})
		out = append(out, s)
	}
	// STEP: keys at the first time (0) and, for the clip's end, a last
	// key that holds (equal to the one before it); a second STEP channel
	// whose first key is after 0 and last before the end (glTF holds
	// them outside); a STEP translation. Key times are exact in float32
	// (see step-float32-times). The uniform codec has no discontinuities
	// (anim's documentation: a STEP is a ramp over the frame before it).
	stepShape := func(name string, t1, t2 []float32) *confScene {
		s := &confScene{name: name}
		s.nodes = confChain(-1, 0, body[:3])
		rv := confRot(t1, [3]float64{1, 0, 0}, 40, 0.3, 1)
		rv[len(rv)-1] = rv[len(rv)-2]
		s.chans = append(s.chans,
			confChan{node: 1, path: "rotation", interp: "STEP", times: t1, values: rv},
			confChan{node: 2, path: "rotation", interp: "STEP", times: t2, values: confRot(t2, [3]float64{0, 0, 1}, 50, 0.5, 0.3)},
			confChan{node: 0, path: "translation", interp: "STEP", times: []float32{0, 1, 1.5, 2}, values: [][4]float32{{0, 1, 0}, {0.1, 1, 0}, {0.1, 1.05, 0.2}, {0.1, 1.05, 0.2}}})
		s.toleranceError = map[anim.Codec]string{anim.CodecUniform: "the uniform codec ramps over the frame before a STEP"}
		return s
	}
	out = append(out, stepShape("step", confTimes(0, 0.5, 5), []float32{0.25, 0.75, 1.25}))
	// The same with key times that float32 rounds just above their grid
	// time: 1.2f = 1.20000005 s (36.0000014 frames at 30 Hz). The import
	// must place each STEP on its frame (it placed them a frame late,
	// holding the previous key over a frame interval, 21 mm at 3 cm,
	// while Compress reported success).
	out = append(out, stepShape("step-float32-times", confTimes(0, 0.5, 5), []float32{0.3, 0.9, 1.2}))
	// STEP at the clip's last key that jumps: the value before it holds
	// until the clip's end, where the pose is the last key's. The curve
	// codec stores it as its last segment's end pair; the uniform codec
	// has no discontinuities (it ramps over the last frame interval) and
	// Compress says so.
	{
		s := &confScene{name: "step-jump-at-end"}
		s.nodes = confChain(-1, 0, body[:3])
		ts := confTimes(0, 0.5, 5)
		s.chans = append(s.chans, confChan{node: 1, path: "rotation", interp: "STEP", times: ts, values: confRot(ts, [3]float64{1, 0, 0}, 40, 0.3, 1)})
		s.toleranceError = map[anim.Codec]string{anim.CodecUniform: "the uniform codec ramps over the frame before a STEP, the clip's last included"}
		out = append(out, s)
	}
	// A non-joint node above the skeleton that is itself animated (it
	// moves and turns): glTF moves the whole skeleton with it; the
	// import folds the node's transform into the root frame by frame
	// (ParseGLTF's documentation).
	{
		s := &confScene{name: "animated-above"}
		s.nodes = []confNode{{name: "Armature", parent: -1, t: [3]float64{0, 0, 0}}}
		s.nodes = append(s.nodes, confChain(0, 1, body[:3])...)
		swing(s, 1, t30, "LINEAR")
		s.chans = s.chans[:3]
		s.chans = append(s.chans,
			confChan{node: 0, path: "translation", interp: "LINEAR", times: t30, values: confVec(t30, func(t float64) [3]float64 { return [3]float64{0.5 * t, 0, 0} })},
			confChan{node: 0, path: "rotation", interp: "LINEAR", times: t30, values: confRot(t30, [3]float64{0, 1, 0}, 45, 0.25, 0)})
		out = append(out, s)
		// The node alone animated (the joints at rest), with a uniform
		// scale and a STEP, and a second animated node between two
		// joints: the animation is a clip of its own.
		o := &confScene{name: "animated-above-only"}
		o.nodes = []confNode{{name: "Armature", parent: -1, t: [3]float64{0, 0, 1}}}
		o.nodes = append(o.nodes, confChain(0, 1, body[:2])...)
		o.nodes = append(o.nodes, confNode{name: "Elbow", parent: 2, t: [3]float64{0, 0.1, 0}},
			confNode{name: "hand", parent: 3, joint: true, t: body[2]})
		o.chans = append(o.chans,
			confChan{node: 0, path: "translation", interp: "LINEAR", times: t30, values: confVec(t30, func(t float64) [3]float64 { return [3]float64{0.5 * t, 0.1 * t * t, 0} })},
			confChan{node: 0, path: "scale", interp: "LINEAR", times: t30, values: confVec(t30, func(t float64) [3]float64 { x := 1 + 0.2*math.Sin(2*t); return [3]float64{x, x, x} })},
			confChan{node: 3, path: "rotation", interp: "STEP", times: []float32{0, 0.5, 1}, values: confRot([]float32{0, 0.5, 1}, [3]float64{0, 0, 1}, 40, 0.7, 0.4)})
		o.toleranceError = map[anim.Codec]string{anim.CodecUniform: "the uniform codec ramps over the frame before a STEP"}
		out = append(out, o)
	}
	// LINEAR at the first and last keys: channels that start after 0 and
	// end before the clip's end (held outside), a rotation whose keys
	// flip sign (q, -q': slerp on the shorter arc).
	{
		s := &confScene{name: "linear-ends"}
		s.nodes = confChain(-1, 0, body[:4])
		s.chans = append(s.chans, confChan{node: 0, path: "translation", interp: "LINEAR", times: t30, values: confVec(t30, hips(1))})
		late := confTimes(0.5, 0.1, 11) // 0.5 .. 1.5 s
		rv := confRot(late, [3]float64{0, 0, 1}, 70, 0.7, 0)
		for k := range rv {
			if k%2 == 1 {
				for i := range rv[k] {
					rv[k][i] = -rv[k][i]
				}
			}
		}
		s.chans = append(s.chans,
			confChan{node: 1, path: "rotation", interp: "LINEAR", times: late, values: rv},
			confChan{node: 2, path: "scale", interp: "LINEAR", times: []float32{0.25, 1.75}, values: [][4]float32{{1, 1, 1}, {1.4, 0.8, 1}}},
			confChan{node: 3, path: "rotation", interp: "LINEAR", times: []float32{0, 2}, values: [][4]float32{{0, 0, 0, 1}, {0, float32(math.Sin(1.2)), 0, float32(math.Cos(1.2))}}})
		out = append(out, s)
	}
	// LINEAR rotation keys far apart: 24 Hz keys whose rotations turn by
	// up to 50° from one key to the next (Khronos's Fox walks so) on a
	// long arm; the codecs nlerp between samples, glTF slerps between
	// keys, and the import raises the rate until the two agree.
	out = append(out, farApartScene())
	// CUBICSPLINE: translation, rotation and non-uniform scale with keys
	// every 0.2 s, junk first in- and last out-tangents (glTF ignores
	// them), and (corner) keys whose in- and out-tangents differ.
	cubic := func(name string, corner bool, amp float64) *confScene {
		s := &confScene{name: name}
		s.nodes = confChain(-1, 0, body[:4])
		ts := confTimes(0, 0.2, 11)
		c1, c2 := -1, -1
		if corner {
			c1, c2 = 5, 4
		}
		a := amp
		s.chans = append(s.chans,
			confChan{node: 0, path: "translation", interp: "CUBICSPLINE", times: ts, values: confCubic(ts, false, [3]float64{},
				func(t float64) [3]float64 { return [3]float64{a * 0.2 * math.Sin(3*t), 1 + a*0.1*t*t, 0.3 * t} },
				func(t float64) [3]float64 { return [3]float64{a * 0.6 * math.Cos(3*t), a * 0.2 * t, 0.3} }, c1)},
			confChan{node: 1, path: "rotation", interp: "CUBICSPLINE", times: ts, values: confCubic(ts, true, [3]float64{0, 0.6, 0.8},
				func(t float64) [3]float64 { return [3]float64{a * 0.8 * math.Sin(2.5*t)} },
				func(t float64) [3]float64 { return [3]float64{a * 2 * math.Cos(2.5*t)} }, c2)},
			confChan{node: 2, path: "scale", interp: "CUBICSPLINE", times: ts, values: confCubic(ts, false, [3]float64{},
				func(t float64) [3]float64 { return [3]float64{1 + a*0.3*math.Sin(2*t), 1 - a*0.2*math.Sin(3*t), 1} },
				func(t float64) [3]float64 { return [3]float64{a * 0.6 * math.Cos(2*t), -a * 0.6 * math.Cos(3*t), 0} }, -1)})
		return s
	}
	// Smooth: the import raises the rate until interpolating between
	// the samples follows the cubic (the uniform codec lerps / nlerps
	// between frames).
	out = append(out, cubic("cubicspline", false, 1))
	// Gentler (a third of the motion): both codecs.
	out = append(out, cubic("cubicspline-gentle", false, 1.0/3))
	// A corner (the out-tangent of a key -0.5 × its in-tangent) bends
	// the cubic after the key more than 60 Hz samples follow: the import
	// raises the rate until they do.
	out = append(out, cubic("cubicspline-corner", true, 1))
	// Sparse accessors: outputs as a repeated first element plus sparse
	// substitution, and an input with no bufferView (zeros) plus sparse.
	{
		s := &confScene{name: "sparse"}
		s.nodes = confChain(-1, 0, body)
		s.chans = append(s.chans, confChan{node: 0, path: "translation", interp: "LINEAR", times: t30, values: confVec(t30, hips(1)), sparseIn: true})
		swing(s, 0, t30, "LINEAR")
		for i := range s.chans {
			s.chans[i].sparseOut = i%2 == 1
		}
		out = append(out, s)
	}
	// Keys at irregular times: irregular intervals, LINEAR and
	// CUBICSPLINE, on a 60 Hz grid (the import finds it).
	irregular := func(name string, times []float32) *confScene {
		s := &confScene{name: name}
		s.nodes = confChain(-1, 0, body[:4])
		s.chans = append(s.chans,
			confChan{node: 0, path: "translation", interp: "LINEAR", times: times, values: confVec(times, hips(1))},
			confChan{node: 1, path: "rotation", interp: "LINEAR", times: times, values: confRot(times, [3]float64{1, 0, 0}, 40, 0.6, 0.2)},
			confChan{node: 2, path: "rotation", interp: "CUBICSPLINE", times: times, values: confCubic(times, true, [3]float64{0, 0, 1},
				func(t float64) [3]float64 { return [3]float64{0.7 * math.Sin(2*t)} },
				func(t float64) [3]float64 { return [3]float64{1.4 * math.Cos(2*t)} }, -1)})
		return s
	}
	var grid []float32
	for _, k := range []int{0, 2, 7, 8, 19, 33, 34, 54, 80, 84, 106, 122} {
		grid = append(grid, float32(k)/60)
	}
	out = append(out, irregular("irregular-times", grid))
	// The same on no grid: from 30 Hz (keyGridRate's fallback) the
	// import raises the rate until the LINEAR corners at the keys off
	// the grid are cut by less than the target.
	out = append(out, irregular("irregular-off-grid", []float32{0, 0.037, 0.12, 0.13, 0.31, 0.55, 0.561, 0.9, 1.33, 1.4, 1.77, 2.03}))
	return out
}

// farApartScene is a chain of 1 m bones whose LINEAR rotation keys, at
// 24 Hz, turn by up to 50° from one key to the next (the elbow), 41° (the
// wrist) and 21° (the shoulder): nlerp between the keys departs from
// their slerp by 2.7 mrad at the elbow, millimetres at the hand.
func farApartScene() *confScene {
	s := &confScene{name: "linear-keys-far-apart"}
	s.nodes = confChain(-1, 0, [][3]float64{{0, 1, 0}, {1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {0.5, 0, 0}})
	ts := confTimes(0, 1.0/24, 25)
	s.chans = []confChan{
		{node: 1, path: "rotation", interp: "LINEAR", times: ts, values: confRot(ts, [3]float64{0, 0, 1}, 80, 1, 0)},
		{node: 2, path: "rotation", interp: "LINEAR", times: ts, values: confRot(ts, [3]float64{0, 0.6, 0.8}, 130, 1.5, 0.3)},
		{node: 3, path: "rotation", interp: "LINEAR", times: ts, values: confRot(ts, [3]float64{1, 0, 0}, 95, 1.7, 1)},
	}
	return s
}

// TestGLTFResampleFollowsCodecInterpolation: glTF slerps LINEAR rotation
// keys, both codecs nlerp between the clip's samples, and the two part by
// the cube of the angle between samples. The import measures the nlerp
// when it picks the rate, so keys tens of degrees apart are resampled
// until it follows the slerp within ResampleMax and ResampleP99 (measuring
// the slerp, their own 24 Hz grid looks exact, and Compress then misses
// its target by tens of times between the keys).
func TestGLTFResampleFollowsCodecInterpolation(t *testing.T) {
	sc := farApartScene()
	im, err := ParseGLTF(sc.name, sc.gltf(t), GLTFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clip := im.Clips[0]
	if clip.Rate <= 24 {
		t.Errorf("imported at %v Hz, want the 24 Hz key grid raised", clip.Rate)
	}
	miss, err := resampleMiss(im.Skeleton, clip)
	if err != nil {
		t.Fatal(err)
	}
	if miss.Between.Max > ResampleMax || miss.Between.P99 > ResampleP99 {
		t.Errorf("at %v Hz, nlerp between samples misses the slerp by %.4f mm (p99 %.4f mm), want within %.4f (%.4f) mm",
			clip.Rate, miss.Between.Max*1e3, miss.Between.P99*1e3, ResampleMax*1e3, ResampleP99*1e3)
	}
	// The same clip on its key grid: the nlerp misses by far more, which
	// is what the import has to see.
	at24, err := ParseGLTF(sc.name, sc.gltf(t), GLTFOptions{Rate: 24})
	if err != nil {
		t.Fatal(err)
	}
	miss24, err := resampleMiss(at24.Skeleton, at24.Clips[0])
	if err != nil {
		t.Fatal(err)
	}
	if miss24.Between.Max < 10*ResampleMax {
		t.Errorf("at 24 Hz, nlerp misses the slerp by %.4f mm: the scene does not test what it should", miss24.Between.Max*1e3)
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		if _, err := Compress(im.Skeleton, clip, CompressOptions{Codec: codec}); err != nil {
			t.Errorf("%v: %v", codec, err)
		}
	}
	t.Logf("%v Hz (at 24 Hz nlerp misses by %.3f mm, p99 %.3f mm; at %v Hz by %.4f mm, p99 %.4f mm)",
		clip.Rate, miss24.Between.Max*1e3, miss24.Between.P99*1e3, clip.Rate, miss.Between.Max*1e3, miss.Between.P99*1e3)
}
