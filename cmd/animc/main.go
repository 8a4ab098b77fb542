// Command animc imports animation clips (BVH, glTF 2.0), compresses them
// into one resource blob and reports, per clip and in total, the sizes,
// ratio, model-space error, decoding cost and time, beside ACL's figures
// for the same clips where it has them.
//
//	go run ./cmd/animc [flags] [FILE...]
//	go run ./cmd/animc -acl          # the comparison with ACL, like for like
//
// With no FILE it compresses the CMU motion-capture clips of Debian's
// assimp-testmodels (/usr/share/assimp/models/BVH/NN_NN.bvh); -acl
// compresses 01_01, 01_03 and Boxing_Toes from there at their own rate, 30
// and 24 Hz (-rates).
//
// Raw size is counted as ACL counts it: float32 rotation (4), translation
// (3) and scale (3) per bone per sample. The compressed size is the clip's
// record in the blob (tables, curve stream, events, name). Errors are the
// displacement of virtual vertices 3 cm (and 1 m) from each bone in model
// space between the source and what the sampler decodes from the blob,
// over every bone and every source sample ("@3cm"), and apart at three
// times inside every interval between samples against the source's own
// interpolation ("between": glTF's LINEAR, STEP or CUBICSPLINE, lerp/slerp
// for motion capture). "ns/bone" is the sampler's cost per bone and pose
// on one thread (thread CPU time, 64 characters at their own times),
// playing forward at 60 Hz and on random seeks. See usage (-h) for the
// other columns.
//
// Flag values are checked, by flag, before any file is read, and -o is
// checked for writing before compressing; the blob is written beside -o
// and renamed into place, so that a failed write leaves the file that was
// there as it was. A file with no animation clip is an error.
//
// ACL's figures are not computed here: they were measured once, on this
// project's development machine, with ACL v2.1.0 (commit 414689d5) at its
// default settings on the same clips and frames (see aclTable).
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/vkjobs/vkjobs/internal/outfile"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/anim/offline"
	"github.com/vkjobs/vkjobs/internal/version"
)

// cmuDir is where Debian's assimp-testmodels installs the CMU clips.
const cmuDir = "/usr/share/assimp/models/BVH"

var cmuClip = regexp.MustCompile(`^[0-9]+_[0-9]+\.bvh$`)

// aclClips are the clips ACL was measured on (in cmuDir).
var aclClips = []string{"01_01.bvh", "01_03.bvh", "Boxing_Toes.bvh"}

// aclRow is ACL's result on one clip at one rate.
type aclRow struct {
	file  string
	rate  float64
	ratio float64
}

// aclTable holds ACL v2.1.0 (commit 414689d5) at its default settings
// (0.01 cm error at a 3 cm virtual-vertex shell, automatic compression
// level), built and run on this project's development machine on the same
// clips, frames and units as animc, its errors recomputed with the same
// virtual-vertex metric. Its p99 was 0.0095-0.0097 cm and its max
// 0.014-0.027 cm on every row. Its decode times, measured the same way,
// are in BENCHMARKS.md (the ACL section).
var aclTable = []aclRow{
	{"01_01.bvh", 120, 13.57}, {"01_01.bvh", 30, 11.57}, {"01_01.bvh", 24, 11.34},
	{"01_03.bvh", 120, 13.16}, {"01_03.bvh", 30, 11.63}, {"01_03.bvh", 24, 11.38},
	{"Boxing_Toes.bvh", 100, 9.84}, {"Boxing_Toes.bvh", 30, 8.75}, {"Boxing_Toes.bvh", 24, 8.52},
}

const aclSource = "ACL v2.1.0 (commit 414689d5), default settings (0.01 cm at a 3 cm shell, automatic level), " +
	"run on this project's development machine on the same clips and frames, errors recomputed with the same metric: " +
	"p99 0.0095-0.0097 cm, max 0.014-0.027 cm; decoding 16.3 ns/bone (CMU: 60 Hz, 30 Hz and seeks alike), 20 ns/bone (Boxing_Toes)"

