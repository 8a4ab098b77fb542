package offline

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/vkjobs/vkjobs/anim/internal/format"
)

// FirstFrame says what to do with a BVH file's frame 0.
type FirstFrame uint8

const (
	// FirstFrameAuto drops frame 0 of CMU files (a synthetic T-pose that is
	// not part of the motion) and keeps it otherwise.
	FirstFrameAuto FirstFrame = iota
	FirstFrameKeep
	FirstFrameDrop
)

// BVHOptions are the import choices for BVH files.
type BVHOptions struct {
	// Unit is the file's length unit; the zero value means auto: CMU
	// files (named NN_NN.bvh, or with CMU's joint names) use UnitCMU, all
	// others UnitCentimetre. The choice and its reason go to Import.Notes.
	Unit       LengthUnit
	FirstFrame FirstFrame
}

var cmuName = regexp.MustCompile(`^[0-9]+_[0-9]+\.bvh$`)

// bvhJoint is a joint while parsing.
type bvhJoint struct {
	name     string
	parent   int
	offset   Vec3
	hasOff   bool
	channels []uint8 // 0..2 position x,y,z; 3..5 rotation x,y,z
	first    int     // index of its first channel in a frame line
	line     int
	offLine  int // the line of its OFFSET
}

// bvhScanner yields whitespace-separated tokens with their line numbers.
type bvhScanner struct {
	file  string
	lines [][]byte
	li    int      // current line index
	toks  [][]byte // remaining tokens of the current line
}

