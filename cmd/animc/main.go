// Command animc imports animation clips (BVH, glTF 2.0), compresses them
// into one resource blob and reports, per clip and in total, the sizes,
// ratio, model-space error and time.
//
//	go run ./cmd/animc [flags] [FILE...]
//
// With no FILE it compresses the CMU motion-capture clips of Debian's
// assimp-testmodels (/usr/share/assimp/models/BVH/NN_NN.bvh).
//
// Raw size is counted as ACL counts it: float32 rotation (4), translation
// (3) and scale (3) per bone per sample. The compressed size is the clip's
// record in the blob (tables, curve stream, events, name). Errors are the
// displacement of virtual vertices 3 cm (and 1 m) from each bone in model
// space, over every bone and every source sample, between the source and
// what the sampler decodes from the blob. "kept" is the share of the
// animated tracks' samples that remain as curve points (with -codec
// uniform: that are stored with frame bits rather than as a value
// constant over their segment). "time" is
// Compress's (every pass and its measurement); "share" is the share of
// the error target the tracks were given after calibration and "passes"
// the compressions it took (see anim.CompressOptions.Passes).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/vkjobs/vkjobs/anim"
)

// cmuDir is where Debian's assimp-testmodels installs the CMU clips.
const cmuDir = "/usr/share/assimp/models/BVH"

var cmuClip = regexp.MustCompile(`^[0-9]+_[0-9]+\.bvh$`)

type row struct {
	name   string
	frames int
	bones  int
	rate   float64
	events int
	stats  anim.CompressStats
	err    []anim.ErrorStats // at 3 cm and 1 m
	floor  []anim.ErrorStats // BitSquid quantisation floor, when asked
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "animc:", err)
		os.Exit(1)
	}
}

