package offline_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/kernels"
)

// The tests in this file are what a user with motion capture from other
// tools (MotionBuilder, Blender, Truebones, the Bandai Namco research
// set, CMU conversions) would write from the package documentation: they
// generate BVH files, import them, compress them with both codecs and
// compare the world-space positions the runtime samples with a forward
// kinematics written here from the BVH conventions the docs state
// (rotation channels apply in the order listed, angles in degrees,
// position channels replace the offset on their axis, centimetres unless
// CMU, between samples lerp and slerp on the shorter arc).

// rvJoint is one joint of a generated BVH file, in file (pre-)order.
type rvJoint struct {
	name     string
	parent   int
	offset   [3]float64
	channels []string // e.g. "Xposition", "Zrotation"
	endSite  bool
}

// rvFile is a generated BVH file: its joints (pre-order), frames (one
// value per channel, joint after joint) and how it is written.
type rvFile struct {
	joints []rvJoint
	frames [][]float64
	dt     float64
	// formatting
	crlf       bool   // CRLF line endings
	indent     string // "\t" or spaces
	sci        bool   // numbers in scientific notation
	negZero    bool   // zeros written as -0
	braceSame  bool   // "JOINT name {" on one line
	endSiteAlt bool   // "End site {" on one line
	pad        bool   // extra spaces between and after numbers
	declared   int    // Frames: value; 0 means len(frames)
	extraLines int    // frame lines beyond the declared count
}