// aclRatio returns ACL's ratio for file at rate, or 0.
func aclRatio(file string, rate float64) float64 {
	for _, r := range aclTable {
		if r.file == file && math.Abs(r.rate-rate) < 0.5 {
			return r.ratio
		}
	}
	return 0
}

type row struct {
	file   string
	name   string
	frames int
	bones  int
	rate   float64
	events int
	stats  offline.CompressStats
	err    []offline.ErrorStats // at 3 cm and 1 m
	floor  []offline.ErrorStats // BitSquid quantisation floor, when asked
	fwd    float64              // ns per bone per pose, forward at 60 Hz
	seek   float64              // ns per bone per pose, random seeks
}

const columns = `Columns:
  tracks   animated tracks: each bone has up to three (translation,
           rotation, scale), so tracks may exceed bones; a track that a
           constant value keeps within tolerance is stored once and not counted
  kept     share of the animated tracks' samples still stored: as curve points
           (curve codec), or with frame bits rather than one value constant
           over their segment (uniform codec); the rest the codec drops
  ACL      ACL's ratio on the same clip at the same rate (see below), x: ours over ACL's
  @3cm     error at virtual vertices 3 cm from each bone, at the source's samples;
           between: at 3 points inside every interval, against the source's own
           interpolation; @1m: vertices 1 m away, samples and between together
  ns/bone  sampler cost per bone and pose, one thread, 64 characters: playing
           forward at 60 Hz, and random seeks
  share    the share of the error target each track's fit was given, after the
           calibration (uniform codec: the per-segment error target over the
           tolerance); passes: the compressions the calibration ran
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "animc:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stdout, stderr)
	if err != nil || o == nil {
		return err
	}
	// The report is the command's result: failing to write it (a full
	// disk, a closed pipe) is a failure, not an exit 0 with nothing to show.
	ew := &errWriter{w: stdout}
	stdout = ew
	start := time.Now()
	cp := newCompressor(o, stderr)
	for _, path := range o.files {
		if err := cp.file(path); err != nil {
			return err
		}
	}
	if cp.bar != nil {
		cp.bar.Finish()
	}
	data, err := cp.b.Bytes()
	if err != nil {
		return err
	}
	if _, err := anim.Load(data); err != nil {
		return fmt.Errorf("written blob does not load: %w", err)
	}
	if o.out != "" {
		if err := outfile.WriteBytes(o.out, data); err != nil {
			return err
		}
	}
	for _, u := range cp.units {
		fmt.Fprintln(stdout, u)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "codec: %s\n", o.compress.Codec)
	report(stdout, cp.rows, o.errCM, o.bitsquid, o.timing)
	fmt.Fprintf(stdout, "\nblob: %d bytes, %s", len(data), plural(len(cp.rows), "clip"))
	if o.out != "" {
		fmt.Fprintf(stdout, ", written to %s", o.out)
	}
	fmt.Fprintf(stdout, "; %s total\n", time.Since(start).Round(time.Millisecond))
	if ew.err != nil {
		return fmt.Errorf("writing the report: %w", ew.err)
	}
	return nil
}

// errWriter passes writes on to w until one fails, and keeps that error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// options are animc's parsed and checked flags.
type options struct {
	errCM    float64 // error target in cm
	out      string  // blob file, or ""
	rates    []float64
	files    []string
	events   bool
	bitsquid bool
	timing   bool
	verbose  bool
	compress offline.CompressOptions
	imp      offline.ImportOptions
}

// parseFlags parses and checks animc's command line. It returns nil
// options and no error when the command has nothing more to do (-h,
// -version).
func parseFlags(args []string, stdout, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("animc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	errCM := fs.Float64("error", 0.01, "error target in cm at virtual vertices 3 cm from each bone (model space)")
	share := fs.Float64("share", 0.47, "per-track share of the error target to start from (errors add along chains)")
	passes := fs.Int("passes", 4, "compressions per clip: after each, the p99 error is measured and the share rescaled toward -error (1: one pass at -share)")
	calibrate := fs.Bool("calibrate", false, "up to 8 passes (the default already calibrates)")
	openLoop := fs.Bool("openloop", false, "fit every rotation against its own source (no compensation of the ancestors' errors)")
	segment := fs.Float64("segment", 1, "segment length in seconds (random seeks decode from a segment start)")
	out := fs.String("o", "", "write the blob to this file")
	unitName := fs.String("unit", "auto", "BVH length unit: auto, cmu, cm, m or in")
	rate := fs.Float64("rate", 0, "glTF resample rate in Hz (0: the key grid)")
	merge := fs.Bool("merge-animations", false, "glTF: import all animations as one clip (files with one animation per node)")
	resample := fs.Float64("resample", 0, "resample every clip to this rate in Hz before compressing (0: keep)")
	ratesFlag := fs.String("rates", "", "compress every clip at each of these rates in Hz, comma-separated (0: as recorded); -acl: 0,30,24")
	acl := fs.Bool("acl", false, "compare with ACL like for like: compress "+strings.Join(aclClips, ", ")+" from "+cmuDir+" at their own rate, 30 and 24 Hz")
	events := fs.Bool("events", true, "detect foot contacts (bones named toe/foot) and store them as events")
	bitsquid := fs.Bool("bitsquid", false, "also measure the error floor of BitSquid's 10-bit/16-bit quantisation")
	codecName := fs.String("codec", "curve", "clip codec: curve (Hermite or linear curves, the best ratio) or uniform (every frame at a searched bit rate: frame-addressable, the same sampling cost at any playback rate and on seeks)")
	segFrames := fs.Int("uniform-segment", 16, "uniform codec: segment length in frames (a power of two, 2..256)")
	timing := fs.Bool("timing", true, "measure the sampler's ns/bone per clip (about 0.3 s each)")
	verbose := fs.Bool("v", false, "print every import note")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: animc [flags] [FILE.bvh|FILE.gltf|FILE.glb ...]\n\nWith no FILE, compresses the CMU clips in %s.\n\n", cmuDir)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\n%s\nACL: %s.\n", columns, aclSource)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil
		}
		return nil, err
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("animc"))
		return nil, nil
	}
	unit, err := offline.ParseUnit(*unitName)
	if err != nil {
		return nil, fmt.Errorf("-unit: %w", err)
	}
	codec, err := anim.ParseCodec(*codecName)
	if err != nil {
		return nil, fmt.Errorf("-codec: %w", err)
	}
	// Checked here, by flag, rather than by the importer or the
	// compressor after minutes of work, under their options' names.
	for _, f := range []struct {
		name string
		v    float64
	}{{"error", *errCM}, {"share", *share}, {"segment", *segment}} {
		if !(f.v > 0) || math.IsInf(f.v, 1) {
			return nil, fmt.Errorf("-%s %g: want a finite value above 0", f.name, f.v)
		}
	}
	if *passes < 1 {
		return nil, fmt.Errorf("-passes %d: want at least 1", *passes)
	}
	if n := *segFrames; n < 2 || n > 256 || n&(n-1) != 0 {
		return nil, fmt.Errorf("-uniform-segment %d: want a power of two from 2 to 256", n)
	}
	if err := checkRate("-rate", *rate); err != nil {
		return nil, err
	}
	if err := checkRate("-resample", *resample); err != nil {
		return nil, err
	}
	if *out != "" {
		// Checked before compressing, not after minutes of it.
		if err := outfile.Check(*out); err != nil {
			return nil, fmt.Errorf("-o: %w", err)
		}
	}
	if *calibrate {
		*passes = max(*passes, 8)
	}
	if *acl && *ratesFlag == "" {
		*ratesFlag = "0,30,24"
	}
	o := &options{errCM: *errCM, out: *out, events: *events, bitsquid: *bitsquid, timing: *timing, verbose: *verbose,
		compress: offline.CompressOptions{Tolerance: *errCM / 100, ChainShare: *share, SegmentSeconds: *segment, Passes: *passes, OpenLoop: *openLoop,
			Codec: codec, UniformSegmentFrames: *segFrames},
		imp: offline.ImportOptions{BVH: offline.BVHOptions{Unit: unit}, GLTF: offline.GLTFOptions{Rate: *rate, MergeAnimations: *merge}}}
	if o.rates, err = parseRates(*ratesFlag, *resample); err != nil {
		return nil, err
	}
	if o.files, err = inputFiles(fs.Args(), *acl); err != nil {
		return nil, err
	}
	return o, nil
}

// maxRate bounds the rates of -rate, -resample and -rates, in Hz: the
// importer's own bound.
const maxRate = 1e4

// checkRate checks a rate flag: 0 (keep) or a rate up to maxRate, never
// NaN, which would compare as neither and mean "keep" without a word.
func checkRate(flag string, r float64) error {
	if !(r >= 0 && r <= maxRate) {
		return fmt.Errorf("%s %g: want a rate in Hz up to %g (0: as recorded)", flag, r, float64(maxRate))
	}
	return nil
}

// parseRates returns the rates to compress every clip at: those of -rates
// (0: as recorded), else the one of -resample.
func parseRates(ratesFlag string, resample float64) ([]float64, error) {
	if ratesFlag == "" {
		return []float64{resample}, nil
	}
	if resample != 0 {
		return nil, errors.New("-rates and -resample: give one")
	}
	var rates []float64
	for _, f := range strings.Split(ratesFlag, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r >= 0 && r <= maxRate) {
			return nil, fmt.Errorf("-rates: bad rate %q (Hz, 0 for as recorded)", f)
		}
		rates = append(rates, r)
	}
	return rates, nil
}

// inputFiles returns the files to compress: those given, ACL's clips
// (-acl), or else every CMU clip in cmuDir.
func inputFiles(files []string, acl bool) ([]string, error) {
	switch {
	case acl && len(files) > 0:
		return nil, errors.New("-acl compresses ACL's clips: give no FILE")
	case acl:
		for _, f := range aclClips {
			files = append(files, filepath.Join(cmuDir, f))
		}
	case len(files) == 0:
		ents, err := os.ReadDir(cmuDir)
		if err != nil {
			return nil, fmt.Errorf("no FILE given and %s is unreadable (install assimp-testmodels): %w", cmuDir, err)
		}
		for _, e := range ents {
			if cmuClip.MatchString(e.Name()) {
				files = append(files, filepath.Join(cmuDir, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no FILE given and no CMU clips in %s (install assimp-testmodels)", cmuDir)
		}
		sort.Strings(files)
	}
	return files, nil
}

// compressor compresses clips into one blob, a row of the report per clip
// and rate, and shows its progress.
type compressor struct {
	o      *options
	stderr io.Writer
	bar    *progressbar.ProgressBar // on a terminal; else a line per clip
	b      offline.Builder
	rows   []row
	units  []string // the importer's notes on length units
	done   int
}

func newCompressor(o *options, stderr io.Writer) *compressor {
	cp := &compressor{o: o, stderr: stderr}
	if f, ok := stderr.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			cp.bar = progressbar.NewOptions(len(o.files)*len(o.rates), progressbar.OptionSetWriter(stderr),
				progressbar.OptionSetDescription("compressing"), progressbar.OptionShowCount(),
				progressbar.OptionClearOnFinish())
		}
	}
	return cp
}

func (cp *compressor) logf(format string, args ...any) {
	if cp.bar != nil {
		cp.bar.Clear()
	}
	fmt.Fprintf(cp.stderr, format, args...)
}

// file imports path and compresses each of its clips at every rate, with
// the foot contacts detected as events (-events).
func (cp *compressor) file(path string) error {
	im, err := offline.LoadFile(path, cp.o.imp)
	if err != nil {
		return err
	}
	for _, n := range im.Notes {
		if strings.HasPrefix(n, "unit:") {
			cp.units = append(cp.units, filepath.Base(path)+": "+n)
		} else if cp.o.verbose {
			cp.logf("%s: %s\n", filepath.Base(path), n)
		}
	}
	if len(im.Clips) == 0 {
		return fmt.Errorf("%s: no animation clip to compress", path)
	}
	si := cp.b.AddSkeleton(im.Skeleton)
	for _, src := range im.Clips {
		if cp.o.events {
			ev, err := offline.DetectFootContacts(im.Skeleton, src, offline.ContactOptions{})
			if err == nil {
				src.Events = ev
			} else if cp.o.verbose {
				cp.logf("%s %s: no events: %v\n", filepath.Base(path), src.Name, err)
			}
		}
		for _, hz := range cp.o.rates {
			c := src
			if hz > 0 && hz != src.Rate {
				if c, err = src.Resample(hz); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
			if err := cp.clip(path, im.Skeleton, si, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// clip compresses c (of skeleton sk, the builder's skeleton si) into the
// blob, measures it into a row of the report and shows the progress.
func (cp *compressor) clip(path string, sk *offline.Skeleton, si int, c *offline.Clip) error {
	r := row{file: filepath.Base(path), name: filepath.Base(path) + ":" + c.Name, frames: c.Frames, bones: sk.NumBones(), rate: c.Rate, events: len(c.Events)}
	cc, err := offline.Compress(sk, c, cp.o.compress)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	bl, err := ownBlob(sk, cc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if r.err, err = offline.Measure(sk, c, bl.Clip(0), 0.03, 1); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.stats = cc.Stats
	if cp.o.timing {
		r.fwd, r.seek = sampleCost(bl)
	}
	if cp.o.bitsquid {
		if r.floor, err = offline.BitSquidFloor(sk, c, 0.03, 1); err != nil {
			return err
		}
	}
	if err := cp.b.AddClip(si, cc); err != nil {
		return err
	}
	cp.rows = append(cp.rows, r)
	cp.done++
	if cp.bar != nil {
		cp.bar.Add(1)
	} else {
		fmt.Fprintf(cp.stderr, "animc: [%d/%d] %s at %g Hz: %.2f:1, p99 %.4f cm (between samples %.4f) in %s\n",
			cp.done, len(cp.o.files)*len(cp.o.rates), r.name, r.rate, r.stats.Ratio(), r.err[0].P99*100, r.err[0].Between.P99*100, r.stats.Duration.Round(time.Millisecond))
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ownBlob writes the clip to a blob of its own and loads it.
func ownBlob(sk *offline.Skeleton, cc *offline.CompressedClip) (*anim.Blob, error) {
	var b offline.Builder
	if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
		return nil, err
	}
	data, err := b.Bytes()
	if err != nil {
		return nil, err
	}
	return anim.Load(data)
}

// sampleCost measures the sampler on the blob's clip: 64 characters at
// their own times, one thread, playing forward at 60 Hz and seeking to
// random times; thread CPU time per bone per pose, the median of 3 runs
// of about 50 ms each.
func sampleCost(bl *anim.Blob) (fwd, seek float64) {
	c := bl.Clip(0)
	const n = 64
	job := anim.SampleJob{Blob: bl, Inputs: make([]anim.SampleInput, n), Cursors: make([]uint32, n*c.CursorWords()),
		CursorStride: c.CursorWords(), Poses: make([]float32, n*c.Bones()*anim.PoseFloats), Bones: c.Bones()}
	rng := rand.New(rand.NewSource(1))
	dur := c.Duration()
	start := make([]float32, n)
	for i := range job.Inputs {
		job.Inputs[i].Clip = c.Offset()
		start[i] = rng.Float32() * dur
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	measure := func(next func(frame int)) float64 {
		var runs []float64
		for range 3 {
			t0 := threadCPU()
			poses := 0
			for frame := 0; threadCPU()-t0 < 50e6; {
				for range 8 {
					next(frame)
					if job.Run() != nil {
						return math.NaN()
					}
					poses += n
					frame++
				}
			}
			runs = append(runs, float64(threadCPU()-t0)/float64(poses*c.Bones()))
		}
		sort.Float64s(runs)
		return runs[1]
	}
	fwd = measure(func(frame int) {
		for i := range job.Inputs {
			job.Inputs[i].Time = float32(math.Mod(float64(start[i])+float64(frame)/60, float64(dur)+1e-6))
		}
	})
	seek = measure(func(int) {
		for i := range job.Inputs {
			job.Inputs[i].Time = rng.Float32() * dur
		}
	})
	return fwd, seek
}

// threadCPU returns the calling thread's CPU time in nanoseconds
// (getrusage RUSAGE_THREAD, Linux), or wall time where that fails.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1: RUSAGE_THREAD
		return time.Now().UnixNano()
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func report(w io.Writer, rows []row, target float64, bitsquid, timing bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clip\tframes\tHz\tbones\ttracks\tkept\tevents\traw KiB\tcompressed KiB\tratio\tACL\tx\tmax@3cm\tp99@3cm\tmax between\tp99 between\tmax@1m\tp99@1m\tns/bone 60Hz\tseek\ttime\tshare\tpasses\t")
	var raw, comp int
	var e3, e100 []offline.ErrorStats
	var dur time.Duration
	ns := func(x float64) string {
		if !timing {
			return "-"
		}
		return fmt.Sprintf("%.1f", x)
	}
	for _, r := range rows {
		a, x := "-", "-"
		if ar := aclRatio(r.file, r.rate); ar > 0 {
			a, x = fmt.Sprintf("%.2f", ar), fmt.Sprintf("%.2f", r.stats.Ratio()/ar)
		}
		e := r.err[0]
		fmt.Fprintf(tw, "%s\t%d\t%g\t%d\t%d\t%.0f%%\t%d\t%.1f\t%.1f\t%.2f\t%s\t%s\t%.4f cm\t%.4f cm\t%.4f cm\t%.4f cm\t%.3f cm\t%.3f cm\t%s\t%s\t%s\t",
			r.name, r.frames, r.rate, r.bones, r.stats.AnimatedTracks, kept(r.stats), r.events,
			kib(r.stats.RawBytes), kib(r.stats.Bytes), r.stats.Ratio(), a, x,
			e.Max*100, e.P99*100, e.Between.Max*100, e.Between.P99*100, r.err[1].WorstMax()*100, r.err[1].WorstP99()*100,
			ns(r.fwd), ns(r.seek), r.stats.Duration.Round(time.Millisecond))
		fmt.Fprintf(tw, "%.3f\t%d\t\n", r.stats.ChainShare, r.stats.Passes)
		raw += r.stats.RawBytes
		comp += r.stats.Bytes
		e3 = append(e3, r.err[0])
		e100 = append(e100, r.err[1])
		dur += r.stats.Duration
	}
	t3, t100 := offline.MergeErrors(e3...), offline.MergeErrors(e100...)
	fmt.Fprintf(tw, "total\t\t\t\t\t\t\t%.1f\t%.1f\t%.2f\t\t\t%.4f cm\t%.4f cm\t%.4f cm\t%.4f cm\t%.3f cm\t%.3f cm\t\t\t%s\t\n",
		kib(raw), kib(comp), float64(raw)/float64(comp), t3.Max*100, t3.P99*100, t3.Between.Max*100, t3.Between.P99*100,
		t100.WorstMax()*100, t100.WorstP99()*100, dur.Round(time.Millisecond))
	tw.Flush()
	fmt.Fprintf(w, "\nerror target %.4g cm (p99 at 3 cm, at samples and between them)\n\n%s", target, columns)
	fmt.Fprintf(w, "\nACL on the same clips (%s):\n", aclSource)
	at := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(at, "  clip\t120 Hz (Boxing_Toes: 100)\t30 Hz\t24 Hz\t")
	for i := 0; i < len(aclTable); i += 3 {
		fmt.Fprintf(at, "  %s\t%.2f\t%.2f\t%.2f\t\n", aclTable[i].file, aclTable[i].ratio, aclTable[i+1].ratio, aclTable[i+2].ratio)
	}
	at.Flush()
	if bitsquid {
		fmt.Fprintln(w, "\nBitSquid quantisation floor (10-bit smallest-three rotations, 16-bit positions over -10..10 m, every sample kept):")
		for _, r := range rows {
			fmt.Fprintf(w, "  %s: max %.4f cm, p99 %.4f cm at 3 cm; max %.3f cm, p99 %.3f cm at 1 m\n",
				r.name, r.floor[0].Max*100, r.floor[0].P99*100, r.floor[1].Max*100, r.floor[1].P99*100)
		}
	}
}

func kib(n int) float64 { return float64(n) / 1024 }

// kept is the share of the animated tracks' samples stored as curve points.
func kept(s offline.CompressStats) float64 {
	if s.Samples == 0 {
		return 0
	}
	return 100 * float64(s.Points) / float64(s.Samples)
}
