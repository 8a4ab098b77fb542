package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vkjobs/vkjobs/anim"
	"github.com/vkjobs/vkjobs/cmd/crowd/internal/rig"
	"github.com/vkjobs/vkjobs/evstream"
	"github.com/vkjobs/vkjobs/gpu"
	"github.com/vkjobs/vkjobs/kernels"
	"github.com/vkjobs/vkjobs/sched"
	"github.com/vkjobs/vkjobs/trace"
)

// cacheDir holds the compressed clips for the whole test binary, so that
// only the first run compresses (a few seconds) and the tests leave
// nothing behind.
var cacheDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "crowd-test-cache")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cacheDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// needCMU fails (CI) or skips the test when the CMU clips are missing.
func needCMU(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(rig.CMUDir, "01_01.bvh")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CMU motion capture missing (install Debian's assimp-testmodels): %v", err)
		}
		t.Skipf("CMU motion capture missing (install Debian's assimp-testmodels): %v", err)
	}
}

var vulkanOnce struct {
	sync.Once
	err error
}

// needVulkan fails the test when CI=true and no Vulkan device (lavapipe)
// can be opened, and skips it otherwise.
func needVulkan(t *testing.T) {
	t.Helper()
	vulkanOnce.Do(func() {
		d, err := gpu.Open(gpu.Options{})
		if err == nil {
			err = d.Close()
		}
		vulkanOnce.err = err
	})
	if err := vulkanOnce.err; err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Vulkan device with CI=true (install mesa-vulkan-drivers): %v", err)
		}
		t.Skipf("no Vulkan device (install mesa-vulkan-drivers for lavapipe): %v", err)
	}
}

// demo runs the demo in-process with the test's cache and returns the
// finished app and its output.
func demo(t *testing.T, args ...string) (*app, string) {
	t.Helper()
	var out bytes.Buffer
	args = append([]string{"-cache", cacheDir, "-headless"}, args...)
	a, err := runApp(args, &out)
	if err != nil {
		t.Fatalf("crowd %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	if a.draw.frameErrs > 0 {
		// A render context too small for its job's draws, or a draw the
		// registry does not know.
		t.Errorf("crowd %s: %d frames dropped draw packets", strings.Join(args, " "), a.draw.frameErrs)
	}
	return a, out.String()
}

func readPNG(t *testing.T, path string) *image.RGBA {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	im, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := im.Bounds()
	rgba := image.NewRGBA(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			rgba.Set(x, y, im.At(x, y))
		}
	}
	return rgba
}

// imageDiff counts the pixels whose colour differs by more than tol in
// some channel.
func imageDiff(a, b *image.RGBA, tol int) (bad, total int) {
	for i := 0; i+3 < len(a.Pix) && i+3 < len(b.Pix); i += 4 {
		total++
		for c := range 3 {
			d := int(a.Pix[i+c]) - int(b.Pix[i+c])
			if d > tol || -d > tol {
				bad++
				break
			}
		}
	}
	return bad, total
}