func (f *rvFile) num(v float64) string {
	if v == 0 && f.negZero {
		return "-0"
	}
	if f.sci {
		return strconv.FormatFloat(v, 'e', 12, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// text writes the file.
func (f *rvFile) text() string {
	var b strings.Builder
	nl := "\n"
	if f.crlf {
		nl = "\r\n"
	}
	ind := f.indent
	if ind == "" {
		ind = "  "
	}
	sep := " "
	if f.pad {
		sep = " \t  "
	}
	children := make([][]int, len(f.joints))
	for i, j := range f.joints {
		if j.parent >= 0 {
			children[j.parent] = append(children[j.parent], i)
		}
	}
	var write func(i, depth int)
	write = func(i, depth int) {
		j := f.joints[i]
		pre := strings.Repeat(ind, depth)
		kw := "JOINT"
		if j.parent < 0 {
			kw = "ROOT"
		}
		if f.braceSame {
			b.WriteString(pre + kw + " " + j.name + " {" + nl)
		} else {
			b.WriteString(pre + kw + " " + j.name + nl + pre + "{" + nl)
		}
		b.WriteString(pre + ind + "OFFSET" + sep + f.num(j.offset[0]) + sep + f.num(j.offset[1]) + sep + f.num(j.offset[2]) + nl)
		if j.channels != nil {
			b.WriteString(pre + ind + "CHANNELS " + strconv.Itoa(len(j.channels)))
			for _, c := range j.channels {
				b.WriteString(sep + c)
			}
			b.WriteString(nl)
		}
		for _, c := range children[i] {
			write(c, depth+1)
		}
		if j.endSite {
			if f.endSiteAlt {
				b.WriteString(pre + ind + "End site {" + nl)
			} else {
				b.WriteString(pre + ind + "End Site" + nl + pre + ind + "{" + nl)
			}
			b.WriteString(pre + ind + ind + "OFFSET 0 " + f.num(-5) + " 0" + nl + pre + ind + "}" + nl)
		}
		b.WriteString(pre + "}" + nl)
	}
	b.WriteString("HIERARCHY" + nl)
	for i, j := range f.joints {
		if j.parent < 0 {
			write(i, 0)
		}
	}
	declared := f.declared
	if declared == 0 {
		declared = len(f.frames) - f.extraLines
	}
	b.WriteString("MOTION" + nl + "Frames:" + sep + strconv.Itoa(declared) + nl)
	b.WriteString("Frame Time:" + sep + strconv.FormatFloat(f.dt, 'g', -1, 64) + nl)
	for _, row := range f.frames {
		for k, v := range row {
			if k > 0 {
				b.WriteString(sep)
			}
			b.WriteString(f.num(v))
		}
		if f.pad {
			b.WriteString("   ")
		}
		b.WriteString(nl)
	}
	return b.String()
}

// rvRot is a row-major 3×3 rotation matrix.
type rvRot [3][3]float64

func rvIdent() rvRot { return rvRot{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}} }

func (a rvRot) mul(b rvRot) rvRot {
	var m rvRot
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				m[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return m
}

func (a rvRot) apply(v [3]float64) [3]float64 {
	return [3]float64{
		a[0][0]*v[0] + a[0][1]*v[1] + a[0][2]*v[2],
		a[1][0]*v[0] + a[1][1]*v[1] + a[1][2]*v[2],
		a[2][0]*v[0] + a[2][1]*v[1] + a[2][2]*v[2],
	}
}

// rvAxis is the rotation by deg degrees about axis 'X', 'Y' or 'Z'.
func rvAxis(axis byte, deg float64) rvRot {
	s, c := math.Sincos(deg * math.Pi / 180)
	switch axis {
	case 'X':
		return rvRot{{1, 0, 0}, {0, c, -s}, {0, s, c}}
	case 'Y':
		return rvRot{{c, 0, s}, {0, 1, 0}, {-s, 0, c}}
	}
	return rvRot{{c, -s, 0}, {s, c, 0}, {0, 0, 1}}
}

// rvQuat is (x, y, z, w) of rotation matrix m (Shepperd's method).
func rvQuat(m rvRot) [4]float64 {
	tr := m[0][0] + m[1][1] + m[2][2]
	var q [4]float64
	switch {
	case tr > 0:
		s := math.Sqrt(tr+1) * 2
		q = [4]float64{(m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s, s / 4}
	case m[0][0] > m[1][1] && m[0][0] > m[2][2]:
		s := math.Sqrt(1+m[0][0]-m[1][1]-m[2][2]) * 2
		q = [4]float64{s / 4, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s, (m[2][1] - m[1][2]) / s}
	case m[1][1] > m[2][2]:
		s := math.Sqrt(1+m[1][1]-m[0][0]-m[2][2]) * 2
		q = [4]float64{(m[0][1] + m[1][0]) / s, s / 4, (m[1][2] + m[2][1]) / s, (m[0][2] - m[2][0]) / s}
	default:
		s := math.Sqrt(1+m[2][2]-m[0][0]-m[1][1]) * 2
		q = [4]float64{(m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, s / 4, (m[1][0] - m[0][1]) / s}
	}
	return q
}

// rvMat is the rotation matrix of quaternion q (normalised first).
func rvMat(q [4]float64) rvRot {
	n := math.Sqrt(q[0]*q[0] + q[1]*q[1] + q[2]*q[2] + q[3]*q[3])
	x, y, z, w := q[0]/n, q[1]/n, q[2]/n, q[3]/n
	return rvRot{
		{1 - 2*(y*y+z*z), 2 * (x*y - z*w), 2 * (x*z + y*w)},
		{2 * (x*y + z*w), 1 - 2*(x*x+z*z), 2 * (y*z - x*w)},
		{2 * (x*z - y*w), 2 * (y*z + x*w), 1 - 2*(x*x+y*y)},
	}
}

// rvSlerp is the slerp on the shorter arc.
func rvSlerp(a, b [4]float64, u float64) [4]float64 {
	d := a[0]*b[0] + a[1]*b[1] + a[2]*b[2] + a[3]*b[3]
	if d < 0 {
		d = -d
		b = [4]float64{-b[0], -b[1], -b[2], -b[3]}
	}
	var wa, wb float64
	if d > 0.9999999 {
		wa, wb = 1-u, u
	} else {
		th := math.Acos(d)
		wa, wb = math.Sin((1-u)*th)/math.Sin(th), math.Sin(u*th)/math.Sin(th)
	}
	return [4]float64{wa*a[0] + wb*b[0], wa*a[1] + wb*b[1], wa*a[2] + wb*b[2], wa*a[3] + wb*b[3]}
}

// rvLocal is a joint's local transform.
type rvLocal struct {
	t [3]float64 // file units
	r rvRot
	s [3]float64
}

// local is joint j's transform at frame f, from the BVH conventions.
func (f *rvFile) local(fr, j int) rvLocal {
	first := 0
	for k := range j {
		first += len(f.joints[k].channels)
	}
	jt := f.joints[j]
	l := rvLocal{t: jt.offset, r: rvIdent(), s: [3]float64{1, 1, 1}}
	for k, c := range jt.channels {
		v := f.frames[fr][first+k]
		axis := c[0] &^ 0x20 // upper case
		if strings.HasSuffix(strings.ToLower(c), "position") {
			l.t[axis-'X'] = v
		} else {
			l.r = l.r.mul(rvAxis(axis, v))
		}
	}
	return l
}

// refLocal is the reference local pose at frame position x (clamped), in
// metres: samples at whole frames, lerp and slerp between them.
func (f *rvFile) refLocal(x, metres float64) []rvLocal {
	n := len(f.frames) - f.extraLines
	x = math.Max(0, math.Min(x, float64(n-1)))
	f0 := int(math.Floor(x))
	u := x - float64(f0)
	out := make([]rvLocal, len(f.joints))
	for j := range f.joints {
		a := f.local(f0, j)
		if u > 0 && f0+1 < n {
			b := f.local(f0+1, j)
			for k := range 3 {
				a.t[k] += (b.t[k] - a.t[k]) * u
			}
			a.r = rvMat(rvSlerp(rvQuat(a.r), rvQuat(b.r), u))
		}
		for k := range 3 {
			a.t[k] *= metres
		}
		out[j] = a
	}
	return out
}

// rvWorld is forward kinematics: each joint's world position and its
// three virtual vertices d metres along its world axes.
func rvWorld(parents []int, local []rvLocal, d float64) [][4][3]float64 {
	type world struct {
		p [3]float64
		m rvRot // rotation times scale
	}
	w := make([]world, len(local))
	out := make([][4][3]float64, len(local))
	for j, l := range local {
		m := l.r
		for r := range 3 {
			for c := range 3 {
				m[r][c] *= l.s[c]
			}
		}
		if p := parents[j]; p >= 0 {
			tp := w[p].m.apply(l.t)
			w[j] = world{[3]float64{w[p].p[0] + tp[0], w[p].p[1] + tp[1], w[p].p[2] + tp[2]}, w[p].m.mul(m)}
		} else {
			w[j] = world{l.t, m}
		}
		out[j][0] = w[j].p
		for k := range 3 {
			var e [3]float64
			e[k] = d
			v := w[j].m.apply(e)
			out[j][k+1] = [3]float64{w[j].p[0] + v[0], w[j].p[1] + v[1], w[j].p[2] + v[2]}
		}
	}
	return out
}

func rvDist(a, b [3]float64) float64 {
	return math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
}

func (f *rvFile) parents() []int {
	p := make([]int, len(f.joints))
	for i, j := range f.joints {
		p[i] = j.parent
	}
	return p
}

// rvChannelsRot are the six rotation orders.
var rvChannelsRot = [][]string{
	{"Zrotation", "Xrotation", "Yrotation"},
	{"Xrotation", "Yrotation", "Zrotation"},
	{"Yrotation", "Xrotation", "Zrotation"},
	{"Zrotation", "Yrotation", "Xrotation"},
	{"Xrotation", "Zrotation", "Yrotation"},
	{"Yrotation", "Zrotation", "Xrotation"},
}

// rvGen makes a file of nb joints (a tree: a spine with limbs), frames
// frames at frame time dt, with motion like motion capture: slow swings
// of tens of degrees plus jitter, the root walking and turning (its
// yaw wrapped into ±180 as exporters write it). style picks the channel
// layout: "mb" (root 6, others 3, mixed orders), "truebones" (6 on every
// joint), "mixed" (3, 6, 0, partial position channels, no CHANNELS line).
func rvGen(rng *rand.Rand, nb, frames int, dt float64, style string) *rvFile {
	f := &rvFile{dt: dt}
	for i := range nb {
		j := rvJoint{name: fmt.Sprintf("j%03d", i), parent: -1}
		if i > 0 {
			// mostly chains of 4, branching: a humanoid-like fan-out
			if i%4 == 0 {
				j.parent = rng.IntN(i)
			} else {
				j.parent = i - 1
			}
			j.offset = [3]float64{rng.Float64()*20 - 10, rng.Float64()*20 - 10, rng.Float64()*20 - 10}
		} else {
			j.offset = [3]float64{0, 95, 0}
		}
		order := rvChannelsRot[i%len(rvChannelsRot)]
		switch style {
		case "mb":
			if i == 0 {
				j.channels = append([]string{"Xposition", "Yposition", "Zposition"}, order...)
			} else {
				j.channels = order
			}
		case "truebones":
			j.channels = append([]string{"Xposition", "Yposition", "Zposition"}, order...)
		case "mixed":
			switch i % 5 {
			case 0:
				j.channels = append([]string{"Xposition", "Yposition", "Zposition"}, order...)
			case 1:
				j.channels = order
			case 2:
				j.channels = []string{} // CHANNELS 0
			case 3:
				j.channels = append([]string{order[2], "Yposition"}, order[:2]...) // a position among rotations
			case 4:
				j.channels = nil // no CHANNELS line at all
			}
			if i == 0 {
				j.channels = append([]string{"Xposition", "Yposition", "Zposition"}, order...)
			}
		}
		f.joints = append(f.joints, j)
	}
	// pre-order: a child's subtree follows it directly
	f.joints = rvPreorder(f.joints)
	for i := range f.joints {
		hasChild := false
		for _, k := range f.joints {
			if k.parent == i {
				hasChild = true
			}
		}
		f.joints[i].endSite = !hasChild
	}
	type ch struct{ amp, freq, phase float64 }
	var chans []ch
	for _, j := range f.joints {
		for range j.channels {
			chans = append(chans, ch{5 + 40*rng.Float64(), 0.2 + 1.5*rng.Float64(), 2 * math.Pi * rng.Float64()})
		}
	}
	for fr := range frames {
		t := float64(fr) * dt
		row := make([]float64, 0, len(chans))
		k := 0
		for ji, j := range f.joints {
			for _, c := range j.channels {
				p := chans[k]
				k++
				jitter := 0.3 * (rng.Float64() - 0.5)
				var v float64
				switch {
				case strings.HasSuffix(c, "position") && ji == 0:
					v = map[byte]float64{'X': 60 * t, 'Y': 95 + 3*math.Sin(6*t), 'Z': 20 * math.Sin(t)}[c[0]] + jitter*0.1
				case strings.HasSuffix(c, "position"):
					v = j.offset[c[0]-'X'] + 0.5*math.Sin(2*math.Pi*p.freq*t+p.phase) + jitter*0.05
				case ji == 0 && c[0] == 'Y':
					// the root turns on the spot: its yaw crosses ±180 and is wrapped
					v = math.Remainder(150+200*t, 360)
				default:
					v = p.amp*math.Sin(2*math.Pi*p.freq*t+p.phase) + jitter
				}
				row = append(row, v)
			}
		}
		f.frames = append(f.frames, row)
	}
	return f
}

// rvPreorder reorders joints (parents before children) so that every
// subtree is contiguous, as a BVH file lists them.
func rvPreorder(js []rvJoint) []rvJoint {
	children := make([][]int, len(js))
	var roots []int
	for i, j := range js {
		if j.parent < 0 {
			roots = append(roots, i)
		} else {
			children[j.parent] = append(children[j.parent], i)
		}
	}
	newIdx := make([]int, len(js))
	var order []int
	var visit func(i int)
	visit = func(i int) {
		newIdx[i] = len(order)
		order = append(order, i)
		for _, c := range children[i] {
			visit(c)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	out := make([]rvJoint, len(js))
	for n, i := range order {
		j := js[i]
		if j.parent >= 0 {
			j.parent = newIdx[j.parent]
		}
		out[n] = j
	}
	return out
}

// rvCheckImport compares the imported (uncompressed) clip with the
// reference forward kinematics at every frame and between frames: the
// importer's conventions are the documented ones.
func rvCheckImport(t *testing.T, f *rvFile, im *offline.Import, metres float64) {
	t.Helper()
	sk, c := im.Skeleton, im.Clips[0]
	n := len(f.frames) - f.extraLines
	if sk.NumBones() != len(f.joints) || c.Frames != n {
		t.Fatalf("imported %d bones, %d frames; the file has %d joints, %d frames", sk.NumBones(), c.Frames, len(f.joints), n)
	}
	for i, j := range f.joints {
		if sk.Names[i] != j.name || int(sk.Parents[i]) != j.parent {
			t.Fatalf("bone %d: %q parent %d, want %q parent %d", i, sk.Names[i], sk.Parents[i], j.name, j.parent)
		}
	}
	if want := 1 / f.dt; math.Abs(c.Rate-want) > want*2e-4 {
		t.Errorf("rate %v Hz, want %v", c.Rate, want)
	}
	parents := f.parents()
	local := make([]offline.Transform, len(f.joints))
	worst := 0.0
	for fr := 0; fr < n; fr++ {
		for _, u := range []float64{0, 0.5} {
			if u > 0 && fr == n-1 {
				continue
			}
			x := float64(fr) + u
			ref := rvWorld(parents, f.refLocal(x, metres), 0.03)
			c.PoseAt(x/c.Rate, local)
			got := rvWorld(parents, rvFromTransforms(local), 0.03)
			for b := range ref {
				for k := range 4 {
					worst = math.Max(worst, rvDist(ref[b][k], got[b][k]))
				}
			}
		}
	}
	// The import is float64 throughout: only rounding separates it from
	// the reference.
	if worst > 1e-9 {
		t.Errorf("imported clip is %g m from the reference forward kinematics", worst)
	}
}

func rvFromTransforms(ts []offline.Transform) []rvLocal {
	out := make([]rvLocal, len(ts))
	for i, x := range ts {
		out[i] = rvLocal{t: x.T, r: rvMat(x.R), s: x.S}
	}
	return out
}

func rvFromPose(p []kernels.Transform) []rvLocal {
	out := make([]rvLocal, len(p))
	for i, x := range p {
		// as a game would: the matrix of the quaternion as decoded, not
		// renormalised (the formula kernels.Transform.Matrix uses)
		qx, qy, qz, qw := float64(x.Rot[0]), float64(x.Rot[1]), float64(x.Rot[2]), float64(x.Rot[3])
		r := rvRot{
			{1 - 2*(qy*qy+qz*qz), 2 * (qx*qy - qz*qw), 2 * (qx*qz + qy*qw)},
			{2 * (qx*qy + qz*qw), 1 - 2*(qx*qx+qz*qz), 2 * (qy*qz - qx*qw)},
			{2 * (qx*qz - qy*qw), 2 * (qy*qz + qx*qw), 1 - 2*(qx*qx+qy*qy)},
		}
		out[i] = rvLocal{
			t: [3]float64{float64(x.Trans[0]), float64(x.Trans[1]), float64(x.Trans[2])},
			r: r,
			s: [3]float64{float64(x.Scale[0]), float64(x.Scale[1]), float64(x.Scale[2])},
		}
	}
	return out
}

// rvResult is the error of one codec on one file.
type rvResult struct {
	p99, max, jointMax float64
	stats              offline.CompressStats
	missed             *offline.ToleranceError
}

// rvCompressCheck compresses the imported clip with codec at opt, writes
// and loads a blob, samples it forward at every frame, at 1/4, 1/2 and
// 3/4 between frames, before the start and past the end, and measures
// the error at the joints and at virtual vertices 3 cm from them against
// the reference forward kinematics. A clip Compress returns must meet
// its target by this independent measure; when it misses, Compress must
// say so with a *ToleranceError.
func rvCompressCheck(t *testing.T, f *rvFile, im *offline.Import, metres float64, opt offline.CompressOptions) rvResult {
	t.Helper()
	sk, c := im.Skeleton, im.Clips[0]
	cc, err := offline.Compress(sk, c, opt)
	var res rvResult
	if err != nil {
		var te *offline.ToleranceError
		if !errors.As(err, &te) {
			t.Fatalf("%v: Compress: %v", opt.Codec, err)
		}
		res.missed = te
		cc = te.Compressed
	}
	res.stats = cc.Stats
	var bld offline.Builder
	if err := bld.AddClip(bld.AddSkeleton(sk), cc); err != nil {
		t.Fatalf("%v: AddClip: %v", opt.Codec, err)
	}
	data, err := bld.Bytes()
	if err != nil {
		t.Fatalf("%v: Bytes: %v", opt.Codec, err)
	}
	blob, err := anim.Load(data)
	if err != nil {
		t.Fatalf("%v: Load: %v", opt.Codec, err)
	}
	cv := blob.Clip(0)
	n := c.Frames
	if cv.Frames() != n || cv.Bones() != len(f.joints) {
		t.Fatalf("%v: blob clip %d frames %d bones", opt.Codec, cv.Frames(), cv.Bones())
	}
	cursor := make([]uint32, cv.CursorWords())
	pose := make([]kernels.Transform, cv.Bones())
	parents := f.parents()
	rate := cv.Rate()
	vd := opt.VertexDistance
	if vd == 0 {
		vd = 0.03
	}
	var errs []float64
	times := []float32{-1}
	for fr := range n {
		times = append(times, float32(float64(fr)/c.Rate))
		if fr+1 < n {
			for _, u := range []float64{0.25, 0.5, 0.75} {
				times = append(times, float32((float64(fr)+u)/c.Rate))
			}
		}
	}
	times = append(times, cv.Duration(), cv.Duration()+1)
	for _, tm := range times {
		if err := cv.Sample(tm, cursor, pose); err != nil {
			t.Fatalf("%v: Sample(%v): %v", opt.Codec, tm, err)
		}
		// the frame position the sampler plays (float32 time × rate)
		x := float64(float32(tm * rate))
		ref := rvWorld(parents, f.refLocal(x, metres), vd)
		got := rvWorld(parents, rvFromPose(pose), vd)
		for b := range ref {
			e := 0.0
			for k := 1; k < 4; k++ {
				e = math.Max(e, rvDist(ref[b][k], got[b][k]))
			}
			errs = append(errs, e)
			res.max = math.Max(res.max, e)
			res.jointMax = math.Max(res.jointMax, rvDist(ref[b][0], got[b][0]))
		}
	}
	sort.Float64s(errs)
	res.p99 = errs[int(math.Ceil(0.99*float64(len(errs))))-1]
	tol := opt.Tolerance
	if tol == 0 {
		tol = 0.0001
	}
	maxErr := opt.MaxError
	if maxErr == 0 {
		maxErr = math.Max(vd, 10*tol)
	}
	if res.missed == nil {
		// The percentile here mixes samples and between-sample points
		// (Compress bounds each apart); 5 % slack for that and float32.
		if res.p99 > 1.05*tol || res.max > maxErr {
			t.Errorf("%v: Compress met its target (p99 %.4g mm, max %.4g mm) but the forward kinematics here measures p99 %.4g mm, max %.4g mm (tolerance %.4g mm, MaxError %.4g mm)",
				opt.Codec, cc.Stats.P99*1e3, cc.Stats.Max*1e3, res.p99*1e3, res.max*1e3, tol*1e3, maxErr*1e3)
		}
	} else if res.p99 <= tol && res.max <= maxErr {
		t.Logf("%v: Compress reported a miss (%v) that the forward kinematics here does not see: p99 %.4g mm, max %.4g mm", opt.Codec, res.missed, res.p99*1e3, res.max*1e3)
	}
	return res
}

// rvRun imports f's text as name and checks import and both codecs.
func rvRun(t *testing.T, name string, f *rvFile, opt offline.BVHOptions, metres float64) {
	t.Helper()
	text := f.text()
	im, err := offline.ParseBVH(name, []byte(text), opt)
	if err != nil {
		t.Fatalf("ParseBVH: %v", err)
	}
	if im.Unit.Metres != metres {
		t.Fatalf("unit %v, want %v m", im.Unit, metres)
	}
	rvCheckImport(t, f, im, metres)
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		start := time.Now()
		r := rvCompressCheck(t, f, im, metres, offline.CompressOptions{Codec: codec})
		miss := ""
		if r.missed != nil {
			miss = " MISSED: " + r.missed.Error()
		}
		t.Logf("%s %v: %d bones %d frames: here p99 %.4f mm max %.4f mm joint max %.4f mm; Compress p99 %.4f mm max %.4f mm, ratio %.2f, %d passes, %v%s",
			name, codec, len(f.joints), im.Clips[0].Frames, r.p99*1e3, r.max*1e3, r.jointMax*1e3, r.stats.P99*1e3, r.stats.Max*1e3, r.stats.Ratio(), r.stats.Passes, time.Since(start).Round(time.Millisecond), miss)
	}
}

// TestBVHFromOtherToolsRoundTrip: BVH files as other tools write them
// (channel orders other than ZXY, position channels on every joint or on
// some, 0/3/6 channels mixed, CRLF, tabs, padding, scientific notation,
// negative zero, "JOINT name {" and "End site {" on one line, more frame
// lines than declared, 1000 Hz, a yaw crossing ±180) import to the
// documented conventions and compress with both codecs within the
// default target, by an independent forward kinematics.
func TestBVHFromOtherToolsRoundTrip(t *testing.T) {
	type tc struct {
		name   string
		nb     int
		frames int
		dt     float64
		style  string
		tweak  func(f *rvFile)
	}
	cases := []tc{
		{"motionbuilder_orders", 24, 90, 1.0 / 30, "mb", nil},
		{"truebones_6ch_every_joint", 20, 60, 1.0 / 30, "truebones", nil},
		{"mixed_0_3_6_partial", 25, 60, 1.0 / 60, "mixed", nil},
		{"crlf_tabs_padding", 12, 40, 1.0 / 120, "mb", func(f *rvFile) { f.crlf, f.indent, f.pad = true, "\t", true }},
		{"scientific_negzero_braces", 12, 40, 1.0 / 24, "mixed", func(f *rvFile) { f.sci, f.negZero, f.braceSame, f.endSiteAlt = true, true, true, true }},
		{"extra_frame_lines", 8, 30, 1.0 / 30, "mb", func(f *rvFile) { f.extraLines = 3 }},
		{"khz", 8, 200, 0.001, "mb", nil},
		{"one_joint", 1, 50, 1.0 / 30, "mb", nil},
		{"one_frame", 10, 1, 1.0 / 30, "mb", nil},
		{"two_frames", 10, 2, 1.0 / 30, "mb", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(c.name)), 7))
			f := rvGen(rng, c.nb, c.frames+0, c.dt, c.style)
			if c.tweak != nil {
				c.tweak(f)
				if f.extraLines > 0 {
					more := rvGen(rng, c.nb, f.extraLines, c.dt, c.style)
					f.frames = append(f.frames, more.frames...)
				}
			}
			rvRun(t, c.name+".bvh", f, offline.BVHOptions{}, 0.01)
		})
	}
}

// TestBVHGimbalLockAndWrap: a joint whose middle Euler angle sits at ±90
// (gimbal lock: the outer two angles trade places) for a stretch of
// frames, and angles written past ±180 (270 for -90, 540 for 180) and
// wrapped ones that jump by 360 between frames, import to the same
// rotations and compress within the target with both codecs.
func TestBVHGimbalLockAndWrap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	f := rvGen(rng, 6, 80, 1.0/30, "mb")
	// joint 1 is ZXY-ordered or whatever rvGen gave it: force ZXY and
	// lock X at 90 for frames 20..40 while Z and Y swing.
	f.joints[1].channels = []string{"Zrotation", "Xrotation", "Yrotation"}
	first := len(f.joints[0].channels)
	for fr := range f.frames {
		row := f.frames[fr]
		tt := float64(fr) / 30
		x := 60 * math.Sin(tt*2)
		if fr >= 20 && fr <= 40 {
			x = 90
		}
		row[first] = 30 * math.Sin(tt*3)
		row[first+1] = x
		row[first+2] = -40 * math.Sin(tt*2.5)
		// joint 2: an unwrapped angle that keeps growing past 180
		row[first+3] = 7 * float64(fr)
		// joint 3: the same rotation written with +360 on odd frames
		if fr%2 == 1 {
			row[first+6] += 360
		}
	}
	rvRun(t, "gimbal.bvh", f, offline.BVHOptions{}, 0.01)
}

// TestBVHLargeHierarchies: 300 and 1000 joints (bushy and as one long
// chain) import and compress with both codecs within the target, in
// bounded time.
func TestBVHLargeHierarchies(t *testing.T) {
	if testing.Short() || os.Getenv("VKJOBS_ANIM_LONG") == "" {
		t.Skip("a minute or more of compression: set VKJOBS_ANIM_LONG=1")
	}
	for _, c := range []struct {
		name   string
		nb     int
		frames int
		chain  bool
	}{
		{"bushy300", 300, 30, false},
		{"bushy1000", 1000, 4, false},
		{"chain120", 120, 6, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.nb), 9))
			f := rvGen(rng, c.nb, c.frames, 1.0/30, "mb")
			if c.chain {
				for i := 1; i < len(f.joints); i++ {
					f.joints[i].parent = i - 1
					f.joints[i].offset = [3]float64{0, 1, 0}
					f.joints[i].endSite = i == len(f.joints)-1
				}
				f.joints[0].endSite = false
			}
			start := time.Now()
			rvRun(t, c.name+".bvh", f, offline.BVHOptions{}, 0.01)
			t.Logf("%s: %v", c.name, time.Since(start))
		})
	}
}

