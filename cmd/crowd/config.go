package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/vkjobs/vkjobs/anim"
)

// config is the demo's command line.
type config struct {
	count     int
	bones     int
	bonesSet  bool
	frames    int
	framesSet bool
	version   bool
	width     int
	height    int
	offload   string
	out       string
	pipeline  int
	trace     string
	timeline  string
	headless  bool
	model     string
	tolerance float64 // cm
	codec     anim.Codec
	clipRate  float64 // Hz; 0 = the source's
	seed      int64
	validate  bool
	check     bool
	cacheDir  string
	dt        float64
	warmup    int
	workers   int
	vsync     bool
	spuGroup  int
	quiet     bool
	render    bool
	uniform   bool
	// uniformSet: -uniform was given (not the default), so a device that
	// cannot run it is an error, not a fallback.
	uniformSet bool
	graph      bool
}

const usageText = `usage: crowd [flags]

A crowd of individually animated characters (CMU motion capture on a
%d-bone skeleton by default), each frame a task graph on the scheduler:
sample -> local-to-model -> skin -> gather -> merge-n-sort -> record ->
submit/present. With a display it opens a window (close it or press Esc
to stop); without one, or with -headless, it renders offscreen and writes a
PNG of the last frame. Ctrl-C (SIGINT) or SIGTERM stops after the frame in
flight and still writes the PNG, the trace and the summary. Output files
are checked before the run starts. See cmd/crowd/doc.go.

Flags:
`

