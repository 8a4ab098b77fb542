package offline

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

const miniBVH = `HIERARCHY
ROOT Hips
{
	OFFSET 0 0 0
	CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
	JOINT Leg
	{
		OFFSET 0 -40 0
		CHANNELS 3 Zrotation Xrotation Yrotation
		End Site
		{
			OFFSET 0 -40 0
		}
	}
}
MOTION
Frames: 3
Frame Time: 0.033333
1 90 2 0 0 0 30 45 60
1 91 3 0 0 10 30 45 61
1 92 4 0 0 20 30 45 62
`

func TestBVHCMU(t *testing.T) {
	path := assimpBVH + "/01_01.bvh"
	needAssimp(t, path)
	im, err := LoadFile(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sk, c := im.Skeleton, im.Clips[0]
	if sk.NumBones() != 31 || c.Frames != 2751 || c.Rate != 120 || im.Unit != UnitCMU {
		t.Fatalf("%d bones, %d frames at %v Hz, unit %v", sk.NumBones(), c.Frames, c.Rate, im.Unit)
	}
	notes := strings.Join(im.Notes, "\n")
	for _, want := range []string{"unit: CMU", "dropped frame 0"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	// In CMU units the root stands about 1 m up and the body is about
	// 1.4 to 1.9 m tall (head end to toes).
	local := make([]Transform, 31)
	model := make([]mat4, 31)
	c.Pose(0, local)
	modelMatrices(sk.Parents, local, model)
	if y := model[0][13]; y < 0.8 || y > 1.2 {
		t.Errorf("root height %v m", y)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for b := range 31 {
		lo, hi = math.Min(lo, model[b][13]), math.Max(hi, model[b][13])
	}
	if h := hi - lo; h < 1.3 || h > 1.9 {
		t.Errorf("body height %v m", h)
	}
	// Keeping frame 0 and choosing centimetres are honoured and reported.
	im2, err := LoadFile(path, ImportOptions{BVH: BVHOptions{Unit: UnitCentimetre, FirstFrame: FirstFrameKeep}})
	if err != nil {
		t.Fatal(err)
	}
	if im2.Clips[0].Frames != 2752 || !strings.Contains(strings.Join(im2.Notes, " "), "unit: cm (chosen)") {
		t.Errorf("keep/cm: %d frames, notes %v", im2.Clips[0].Frames, im2.Notes)
	}
	if r := im2.Skeleton.Rest[3].T[1] / sk.Rest[3].T[1]; math.Abs(r-0.01/UnitCMU.Metres) > 1e-9 {
		t.Errorf("unit ratio %v", r)
	}
}

func TestBVHCentimetres(t *testing.T) {
	path := assimpBVH + "/Boxing_Toes.bvh"
	needAssimp(t, path)
	im, err := LoadFile(path, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := im.Clips[0]
	if im.Unit != UnitCentimetre || c.Frames != 3069 || c.Rate != 100 || im.Skeleton.NumBones() != 21 {
		t.Fatalf("unit %v, %d frames at %v Hz, %d bones", im.Unit, c.Frames, c.Rate, im.Skeleton.NumBones())
	}
	if !strings.Contains(strings.Join(im.Notes, " "), "ignored 1 frame lines") {
		t.Errorf("the extra frame line is not reported: %v", im.Notes)
	}
	if y := c.Tracks[0].Values[0][1]; y < 0.8 || y > 1.1 {
		t.Errorf("root height %v m", y)
	}
}

// Rotation channels apply in the order listed; position channels replace
// the offset; units scale positions and offsets.
func TestBVHChannels(t *testing.T) {
	im, err := ParseBVH("mini.bvh", []byte(miniBVH), BVHOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if im.Unit != UnitCentimetre || im.Clips[0].Frames != 3 || im.Clips[0].Rate != 30 {
		t.Fatalf("unit %v frames %d rate %v", im.Unit, im.Clips[0].Frames, im.Clips[0].Rate)
	}
	c := im.Clips[0]
	deg := math.Pi / 180
	want := axisAngle(2, 30*deg).Mul(axisAngle(0, 45*deg)).Mul(axisAngle(1, 60*deg))
	if a := quatAngle(Quat(c.Tracks[4].Values[0]), want); a > 1e-12 {
		t.Errorf("leg rotation off by %v rad", a)
	}
	root := c.Tracks[0].Values[1]
	if math.Abs(root[0]-0.01) > 1e-12 || math.Abs(root[1]-0.91) > 1e-12 || math.Abs(root[2]-0.03) > 1e-12 {
		t.Errorf("root translation %v", root)
	}
	if got := c.Tracks[3].Values[2]; math.Abs(got[1]+0.4) > 1e-12 {
		t.Errorf("leg offset %v", got)
	}
	if a := quatAngle(Quat(c.Tracks[1].Values[2]), axisAngle(1, 20*deg)); a > 1e-12 { // channels Z X Y: 0 0 20
		t.Errorf("root rotation off by %v", a)
	}
}

// Every malformed input is an error naming the file and the line.
func TestBVHMalformed(t *testing.T) {
	lines := strings.Split(miniBVH, "\n")
	edit := func(line int, text string) string {
		l := append([]string(nil), lines...)
		l[line-1] = text
		return strings.Join(l, "\n")
	}
	cases := []struct {
		name, in string
		line     int
		want     string
	}{
		{"empty", "", 1, "want \"HIERARCHY\""},
		{"no root", "HIERARCHY\nMOTION\nFrames: 1\nFrame Time: 0.1\n\n", 2, "no ROOT"},
		{"truncated hierarchy", strings.Join(lines[:9], "\n"), 9, "unexpected end of file"},
		{"unbalanced", edit(7, "\t{ {"), 7, "unexpected \"{\""},
		{"unknown keyword", edit(4, "\tOFSET 0 0 0"), 4, "unexpected \"OFSET\""},
		{"missing offset", edit(4, ""), 15, "has no OFFSET"},
		{"two offsets", edit(5, "\tOFFSET 1 2 3"), 5, "two OFFSETs"},
		{"NaN offset", edit(4, "\tOFFSET 0 NaN 0"), 4, "bad number \"NaN\""},
		{"channel count", edit(5, "\tCHANNELS 7 Xposition"), 5, "channel count 7"},
		{"fewer channel names", edit(5, "\tCHANNELS 6 Xposition Yposition"), 5, "fewer channel names"},
		{"more channel names", edit(9, "\t\tCHANNELS 1 Zrotation Xrotation"), 9, "more channel names"},
		{"unknown channel", edit(9, "\t\tCHANNELS 3 Zrotation Wrotation Yrotation"), 9, "unknown channel \"Wrotation\""},
		{"duplicate channel", edit(9, "\t\tCHANNELS 3 Zrotation Zrotation Yrotation"), 9, "twice"},
		{"channels in end site", edit(12, "\t\t\tCHANNELS 1 Xrotation"), 12, "CHANNELS in an End Site"},
		{"joint without name", edit(6, "\tJOINT"), 6, "joint without a name"},
		{"no frames line", edit(17, "Framez: 3"), 17, "want \"Frames:\""},
		{"frame count", edit(17, "Frames: -2"), 17, "frame count -2"},
		{"fractional frame count", edit(17, "Frames: 2.5"), 17, "frame count 2.5"},
		{"frame time", edit(18, "Frame Time: 0"), 18, "frame time 0"},
		{"frame time NaN", edit(18, "Frame Time: NaN"), 18, "bad number"},
		{"wrong channel count", edit(20, "1 91 3 0 0 10 30 45"), 20, "frame 1 has 8 values, want 9"},
		{"NaN value", edit(20, "1 91 3 0 0 10 30 NaN 61"), 20, "value 8 (Leg Xrotation): bad number \"NaN\""},
		{"infinite value", edit(21, "1 92 4 0 0 20 30 45 +Inf"), 21, "bad number \"+Inf\""},
		{"garbage value", edit(19, "1 90 2 0 0 0 30 45 sixty"), 19, "bad number \"sixty\""},
		{"truncated frames", strings.Join(lines[:20], "\n"), 20, "truncated: 2 of 3 frames"},
	}
	for _, tc := range cases {
		_, err := ParseBVH("bad.bvh", []byte(tc.in), BVHOptions{})
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v is not a *ParseError", tc.name, err)
			continue
		}
		if pe.File != "bad.bvh" || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.want) {
			t.Errorf("%s: %v; want line %d and %q", tc.name, err, tc.line, tc.want)
		}
	}
}

func FuzzBVH(f *testing.F) {
	f.Add([]byte(miniBVH))
	if data, err := os.ReadFile(assimpBVH + "/01_01.bvh"); err == nil {
		f.Add(data[:min(len(data), 12000)])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := ParseBVH("fuzz.bvh", data, BVHOptions{})
		checkFuzzImport(t, "fuzz.bvh", im, err)
	})
}

// A short file cannot ask for an enormous clip: 1000 joints with one
// channel each and many two-byte frame lines would need tens of GB.
func TestBVHSampleBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("HIERARCHY\nROOT r\n{\nOFFSET 0 0 0\nCHANNELS 1 Xrotation\n")
	for i := range 999 {
		b.WriteString("JOINT j" + strings.Repeat("x", i%3) + "\n{\nOFFSET 0 0 0\n")
	}
	b.WriteString("End Site\n{\nOFFSET 0 0 0\n}\n")
	for range 999 {
		b.WriteString("}\n")
	}
	b.WriteString("}\nMOTION\nFrames: 20000\nFrame Time: 0.01\n")
	for range 20000 {
		b.WriteString("1\n")
	}
	_, err := ParseBVH("huge.bvh", []byte(b.String()), BVHOptions{})
	if err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Fatalf("error %v", err)
	}
}

// checkFuzzImport is the fuzz targets' rule for an importer's result: an
// error is a *ParseError naming the file; an import passes validation.
func checkFuzzImport(t *testing.T, file string, im *Import, err error) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) || pe.File != file {
			t.Fatalf("error %v does not name the file", err)
		}
		return
	}
	if err := im.Skeleton.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range im.Clips {
		if err := c.Validate(im.Skeleton); err != nil {
			t.Fatal(err)
		}
	}
}