func run() error {
	errCM := flag.Float64("error", 0.01, "error target in cm at virtual vertices 3 cm from each bone (model space)")
	share := flag.Float64("share", 0.47, "per-track share of the error target to start from (errors add along chains)")
	passes := flag.Int("passes", 4, "compressions per clip: after each, the p99 error is measured and the share rescaled toward -error (1: one pass at -share)")
	calibrate := flag.Bool("calibrate", false, "up to 8 passes (the default already calibrates)")
	openLoop := flag.Bool("openloop", false, "fit every rotation against its own source (no compensation of the ancestors' errors)")
	segment := flag.Float64("segment", 1, "segment length in seconds (random seeks decode from a segment start)")
	out := flag.String("o", "", "write the blob to this file")
	unitName := flag.String("unit", "auto", "BVH length unit: auto, cmu, cm, m or in")
	rate := flag.Float64("rate", 0, "glTF resample rate in Hz (0: the key grid)")
	resample := flag.Float64("resample", 0, "resample every clip to this rate in Hz before compressing (0: keep)")
	events := flag.Bool("events", true, "detect foot contacts (bones named toe/foot) and store them as events")
	bitsquid := flag.Bool("bitsquid", false, "also measure the error floor of the seed's 10-bit/16-bit quantisation")
	codecName := flag.String("codec", "curve", "clip codec: curve (Hermite curves, the best ratio) or uniform (every frame at a searched bit rate: frame-addressable, the same sampling cost at any playback rate and on seeks)")
	segFrames := flag.Int("uniform-segment", 16, "uniform codec: segment length in frames (a power of two, 2..256)")
	verbose := flag.Bool("v", false, "print every import note")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: animc [flags] [FILE.bvh|FILE.gltf|FILE.glb ...]\n\nWith no FILE, compresses the CMU clips in %s.\n\n", cmuDir)
		flag.PrintDefaults()
	}
	flag.Parse()
	unit, err := anim.ParseUnit(*unitName)
	if err != nil {
		return err
	}
	codec, err := anim.ParseCodec(*codecName)
	if err != nil {
		return err
	}
	if !(*errCM > 0) || !(*share > 0) || !(*segment > 0) || *passes < 1 {
		return errors.New("-error, -share, -passes and -segment must be positive")
	}
	if *calibrate {
		*passes = max(*passes, 8)
	}
	files := flag.Args()
	if len(files) == 0 {
		ents, err := os.ReadDir(cmuDir)
		if err != nil {
			return fmt.Errorf("no FILE given and %s is unreadable (install assimp-testmodels): %w", cmuDir, err)
		}
		for _, e := range ents {
			if cmuClip.MatchString(e.Name()) {
				files = append(files, filepath.Join(cmuDir, e.Name()))
			}
		}
		if len(files) == 0 {
			return fmt.Errorf("no FILE given and no CMU clips in %s (install assimp-testmodels)", cmuDir)
		}
		sort.Strings(files)
	}
	opt := anim.CompressOptions{Tolerance: *errCM / 100, ChainShare: *share, SegmentSeconds: *segment, Passes: *passes, OpenLoop: *openLoop,
		Codec: codec, UniformSegmentFrames: *segFrames}
	imp := anim.ImportOptions{BVH: anim.BVHOptions{Unit: unit}, GLTF: anim.GLTFOptions{Rate: *rate}}

	var bar *progressbar.ProgressBar
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 && len(files) > 1 {
		bar = progressbar.NewOptions(len(files), progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription("compressing"), progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish())
	}
	start := time.Now()
	var b anim.Builder
	var rows []row
	var units []string
	for _, path := range files {
		im, err := anim.LoadFile(path, imp)
		if err != nil {
			return err
		}
		for _, n := range im.Notes {
			if strings.HasPrefix(n, "unit:") {
				units = append(units, filepath.Base(path)+": "+n)
			} else if *verbose {
				logf(bar, "%s: %s\n", filepath.Base(path), n)
			}
		}
		si := b.AddSkeleton(im.Skeleton)
		for _, c := range im.Clips {
			if *events {
				ev, err := anim.DetectFootContacts(im.Skeleton, c, anim.ContactOptions{})
				if err == nil {
					c.Events = ev
				} else if *verbose {
					logf(bar, "%s %s: no events: %v\n", filepath.Base(path), c.Name, err)
				}
			}
			if *resample > 0 {
				if c, err = c.Resample(*resample); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
			r := row{name: filepath.Base(path) + ":" + c.Name, frames: c.Frames, bones: im.Skeleton.NumBones(), rate: c.Rate, events: len(c.Events)}
			cc, err := anim.Compress(im.Skeleton, c, opt)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			st, err := measureClip(im.Skeleton, c, cc)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			r.stats, r.err = cc.Stats, st
			if *bitsquid {
				if r.floor, err = anim.BitSquidFloor(im.Skeleton, c, 0.03, 1); err != nil {
					return err
				}
			}
			if err := b.AddClip(si, cc); err != nil {
				return err
			}
			rows = append(rows, r)
		}
		if bar != nil {
			bar.Add(1)
		}
	}
	if bar != nil {
		bar.Finish()
	}
	data, err := b.Bytes()
	if err != nil {
		return err
	}
	if _, err := anim.Load(data); err != nil {
		return fmt.Errorf("written blob does not load: %w", err)
	}
	if *out != "" {
		if err := os.WriteFile(*out, data, 0o644); err != nil {
			return err
		}
	}
	for _, u := range units {
		fmt.Println(u)
	}
	fmt.Println()
	fmt.Printf("codec: %s\n", codec)
	report(rows, *errCM, *bitsquid)
	fmt.Printf("\nblob: %d bytes, %d clips", len(data), len(rows))
	if *out != "" {
		fmt.Printf(", written to %s", *out)
	}
	fmt.Printf("; %s total\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// measureClip writes the clip to a blob of its own and measures it.
func measureClip(sk *anim.Skeleton, c *anim.Clip, cc *anim.CompressedClip) ([]anim.ErrorStats, error) {
	var b anim.Builder
	if err := b.AddClip(b.AddSkeleton(sk), cc); err != nil {
		return nil, err
	}
	data, err := b.Bytes()
	if err != nil {
		return nil, err
	}
	bl, err := anim.Load(data)
	if err != nil {
		return nil, err
	}
	return anim.Measure(sk, c, bl.Clip(0), 0.03, 1)
}

func logf(bar *progressbar.ProgressBar, format string, args ...any) {
	if bar != nil {
		bar.Clear()
	}
	fmt.Fprintf(os.Stderr, format, args...)
}

func report(rows []row, target float64, bitsquid bool) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clip\tframes\tHz\tbones\tanimated\tkept\tevents\traw KiB\tcompressed KiB\tratio\tmax@3cm\tp99@3cm\tmax@1m\tp99@1m\ttime\tshare\tpasses\t")
	var raw, comp int
	var e3, e100 []anim.ErrorStats
	var dur time.Duration
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%g\t%d\t%d\t%.0f%%\t%d\t%.1f\t%.1f\t%.2f\t%.4f cm\t%.4f cm\t%.3f cm\t%.3f cm\t%s\t",
			r.name, r.frames, r.rate, r.bones, r.stats.AnimatedTracks, kept(r.stats), r.events,
			kib(r.stats.RawBytes), kib(r.stats.Bytes), r.stats.Ratio(),
			r.err[0].Max*100, r.err[0].P99*100, r.err[1].Max*100, r.err[1].P99*100, r.stats.Duration.Round(time.Millisecond))
		fmt.Fprintf(tw, "%.3f\t%d\t\n", r.stats.ChainShare, r.stats.Passes)
		raw += r.stats.RawBytes
		comp += r.stats.Bytes
		e3 = append(e3, r.err[0])
		e100 = append(e100, r.err[1])
		dur += r.stats.Duration
	}
	t3, t100 := anim.MergeErrors(e3...), anim.MergeErrors(e100...)
	fmt.Fprintf(tw, "total\t\t\t\t\t\t\t%.1f\t%.1f\t%.2f\t%.4f cm\t%.4f cm\t%.3f cm\t%.3f cm\t%s\t\n",
		kib(raw), kib(comp), float64(raw)/float64(comp), t3.Max*100, t3.P99*100, t100.Max*100, t100.P99*100, dur.Round(time.Millisecond))
	tw.Flush()
	fmt.Printf("\nerror target %.4g cm (p99 at 3 cm); ACL on the CMU set: 21.77:1, max 0.0495 cm, p99 0.0089 cm\n", target)
	if bitsquid {
		fmt.Println("\nBitSquid quantisation floor (10-bit smallest-three rotations, 16-bit positions over -10..10 m, every sample kept):")
		for _, r := range rows {
			fmt.Printf("  %s: max %.4f cm, p99 %.4f cm at 3 cm; max %.3f cm, p99 %.3f cm at 1 m\n",
				r.name, r.floor[0].Max*100, r.floor[0].P99*100, r.floor[1].Max*100, r.floor[1].P99*100)
		}
	}
}

func kib(n int) float64 { return float64(n) / 1024 }

// kept is the share of the animated tracks' samples stored as curve points.
func kept(s anim.CompressStats) float64 {
	if s.Samples == 0 {
		return 0
	}
	return 100 * float64(s.Points) / float64(s.Samples)
}