// TestBVHNames: duplicate joint names, very long names and names with
// odd characters import, compress, build and load with the names kept.
func TestBVHNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f := rvGen(rng, 8, 20, 1.0/30, "mb")
	long := strings.Repeat("VeryLongJointName_", 4000) // 72 KB
	names := []string{"Hips", "Spine", "Spine", long, "mixamorig:LeftArm", "Left Hand", "Spine", "日本語"}
	for i := range f.joints {
		f.joints[i].name = names[i]
	}
	text := f.text()
	im, err := offline.ParseBVH("names.bvh", []byte(text), offline.BVHOptions{})
	if err != nil {
		t.Fatalf("ParseBVH: %v", err)
	}
	for i, want := range names {
		if im.Skeleton.Names[i] != want {
			t.Errorf("bone %d named %.40q, want %.40q", i, im.Skeleton.Names[i], want)
		}
	}
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		cc, err := offline.Compress(im.Skeleton, im.Clips[0], offline.CompressOptions{Codec: codec})
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		var b offline.Builder
		if err := b.AddClip(b.AddSkeleton(im.Skeleton), cc); err != nil {
			t.Fatal(err)
		}
		data, err := b.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		blob, err := anim.Load(data)
		if err != nil {
			t.Fatal(err)
		}
		sv := blob.Clip(0).Skeleton()
		for i, want := range names {
			if got := sv.BoneName(i); got != want {
				t.Errorf("%v: blob bone %d named %.40q, want %.40q", codec, i, got, want)
			}
		}
	}
}