func (s *bvhScanner) errf(line int, format string, args ...any) error {
	return &ParseError{File: s.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (s *bvhScanner) skipBlank() {
	for len(s.toks) == 0 && s.li+1 < len(s.lines) {
		s.li++
		s.toks = bytes.Fields(s.lines[s.li])
	}
}

func (s *bvhScanner) next() (string, int, bool) {
	s.skipBlank()
	if len(s.toks) == 0 {
		return "", s.li + 1, false
	}
	t := s.toks[0]
	s.toks = s.toks[1:]
	return string(t), s.li + 1, true
}

// rest returns the remaining tokens of the current line joined by spaces.
func (s *bvhScanner) rest() string {
	parts := make([]string, len(s.toks))
	for i, t := range s.toks {
		parts[i] = string(t)
	}
	s.toks = nil
	return strings.Join(parts, " ")
}

func (s *bvhScanner) expect(want string) (int, error) {
	t, line, ok := s.next()
	if !ok {
		return line, s.errf(line, "unexpected end of file, want %q", want)
	}
	if !strings.EqualFold(t, want) {
		return line, s.errf(line, "found %q, want %q", t, want)
	}
	return line, nil
}

func (s *bvhScanner) number() (float64, int, error) {
	t, line, ok := s.next()
	if !ok {
		return 0, line, s.errf(line, "unexpected end of file, want a number")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !format.Finite(v) {
		return 0, line, s.errf(line, "bad number %q", t)
	}
	return v, line, nil
}

// ParseBVH imports a BVH motion-capture file: one skeleton and one clip.
// name is used in errors and notes. Rotation channels apply in the order
// listed (e.g. "Zrotation Yrotation Xrotation" is Rz·Ry·Rx), angles in
// degrees; position channels replace the joint's offset on that axis.
// End sites are not bones. Lines end with LF, CRLF or CR; a UTF-8 byte
// order mark is skipped. Errors name the file and line.
func ParseBVH(name string, data []byte, opt BVHOptions) (*Import, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	s := &bvhScanner{file: name, lines: splitLines(data), li: -1}
	p := &bvhParser{s: s}
	if err := p.hierarchy(); err != nil {
		return nil, err
	}
	nframes, dt, line, err := s.motionHeader()
	if err != nil {
		return nil, err
	}
	values, frameLines, extra, err := p.frames(nframes, len(data))
	if err != nil {
		return nil, err
	}
	im := &Import{File: name}
	if extra > 0 {
		im.notef("ignored %d frame lines beyond the %d declared", extra, nframes)
	}
	unit, isCMU, err := bvhUnit(im, name, p.joints, opt.Unit)
	if err != nil {
		return nil, err
	}
	im.Unit = unit
	first := 0
	drop := opt.FirstFrame == FirstFrameDrop || (opt.FirstFrame == FirstFrameAuto && isCMU)
	if drop && nframes > 1 {
		first = 1
		im.notef("dropped frame 0 (CMU synthetic T-pose)")
	}
	nb := len(p.joints)
	if (nframes-first)*3*nb > MaxClipSamples {
		return nil, s.errf(line, "%d frames of %d joints exceed %d samples", nframes, nb, MaxClipSamples)
	}
	if err := p.checkRange(values, frameLines, first, unit.Metres); err != nil {
		return nil, err
	}
	sk, clip := p.build(name, values, nframes-first, first, unit.Metres, bvhRate(dt))
	if err := sk.Validate(); err != nil {
		return nil, &ParseError{File: name, Msg: err.Error()}
	}
	if err := clip.Validate(sk); err != nil {
		return nil, &ParseError{File: name, Msg: err.Error()}
	}
	im.Skeleton = sk
	im.Clips = []*Clip{clip}
	im.notef("%d joints, %d channels, %d frames at %g Hz", nb, p.nchan, clip.Frames, clip.Rate)
	return im, nil
}

// bvhParser holds the joints of a BVH file's HIERARCHY while it is parsed
// and afterwards.
type bvhParser struct {
	s      *bvhScanner
	joints []bvhJoint
	nchan  int       // channels in all: the numbers on a frame line
	stack  []bvhOpen // the open blocks
}

// bvhOpen is an open block of the hierarchy.
type bvhOpen struct {
	joint   int // -1 for an End Site block
	endSite bool
}

// hierarchy parses the HIERARCHY section up to and including MOTION,
// with an explicit stack of open blocks.
func (p *bvhParser) hierarchy() error {
	s := p.s
	if _, err := s.expect("HIERARCHY"); err != nil {
		return err
	}
	for {
		tok, line, ok := s.next()
		if !ok {
			return s.errf(line, "unexpected end of file in HIERARCHY (no MOTION section)")
		}
		if len(p.stack) == 0 {
			switch strings.ToUpper(tok) {
			case "ROOT":
				if err := p.joint(-1, line); err != nil {
					return err
				}
				continue
			case "MOTION":
			default:
				return s.errf(line, "found %q, want ROOT or MOTION", tok)
			}
			break
		}
		if err := p.blockToken(tok, line); err != nil {
			return err
		}
	}
	if len(p.joints) == 0 {
		return s.errf(s.li+1, "no ROOT joint before MOTION")
	}
	return nil
}

// joint parses a ROOT or JOINT's name and opening brace and opens its
// block.
func (p *bvhParser) joint(parent int, line int) error {
	s := p.s
	jname := s.rest()
	if strings.HasSuffix(jname, "{") { // "JOINT name {" on one line
		jname = strings.TrimSpace(strings.TrimSuffix(jname, "{"))
		s.toks = [][]byte{[]byte("{")}
	}
	if jname == "" {
		return s.errf(line, "joint without a name")
	}
	if len(p.joints) >= MaxBones {
		return s.errf(line, "more than %d joints", MaxBones)
	}
	if _, err := s.expect("{"); err != nil {
		return err
	}
	p.joints = append(p.joints, bvhJoint{name: jname, parent: parent, line: line})
	p.stack = append(p.stack, bvhOpen{joint: len(p.joints) - 1})
	return nil
}

// blockToken parses what token tok (at line) starts inside the innermost
// open block.
func (p *bvhParser) blockToken(tok string, line int) error {
	s := p.s
	top := &p.stack[len(p.stack)-1]
	switch strings.ToUpper(tok) {
	case "}":
		if !top.endSite {
			if !p.joints[top.joint].hasOff {
				return s.errf(line, "joint %q has no OFFSET", p.joints[top.joint].name)
			}
		}
		p.stack = p.stack[:len(p.stack)-1]
	case "OFFSET":
		var off Vec3
		for k := range 3 {
			v, _, err := s.number()
			if err != nil {
				return err
			}
			off[k] = v
		}
		if top.endSite {
			return nil
		}
		j := &p.joints[top.joint]
		if j.hasOff {
			return s.errf(line, "joint %q has two OFFSETs", j.name)
		}
		j.offset, j.hasOff, j.offLine = off, true, line
	case "CHANNELS":
		if top.endSite {
			return s.errf(line, "CHANNELS in an End Site")
		}
		return p.channels(&p.joints[top.joint], line)
	case "JOINT":
		if top.endSite {
			return s.errf(line, "JOINT inside an End Site")
		}
		return p.joint(top.joint, line)
	case "END":
		if _, err := s.expect("Site"); err != nil {
			return err
		}
		if _, err := s.expect("{"); err != nil {
			return err
		}
		p.stack = append(p.stack, bvhOpen{joint: -1, endSite: true})
	default:
		return s.errf(line, "unexpected %q in joint block", tok)
	}
	return nil
}

// channels parses joint j's CHANNELS line (at line) after the keyword.
func (p *bvhParser) channels(j *bvhJoint, line int) error {
	s := p.s
	if j.channels != nil {
		return s.errf(line, "joint %q has two CHANNELS lines", j.name)
	}
	v, _, err := s.number()
	if err != nil {
		return err
	}
	if v != math.Trunc(v) || v < 0 || v > 6 {
		return s.errf(line, "joint %q: channel count %v, want 0..6", j.name, v)
	}
	n := int(v)
	j.channels = make([]uint8, 0, n)
	seen := 0
	for range n {
		c, cl, ok := s.next()
		if !ok || cl != line {
			return s.errf(line, "joint %q: CHANNELS %d lists fewer channel names", j.name, n)
		}
		id, ok := bvhChannel(c)
		if !ok {
			return s.errf(line, "joint %q: unknown channel %q", j.name, c)
		}
		if seen&(1<<id) != 0 {
			return s.errf(line, "joint %q: channel %q twice", j.name, c)
		}
		seen |= 1 << id
		j.channels = append(j.channels, id)
	}
	if len(s.toks) > 0 {
		return s.errf(line, "joint %q: CHANNELS %d lists more channel names", j.name, n)
	}
	j.first = p.nchan
	p.nchan += n
	return nil
}

// motionHeader parses the MOTION section's "Frames:" and "Frame Time:"
// lines: the frame count, the frame time in seconds and the line of the
// frame time.
func (s *bvhScanner) motionHeader() (nframes int, dt float64, line int, err error) {
	line, err = s.expect("Frames:")
	if err != nil {
		return 0, 0, 0, err
	}
	fv, _, err := s.number()
	if err != nil {
		return 0, 0, 0, err
	}
	if fv != math.Trunc(fv) || fv < 1 || fv > MaxFrames {
		return 0, 0, 0, s.errf(line, "frame count %v, want 1..%d", fv, MaxFrames)
	}
	nframes = int(fv)
	if _, err := s.expect("Frame"); err != nil {
		return 0, 0, 0, err
	}
	line, err = s.expect("Time:")
	if err != nil {
		return 0, 0, 0, err
	}
	dt, _, err = s.number()
	if err != nil {
		return 0, 0, 0, err
	}
	// A clip's rate is at most 1e4 Hz (Clip.Validate), after bvhRate's
	// rounding.
	if !(dt > 0) || dt > 100 || bvhRate(dt) > 1e4 {
		return 0, 0, 0, s.errf(line, "frame time %v s, want 0.0001..100 (at most 10 kHz)", dt)
	}
	if len(s.toks) > 0 {
		return 0, 0, 0, s.errf(line, "unexpected %q after frame time", s.toks[0])
	}
	return nframes, dt, line, nil
}

// frames parses the frame lines, exactly nchan numbers each: the values
// of nframes frames, frame after frame, the line of each frame, and the
// count of the lines beyond them. size (the file's) bounds the first
// allocation.
func (p *bvhParser) frames(nframes, size int) (values []float64, lines []int32, extra int, err error) {
	s := p.s
	values = make([]float64, 0, min(nframes*p.nchan, size/2))
	lines = make([]int32, 0, min(nframes, size/2))
	got := 0
	for li := s.li + 1; li < len(s.lines); li++ {
		fields := bytes.Fields(s.lines[li])
		if len(fields) == 0 {
			continue
		}
		if got == nframes {
			// Real files (Boxing_Toes.bvh) carry more lines than they
			// declare; like other readers we keep the declared count.
			extra++
			continue
		}
		if len(fields) != p.nchan {
			return nil, nil, 0, s.errf(li+1, "frame %d has %d values, want %d (one per channel)", got, len(fields), p.nchan)
		}
		for k, f := range fields {
			v, err := strconv.ParseFloat(string(f), 64)
			if err != nil || !format.Finite(v) {
				return nil, nil, 0, s.errf(li+1, "frame %d value %d (%s): bad number %q", got, k+1, channelName(p.joints, k), f)
			}
			values = append(values, v)
		}
		lines = append(lines, int32(li+1))
		got++
	}
	if got != nframes {
		last := len(s.lines) // the file's last line, not the empty one after its final newline
		if last > 1 && len(s.lines[last-1]) == 0 {
			last--
		}
		return nil, nil, 0, s.errf(last, "truncated: %d of %d frames", got, nframes)
	}
	return values, lines, extra, nil
}

// checkRange refuses, at their lines, the numbers that would make the
// skeleton or the clip invalid in metres (the unit's metres per file
// unit): an OFFSET or a position value beyond ±1e18 m (Skeleton.Validate,
// Clip.Validate: a float32 pose cannot hold it), an angle too large to
// turn into radians, of the frames from first on (lines: each frame's
// line).
func (p *bvhParser) checkRange(values []float64, lines []int32, first int, metres float64) error {
	for _, j := range p.joints {
		for k, v := range j.offset {
			if x := v * metres; math.Abs(x) > maxValue {
				return p.s.errf(j.offLine, "joint %q: OFFSET %c %v is %v m, beyond ±1e18 m", j.name, 'X'+k, v, x)
			}
		}
	}
	for f := first; f < len(lines); f++ {
		row := values[f*p.nchan:]
		for _, j := range p.joints {
			for k, c := range j.channels {
				v := row[j.first+k]
				switch {
				case c < 3 && math.Abs(v*metres) > maxValue:
					return p.s.errf(int(lines[f]), "frame %d value %d (%s): %v is %v m, beyond ±1e18 m", f, j.first+k+1, channelName(p.joints, j.first+k), v, v*metres)
				case c >= 3 && !format.Finite(v*math.Pi/180):
					return p.s.errf(int(lines[f]), "frame %d value %d (%s): angle %v degrees out of range", f, j.first+k+1, channelName(p.joints, j.first+k), v)
				}
			}
		}
	}
	return nil
}

// splitLines splits data into lines at LF, CRLF and a lone CR (classic
// Mac OS files), without the line ends; like bytes.Split, the text after
// the last line end is a line too (empty when data ends with one).
func splitLines(data []byte) [][]byte {
	if bytes.IndexByte(data, '\r') < 0 {
		return bytes.Split(data, []byte{'\n'})
	}
	lines := make([][]byte, 0, bytes.Count(data, []byte{'\n'})+1)
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			return append(lines, data)
		}
		lines = append(lines, data[:i])
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
}

// bvhUnit chooses file name's unit: unit when set, else CMU by name or
// joint names, else centimetres; the choice and its reason go to im's
// notes. isCMU reports a CMU file.
func bvhUnit(im *Import, name string, joints []bvhJoint, unit LengthUnit) (_ LengthUnit, isCMU bool, _ error) {
	if unit.Metres != 0 {
		if !(unit.Metres > 0) || !format.Finite(unit.Metres) {
			return unit, false, fmt.Errorf("anim: %s: bad unit %v", name, unit)
		}
		im.notef("unit: %s (chosen)", unit.Name)
		return unit, unit == UnitCMU, nil
	}
	names := map[string]bool{}
	for _, j := range joints {
		names[j.name] = true
	}
	switch {
	case cmuName.MatchString(name):
		unit, isCMU = UnitCMU, true
		im.notef("unit: %s (auto: CMU file name)", unit.Name)
	case names["LHipJoint"] && names["LowerBack"]:
		unit, isCMU = UnitCMU, true
		im.notef("unit: %s (auto: CMU joint names)", unit.Name)
	default:
		unit = UnitCentimetre
		im.notef("unit: %s (auto: not a CMU file)", unit.Name)
	}
	return unit, isCMU, nil
}

// bvhRate is the sample rate of frame time dt, rounded to a whole number
// of hertz when within 1/60 % of one.
func bvhRate(dt float64) float64 {
	rate := 1 / dt
	if r := math.Round(rate); math.Abs(rate-r) < 0.01*r/60 {
		rate = r
	}
	return rate
}

// build makes the skeleton and the clip of n frames from frame first of
// values, lengths scaled by metres (the unit's), at rate Hz.
func (p *bvhParser) build(name string, values []float64, n, first int, metres, rate float64) (*Skeleton, *Clip) {
	nb := len(p.joints)
	sk := &Skeleton{Name: name, Names: make([]string, nb), Parents: make([]int32, nb), Rest: make([]Transform, nb)}
	for i, j := range p.joints {
		sk.Names[i] = j.name
		sk.Parents[i] = int32(j.parent)
		sk.Rest[i] = Transform{T: j.offset.Mul(metres), R: IdentityQuat, S: Vec3{1, 1, 1}}
	}
	clip := &Clip{Name: strings.TrimSuffix(name, ".bvh"), Rate: rate, Frames: n, Tracks: make([]Track, 3*nb)}
	for b, j := range p.joints {
		tt := Track{Frames: make([]int32, n), Values: make([][4]float64, n)}
		rt := Track{Frames: make([]int32, n), Values: make([][4]float64, n)}
		for f := range n {
			row := values[(f+first)*p.nchan:]
			t := j.offset
			q := IdentityQuat
			for k, c := range j.channels {
				v := row[j.first+k]
				if c < 3 {
					t[c] = v
				} else {
					q = q.Mul(axisAngle(int(c-3), v*math.Pi/180))
				}
			}
			tt.Frames[f], rt.Frames[f] = int32(f), int32(f)
			tt.Values[f] = vec4(t.Mul(metres))
			rt.Values[f] = [4]float64(q.Normalized())
		}
		makeContinuous(&rt)
		clip.Tracks[b*3] = tt
		clip.Tracks[b*3+1] = rt
		clip.Tracks[b*3+2] = constantTrack(n, [4]float64{1, 1, 1, 0})
	}
	return sk, clip
}

func bvhChannel(s string) (uint8, bool) {
	switch strings.ToLower(s) {
	case "xposition":
		return 0, true
	case "yposition":
		return 1, true
	case "zposition":
		return 2, true
	case "xrotation":
		return 3, true
	case "yrotation":
		return 4, true
	case "zrotation":
		return 5, true
	}
	return 0, false
}

// channelName names the k-th channel of a frame line, for errors.
func channelName(joints []bvhJoint, k int) string {
	names := [...]string{"Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation"}
	for _, j := range joints {
		if k >= j.first && k < j.first+len(j.channels) {
			return j.name + " " + names[j.channels[k-j.first]]
		}
	}
	return "?"
}