// checkNotBlank requires a picture: many pixels away from the clear
// colour and the ground, in many colours.
func checkNotBlank(t *testing.T, img *image.RGBA) {
	t.Helper()
	counts := map[[3]uint8]int{}
	for i := 0; i+3 < len(img.Pix); i += 4 {
		counts[[3]uint8{img.Pix[i], img.Pix[i+1], img.Pix[i+2]}]++
	}
	type kv struct {
		c [3]uint8
		n int
	}
	var all []kv
	for c, n := range counts {
		all = append(all, kv{c, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	total := len(img.Pix) / 4
	rest := total
	for i := 0; i < 2 && i < len(all); i++ {
		rest -= all[i].n // background and ground
	}
	if len(counts) < 50 || rest < total/50 {
		t.Fatalf("the image looks blank: %d colours, %d of %d pixels outside the two commonest", len(counts), rest, total)
	}
}

// TestCodecUniform runs the demo on clips compressed with the uniform
// codec (-codec uniform): the blob holds uniform clips, and the CPU and
// GPU samplers draw the same crowd (validation layer on), within the
// tolerance of TestHeadlessCPUvsGPU.
func TestCodecUniform(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	dir := t.TempDir()
	cpuPNG, gpuPNG := filepath.Join(dir, "cpu.png"), filepath.Join(dir, "gpu.png")
	common := []string{"-codec", "uniform", "-count", "16", "-frames", "4", "-size", "256x192", "-validate"}
	a, _ := demo(t, append(common, "-offload", "cpu", "-out", cpuPNG)...)
	for i := range a.w.blob.NumClips() {
		if c := a.w.blob.Clip(i); c.Codec() != anim.CodecUniform {
			t.Fatalf("clip %d (%s) is %v", i, c.Name(), c.Codec())
		}
	}
	if a.st.kernels[a.kSample][devCPU].calls.Load() == 0 {
		t.Error("no sampling ran on the CPU")
	}
	g, _ := demo(t, append(common, "-offload", "gpu", "-out", gpuPNG)...)
	if n := g.st.kernels[g.kSample][devGPU].calls.Load(); n < 4 {
		t.Errorf("-offload gpu: sampling ran %d times on the GPU, want at least 4", n)
	}
	ci, gi := readPNG(t, cpuPNG), readPNG(t, gpuPNG)
	checkNotBlank(t, ci)
	checkNotBlank(t, gi)
	if bad, total := imageDiff(ci, gi, 8); bad*100 > total {
		t.Errorf("cpu and gpu images differ: %d of %d pixels by more than 8 (tolerance 1%%)", bad, total)
	}
	if _, err := parseFlags([]string{"-codec", "acl"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "acl") {
		t.Errorf("-codec acl: error %v, want one naming the codec", err)
	}
}

// TestHeadlessCPUvsGPU renders a small crowd offscreen on lavapipe with
// local-to-model and skinning on the CPU workers, then on the GPU, with
// the validation layer on: both images show the crowd and agree within
// the tolerance (at most 1% of the pixels differ by more than 8 in a
// channel: the kernels agree to 2e-5, which moves a few edge pixels).
// The first run also writes the Chrome trace and the SVG timeline.
func TestHeadlessCPUvsGPU(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	dir := t.TempDir()
	cpuPNG, gpuPNG := filepath.Join(dir, "cpu.png"), filepath.Join(dir, "gpu.png")
	tr, svg := filepath.Join(dir, "trace.json"), filepath.Join(dir, "timeline.svg")
	common := []string{"-count", "16", "-frames", "4", "-size", "256x192", "-validate"}
	a, out := demo(t, append(common, "-offload", "cpu", "-out", cpuPNG, "-trace", tr, "-timeline", svg)...)
	if !strings.Contains(out, "wrote "+cpuPNG) {
		t.Errorf("the run does not say where it wrote the PNG:\n%s", out)
	}
	if a.st.kernels[a.kSample][devCPU].calls.Load() == 0 {
		t.Error("no sampling ran")
	}
	gtr := filepath.Join(dir, "trace_gpu.json")
	g, _ := demo(t, append(common, "-offload", "gpu", "-out", gpuPNG, "-trace", gtr)...)
	for _, k := range []struct {
		name string
		id   int
	}{{"anim_sample", int(g.kSample)}, {"local_to_model_skin", int(kernels.LocalToModelSkin)}, {"skin_lbs_uniform", int(kernels.SkinLBSUniform)}} {
		if n := g.st.kernels[k.id][devGPU].calls.Load(); n < 4 {
			t.Errorf("-offload gpu: %s ran %d times on the GPU, want at least 4 (once per frame or more)", k.name, n)
		}
		if n := g.st.kernels[k.id][devCPU].calls.Load(); n != 0 {
			t.Errorf("-offload gpu: %s ran %d times on the CPU", k.name, n)
		}
	}
	if es := g.exec.Stats(); es.BytesDown != 0 {
		t.Errorf("-offload gpu read %d bytes back: palette and vertices must stay on the GPU", es.BytesDown)
	}
	ci, gi := readPNG(t, cpuPNG), readPNG(t, gpuPNG)
	checkNotBlank(t, ci)
	checkNotBlank(t, gi)
	bad, total := imageDiff(ci, gi, 8)
	t.Logf("cpu vs gpu: %d of %d pixels differ by more than 8", bad, total)
	if bad*100 > total {
		t.Errorf("cpu and gpu images differ: %d of %d pixels by more than 8 (tolerance 1%%)", bad, total)
	}
	checkTrace(t, tr, a.s.Threads())
	for _, f := range []string{tr, gtr} { // slices on one track nest (Perfetto drops the others)
		if b, err := os.ReadFile(f); err != nil {
			t.Error(err)
		} else if err := trace.CheckChrome(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("anim_sample")) {
		t.Errorf("timeline %s: %v, %d bytes without the frame's kernels", svg, err, len(b))
	}
}

// checkTrace parses the Chrome trace and checks that on every track the
// complete ("X") events nest: each one ends before the enclosing one does
// or starts after it ended.
func checkTrace(t *testing.T, path string, threads int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string   `json:"name"`
			Ph   string   `json:"ph"`
			Ts   float64  `json:"ts"`
			Dur  *float64 `json:"dur"`
			Tid  int      `json:"tid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("trace %s is not JSON: %v", path, err)
	}
	type span struct{ a, b float64 }
	tracks := map[int][]span{}
	frames, kernels := 0, map[string]bool{}
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				t.Fatalf("event %q has no duration", e.Name)
			}
			tracks[e.Tid] = append(tracks[e.Tid], span{e.Ts, e.Ts + *e.Dur})
			kernels[e.Name] = true
		case "i":
			if strings.HasPrefix(e.Name, "frame ") {
				frames++
			}
		}
	}
	if frames != 4 {
		t.Errorf("trace has %d frame markers, want 4", frames)
	}
	for _, k := range []string{"crowd.clock", "anim_sample", "crowd.procedural", "local_to_model_skin", "skin_lbs", "crowd.gather", "crowd.merge-sort", "crowd.record", "crowd.submit-present"} {
		if !kernels[k] {
			t.Errorf("trace has no %s scope", k)
		}
	}
	const eps = 0.002 // µs: the trace's float rounding
	for tid, ss := range tracks {
		sort.SliceStable(ss, func(i, j int) bool {
			if ss[i].a != ss[j].a {
				return ss[i].a < ss[j].a
			}
			return ss[i].b > ss[j].b
		})
		var stack []span
		for _, s := range ss {
			for len(stack) > 0 && s.a >= stack[len(stack)-1].b-eps {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && s.b > stack[len(stack)-1].b+eps {
				t.Fatalf("track %d: scope [%.3f, %.3f] overlaps [%.3f, %.3f] without nesting", tid, s.a, s.b, stack[len(stack)-1].a, stack[len(stack)-1].b)
			}
			stack = append(stack, s)
		}
	}
	if len(tracks) < 2 {
		t.Errorf("trace has %d tracks with scopes", len(tracks))
	}
}

// TestPipelineDepths runs the frame pipeline serial and 2, 3 and 4 stages
// deep: the last frame's image is the same whatever the depth (the
// stages communicate only through the multi-buffered sets and task
// dependencies), the frames overlap only when pipelined, and the steady
// state allocates (almost) nothing.
func TestPipelineDepths(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	dir := t.TempDir()
	var ref *image.RGBA
	for _, n := range []string{"1", "2", "3", "4"} {
		p := filepath.Join(dir, "p"+n+".png")
		a, _ := demo(t, "-count", "24", "-frames", "12", "-size", "160x120", "-pipeline", n, "-out", p, "-q")
		img := readPNG(t, p)
		if ref == nil {
			ref = img
			checkNotBlank(t, img)
		} else if bad, _ := imageDiff(ref, img, 0); bad != 0 {
			t.Errorf("-pipeline %s: %d pixels differ from -pipeline 1", n, bad)
		}
		if len(a.w.sets) != a.cfg.pipeline {
			t.Errorf("-pipeline %s: %d buffer sets", n, len(a.w.sets))
		}
		if a.w.footsteps == 0 {
			t.Errorf("-pipeline %s: no footsteps consumed", n)
		}
		// Frame f+1 starts sampling before frame f is submitted only in
		// a pipeline.
		overlaps := 0
		fr := a.st.frames
		for i := 1; i < len(fr); i++ {
			if fr[i].start > 0 && fr[i-1].present > 0 && fr[i].start < fr[i-1].present {
				overlaps++
			}
		}
		if n == "1" && overlaps != 0 {
			t.Errorf("-pipeline 1: %d frames overlap the previous one", overlaps)
		}
		if n != "1" && overlaps == 0 {
			t.Errorf("-pipeline %s: no frame overlaps the previous one", n)
		}
	}
	// The GPU path pipelined: same picture within the CPU/GPU tolerance.
	p := filepath.Join(dir, "gpu3.png")
	demo(t, "-count", "24", "-frames", "12", "-size", "160x120", "-pipeline", "3", "-offload", "gpu", "-out", p, "-q")
	if bad, total := imageDiff(ref, readPNG(t, p), 8); bad*100 > total {
		t.Errorf("-offload gpu -pipeline 3: %d of %d pixels differ from the serial CPU run", bad, total)
	}
}

// TestZeroAllocs measures the steady state's heap allocations per frame
// (runtime.MemStats over the timed frames) with rendering off, as the
// summary prints them. The demo's own code allocates nothing per frame;
// the Go runtime does, a bounded number of times, not per frame: a
// sleeping thread's channel wait takes sudogs from caches that every GC
// empties (the timed frames start with one), and a loaded machine makes
// the runtime start OS threads it had not needed before (memory profile:
// sched's sleep and runtime.newm). Those one-off allocations, 40-100 on a
// loaded machine (up to 0.52 a frame over 200 frames under make test),
// are spread over 400 timed frames against the bound of 0.5 per frame; a
// per-frame allocation anywhere would show as >= 1.
func TestZeroAllocs(t *testing.T) {
	needCMU(t)
	for _, graph := range []string{"-graph=true", "-graph=false"} {
		a, out := demo(t, "-count", "200", "-frames", "440", "-warmup", "40", "-render=false", "-pipeline", "3", "-offload", "cpu", graph)
		per := float64(a.m1.Mallocs-a.m0.Mallocs) / float64(a.timedFrames)
		if per > 0.5 {
			t.Errorf("%s: %.2f allocations per frame in steady state\n%s", graph, per, out)
		}
		t.Logf("%s: %.2f allocations per frame over %d timed frames", graph, per, a.timedFrames)
		if !strings.Contains(out, "allocations: ") {
			t.Errorf("the summary does not report allocations:\n%s", out)
		}
	}
}

// TestGraphMatchesDynamic runs the frame as frame graphs (-graph, the
// default) and as dynamic tasks (-graph=false) in every -offload mode and
// at several pipeline depths: the same frames are drawn (the last frame's
// image is the same pixel for pixel; with -offload auto, whose placer
// learns from timings and may place a phase elsewhere, within the CPU/GPU
// tolerance), the same footsteps are consumed, and each mode ran the way
// it says (graphs built, or none).
func TestGraphMatchesDynamic(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	dir := t.TempDir()
	for _, off := range []string{"cpu", "gpu", "spu", "auto"} {
		for _, n := range []string{"1", "2", "4"} {
			if off != "cpu" && n == "1" {
				continue
			}
			var imgs [2]*image.RGBA
			var steps [2]int64
			for i, graph := range []bool{true, false} {
				p := filepath.Join(dir, fmt.Sprintf("%s%s-%v.png", off, n, graph))
				a, _ := demo(t, "-count", "24", "-frames", "10", "-size", "160x120", "-pipeline", n, "-offload", off,
					"-graph="+strconv.FormatBool(graph), "-out", p, "-q")
				if (a.fg != nil) != graph {
					t.Fatalf("-offload %s -pipeline %s -graph=%v: frame graphs built: %v", off, n, graph, a.fg != nil)
				}
				imgs[i], steps[i] = readPNG(t, p), a.w.footsteps
			}
			checkNotBlank(t, imgs[0])
			tol := 0
			if off == "auto" {
				tol = 8
			}
			if bad, total := imageDiff(imgs[0], imgs[1], tol); bad*100 > total || (tol == 0 && bad != 0) {
				t.Errorf("-offload %s -pipeline %s: %d of %d pixels differ between the graph and the dynamic frame", off, n, bad, total)
			}
			if steps[0] != steps[1] {
				t.Errorf("-offload %s -pipeline %s: %d footsteps as graphs, %d as dynamic tasks", off, n, steps[0], steps[1])
			}
		}
	}
}

// TestNoVulkan makes device selection fail (as on a machine without
// Vulkan): -offload=cpu still simulates and says that rendering is
// skipped; -offload=gpu is an error.
func TestNoVulkan(t *testing.T) {
	needCMU(t)
	missing := filepath.Join(t.TempDir(), "no_icd.json") // hide every driver
	t.Setenv("VK_ICD_FILENAMES", missing)
	t.Setenv("VK_DRIVER_FILES", missing)
	a, out := demo(t, "-count", "8", "-frames", "3")
	if a.dev != nil || a.draw.gfx != nil {
		t.Fatal("a device was opened")
	}
	for _, want := range []string{"rendering is skipped", "rendering skipped (no Vulkan)", "footsteps:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var buf bytes.Buffer
	_, err := runApp([]string{"-cache", cacheDir, "-headless", "-count", "8", "-frames", "3", "-offload", "gpu"}, &buf)
	if err == nil || !strings.Contains(err.Error(), "needs a Vulkan device") {
		t.Errorf("-offload=gpu without a device: err = %v", err)
	}
}

// TestDeviceOverrideMatchesNothing: VKJOBS_DEVICE naming no device is an
// error, not a CPU-only run.
func TestDeviceOverrideMatchesNothing(t *testing.T) {
	needCMU(t)
	t.Setenv(gpu.EnvDevice, "99")
	var buf bytes.Buffer
	_, err := runApp([]string{"-cache", cacheDir, "-headless", "-count", "8", "-frames", "3"}, &buf)
	if !errors.Is(err, gpu.ErrDeviceOverride) || !strings.Contains(err.Error(), `VKJOBS_DEVICE="99"`) {
		t.Fatalf("err = %v, want ErrDeviceOverride naming VKJOBS_DEVICE=\"99\"", err)
	}
}

// TestVulkanErrorsAreNotNoDevice: an error opening Vulkan other than "no
// device" (here a bad VKJOBS_VALIDATION) ends the run with it, and -validate
// without any device is an error; both ran CPU-only and exited 0 (the
// reason only in the summary's "device: none" line, or nowhere with -q).
func TestVulkanErrorsAreNotNoDevice(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	t.Setenv(gpu.EnvValidation, "ture")
	var buf bytes.Buffer
	_, err := runApp([]string{"-cache", cacheDir, "-headless", "-q", "-count", "8", "-frames", "3"}, &buf)
	if err == nil || !strings.Contains(err.Error(), `VKJOBS_VALIDATION="ture"`) {
		t.Errorf("VKJOBS_VALIDATION=ture: err = %v, want it named", err)
	}
	t.Setenv(gpu.EnvValidation, "")
	missing := filepath.Join(t.TempDir(), "no_icd.json") // hide every driver
	t.Setenv("VK_ICD_FILENAMES", missing)
	t.Setenv("VK_DRIVER_FILES", missing)
	_, err = runApp([]string{"-cache", cacheDir, "-headless", "-q", "-count", "8", "-frames", "3", "-validate"}, &buf)
	if err == nil || !strings.Contains(err.Error(), "-validate needs a Vulkan device") {
		t.Errorf("-validate without a device: err = %v", err)
	}
}

// TestTooLargeForDevice: a crowd that does not fit the device is refused
// before the first frame, saying what does not fit, rather than running
// into a fence time-out. On lavapipe 100000 characters
// exceed the device's 2 GiB heap (offload cpu: the vertex sets) and its
// 128 MiB maxStorageBufferRange (offload gpu: the bindings).
func TestTooLargeForDevice(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	d, err := gpu.Open(gpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := d.Limits()
	d.Close()
	if !l.CPU || l.DeviceMemory > 4<<30 {
		t.Skipf("the figures are lavapipe's; this device has %d bytes of memory", l.DeviceMemory)
	}
	for _, off := range []string{"cpu", "gpu"} {
		var buf bytes.Buffer
		t0 := time.Now()
		_, err := runApp([]string{"-cache", cacheDir, "-headless", "-count", "100000", "-frames", "1", "-offload", off}, &buf)
		if err == nil || !strings.Contains(err.Error(), "-count 100000 does not fit the device") || errors.Is(err, gpu.ErrTimeout) {
			t.Errorf("-offload %s: err = %v, want an up-front \"does not fit\"", off, err)
		}
		t.Logf("-offload %s: %v after %v", off, err, time.Since(t0).Round(time.Millisecond))
	}
}

// TestOffloadAutoAndSPU runs the learned placement and the SPU executor:
// both draw the same picture as the CPU run.
func TestOffloadAutoAndSPU(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	dir := t.TempDir()
	common := []string{"-count", "12", "-frames", "6", "-size", "160x120", "-q"}
	demo(t, append(common, "-out", filepath.Join(dir, "cpu.png"))...)
	ref := readPNG(t, filepath.Join(dir, "cpu.png"))
	for _, off := range []string{"auto", "spu"} {
		p := filepath.Join(dir, off+".png")
		a, _ := demo(t, append(common, "-offload", off, "-out", p)...)
		if bad, total := imageDiff(ref, readPNG(t, p), 8); bad*100 > total {
			t.Errorf("-offload %s: %d of %d pixels differ from the CPU run", off, bad, total)
		}
		if off == "spu" {
			if st := a.spu.Stats(); st.Jobs == 0 || st.Failed != 0 {
				t.Errorf("spu executor: %+v", st)
			}
		}
	}
}

// TestGLTFModel draws Cesium Man (cmd/crowd/testdata, CC BY 4.0) through
// anim's glTF import as it is (its 19 joints), and with procedural bones
// up to 90 when -bones asks for them.
func TestGLTFModel(t *testing.T) {
	needVulkan(t)
	for _, c := range []struct {
		args  []string
		bones int
	}{{nil, 19}, {[]string{"-bones", "90"}, 90}} {
		p := filepath.Join(t.TempDir(), "cesium.png")
		args := append([]string{"-model", "testdata/cesium_man.gltf", "-count", "6", "-frames", "4", "-size", "200x150", "-out", p, "-q"}, c.args...)
		a, _ := demo(t, args...)
		if a.rig.SourceBones != 19 || a.rig.Bones != c.bones {
			t.Errorf("cesium man %v: %d source bones, %d in all, want 19 and %d", c.args, a.rig.SourceBones, a.rig.Bones, c.bones)
		}
		checkNotBlank(t, readPNG(t, p))
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-count", "0"}, {"-bones", "300"}, {"-pipeline", "0"}, {"-pipeline", "5"},
		{"-offload", "tpu"}, {"-size", "12x12"}, {"-size", "big"}, {"extra"},
		{"-clip-rate", "-30"}, {"-clip-rate", "NaN"}, {"-clip-rate", "5000"},
		{"-dt", "NaN"}, {"-dt", "-0.1"}, {"-dt", "+Inf"}, {"-warmup", "-2"},
		{"-workers", "-1"}, {"-workers", "100000"}, {"-tolerance", "NaN"},
		{"-out", "x.png", "-render=false"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		} else if !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%q: the error does not name the flag: %v", args, err)
		}
	}
	c, err := parseFlags([]string{"-size", "320x200", "-offload", "GPU"}, &bytes.Buffer{})
	if err != nil || c.width != 320 || c.height != 200 || c.offload != "gpu" || c.count != 1000 || c.bones != 90 || c.clipRate != defaultClipRate {
		t.Errorf("parse: %+v, %v", c, err)
	}
	var out bytes.Buffer
	if err := run([]string{"-h"}, &out); err != nil || !strings.Contains(out.String(), "-offload") {
		t.Errorf("-h: %v\n%s", err, out.String())
	}
}

func TestStages(t *testing.T) {
	want := map[int]string{1: "00000000", 2: "00011111", 3: "01122222", 4: "01122223"}
	for n, w := range want {
		s := stagesFor(n)
		var b strings.Builder
		for _, x := range s {
			fmt.Fprint(&b, x)
		}
		if b.String() != w {
			t.Errorf("stagesFor(%d) = %s, want %s", n, b.String(), w)
		}
	}
}

func TestFastSin(t *testing.T) {
	for x := -math.Pi; x <= math.Pi; x += 0.001 {
		if d := math.Abs(float64(fastSin(float32(x))) - math.Sin(x)); d > 2e-4 {
			t.Fatalf("fastSin(%v) off by %v", x, d)
		}
	}
}

// TestProceduralBones checks the extra bones' rotations stay unit
// quaternions that actually move.
func TestProceduralBones(t *testing.T) {
	// Two chains: one link with an identity rest, two links with a rest
	// rotation (as on glTF skeletons).
	rest := [4]float32{0, float32(math.Sin(0.3)), 0, float32(math.Cos(0.3))}
	w := &world{extras: []rig.Extra{
		{Bone: 1, Rest: [4]float32{0, 0, 0, 1}, Axis: [3]float32{1, 0, 0}, Amp: 0.3, Omega: 6, Lag: 0.5},
		{Bone: 2, Rest: rest, Axis: [3]float32{0, 0, 1}, Amp: 0.2, Omega: 9, Lag: 0},
		{Bone: 3, Rest: rest, Axis: [3]float32{0, 0, 1}, Amp: 0.2, Omega: 9, Lag: 0.7},
	}}
	w.setupProcedural()
	if len(w.procChains) != 2 {
		t.Fatalf("%d chains, want 2", len(w.procChains))
	}
	for _, age := range []float64{0.1, 0.4, 17.3, 1234.5} {
		local := make([]kernels.Transform, 4)
		w.procedural(local, age, 0.2)
		for i, e := range w.extras {
			// Reference: rest * axisAngle(axis, amp*sin(omega*age + phase - lag)).
			ang := float64(e.Amp) * math.Sin(float64(e.Omega)*age+0.2-float64(e.Lag))
			sh, ch := math.Sincos(ang / 2)
			q := [4]float64{float64(e.Axis[0]) * sh, float64(e.Axis[1]) * sh, float64(e.Axis[2]) * sh, ch}
			r := e.Rest
			want := [4]float64{
				float64(r[3])*q[0] + float64(r[0])*q[3] + float64(r[1])*q[2] - float64(r[2])*q[1],
				float64(r[3])*q[1] - float64(r[0])*q[2] + float64(r[1])*q[3] + float64(r[2])*q[0],
				float64(r[3])*q[2] + float64(r[0])*q[1] - float64(r[1])*q[0] + float64(r[2])*q[3],
				float64(r[3])*q[3] - float64(r[0])*q[0] - float64(r[1])*q[1] - float64(r[2])*q[2],
			}
			got := local[e.Bone].Rot
			for c := range 4 {
				if d := math.Abs(float64(got[c]) - want[c]); d > 2e-4 {
					t.Fatalf("age %v extra %d: rotation %v, want %v", age, i, got, want)
				}
			}
		}
	}
}

// TestEventsSkipUnknown feeds the events kernel a stream with a type it
// does not know between two footsteps.
func TestEventsSkipUnknown(t *testing.T) {
	w := &world{flash: make([]uint8, 4), sets: make([]frameSet, 1)}
	w.sets[0].events = make([]evstream.Writer, 1)
	wr := &w.sets[0].events[0]
	wr.Init(evstream.NewBuffer(1024))
	e := footEvent{Char: 2}
	if err := evstream.Put(wr, evFootDown, &e); err != nil {
		t.Fatal(err)
	}
	if err := wr.Append(99, []byte("someone else's event")); err != nil {
		t.Fatal(err)
	}
	e.Char = 3
	if err := evstream.Put(wr, evFootDown, &e); err != nil {
		t.Fatal(err)
	}
	a := &app{w: w}
	if err := eventsKernel(nil, &sched.TaskData{Data: a}); err != nil {
		t.Fatal(err)
	}
	if w.footsteps != 2 || w.unknownEvents != 1 || w.flash[2] != flashFrames || w.flash[3] != flashFrames {
		t.Errorf("footsteps %d, unknown %d, flash %v", w.footsteps, w.unknownEvents, w.flash)
	}
}

// TestCamera: the camera sees the crowd (its centre, its front row, its
// back corners) and the ground far behind it up to the fog, not what lies
// behind the camera or far to the side; the fog has hidden the ground
// before its edge, from every orbit angle.
func TestCamera(t *testing.T) {
	const halfX, halfZ, height = 10, 5, 1.6
	var c camera
	c.set(halfX, halfZ, height, 16.0/9, 0)
	for _, p := range [][3]float32{{0, 0.8, 0}, {0, 0, halfZ}, {-halfX, 0, -halfZ}, {halfX, 0, -halfZ}, {0, 0, -20 * halfZ}} {
		if !c.visible(p, 1) {
			t.Errorf("%v is not in view", p)
		}
	}
	if c.visible([3]float32{0, 0, 500}, 1) || c.visible([3]float32{500, 0, 0}, 1) {
		t.Error("points behind the camera or far to its side are in view")
	}
	g := groundExtent(halfX, halfZ, height)
	for _, angle := range []float32{0, 1, 2, 3, 4, 5, 6} {
		c.set(halfX, halfZ, height, 16.0/9, angle)
		eye := float32(math.Hypot(float64(c.eye[0]), float64(c.eye[2])))
		if kept := math.Exp(-math.Pow(float64((g-eye)*c.fog), 2)); kept > 0.01 {
			t.Errorf("orbit %v: the ground's nearest edge keeps %.3f of its colour through the fog", angle, kept)
		}
		back := float32(math.Hypot(float64(c.eye[0]), float64(c.eye[2]))) + halfZ
		if kept := math.Exp(-math.Pow(float64(back*c.fog), 2)); kept < 0.6 {
			t.Errorf("orbit %v: the back row keeps only %.2f of its colour through the fog", angle, kept)
		}
	}
}

// TestWindow builds the demo and runs it in a window on a private Xvfb
// display (Debian's xvfb, installed by make deps): GLFW window, surface,
// swapchain and present on lavapipe, with the validation layer on.
func TestWindow(t *testing.T) {
	needCMU(t)
	needVulkan(t)
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Xvfb missing (install Debian's xvfb): %v", err)
		}
		t.Skipf("Xvfb missing (install Debian's xvfb): %v", err)
	}
	dir := t.TempDir()
	bin := buildCrowd(t)
	// -displayfd: Xvfb picks a free display and writes its number to the
	// pipe once it accepts clients.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// -noreset: without it the server resets when its last client leaves,
	// and gpu/present probes the socket before GLFW connects.
	x := exec.Command(xvfb, "-displayfd", "3", "-noreset", "-screen", "0", "800x600x24", "-nolisten", "tcp")
	x.ExtraFiles = []*os.File{pw}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer func() {
		// SIGTERM lets Xvfb remove its socket and lock file.
		x.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { x.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			x.Process.Kill()
			<-done
		}
	}()
	ready := make(chan string, 1)
	go func() {
		b := make([]byte, 32)
		n, _ := pr.Read(b)
		ready <- strings.TrimSpace(string(b[:n]))
	}()
	var disp string
	select {
	case disp = <-ready:
	case <-time.After(15 * time.Second):
		t.Fatal("Xvfb did not report a display within 15 s")
	}
	if disp == "" {
		t.Fatal("Xvfb exited without a display")
	}
	cmd := exec.Command(bin, "-frames", "80", "-warmup", "20", "-count", "40", "-size", "320x240", "-validate", "-cache", cacheDir)
	cmd.Env = append(os.Environ(), "DISPLAY=:"+disp)
	cmd.Dir = dir // a fallback to offscreen would write crowd.png here
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("crowd in a window: %v\n%s", err, out)
	}
	for _, want := range []string{"target: window", "frames: 80 ", "Vulkan: 80 frames submitted"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The window's per-frame calls (events, close check, title) allocate
	// nothing (gpu/present tests that exactly). What remains here is the Go
	// runtime's own: the main thread is locked to its OS thread (GLFW), and
	// when it blocks the runtime hands its P to another M, now and then
	// making a new M or sudog (0.2-0.7 per frame over 50 frames, measured
	// with a memory profile). A closure per call would add several per
	// frame.
	var per float64
	if i := bytes.Index(out, []byte("allocations: ")); i < 0 {
		t.Errorf("the summary does not report allocations:\n%s", out)
	} else if _, err := fmt.Sscanf(string(out[i:]), "allocations: %g per frame", &per); err != nil || per > 1 {
		t.Errorf("window: %.2f allocations per frame in steady state (%v)\n%s", per, err, out)
	}
}

func TestAppendTitle(t *testing.T) {
	b := appendTitle(nil, 1000, 90, 59.84, "cpu", 2)
	if got, want := string(b), "crowd: 1000 characters x 90 bones, 59.8 fps (offload cpu, pipeline 2)"; got != want {
		t.Fatalf("title %q, want %q", got, want)
	}
	if a := testing.AllocsPerRun(100, func() { b = appendTitle(b[:0], 1000, 90, 59.84, "gpu", 3) }); a != 0 {
		t.Fatalf("appendTitle: %v allocations, want 0", a)
	}
}

// TestUniformGroup: groups of the uniform-palette skinning start at
// offsets the device accepts, as large as the block allows.
func TestUniformGroup(t *testing.T) {
	for _, c := range []struct {
		bones, verts int
		sa, ua       uint64
		want         int
	}{
		{90, 720, 16, 64, 11},   // lavapipe: 1024/90 = 11
		{90, 720, 256, 256, 10}, // 11*90*64 = 63360 is not a multiple of 256
		{90, 720, 32, 256, 10},
		{31, 248, 16, 64, 33},
		{64, 512, 256, 256, 16},
		{1000, 10, 16, 64, 1},
		{1025, 10, 16, 64, 0},  // a palette larger than the block
		{90, 721, 256, 256, 0}, // no group size aligns the output
	} {
		g := uniformGroup(c.bones, c.verts, c.sa, c.ua)
		if g != c.want {
			t.Errorf("uniformGroup(%d bones, %d verts, align %d/%d) = %d, want %d", c.bones, c.verts, c.sa, c.ua, g, c.want)
		}
		if g > 0 && (uint64(g*c.bones*64)%c.ua != 0 || uint64(g*c.verts*24)%c.sa != 0 || g*c.bones > 1024) {
			t.Errorf("uniformGroup(%d, %d, %d, %d) = %d: misaligned or too large", c.bones, c.verts, c.sa, c.ua, g)
		}
	}
}