// rvSmall is a two-joint file with the given MOTION section.
func rvSmall(motion string) string {
	return "HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n JOINT Leg\n {\n  OFFSET 0 -10 0\n  CHANNELS 3 Zrotation Xrotation Yrotation\n  End Site\n  {\n   OFFSET 0 -10 0\n  }\n }\n}\nMOTION\n" + motion
}

// TestBVHMalformedNamesFileAndLine: every refused file is a *ParseError
// naming the file and the line of the fault (Line > 0), with what is
// wrong; nothing panics.
func TestBVHMalformedNamesFileAndLine(t *testing.T) {
	zero := "0 0 0 0 0 0 0 0 0\n"
	cases := []struct {
		name string
		src  string
		line int    // the line of the fault
		want string // in the message
	}{
		// Frame times the header accepts must give a clip: a rate above
		// what a clip may have must be refused at the Frame Time line.
		{"frame time 1e-5 s (100 kHz)", rvSmall("Frames: 2\nFrame Time: 0.00001\n" + zero + zero), 18, "frame time"},
		{"frame time 5e-5 s (20 kHz)", rvSmall("Frames: 2\nFrame Time: 0.00005\n" + zero + zero), 18, "frame time"},
		// Values beyond what a pose holds: the line of the number.
		{"offset 1e300", strings.Replace(rvSmall("Frames: 1\nFrame Time: 0.01\n"+zero), "OFFSET 0 -10 0", "OFFSET 0 -1e300 0", 1), 8, "OFFSET"},
		{"position 1e25", rvSmall("Frames: 2\nFrame Time: 0.01\n" + zero + "0 1e25 0 0 0 0 0 0 0\n"), 20, "Yposition"},
		{"extra numbers on a line", rvSmall("Frames: 2\nFrame Time: 0.01\n" + zero + "0 0 0 0 0 0 0 0 0 5 6\n"), 20, "11 values"},
		{"fewer lines than declared", rvSmall("Frames: 3\nFrame Time: 0.01\n" + zero + zero), 20, "truncated"},
		{"cut mid-line", rvSmall("Frames: 2\nFrame Time: 0.01\n" + zero + "0 0 0 0"), 20, "4 values"},
		{"frames 0", rvSmall("Frames: 0\nFrame Time: 0.01\n"), 17, "frame count"},
		{"frame count missing", rvSmall("Frames:\nFrame Time: 0.01\n" + zero), 18, ""},
		{"rotation 1.7e308 degrees", rvSmall("Frames: 2\nFrame Time: 0.01\n" + zero + "0 0 0 1.7e308 0 0 0 0 0\n"), 20, "Zrotation"},
		{"brace missing", strings.Replace(rvSmall("Frames: 1\nFrame Time: 0.01\n"+zero), " JOINT Leg\n {\n", " JOINT Leg\n", 1), 7, ""},
	}
	for _, c := range cases {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v", c.name, r)
				}
			}()
			im, err := offline.ParseBVH("user.bvh", []byte(c.src), offline.BVHOptions{})
			var pe *offline.ParseError
			switch {
			case err == nil:
				t.Errorf("%s: imported (%d frames at %v Hz), want a *ParseError", c.name, im.Clips[0].Frames, im.Clips[0].Rate)
			case !errors.As(err, &pe) || pe.File != "user.bvh":
				t.Errorf("%s: %T %v, want a *ParseError naming user.bvh", c.name, err, err)
			case pe.Line == 0:
				t.Errorf("%s: %v: names no line", c.name, err)
			case c.line > 0 && pe.Line != c.line:
				t.Errorf("%s: %v: line %d, want %d", c.name, err, pe.Line, c.line)
			case !strings.Contains(pe.Msg, c.want):
				t.Errorf("%s: %v: want %q in it", c.name, err, c.want)
			default:
				t.Logf("%s: %v", c.name, err)
			}
		}()
	}
}