func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("crowd", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, usageText, defaultBones)
		fs.PrintDefaults()
	}
	fs.IntVar(&c.count, "count", 1000, "number of characters")
	fs.IntVar(&c.bones, "bones", 0, fmt.Sprintf("bones per skeleton: the source's joints plus procedural chains (fingers, cape, tail, ...), at most 256; 0 = the source's joints only (default %d for the CMU figure; with -model, the model's own joints)", defaultBones))
	fs.IntVar(&c.frames, "frames", 0, fmt.Sprintf("frames to run; in a window 0 = until it closes (default %d headless, 0 in a window)", defaultHeadlessFrames))
	size := fs.String("size", "1280x720", "window or offscreen size WxH")
	fs.StringVar(&c.offload, "offload", "cpu", "where local-to-model and skinning run: cpu, gpu, auto (learned placement) or spu (local-store executor)")
	fs.StringVar(&c.out, "out", "crowd.png", "headless: PNG file for the last frame")
	fs.IntVar(&c.pipeline, "pipeline", 2, "pipeline stages run concurrently on consecutive frames (1 = serial frame, 2 = simulate | render, 3 = sample | skin | render, 4 = ... | submit)")
	fs.StringVar(&c.trace, "trace", "", "write a Chrome trace (Perfetto, chrome://tracing) of the run to this JSON file")
	fs.StringVar(&c.timeline, "timeline", "", "write an SVG timeline of the last complete frame to this file")
	fs.BoolVar(&c.headless, "headless", false, "render offscreen even when a display is available")
	fs.StringVar(&c.model, "model", "", "draw this glTF character (skeleton, clips and mesh) as it is instead of the CMU figure, e.g. cmd/crowd/testdata/cesium_man.gltf (-bones N adds procedural bones to it)")
	fs.Float64Var(&c.tolerance, "tolerance", 0.1, "animation compression error target, cm at 3 cm from each bone")
	fs.Func("codec", "animation clip codec: curve (Hermite curves, the best ratio) or uniform (frame-addressable: the same sampling cost at any playback rate and on seeks, a lower ratio)", func(v string) error {
		var err error
		c.codec, err = anim.ParseCodec(v)
		return err
	})
	fs.Float64Var(&c.clipRate, "clip-rate", defaultClipRate, "resample clips recorded faster than this (Hz) before compressing them, as a game ships animation (CMU motion capture is 120 Hz); 0 keeps the source rate")
	fs.Int64Var(&c.seed, "seed", 1, "random seed of the crowd layout, clips, times and speeds")
	fs.BoolVar(&c.validate, "validate", false, "enable the Vulkan validation layer and fail on any error message")
	fs.BoolVar(&c.check, "check", false, "checked run: the scheduler refuses tasks that race on memory (sched.Config.CheckRaces: the run fails naming both tasks), and with a Vulkan device the validation layer is on and any error message fails the run, as with -validate")
	fs.StringVar(&c.cacheDir, "cache", "", `directory caching compressed clips ("" = user cache dir, "off" = none)`)
	fs.Float64Var(&c.dt, "dt", 0, "simulation time step in seconds; 0 = 1/60 headless, the measured frame time in a window")
	fs.IntVar(&c.warmup, "warmup", -1, "frames excluded from the statistics (-1 = min(10, frames/4))")
	fs.IntVar(&c.workers, "workers", 0, "scheduler worker goroutines (0 = cores - 1 main thread)")
	fs.BoolVar(&c.vsync, "vsync", false, "window: wait for the vertical blank (FIFO present mode)")
	fs.IntVar(&c.spuGroup, "spu-group", 8, "spu: characters per skinning task (their palettes must fit the local store)")
	fs.BoolVar(&c.quiet, "q", false, "print only the summary")
	fs.BoolVar(&c.graph, "graph", true, "build each frame's tasks once as frame graphs (sched.Graph) and replay them; false: issue every frame's tasks anew (dynamic tasks)")
	fs.BoolVar(&c.uniform, "uniform", true, "gpu: skin with the palette in uniform blocks (kernels.SkinLBSUniform, one task per group of characters; a device whose maxUniformBufferRange is below the 64 KiB block falls back to storage with a note, or fails if -uniform was given); false: one storage-buffer task (kernels.SkinLBS)")
	fs.BoolVar(&c.render, "render", true, "draw with Vulkan; -render=false gathers, sorts and records into CPU command lists only (measures the simulation alone)")
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.version {
		return c, nil
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	outSet := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "frames":
			c.framesSet = true
		case "bones":
			c.bonesSet = true
		case "out":
			outSet = true
		case "uniform":
			c.uniformSet = true
		}
	})
	if outSet && !c.render {
		// The run would end without the image and without a word.
		return nil, fmt.Errorf("-out %s with -render=false: nothing is drawn, so no image is written; drop one of them", c.out)
	}
	if !c.bonesSet && c.model == "" {
		c.bones = defaultBones
	}
	w, h, err := parseSize(*size)
	if err != nil {
		return nil, err
	}
	c.width, c.height = w, h
	switch {
	case c.count < 1 || c.count > 1<<20:
		return nil, fmt.Errorf("-count %d: want 1..%d", c.count, 1<<20)
	case c.bones < 0 || c.bones > 256:
		return nil, fmt.Errorf("-bones %d: want up to 256 (joint indices are 8 bits)", c.bones)
	case c.frames < 0:
		return nil, fmt.Errorf("-frames %d: want >= 0", c.frames)
	case c.pipeline < 1 || c.pipeline > 4:
		return nil, fmt.Errorf("-pipeline %d: want 1..4", c.pipeline)
	case !(c.clipRate >= 0) || c.clipRate > 1000:
		return nil, fmt.Errorf("-clip-rate %v: want 0 (the source's) or a rate up to 1000 Hz", c.clipRate)
	case !(c.tolerance > 0):
		return nil, fmt.Errorf("-tolerance %v: want > 0", c.tolerance)
	case !(c.dt >= 0 && c.dt <= 1): // NaN fails both
		return nil, fmt.Errorf("-dt %v: want 0..1 s", c.dt)
	case c.warmup < -1:
		return nil, fmt.Errorf("-warmup %d: want -1 (automatic) or a number of frames", c.warmup)
	case c.workers < 0 || c.workers > maxWorkers:
		return nil, fmt.Errorf("-workers %d: want 0 (cores - 1) up to %d", c.workers, maxWorkers)
	case c.spuGroup < 1:
		return nil, fmt.Errorf("-spu-group %d: want >= 1", c.spuGroup)
	}
	c.offload = strings.ToLower(c.offload)
	switch c.offload {
	case "cpu", "gpu", "auto", "spu":
	default:
		return nil, fmt.Errorf("-offload %q: want cpu, gpu, auto or spu", c.offload)
	}
	return c, nil
}

// maxWorkers bounds -workers: far more goroutines than any machine has
// cores only slows every frame (each worker has its own deques and
// per-frame buffers, and idle workers are woken and steal), and 100000
// kept the setup busy for many minutes, deaf to Ctrl-C.
const maxWorkers = 256

func parseSize(s string) (int, int, error) {
	a, b, ok := strings.Cut(strings.ToLower(s), "x")
	if !ok {
		return 0, 0, fmt.Errorf("-size %q: want WxH", s)
	}
	w, err1 := strconv.Atoi(a)
	h, err2 := strconv.Atoi(b)
	if err := errors.Join(err1, err2); err != nil || w < 16 || h < 16 || w > 8192 || h > 8192 {
		return 0, 0, fmt.Errorf("-size %q: want WxH, each 16..8192", s)
	}
	return w, h, nil
}

// haveDisplay reports whether a window could be opened: an X or Wayland
// display is named in the environment.
func haveDisplay() bool {
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}