// TestBVHFrameTimes: frame times in the documented range import at their
// rate (rounded to whole hertz within 1/60 %), 1000 Hz and 10 kHz too.
func TestBVHFrameTimes(t *testing.T) {
	zero := "0 0 0 0 0 0 0 0 0\n"
	for _, c := range []struct {
		dt   string
		rate float64
	}{
		{"0.0333333", 30}, {"0.008333", 120}, {"0.001", 1000}, {"1e-3", 1000}, {"0.0001", 10000},
		{"0.04", 25}, {"100", 0.01}, {"0.041666667", 24}, {"0.0111111", 90}, {"0.016667", 60},
	} {
		im, err := offline.ParseBVH("t.bvh", []byte(rvSmall("Frames: 2\nFrame Time: "+c.dt+"\n"+zero+zero)), offline.BVHOptions{})
		if err != nil {
			t.Errorf("frame time %s: %v", c.dt, err)
			continue
		}
		if r := im.Clips[0].Rate; math.Abs(r-c.rate) > c.rate*1e-4 {
			t.Errorf("frame time %s: rate %v, want %v", c.dt, r, c.rate)
		}
	}
}

// TestBVHFormattingVariants: line endings and spellings other tools
// write.
func TestBVHFormattingVariants(t *testing.T) {
	base := rvSmall("Frames: 2\nFrame Time: 0.01\n0 0 0 0 0 0 0 0 0\n0 0 0 0 0 0 0 0 0\n")
	cases := map[string]string{
		"CRLF":                   strings.ReplaceAll(base, "\n", "\r\n"),
		"CR only (classic Mac)":  strings.ReplaceAll(base, "\n", "\r"),
		"UTF-8 byte order mark":  "\ufeff" + base,
		"no final newline":       strings.TrimSuffix(base, "\n"),
		"lower-case keywords":    strings.NewReplacer("HIERARCHY", "hierarchy", "ROOT", "root", "JOINT", "joint", "OFFSET", "offset", "CHANNELS", "channels", "End Site", "end site", "MOTION", "motion").Replace(base),
		"blank lines everywhere": strings.ReplaceAll(base, "\n", "\n\n"),
		"trailing spaces":        strings.ReplaceAll(base, "\n", "  \t\n"),
	}
	// Spellings no exporter is known to write: a clear error is enough.
	for n, src := range map[string]string{
		"Frame Time without space": strings.Replace(base, "Frame Time: 0.01", "Frame Time:0.01", 1),
		"Frames without space":     strings.Replace(base, "Frames: 2", "Frames:2", 1),
	} {
		_, err := offline.ParseBVH("v.bvh", []byte(src), offline.BVHOptions{})
		var pe *offline.ParseError
		if err != nil && (!errors.As(err, &pe) || pe.Line == 0) {
			t.Errorf("%s: %v names no line", n, err)
		}
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		im, err := offline.ParseBVH("v.bvh", []byte(cases[n]), offline.BVHOptions{})
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if im.Skeleton.NumBones() != 2 || im.Clips[0].Frames != 2 {
			t.Errorf("%s: %d bones %d frames", n, im.Skeleton.NumBones(), im.Clips[0].Frames)
		}
	}
}

// rvAllocated is the bytes fn allocates.
func rvAllocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestBVHMemoryBounded: what a file declares does not size the import:
// a short file declaring millions of frames (or 100 million) allocates in
// proportion to its size before it is refused, and an honest large file
// allocates a bounded multiple of its samples.
func TestBVHMemoryBounded(t *testing.T) {
	for _, declared := range []int{offline.MaxFrames, 100_000_000} {
		src := []byte(rvSmall(fmt.Sprintf("Frames: %d\nFrame Time: 0.01\n", declared) + strings.Repeat("0 0 0 0 0 0 0 0 0\n", 100)))
		var err error
		n := rvAllocated(func() { _, err = offline.ParseBVH("big.bvh", src, offline.BVHOptions{}) })
		var pe *offline.ParseError
		if !errors.As(err, &pe) || pe.Line == 0 {
			t.Errorf("declared %d frames: %v, want a *ParseError with a line", declared, err)
		}
		if n > 64*uint64(len(src))+1<<16 {
			t.Errorf("declared %d frames: a %d-byte file allocated %d bytes", declared, len(src), n)
		}
	}
	// 300 joints × 3 channels × 2000 frames (about 12 MB of text).
	rng := rand.New(rand.NewPCG(1, 1))
	f := rvGen(rng, 300, 2000, 1.0/120, "mb")
	src := []byte(f.text())
	var im *offline.Import
	var err error
	n := rvAllocated(func() { im, err = offline.ParseBVH("large.bvh", src, offline.BVHOptions{}) })
	if err != nil {
		t.Fatal(err)
	}
	samples := 3 * im.Skeleton.NumBones() * im.Clips[0].Frames
	t.Logf("%d MB file, %d samples: %d MB allocated (%.1f B per sample, %.1f × the file)", len(src)>>20, samples, n>>20, float64(n)/float64(samples), float64(n)/float64(len(src)))
	// A sample is 4 float64 and a frame number (36 B): allow 3× that.
	if per := float64(n) / float64(samples); per > 3*36 {
		t.Errorf("import allocates %.0f B per sample", per)
	}
}

// TestCompressOptionsExtremes: every CompressOptions field at its
// extremes is refused with an error naming the field, or honoured (a
// clip within its target, or a *ToleranceError saying it missed); none
// panics or runs unbounded.
func TestCompressOptionsExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	f := rvGen(rng, 10, 40, 1.0/30, "mb")
	im, err := offline.ParseBVH("opts.bvh", []byte(f.text()), offline.BVHOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inf, nan := math.Inf(1), math.NaN()
	type oc struct {
		name  string
		opt   offline.CompressOptions
		field string // non-empty: must be refused naming it
	}
	var cases []oc
	for _, codec := range []anim.Codec{anim.CodecCurve, anim.CodecUniform} {
		o := func(mod func(*offline.CompressOptions)) offline.CompressOptions {
			x := offline.CompressOptions{Codec: codec}
			mod(&x)
			return x
		}
		cases = append(cases,
			oc{"Tolerance -1", o(func(x *offline.CompressOptions) { x.Tolerance = -1 }), "Tolerance"},
			oc{"Tolerance NaN", o(func(x *offline.CompressOptions) { x.Tolerance = nan }), "Tolerance"},
			oc{"Tolerance +Inf", o(func(x *offline.CompressOptions) { x.Tolerance = inf }), "Tolerance"},
			oc{"Tolerance 1e-300", o(func(x *offline.CompressOptions) { x.Tolerance = 1e-300 }), ""},
			oc{"Tolerance 1e-9", o(func(x *offline.CompressOptions) { x.Tolerance = 1e-9 }), ""},
			oc{"Tolerance 1e300", o(func(x *offline.CompressOptions) { x.Tolerance = 1e300 }), ""},
			oc{"ChainShare -0.5", o(func(x *offline.CompressOptions) { x.ChainShare = -0.5 }), "ChainShare"},
			oc{"ChainShare NaN", o(func(x *offline.CompressOptions) { x.ChainShare = nan }), "ChainShare"},
			oc{"ChainShare 1e-12", o(func(x *offline.CompressOptions) { x.ChainShare = 1e-12 }), ""},
			oc{"ChainShare 1e12", o(func(x *offline.CompressOptions) { x.ChainShare = 1e12 }), ""},
			oc{"MaxError -1", o(func(x *offline.CompressOptions) { x.MaxError = -1 }), "MaxError"},
			oc{"MaxError NaN", o(func(x *offline.CompressOptions) { x.MaxError = nan }), "MaxError"},
			oc{"MaxError +Inf", o(func(x *offline.CompressOptions) { x.MaxError = inf }), ""},
			oc{"MaxError 1e-12", o(func(x *offline.CompressOptions) { x.MaxError = 1e-12 }), ""},
			oc{"VertexDistance -0.03", o(func(x *offline.CompressOptions) { x.VertexDistance = -0.03 }), "VertexDistance"},
			oc{"VertexDistance NaN", o(func(x *offline.CompressOptions) { x.VertexDistance = nan }), "VertexDistance"},
			oc{"VertexDistance +Inf", o(func(x *offline.CompressOptions) { x.VertexDistance = inf }), "VertexDistance"},
			oc{"VertexDistance 1e-9", o(func(x *offline.CompressOptions) { x.VertexDistance = 1e-9 }), ""},
			oc{"VertexDistance 1e6", o(func(x *offline.CompressOptions) { x.VertexDistance = 1e6 }), ""},
			oc{"SegmentSeconds -1", o(func(x *offline.CompressOptions) { x.SegmentSeconds = -1 }), "SegmentSeconds"},
			oc{"SegmentSeconds NaN", o(func(x *offline.CompressOptions) { x.SegmentSeconds = nan }), "SegmentSeconds"},
			oc{"SegmentSeconds +Inf", o(func(x *offline.CompressOptions) { x.SegmentSeconds = inf }), "SegmentSeconds"},
			oc{"SegmentSeconds 1e-9", o(func(x *offline.CompressOptions) { x.SegmentSeconds = 1e-9 }), ""},
			oc{"SegmentSeconds 1/rate", o(func(x *offline.CompressOptions) { x.SegmentSeconds = 1.0 / 30 }), ""},
			oc{"SegmentSeconds 1e300", o(func(x *offline.CompressOptions) { x.SegmentSeconds = 1e300 }), ""},
			oc{"OpenLoop", o(func(x *offline.CompressOptions) { x.OpenLoop = true }), ""},
			oc{"Passes -1", o(func(x *offline.CompressOptions) { x.Passes = -1 }), "Passes"},
			oc{"Passes 1", o(func(x *offline.CompressOptions) { x.Passes = 1 }), ""},
			oc{"Passes 2", o(func(x *offline.CompressOptions) { x.Passes = 2 }), ""},
			oc{"Passes 1000", o(func(x *offline.CompressOptions) { x.Passes = 1000 }), ""},
			oc{"UniformSegmentFrames 1", o(func(x *offline.CompressOptions) { x.UniformSegmentFrames = 1 }), "UniformSegmentFrames"},
			oc{"UniformSegmentFrames 3", o(func(x *offline.CompressOptions) { x.UniformSegmentFrames = 3 }), "UniformSegmentFrames"},
			oc{"UniformSegmentFrames -16", o(func(x *offline.CompressOptions) { x.UniformSegmentFrames = -16 }), "UniformSegmentFrames"},
			oc{"UniformSegmentFrames 512", o(func(x *offline.CompressOptions) { x.UniformSegmentFrames = 512 }), "UniformSegmentFrames"},
			oc{"UniformSegmentFrames 2", o(func(x *offline.CompressOptions) { x.UniformSegmentFrames = 2 }), ""},
			oc{"UniformSegmentFrames 256", o(func(x *offline.CompressOptions) { x.UniformSegmentFrames = 256 }), ""},
		)
	}
	cases = append(cases,
		oc{"Codec 2", offline.CompressOptions{Codec: 2}, "Codec"},
		oc{"Codec 255", offline.CompressOptions{Codec: 255}, "Codec"},
	)
	for _, c := range cases {
		name := fmt.Sprintf("%v %s", c.opt.Codec, c.name)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v", name, r)
				}
			}()
			start := time.Now()
			cc, err := offline.Compress(im.Skeleton, im.Clips[0], c.opt)
			el := time.Since(start)
			var te *offline.ToleranceError
			switch {
			case c.field != "":
				if err == nil || !strings.Contains(err.Error(), c.field) {
					t.Errorf("%s: %v, want an error naming %s", name, err, c.field)
				}
			case errors.As(err, &te):
				t.Logf("%s: missed (reported): p99 %.3g mm max %.3g mm, %v", name, te.P99*1e3, te.Max*1e3, el)
			case err != nil:
				t.Errorf("%s: %v", name, err)
			default:
				if c.opt.Passes != 1 {
					r := rvCompressCheck(t, f, im, 0.01, c.opt)
					t.Logf("%s: ok, %d bytes, %d passes, p99 %.3g mm (here %.3g mm), %v", name, cc.Stats.Bytes, cc.Stats.Passes, cc.Stats.P99*1e3, r.p99*1e3, el)
				} else {
					t.Logf("%s: ok (unmeasured), %d bytes, %v", name, cc.Stats.Bytes, el)
				}
			}
			if el > 20*time.Second {
				t.Errorf("%s: took %v", name, el)
			}
		}()
	}
}
